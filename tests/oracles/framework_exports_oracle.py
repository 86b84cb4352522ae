"""The frameworks' own code reads what `hyperpipe export` writes, and splits the model as
the plan does.

* Megatron-core: TransformerConfig takes the exported --pipeline-model-parallel-layout (with
  the exported sizes) and its PipelineParallelLayerLayout validates it; each (pipeline rank,
  virtual stage)'s embedding, decoder layers (get_layer_id_list) and loss are the plan's.
* DeepSpeed: the exported PipelineModule subclass (deepspeed_partition.py) is built over a
  real process group of pipe × data × model ranks (Gloo, CPU); each rank's layer range and
  `parts` are the plan's stages, and DeepSpeedConfig takes ds_config.json with the module's
  own grid (its batch-size arithmetic checks micro-batch × accumulation × dp).
* torchtitan: its ConfigManager parses torchtitan.toml, and its pipeline_module_split cuts
  torchtitan's own Llama by the parsed module names over a real pp process group; each
  stage keeps the plan's embedding, blocks and head.

    HYPERPIPE=build/hyperpipe python3 tests/oracles/framework_exports_oracle.py
"""
import argparse
import importlib.util
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile

import torch
import torch.multiprocessing

from verdict import Verdict

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "examples", "models", "tiny-gpt.yaml")
BLOCKS = 6  # tiny-gpt's: the plans' layers are the embedding, 6 blocks, the head

# name: (plan fields, the frameworks that must take it; the others must refuse it cleanly)
PLANS = {
    "uneven-1f1b": ({"micro_batch_size": 4, "micro_batches": 8, "schedule": "1f1b",
                     "stages": [{"layers": [0, 5], "devices": [0]},
                                {"layers": [5, 7], "devices": [1]},
                                {"layers": [7, 8], "devices": [2]}]},
                    {"megatron", "deepspeed", "torchtitan"}),
    "tp2-dp2": ({"micro_batch_size": 4, "micro_batches": 4, "schedule": "1f1b",
                 "stages": [{"layers": [0, 3], "devices": [0, 1, 2, 3], "tp": 2},
                            {"layers": [3, 8], "devices": [4, 5, 6, 7], "tp": 2}]},
                {"megatron", "deepspeed", "torchtitan"}),
    "interleaved": ({"micro_batch_size": 2, "micro_batches": 4,
                     "schedule": {"kind": "interleaved", "chunks": 2},
                     "stages": [{"layers": [0, 3], "devices": [0]},
                                {"layers": [3, 4], "devices": [1]},
                                {"layers": [4, 6], "devices": [0]},
                                {"layers": [6, 8], "devices": [1]}]},
                    {"megatron", "torchtitan"}),
    "gpipe": ({"micro_batch_size": 2, "micro_batches": 4, "schedule": "gpipe",
               "stages": [{"layers": [0, 4], "devices": [0]},
                          {"layers": [4, 8], "devices": [1]}]},
              {"torchtitan"}),
}


