# DeepSpeed (0.16) settings for HyperPipe's plan of ../models/tiny-gpt.yaml on ../clusters/cpu-emulated.yaml
# PipelineModule has no option for explicit stage boundaries: this subclass sets them
# (layer specs [PARTS[s], PARTS[s + 1]) on stage s, the list being the model's chain:
# embedding, 6 decoder layers, head) as DeepSpeed's own partition methods end.
import deepspeed

PARTS = [0, 5, 7, 8]
PIPE_STAGES, DATA_PARALLEL, MODEL_PARALLEL = 3, 1, 1
ACTIVATION_CHECKPOINT_INTERVAL = 0  # PipelineModule(..., activation_checkpoint_interval=)


class HyperPipePartitionedModule(deepspeed.pipe.PipelineModule):
    def _partition_layers(self, method="uniform"):
        assert len(self._layer_specs) == PARTS[-1], "a layer list of another model"
        self.parts = list(PARTS)
        stage = self._topo.get_coord(self.global_rank).pipe
        self._set_bounds(start=self.parts[stage], stop=self.parts[stage + 1])
