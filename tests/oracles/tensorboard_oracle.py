"""TensorBoard's own reader (tensorboard's EventAccumulator, pinned in
scripts/requirements-oracles.txt) reads the event file `train --tensorboard DIR` writes:
every scalar of every step, equal to the metrics file's (as float32, TensorBoard's
simple_value), at steps counted from 1, and the validation loss after the last step.

    HYPERPIPE=build/hyperpipe python3 tests/oracles/tensorboard_oracle.py
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy

from verdict import Verdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN = os.path.join(ROOT, "examples", "plans", "tiny-gpt-3stage.json")
DATA = os.path.join(ROOT, "examples", "data", "corpus.txt")
STEPS = 5

# TensorBoard's tag: the metrics file's field it holds.
TAGS = {
    "train/loss": "loss",
    "train/learning_rate": "lr",
    "train/grad_norm": "grad_norm",
    "train/step_time_s": "seconds",
    "train/tokens_per_s": "tokens_per_s",
}


def main():
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    hyperpipe = os.environ.get("HYPERPIPE", os.path.join(ROOT, "build", "hyperpipe"))
    verdict = Verdict()
    with tempfile.TemporaryDirectory(prefix="hyperpipe-tensorboard-") as work:
        logs = os.path.join(work, "tensorboard")
        metrics = os.path.join(work, "metrics.jsonl")
        run = subprocess.run(
            [hyperpipe, "launch", "--plan", PLAN, "--data", DATA, "--device", "cpu", "--steps",
             str(STEPS), "--lr-warmup-iters", "2", "--lr-decay-style", "cosine", "--metrics",
             metrics, "--tensorboard", logs, "--eval-interval", str(STEPS)],
            capture_output=True, text=True)
        verdict.check("the run", run.returncode == 0,
                      run.stderr[-400:] if run.returncode else "exit 0")
        if run.returncode != 0:
            return 1
        files = glob.glob(os.path.join(logs, "events.out.tfevents.*"))
        verdict.check("one event file, from rank 0 alone", len(files) == 1, str(files))
        verdict.check("the report names the folder", logs in run.stdout, logs)
        accumulator = EventAccumulator(logs, size_guidance={"scalars": 0})
        accumulator.Reload()
        with open(metrics) as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
        tags = accumulator.Tags()["scalars"]
        for tag, field in TAGS.items():
            if tag not in tags:
                verdict.check(tag, False, f"missing; TensorBoard read {tags}")
                continue
            events = accumulator.Scalars(tag)
            steps = [event.step for event in events]
            values = [event.value for event in events]
            expected = [float(numpy.float32(row[field])) for row in rows]
            verdict.check(f"{tag}: steps 1 to {STEPS}", steps == list(range(1, STEPS + 1)),
                          str(steps))
            verdict.check(f"{tag}: the metrics file's steps", steps == [row["step"] for row in rows],
                          str([row["step"] for row in rows]))
            verdict.check(f"{tag}: the metrics file's {field}", values == expected,
                          f"TensorBoard {values}, metrics {expected}")
        peaks = accumulator.Scalars("memory/rank0_device_peak_bytes") \
            if "memory/rank0_device_peak_bytes" in tags else []
        verdict.check("memory/rank0_device_peak_bytes: a positive peak every step",
                      len(peaks) == STEPS and all(event.value > 0 for event in peaks),
                      str([event.value for event in peaks]))
        validation = accumulator.Scalars("validation/loss") if "validation/loss" in tags else []
        verdict.check("validation/loss: after the last step, the metrics file's",
                      [(e.step, e.value) for e in validation] ==
                      [(STEPS, float(numpy.float32(rows[-1]["validation_loss"])))],
                      str([(e.step, e.value) for e in validation]))
        times = [event.wall_time for event in accumulator.Scalars("train/loss")]
        expected_times = [row["time"] for row in rows]
        verdict.check("wall times: the metrics file's",
                      numpy.allclose(times, expected_times, rtol=0, atol=1e-6),
                      f"{times} against {expected_times}")
    print(f"{verdict.failures} failure(s)")
    return 1 if verdict.failures else 0


if __name__ == "__main__":
    sys.exit(main())
