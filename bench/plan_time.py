"""How long a whole `hyperpipe plan` process takes (issue 40, items 1 and 3): the median of
`--runs` runs per case, with what it answered (the plan's iteration, or that nothing fits).

Cases:
  --cases issue   the four rows issue 40 measured (the default);
  --cases all     every catalogue model on every example GPU cluster (not the CPU stand-ins
                  or the network lab), at each of --batches global batches;
  --cases generated  LLaMA-2 70B at global batch 1024 on generated clusters of 64 to 4,096
                  GPUs of four types in two islands (written to a temporary folder as
                  bench/planner_bench.cc's generated_cluster builds them).

    python3 bench/plan_time.py [--hyperpipe build/hyperpipe] [--cases issue|all|generated]
        [--runs 5] [--batches 64,512,4096] [--json]

Wall time of the whole process, as a user waits for it; run it with nothing else running.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ISSUE_ROWS = [
    ("gpt3-2.7b", "a100-v100-t4", 64),
    ("gpt3-2.7b", "examples/clusters/a100-v100-t4.yaml", 512),
    ("llama2-70b", "examples/clusters/h100-a100-islands.yaml", 1024),
    ("gpt3-175b", "examples/clusters/h100-a100-islands.yaml", 1024),
]
# The example clusters of GPUs (cpu-* and lab-* are CPU stand-ins).
GPU_CLUSTERS = ["a100-v100-t4", "a100x8", "far-island", "h100-a100-islands", "three-islands"]


GENERATED_GPUS = [64, 256, 1024, 4096]
GENERATED_TYPES = ["H100-SXM", "A100-80GB", "V100-32GB", "T4"]


def generated_cluster(gpus):
    """The YAML of planner_bench's generated cluster: four GPU types, each `gpus` / 4 GPUs
    in nodes of up to 8, the first two types one island and the last two another."""
    node = min(gpus // 4, 8)
    per_type = gpus // 4 // node
    nodes = "nodes:\n"
    islands = "islands:\n"
    for t, gpu in enumerate(GENERATED_TYPES):
        names = [f"t{t}n{n}" for n in range(per_type)]
        nodes += "".join(f"  - {{name: {name}, gpu: {gpu}, count: {node}}}\n" for name in names)
        if t % 2 == 0:
            island = names
        else:
            islands += f"  - name: island{t // 2}\n    nodes: [{', '.join(island + names)}]\n"
    return ("name: generated\n" + nodes + islands +
            "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
            "  intra_island: {bandwidth: 200 Gbit/s, latency: 5 us}\n"
            "  inter_island: {bandwidth: 25 Gbit/s, latency: 50 us}\n")


def catalogue_models(hyperpipe):
    out = subprocess.run([hyperpipe, "models", "--format", "json"], capture_output=True,
                         text=True, check=True).stdout
    return [model["name"] for model in json.loads(out)["models"]]


def time_plan(hyperpipe, model, cluster, batch, runs):
    """Median seconds of `runs` runs, and the answer of the last one."""
    command = [hyperpipe, "plan", "--model", model, "--cluster", cluster, "--global-batch",
               str(batch), "--format", "json"]
    seconds = []
    answer = ""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds.append(time.perf_counter() - start)
        if done.returncode == 0:
            iteration = json.loads(done.stdout)["report"]["iteration_time_s"]
            answer = f"plan, {iteration:.3g} s per iteration"
        else:
            lines = done.stderr.strip().splitlines()
            answer = "exit {}: {}".format(done.returncode, lines[-1][:100] if lines else "")
    return statistics.median(seconds), min(seconds), max(seconds), answer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    parser.add_argument("--cases", choices=["issue", "all", "generated"], default="issue")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batches", default="64,512,4096")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = tempfile.TemporaryDirectory()
    if args.cases == "issue":
        cases = ISSUE_ROWS
    elif args.cases == "generated":
        cases = []
        for gpus in GENERATED_GPUS:
            path = os.path.join(folder.name, f"generated-{gpus}.yaml")
            with open(path, "w", encoding="utf-8") as out:
                out.write(generated_cluster(gpus))
            cases.append(("llama2-70b", path, 1024))
    else:
        batches = [int(b) for b in args.batches.split(",")]
        cases = [(model, cluster, batch) for model in catalogue_models(args.hyperpipe)
                 for cluster in GPU_CLUSTERS for batch in batches]
    rows = []
    for model, cluster, batch in cases:
        median, fastest, slowest, answer = time_plan(args.hyperpipe, model, cluster, batch,
                                                     args.runs)
        rows.append({"model": model, "cluster": cluster, "global_batch": batch,
                     "median_s": median, "min_s": fastest, "max_s": slowest, "answer": answer})
        print(f"{model} {cluster} {batch}: {median:.2f} s", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"| model | cluster | global batch | median of {args.runs} | range | answer |")
    print("|---|---|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['cluster']} | {r['global_batch']} | {r['median_s']:.2f} s | "
              f"{r['min_s']:.2f}–{r['max_s']:.2f} s | {r['answer']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
