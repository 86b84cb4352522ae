"""The learning rate of every step of a HyperPipe run against Megatron-core's own
OptimizerParamScheduler, set up as Megatron-LM's training loop sets it up (--lr, --min-lr,
--lr-warmup-iters, --lr-decay-iters, --lr-decay-style; its first step at num_steps 0, one
scheduler step after each iteration).

* cosine decay with warm-up, run as two launches: 6 steps with a checkpoint, then --resume
  to 12, past the decay's end: the resumed steps continue the schedule;
* linear decay with warm-up, in one launch;
* a resume with another schedule is refused before any process starts, naming the
  checkpoint's `lr_schedule`.

    HYPERPIPE=build/hyperpipe python3 tests/oracles/lr_schedule_oracle.py
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

import torch

from verdict import Verdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN = os.path.join(ROOT, "examples", "plans", "tiny-gpt-3stage.json")
DATA = os.path.join(ROOT, "examples", "data", "corpus.txt")


def megatron_rates(steps, max_lr, min_lr, warmup, decay, style):
    """The rate of each of `steps` iterations, as Megatron-LM's train loop drives the
    scheduler."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Transformer Engine and Apex are not installed"
        from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([parameter], lr=0.0)
    scheduler = OptimizerParamScheduler(
        optimizer, init_lr=0.0, max_lr=max_lr, min_lr=min_lr, lr_warmup_steps=warmup,
        lr_decay_steps=decay, lr_decay_style=style, start_wd=0.1, end_wd=0.1,
        wd_incr_steps=steps, wd_incr_style="constant")
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        scheduler.step(1)
    return rates


def launch(hyperpipe, arguments):
    command = [hyperpipe, "launch", "--plan", PLAN, "--data", DATA, "--device", "cpu"]
    return subprocess.run(command + arguments, capture_output=True, text=True)


def metric_rates(path):
    with open(path) as lines:
        return [json.loads(line)["lr"] for line in lines if line.strip()]


def main():
    hyperpipe = os.environ.get("HYPERPIPE", os.path.join(ROOT, "build", "hyperpipe"))
    verdict = Verdict()
    with tempfile.TemporaryDirectory(prefix="hyperpipe-lr-") as work:
        metrics = os.path.join(work, "cosine.jsonl")
        checkpoints = os.path.join(work, "checkpoints")
        cosine = ["--lr", "3e-3", "--min-lr", "3e-4", "--lr-warmup-iters", "3",
                  "--lr-decay-style", "cosine", "--lr-decay-iters", "10", "--metrics", metrics,
                  "--checkpoint-dir", checkpoints]
        first = launch(hyperpipe, cosine + ["--steps", "6"])
        verdict.check("cosine: the first 6 steps run", first.returncode == 0,
                      first.stderr[-400:] if first.returncode else "exit 0")
        resumed = launch(hyperpipe, cosine + ["--steps", "12", "--resume"])
        verdict.check("cosine: resumed to 12 steps", resumed.returncode == 0,
                      resumed.stderr[-400:] if resumed.returncode else "exit 0")
        if first.returncode == 0 and resumed.returncode == 0:
            ours = metric_rates(metrics)
            theirs = megatron_rates(12, 3e-3, 3e-4, 3, 10, "cosine")
            verdict.check("cosine: every step's rate is Megatron-core's", ours == theirs,
                          f"ours {ours}, Megatron-core's {theirs}")

        linear_metrics = os.path.join(work, "linear.jsonl")
        linear = launch(hyperpipe, ["--lr", "1e-3", "--min-lr", "1e-4", "--lr-warmup-iters", "2",
                                    "--lr-decay-style", "linear", "--lr-decay-iters", "7",
                                    "--steps", "9", "--metrics", linear_metrics])
        verdict.check("linear: 9 steps run", linear.returncode == 0,
                      linear.stderr[-400:] if linear.returncode else "exit 0")
        if linear.returncode == 0:
            ours = metric_rates(linear_metrics)
            theirs = megatron_rates(9, 1e-3, 1e-4, 2, 7, "linear")
            verdict.check("linear: every step's rate is Megatron-core's", ours == theirs,
                          f"ours {ours}, Megatron-core's {theirs}")

        other = launch(hyperpipe, cosine[:2] + ["--min-lr", "0"] + cosine[4:] +
                       ["--steps", "12", "--resume"])
        verdict.check("a resume with another schedule is refused before any process starts",
                      other.returncode == 2 and "lr_schedule" in other.stderr
                      and "[rank" not in other.stderr,
                      f"exit {other.returncode}: {other.stderr.strip()[-300:]}")
    print(f"{verdict.failures} failure(s)")
    return 1 if verdict.failures else 0


if __name__ == "__main__":
    sys.exit(main())
