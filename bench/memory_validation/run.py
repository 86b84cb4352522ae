#!/usr/bin/env python3
"""Predicts each published measured peak with `hyperpipe simulate` and reports the error.

Each case file (a JSON document with `cases[]`, written by a transcription script beside
this one from its source) names a run: the framework, the GPU type and count, the model's
shape and the plan's parallelism, what its source measured (`measured`) and the figure.
For each case this script writes the model, a one-node cluster and the plan, runs
`hyperpipe simulate --format json`, takes the prediction of the quantity measured, and
prints predicted against measured, then per source the mean and worst error and every
wrong verdict (a run that ran, predicted not to fit its GPU; a run that ran out of
memory, predicted to fit). Nothing here sets a constant of the memory model: the sources
only test it.

  python3 bench/memory_validation/run.py --hyperpipe build/hyperpipe
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 2 ** 30

# The terms the caching allocator hands out (torch.cuda.max_memory_allocated counts them):
# all but its reserve and what lies outside it (docs/formats.md, "Memory breakdown").
OUTSIDE_THE_ALLOCATED = {"allocator", "stream_pools", "communicators", "context", "reserved"}
OUTSIDE_THE_RESERVED = {"communicators", "context", "reserved"}


def stage_layers(layers, stages):
    """Megatron-LM's even split: the blocks over the (virtual) stages, the embedding with the
    first and the head with the last, as [first, end) of HyperPipe's chain."""
    per_stage = layers // stages
    bounds = [0] + [1 + per_stage * s for s in range(1, stages)] + [layers + 2]
    return [[bounds[s], bounds[s + 1]] for s in range(stages)]


def write_case(case, directory):
    model = dict(case["model"], name=case["id"].split("@")[0][:60])
    with open(os.path.join(directory, "model.yaml"), "w") as f:
        for key, value in model.items():
            f.write(f"{key}: {json.dumps(value)}\n")
    with open(os.path.join(directory, "cluster.yaml"), "w") as f:
        # A GPU of another memory size than the catalogue's (torchtitan's 96 GB H100).
        memory = f", memory: {case['gpu_memory']}" if "gpu_memory" in case else ""
        f.write(f"name: validation\nnodes:\n  - {{name: node-0, gpu: {case['gpu']}, "
                f"count: {case['devices']}{memory}}}\n"
                "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n")
    p = case["plan"]
    group = p["tp"] * p["dp"]
    virtual = p["pp"] * p["chunks"]
    stages = []
    for s, layers in enumerate(stage_layers(case["model"]["layers"], virtual)):
        first = (s % p["pp"]) * group
        stages.append({"layers": layers, "devices": list(range(first, first + group)),
                       "dp": p["dp"], "tp": p["tp"]})
    schedule = ({"kind": "interleaved", "chunks": p["chunks"]} if p["chunks"] > 1 else "1f1b")
    plan = {
        "format": "hyperpipe.plan/1", "model": "model.yaml", "cluster": "cluster.yaml",
        "runtime": case["framework"],
        # HyperPipe's micro-batch is the pipeline's: Megatron-LM's per rank times dp.
        "micro_batch_size": p["micro_batch_size"] * p["dp"],
        "micro_batches": p["micro_batches"], "schedule": schedule, "recompute": p["recompute"],
        "sequence_parallel": p["sequence_parallel"], "shard_optimizer": p["shard_optimizer"],
        "overlap_allreduce": p["overlap_allreduce"], "stages": stages,
    }
    with open(os.path.join(directory, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)


def predicted_bytes(rank, case):
    """The prediction of what the source measured, from the rank's memory terms."""
    memory = rank["memory"]
    measured = case["measured"]
    terms = {t["name"]: t["bytes"] for t in memory["terms"]}
    if "cublas_workspace_bytes" in case and "workspaces" in terms:
        # The run set CUBLAS_WORKSPACE_CONFIG: its workspace, not the GPU's default.
        terms["workspaces"] = case["cublas_workspace_bytes"]
    if measured.startswith("max_allocated"):
        left_out = OUTSIDE_THE_ALLOCATED
    elif measured.startswith("max_reserved"):
        left_out = OUTSIDE_THE_RESERVED
    else:
        raise ValueError(f"unknown measured quantity {measured}")
    return sum(b for name, b in terms.items() if name not in left_out)


def measured_rank(ranks, measured):
    if measured.endswith("_last_rank"):
        return ranks[-1]
    if measured.endswith("_max_rank"):
        return max(ranks, key=lambda r: r["peak_memory_bytes"])
    raise ValueError(f"unknown rank of {measured}")


def evaluate(hyperpipe, case):
    with tempfile.TemporaryDirectory() as directory:
        write_case(case, directory)
        result = subprocess.run([hyperpipe, "simulate", "--plan",
                                 os.path.join(directory, "plan.json"), "--format", "json"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            return {"id": case["id"], "error": result.stderr.strip().splitlines()[-1]}
        report = json.loads(result.stdout)
    rank = measured_rank(report["ranks"], case["measured"])
    predicted = predicted_bytes(rank, case)
    fits_predicted = rank["fits"]
    ran = not case.get("out_of_memory", False)
    return {
        "id": case["id"], "source": case["source"], "gpu": case["gpu"],
        "framework": case["framework"], "measured_bytes": case["measured_bytes"],
        "predicted_bytes": predicted, "error": predicted / case["measured_bytes"] - 1,
        "wrong_verdict": fits_predicted != ran,
        "terms": {t["name"]: t["bytes"] for t in rank["memory"]["terms"]},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    parser.add_argument("--cases", nargs="*",
                        default=sorted(glob.glob(os.path.join(HERE, "*.json"))))
    parser.add_argument("--json", help="write every case's result here")
    options = parser.parse_args()
    results, failed = [], []
    for path in options.cases:
        with open(path) as f:
            document = json.load(f)
        for case in document["cases"]:
            outcome = evaluate(options.hyperpipe, case)
            (failed if "source" not in outcome else results).append(outcome)
    print(f"{'case':72} {'GPU':10} {'predicted':>10} {'measured':>10} {'error':>8}")
    for r in results:
        print(f"{r['id'][:72]:72} {r['gpu']:10} {r['predicted_bytes'] / GIB:9.2f}G "
              f"{r['measured_bytes'] / GIB:9.2f}G {100 * r['error']:+7.1f}%"
              f"{'  WRONG VERDICT' if r['wrong_verdict'] else ''}")
    for f in failed:
        print(f"{f['id'][:72]:72} not predicted: {f['error']}")
    print()
    for source in sorted({r["source"] for r in results}):
        mine = [r for r in results if r["source"] == source]
        errors = [abs(r["error"]) for r in mine]
        worst = max(mine, key=lambda r: abs(r["error"]))
        gpus = sorted({r["gpu"] for r in mine})
        print(f"{source}: {len(mine)} cases on {', '.join(gpus)}: mean |error| "
              f"{100 * statistics.mean(errors):.1f}%, worst {100 * worst['error']:+.1f}% "
              f"({worst['id']}), wrong verdicts {sum(r['wrong_verdict'] for r in mine)}")
    if options.json:
        with open(options.json, "w") as f:
            json.dump({"results": results, "not_predicted": failed}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