def expected_stages(plan):
    """Per stage of the plan (chain order): (embedding?, decoder block ids, head?), and the
    pipeline rank and virtual stage it runs as (stage s on rank s mod pp, chunk s div pp)."""
    groups = []
    for stage in plan["stages"]:
        if stage["devices"] not in groups:
            groups.append(stage["devices"])
    result = []
    for s, stage in enumerate(plan["stages"]):
        first, end = stage["layers"]
        blocks = [layer - 1 for layer in range(first, end) if 1 <= layer <= BLOCKS]
        result.append({"embedding": first == 0, "blocks": blocks, "head": end == BLOCKS + 2,
                       "pp_rank": s % len(groups), "virtual": s // len(groups)})
    return result, len(groups)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def join_group(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world)


def run_ranks(worker, world, *args):
    """`worker(rank, world, port, out, *args)` on `world` processes; their reports, by rank."""
    with tempfile.TemporaryDirectory() as out:
        torch.multiprocessing.spawn(worker, args=(world, free_port(), out, *args), nprocs=world)
        reports = []
        for rank in range(world):
            with open(os.path.join(out, f"{rank}.json"), encoding="utf-8") as f:
                reports.append(json.load(f))
        return reports


def report(out, rank, value):
    with open(os.path.join(out, f"{rank}.json"), "w", encoding="utf-8") as f:
        json.dump(value, f)


# --- Megatron-core ---------------------------------------------------------------------

def megatron_arguments(path):
    """The exported HYPERPIPE_MEGATRON_ARGS, as a dict of flag → value (True for a bare one)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    opening = "HYPERPIPE_MEGATRON_ARGS=("
    body = text[text.index(opening) + len(opening):]
    words = shlex.split(body[:body.rindex(")")], comments=True)
    arguments, i = {}, 0
    while i < len(words):
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            arguments[words[i]] = words[i + 1]
            i += 2
        else:
            arguments[words[i]] = True
            i += 1
    return arguments


def check_megatron(folder, plan, verdict, label):
    from megatron.core import parallel_state
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.transformer_config import TransformerConfig

    arguments = megatron_arguments(os.path.join(folder, "megatron-args.sh"))
    stages, pp = expected_stages(plan)
    virtual = len(stages) // pp
    config = TransformerConfig(
        num_layers=int(arguments["--num-layers"]), hidden_size=128, num_attention_heads=4,
        tensor_model_parallel_size=int(arguments["--tensor-model-parallel-size"]),
        pipeline_model_parallel_size=int(arguments["--pipeline-model-parallel-size"]),
        pipeline_model_parallel_layout=arguments["--pipeline-model-parallel-layout"],
        virtual_pipeline_model_parallel_size=virtual if virtual > 1 else None,
        pipeline_dtype=torch.float32)
    layout = config.pipeline_model_parallel_layout
    layout.validate_layer_layout(num_layers=config.num_layers, mtp_num_layers=None)
    # get_layer_offset reads the virtual size from parallel_state, as a built model has it.
    parallel_state.set_virtual_pipeline_model_parallel_world_size(virtual if virtual > 1 else None)
    try:
        found = []
        for stage in stages:
            pp_rank, vp = stage["pp_rank"], stage["virtual"]
            held = layout.layout[pp_rank][vp]
            found.append({"embedding": LayerType.embedding in held,
                          "blocks": layout.get_layer_id_list(vp_stage=vp, pp_rank=pp_rank),
                          "head": LayerType.loss in held, "pp_rank": pp_rank, "virtual": vp})
    finally:
        parallel_state.set_virtual_pipeline_model_parallel_world_size(None)
    sizes_ok = (config.pipeline_model_parallel_size == pp and
                config.tensor_model_parallel_size == plan["stages"][0].get("tp", 1))
    verdict.check(f"{label} megatron-core", found == stages and sizes_ok,
                  f"layout {arguments['--pipeline-model-parallel-layout']!r} over pp {pp} × "
                  f"vpp {virtual}: " + ("each stage as the plan's" if found == stages else
                                        f"found {found}, the plan's {stages}"))


# --- DeepSpeed -------------------------------------------------------------------------

def deepspeed_worker(rank, world, port, out, folder):
    join_group(rank, world, port)
    import deepspeed
    from deepspeed.pipe import LayerSpec
    from deepspeed.runtime.config import DeepSpeedConfig
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
        layers=[LayerSpec(torch.nn.Identity) for _ in range(exported.PARTS[-1])],
        topology=topology, loss_fn=torch.nn.functional.cross_entropy)
    config = DeepSpeedConfig(os.path.join(folder, "ds_config.json"), mpu=module.mpu())
    report(out, rank, {"stage": module.stage_id, "start": module._local_start,
                       "stop": module._local_stop, "parts": list(module.parts),
                       "batch": [config.train_batch_size, config.train_micro_batch_size_per_gpu,
                                 config.gradient_accumulation_steps]})
    torch.distributed.destroy_process_group()


def check_deepspeed(folder, plan, verdict, label):
    stages, pp = expected_stages(plan)
    tp = plan["stages"][0].get("tp", 1)
    dp = len(plan["stages"][0]["devices"]) // tp
    reports = run_ranks(deepspeed_worker, pp * dp * tp, folder)
    # PipelineModule's layer list is the chain itself: stage s holds [first, end).
    wanted = [plan["stages"][r["stage"]]["layers"] for r in reports]
    found = [[r["start"], r["stop"]] for r in reports]
    batch = [plan["micro_batch_size"] * plan["micro_batches"], plan["micro_batch_size"] // dp,
             plan["micro_batches"]]
    ok = found == wanted and all(r["batch"] == batch for r in reports) and \
        sorted({r["stage"] for r in reports}) == list(range(pp))
    verdict.check(f"{label} deepspeed", ok,
                  f"{len(reports)} ranks (pipe {pp} × data {dp} × model {tp}): layer ranges "
                  f"{found if not ok else 'as the plan'}, parts {reports[0]['parts']}, "
                  f"batch (global, micro, accumulation) {reports[0]['batch']}")


# --- torchtitan ------------------------------------------------------------------------

def torchtitan_worker(rank, world, port, out, toml):
    join_group(rank, world, port)
    from torch.distributed.device_mesh import init_device_mesh
    from torchtitan.config import ConfigManager
    from torchtitan.distributed.pipeline_parallel import pipeline_module_split
    from torchtitan.models.llama3.model.args import TransformerModelArgs
    from torchtitan.models.llama3.model.model import Transformer

    config = ConfigManager().parse_args(["--job.config_file", toml])
    parallelism = config.parallelism
    model = Transformer(TransformerModelArgs(dim=64, n_layers=BLOCKS, n_heads=4, vocab_size=256,
                                             max_seq_len=config.training.seq_len))
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("pp",))
    stages, chunks = pipeline_module_split(model, mesh, parallelism.pipeline_parallel_schedule,
                                           torch.device("cpu"),
                                           parallelism.module_fqns_per_model_part)
    held = {}
    for stage, chunk in zip(stages, chunks):
        held[stage.stage_index] = {
            "embedding": chunk.tok_embeddings is not None,
            "blocks": sorted(int(name) for name in chunk.layers.keys()),
            "head": chunk.norm is not None and chunk.output is not None,
            "pp_rank": rank, "virtual": stage.stage_index // world}
    report(out, rank, {"held": held, "degree": parallelism.pipeline_parallel_degree,
                       "microbatch": parallelism.pipeline_parallel_microbatch_size,
                       "local_batch": config.training.local_batch_size,
                       "tp": parallelism.tensor_parallel_degree,
                       "dp": parallelism.data_parallel_shard_degree *
                       parallelism.data_parallel_replicate_degree,
                       "schedule": parallelism.pipeline_parallel_schedule})
    torch.distributed.destroy_process_group()


def check_torchtitan(folder, plan, verdict, label):
    stages, pp = expected_stages(plan)
    reports = run_ranks(torchtitan_worker, pp, os.path.join(folder, "torchtitan.toml"))
    found = [None] * len(stages)
    for r in reports:
        for index, held in r["held"].items():
            found[int(index)] = held
    tp = plan["stages"][0].get("tp", 1)
    dp = len(plan["stages"][0]["devices"]) // tp
    local = plan["micro_batch_size"] * plan["micro_batches"] // dp
    micro = plan["micro_batch_size"] // dp
    first = reports[0]
    settings_ok = (first["degree"] == pp and first["tp"] == tp and first["dp"] == dp and
                   first["local_batch"] == local and first["microbatch"] == micro)
    verdict.check(f"{label} torchtitan", found == stages and settings_ok,
                  f"{first['schedule']} over pp {pp}, {len(stages)} stages: " +
                  ("each stage as the plan's" if found == stages else
                   f"found {found}, the plan's {stages}") +
                  f"; local batch {first['local_batch']} in micro-batches of "
                  f"{first['microbatch']} (the plan's {local} in {micro}s), tp {first['tp']}, "
                  f"dp {first['dp']}")


# ---------------------------------------------------------------------------------------


CHECKS = {"megatron": check_megatron, "deepspeed": check_deepspeed,
          "torchtitan": check_torchtitan}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default=os.environ.get("HYPERPIPE", "hyperpipe"))
    parser.add_argument("--only", choices=sorted(CHECKS), action="append")
    args = parser.parse_args()
    torch.set_num_threads(1)
    verdict = Verdict()
    with tempfile.TemporaryDirectory(prefix="framework-exports-") as work:
        for name, (fields, takers) in PLANS.items():
            plan = {"format": "hyperpipe.plan/1", "model": os.path.abspath(MODEL),
                    "cluster": "a100x8", **fields}
            plan_path = os.path.join(work, f"{name}.json")
            with open(plan_path, "w", encoding="utf-8") as f:
                json.dump(plan, f)
            for framework in args.only or CHECKS:
                folder = os.path.join(work, name, framework)
                result = subprocess.run([args.hyperpipe, "export", "--plan", plan_path, "--to",
                                         framework, "--out", folder], capture_output=True,
                                        text=True, check=False)
                label = f"{name} →"
                if framework not in takers:
                    verdict.check(f"{label} {framework} refused", result.returncode == 2 and
                                  "a plan" in result.stderr, result.stderr.strip()[:160])
                    continue
                if result.returncode != 0:
                    verdict.check(f"{label} {framework}", False, result.stderr.strip())
                    continue
                try:
                    CHECKS[framework](folder, plan, verdict, label)
                except Exception as error:  # the framework refused the files: a failure
                    verdict.check(f"{label} {framework}", False,
                                  f"{type(error).__name__}: {error}")
    print(f"{verdict.failures} failure(s)")
    return 1 if verdict.failures else 0


if __name__ == "__main__":
    sys.exit(main())
