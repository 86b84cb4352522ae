"""One run of a plan as `hyperpipe export --to deepspeed` wrote it, trained by DeepSpeed's
own pipeline engine on the CPU: the exported ds_config.json and PipelineModule subclass
(deepspeed_partition.py) over the same GPT as torch_pipelining_run.py (HyperPipe's layers
written in PyTorch), DeepSpeed's CPU accelerator, one process per stage over Gloo, one
thread each as HyperPipe's processes, AdamW and clipping at global norm 1 as HyperPipe's
train defaults (the export leaves the optimizer to the user). Prints one JSON line: each
step's seconds (rank 0, from a barrier to the end of engine.train_batch, which includes
the optimizer step).

    python3 deepspeed_run.py --export FOLDER --model M.yaml --steps N
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_pipelining_run as gpt  # noqa: E402  (the same model, loss and settings)


def layer_class(model, index):
    """The chain: 0 the embedding, 1 … layers the blocks, then the head."""
    if index == 0:
        return gpt.Embedding
    return gpt.Block if index <= model["layers"] else gpt.Head


def run_rank(rank, world, port, folder, model, steps, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank), DS_ACCELERATOR="cpu")
    torch.set_num_threads(1)
    import deepspeed
    from deepspeed.pipe import LayerSpec
    from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology

    deepspeed.init_distributed(dist_backend="gloo")
    spec = importlib.util.spec_from_file_location(
        "deepspeed_partition", os.path.join(folder, "deepspeed_partition.py"))
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    topology = PipeModelDataParallelTopology(num_pp=exported.PIPE_STAGES,
                                             num_mp=exported.MODEL_PARALLEL,
                                             num_dp=exported.DATA_PARALLEL)
    module = exported.HyperPipePartitionedModule(
        layers=[LayerSpec(layer_class(model, i), model) for i in range(exported.PARTS[-1])],
        topology=topology, loss_fn=gpt.loss_fn,
        activation_checkpoint_interval=exported.ACTIVATION_CHECKPOINT_INTERVAL)
    with open(os.path.join(folder, "ds_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config["gradient_clipping"] = gpt.CLIP
    parameters = list(module.parameters())
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in parameters if p.dim() >= 2], "weight_decay": gpt.WEIGHT_DECAY},
         {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0}],
        lr=gpt.LEARNING_RATE)
    engine, _, _, _ = deepspeed.initialize(model=module, optimizer=optimizer, config=config)
    micro_batch = config["train_micro_batch_size_per_gpu"]
    generator = torch.Generator().manual_seed(0)

    def micro_batches():
        while True:
            tokens = torch.randint(0, model["vocab"], (micro_batch, model["seq_len"] + 1),
                                   generator=generator)
            yield tokens[:, :-1], tokens[:, 1:]

    data = micro_batches()
    seconds = []
    for _ in range(steps):
        torch.distributed.barrier()
        began = time.perf_counter()
        engine.train_batch(data_iter=data)
        seconds.append(time.perf_counter() - began)
    if rank == 0:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"seconds": seconds}, f)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", required=True, help="hyperpipe export --to deepspeed's folder")
    parser.add_argument("--model", required=True)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    # The world: every rank of the exported grid (its line
    # "PIPE_STAGES, DATA_PARALLEL, MODEL_PARALLEL = p, d, m").
    with open(os.path.join(args.export, "deepspeed_partition.py"), encoding="utf-8") as f:
        grid = next(line for line in f if line.startswith("PIPE_STAGES"))
    world = 1
    for size in grid.split("=")[1].split(","):
        world *= int(size)
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "seconds.json")
        torch.multiprocessing.spawn(run_rank, args=(world, gpt.free_port(), args.export,
                                                    gpt.read_model(args.model), args.steps, out),
                                    nprocs=world)
        with open(out, encoding="utf-8") as f:
            print(json.dumps(json.load(f)))


if __name__ == "__main__":
    sys.exit(main())
