"""HyperPipe beside PyTorch's own pipeline runtime (torch.distributed.pipelining), same
model, same split, same schedule, same two CPU stand-ins, in one run (issue 38).

For each model (tiny-gpt and a wider GPT, both untied: bench/pipelining/*.yaml) and each
schedule both runtimes have (GPipe, 1F1B, interleaved 1F1B with two chunks per device,
zero-bubble: HyperPipe's zb-h1 against PyTorch's ScheduleInterleavedZeroBubble with one
stage per rank, the same ZB-H1 order), the bench
  1. `--repeats` times: profiles the model's layers on this host (`hyperpipe profile`),
     predicts the step from that profile with `hyperpipe simulate --runtime torchtitan`
     (the semantics of torchtitan, which runs torch.distributed.pipelining: batched
     isend/irecv posted beside compute) and `--runtime hyperpipe`, then trains the plan
     with `hyperpipe launch` and with torch_pipelining_run.py, taking each run's median
     step (its first steps left out); PyTorch's step is predicted twice: from HyperPipe's
     layer profile and from PyTorch's own eager layers profiled the same way
     (torch_layer_profile.py), as a profile taken under that runtime would give it;
  2. reports the means over the repeats: the prediction's error is its mean against the
     mean measured step.
It prints a table: both step times, ours over theirs (goal <= 1.0), and the simulator's
error on each runtime's measured step (goal for PyTorch's: within 10%); JSON with --json.

    ~/.cache/hyperpipe/venv/bin/python bench/pipelining/side_by_side.py \
        --hyperpipe build/hyperpipe [--steps 10] [--repeats 2]

A 2-core host drifts 10-30% in speed over tens of seconds (bench/accuracy.sh): alternating
the runtimes spreads that drift over both; the ratio's spread across repeats is printed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
CORPUS = os.path.join(ROOT, "examples", "data", "corpus.txt")
CLUSTER = os.path.join(HERE, "cpu-pair.yaml")
WARMUP_STEPS = 3  # left out of each run's median: allocator and first-touch costs

# model file: (micro-batch size, micro-batches, two-stage split, four-stage split for the
# interleaved schedule), splits as [first, end) layers of the chain.
MODELS = {
    "tiny-gpt-untied.yaml": (4, 8, [[0, 4], [4, 8]], [[0, 2], [2, 4], [4, 6], [6, 8]]),
    "wide-gpt.yaml": (1, 8, [[0, 3], [3, 6]], [[0, 2], [2, 3], [3, 4], [4, 6]]),
}
SCHEDULES = ["gpipe", "1f1b", "interleaved", "zb-h1"]


def write_plan(path, model, schedule):
    micro_batch_size, micro_batches, two, four = MODELS[model]
    stages = four if schedule == "interleaved" else two
    plan = {"format": "hyperpipe.plan/1", "model": os.path.join(HERE, model),
            "cluster": CLUSTER, "micro_batch_size": micro_batch_size,
            "micro_batches": micro_batches,
            "schedule": {"kind": "interleaved", "chunks": 2} if schedule == "interleaved"
            else schedule,
            "stages": [{"layers": layers, "devices": [i % 2]} for i, layers in
                       enumerate(stages)]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(plan, f)


def run(command):
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def median_step(seconds):
    return statistics.median(seconds[WARMUP_STEPS:])


def ours(hyperpipe, plan, steps, work):
    metrics = os.path.join(work, "metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    run([hyperpipe, "launch", "--plan", plan, "--data", CORPUS, "--steps", str(steps),
         "--metrics", metrics])
    with open(metrics, encoding="utf-8") as f:
        return median_step([json.loads(line)["seconds"] for line in f])


def theirs(plan, model, steps):
    out = run([sys.executable, os.path.join(HERE, "torch_pipelining_run.py"), "--plan", plan,
               "--model", os.path.join(HERE, model), "--steps", str(steps)])
    return median_step(json.loads(out.strip().splitlines()[-1])["seconds"])


def predicted(hyperpipe, plan, profiles, runtime):
    result = subprocess.run([hyperpipe, "simulate", "--plan", plan, "--profiles", profiles,
                             "--runtime", runtime, "--format", "json"],
                            capture_output=True, text=True, check=False)
    if result.returncode == 2:  # the framework cannot express the plan
        return None
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return json.loads(result.stdout)["iteration_time_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as work:
        for model, (micro_batch_size, *_rest) in MODELS.items():
            for schedule in SCHEDULES:
                plan = os.path.join(work, f"{model}-{schedule}.json")
                write_plan(plan, model, schedule)
                ours_s, theirs_s = [], []
                guesses = {"torchtitan": [], "hyperpipe": [], "torchtitan_own": []}
                for repeat in range(args.repeats):
                    # A fresh profile before each pair of runs, as a user profiles and then
                    # trains: the host's drift between profile and run is then the shortest.
                    profiles = os.path.join(work, f"{model}-{schedule}-{repeat}.profiles.json")
                    run([args.hyperpipe, "profile", "--model", os.path.join(HERE, model),
                         "--cluster", CLUSTER, "--micro-batch", str(micro_batch_size),
                         "--out", profiles])
                    for runtime in ("torchtitan", "hyperpipe"):
                        guesses[runtime].append(predicted(args.hyperpipe, plan, profiles, runtime))
                    # PyTorch's own layers profiled the same way, over that profile's links.
                    torch_profiles = profiles.replace(".profiles.", ".torch-profiles.")
                    run([sys.executable, os.path.join(HERE, "torch_layer_profile.py"), "--model",
                         os.path.join(HERE, model), "--profiles", profiles, "--out",
                         torch_profiles])
                    guesses["torchtitan_own"].append(
                        predicted(args.hyperpipe, plan, torch_profiles, "torchtitan"))
                    ours_s.append(ours(args.hyperpipe, plan, args.steps, work))
                    theirs_s.append(theirs(plan, model, args.steps))
                mean_or_none = lambda xs: None if None in xs else statistics.mean(xs)  # noqa
                row = {"model": model.removesuffix(".yaml"), "schedule": schedule,
                       "ours_s": statistics.mean(ours_s), "theirs_s": statistics.mean(theirs_s),
                       "ratios": [a / b for a, b in zip(ours_s, theirs_s)],
                       "predicted_torchtitan_s": mean_or_none(guesses["torchtitan"]),
                       "predicted_hyperpipe_s": mean_or_none(guesses["hyperpipe"]),
                       "predicted_torchtitan_own_s": mean_or_none(guesses["torchtitan_own"])}
                row["ratio"] = row["ours_s"] / row["theirs_s"]
                for side, key in (("torchtitan", "theirs_s"), ("hyperpipe", "ours_s"),
                                  ("torchtitan_own", "theirs_s")):
                    guess = row[f"predicted_{side}_s"]
                    row[f"error_{side}"] = None if guess is None else guess / row[key] - 1
                rows.append(row)
                print(f"{row['model']} {schedule}: ours {row['ours_s'] * 1e3:.0f} ms, "
                      f"PyTorch {row['theirs_s'] * 1e3:.0f} ms", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    percent = lambda e: "—" if e is None else f"{e * 100:+.1f}%"  # noqa: E731
    print("| model | schedule | HyperPipe step | PyTorch pipelining step | ours / theirs "
          "(per repeat) | simulator on PyTorch's (torchtitan semantics) | the same from "
          "PyTorch's layer profile | simulator on ours |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['schedule']} | {r['ours_s'] * 1e3:.0f} ms | "
              f"{r['theirs_s'] * 1e3:.0f} ms | {r['ratio']:.2f} "
              f"({', '.join(f'{x:.2f}' for x in r['ratios'])}) | "
              f"{percent(r['error_torchtitan'])} | {percent(r['error_torchtitan_own'])} | "
              f"{percent(r['error_hyperpipe'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
