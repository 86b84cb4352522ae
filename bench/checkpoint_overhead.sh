#!/usr/bin/env bash
# What checkpointing costs a run's steps (issue 21): the example plan tiny-gpt-3stage (the
# A100, V100 and T4 stand-ins of cpu-emulated) trains STEPS steps without checkpoints,
# with one every 10 steps and with one every step, in alternating passes (this host's
# speed drifts by several per cent over a minute). A step's wall time is the gap between
# rank 0 finishing it and finishing the one before (the metrics' `time`), which holds a
# save after it; the first step (warm-up) is left out. Prints each setting's mean step and
# its overhead over the run without checkpoints, pass by pass and the median over passes,
# and the checkpoint's size. WRITE_DELAY (seconds, default 0) emulates slow storage: each
# save's writing thread waits that long first (train --checkpoint-write-delay), which a
# synchronous save would add to the step it follows.
# Usage: bash bench/checkpoint_overhead.sh [steps, default 31] [passes, default 2] [write delay]
#        (from the repository root, after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-31}
passes=${2:-2}
delay=${3:-0}
hp=./build/hyperpipe
out=build/checkpoint-overhead
rm -rf "$out"
mkdir -p "$out"

for pass in $(seq 1 "$passes"); do
  for every in 0 10 1; do
    dir="$out/pass$pass-every$every"
    mkdir -p "$dir"
    checkpoints=()
    [ "$every" -gt 0 ] && checkpoints=(--checkpoint-dir "$dir/checkpoints" --checkpoint-every "$every"
      --checkpoint-write-delay "$delay")
    $hp launch --plan examples/plans/tiny-gpt-3stage.json --data examples/data/corpus.txt \
      --steps "$steps" --metrics "$dir/metrics.jsonl" "${checkpoints[@]}" >"$dir/log.txt" 2>&1 ||
      { cat "$dir/log.txt"; exit 1; }
  done
done

python3 - "$out" "$passes" <<'PY'
import glob, json, os, statistics, sys
out, passes = sys.argv[1], int(sys.argv[2])

def mean_step(path):
    times = [json.loads(line)["time"] for line in open(path)]
    return (times[-1] - times[1]) / (len(times) - 2)  # from the end of the first step

overheads = {10: [], 1: []}
for p in range(1, passes + 1):
    base = mean_step(f"{out}/pass{p}-every0/metrics.jsonl")
    cells = [f"none {base * 1e3:.0f} ms"]
    for every in (10, 1):
        step = mean_step(f"{out}/pass{p}-every{every}/metrics.jsonl")
        overheads[every].append(100 * (step / base - 1))
        cells.append(f"every {every}: {step * 1e3:.0f} ms ({overheads[every][-1]:+.1f}%)")
    print(f"pass {p}: " + ", ".join(cells))
print("median over passes: " +
      ", ".join(f"every {every}: {statistics.median(o):+.1f}%" for every, o in overheads.items()))
one = sorted(glob.glob(f"{out}/pass1-every1/checkpoints/step-*"))[-1]
size = sum(os.path.getsize(f) for f in glob.glob(f"{one}/*"))
print(f"one checkpoint: {size / 2**20:.1f} MiB ({os.path.basename(one)})")
PY
