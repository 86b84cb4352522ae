"""A plan exported for another framework, trained by that framework on the CPU stand-ins,
against `hyperpipe simulate --runtime` of the same plan (issue 38, item 3).

DeepSpeed is the framework of the three that trains on a CPU over Gloo: its CPU
accelerator runs the pipeline engine (deepspeed_run.py). torchtitan's trainer takes
"cuda" where no accelerator is found (torchtitan/tools/utils.py) and Megatron-core's
exchanges allocate on torch.cuda.current_device() (pipeline_parallel/p2p_communication.py),
so their exports are checked by their parsers only
(tests/oracles/framework_exports_oracle.py). DeepSpeed runs 1F1B alone, so each model
of the side-by-side bench (side_by_side.py: tiny-gpt and a GPT 4 × 512, untied, two
stages) runs that schedule. `--repeats` times: a fresh `hyperpipe profile`, the
prediction with `--runtime deepspeed` (its blocking exchanges), `hyperpipe export --to
deepspeed`, then DeepSpeed's run of the export, its median step (the first steps left
out). Prints a table of the means; JSON with --json.

    ~/.cache/hyperpipe/venv/bin/python bench/pipelining/exported_training.py \
        --hyperpipe build/hyperpipe [--steps 12] [--repeats 3]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import side_by_side as bench  # noqa: E402  (models, plans, profiling and prediction)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="exported-training-") as work:
        for model, (micro_batch_size, *_rest) in bench.MODELS.items():
            plan = os.path.join(work, f"{model}-1f1b.json")
            bench.write_plan(plan, model, "1f1b")
            measured, guessed = [], []
            for repeat in range(args.repeats):
                profiles = os.path.join(work, f"{model}-{repeat}.profiles.json")
                bench.run([args.hyperpipe, "profile", "--model", os.path.join(HERE, model),
                           "--cluster", bench.CLUSTER, "--micro-batch", str(micro_batch_size),
                           "--out", profiles])
                guessed.append(bench.predicted(args.hyperpipe, plan, profiles, "deepspeed"))
                export = os.path.join(work, f"{model}-{repeat}-deepspeed")
                bench.run([args.hyperpipe, "export", "--plan", plan, "--to", "deepspeed",
                           "--out", export])
                out = bench.run([sys.executable, os.path.join(HERE, "deepspeed_run.py"),
                                 "--export", export, "--model", os.path.join(HERE, model),
                                 "--steps", str(args.steps)])
                seconds = json.loads(out.strip().splitlines()[-1])["seconds"]
                measured.append(bench.median_step(seconds))
            row = {"model": model.removesuffix(".yaml"), "schedule": "1f1b",
                   "deepspeed_s": statistics.mean(measured),
                   "predicted_s": statistics.mean(guessed)}
            row["error"] = row["predicted_s"] / row["deepspeed_s"] - 1
            rows.append(row)
            print(f"{row['model']}: DeepSpeed {row['deepspeed_s'] * 1e3:.0f} ms, predicted "
                  f"{row['predicted_s'] * 1e3:.0f} ms", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| model | schedule | DeepSpeed's step (its export, CPU) | `simulate --runtime "
          "deepspeed` | error |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['schedule']} | {r['deepspeed_s'] * 1e3:.0f} ms | "
              f"{r['predicted_s'] * 1e3:.0f} ms | {r['error'] * 100:+.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
