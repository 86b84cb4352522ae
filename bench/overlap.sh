#!/usr/bin/env bash
# Overlapped gradient all-reduce, predicted and measured, off and on: a GPT with wide
# layers and short sequences (so the gradients' all-reduce is a visible share of the
# iteration) on one device group of dp 2 (two stand-ins of cpu-one-node) with two
# interleaved chunks, so the later chunk's bucket is summed while the earlier chunk's last
# backwards run. Profiles the host first (as a user would, links included), then runs the
# plan PASSES times each way, alternating, and prints the medians of the runs' predicted
# and measured iterations (each run's own: its median step) from METRICS.prediction.json.
# Usage: bash bench/overlap.sh [STEPS] [PASSES]   (after scripts/build.sh; about 4 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-20}
passes=${2:-3}
hp=./build/hyperpipe
out=build/overlap
rm -rf "$out"
mkdir -p "$out"
model=$PWD/$out/wide-gpt.yaml
cat >"$model" <<YAML
name: wide-gpt
flavour: gpt
hidden: 384
layers: 4
heads: 6
vocab: 256
seq_len: 16
tied_embeddings: true
dropout: false
dtype: fp32
YAML

# Each dp rank runs 4 of the micro-batch's 8 sequences.
$hp profile --model "$model" --cluster cpu-one-node --micro-batch 4 --out "$out/profiles.json" \
  >/dev/null
for overlap in false true; do
  cat >"$out/plan-$overlap.json" <<JSON
{"format": "hyperpipe.plan/1", "model": "$model", "cluster": "cpu-one-node",
 "overlap_allreduce": $overlap, "micro_batch_size": 8, "micro_batches": 4,
 "schedule": {"kind": "interleaved", "chunks": 2},
 "stages": [{"layers": [0, 3], "devices": [0, 1]}, {"layers": [3, 6], "devices": [0, 1]}]}
JSON
done
for pass in $(seq "$passes"); do
  for overlap in false true; do
    $hp launch --plan "$out/plan-$overlap.json" --data examples/data/corpus.txt \
      --steps "$steps" --profiles "$out/profiles.json" \
      --metrics "$out/metrics-$overlap-$pass.jsonl" >"$out/log-$overlap-$pass.txt" 2>&1
  done
done
python3 - "$out" "$passes" <<'PY'
import json, statistics, sys
out, passes = sys.argv[1], int(sys.argv[2])
def runs(o):
    return [json.load(open(f"{out}/metrics-{o}-{p}.jsonl.prediction.json"))
            for p in range(1, passes + 1)]
medians = {}
for o in ("false", "true"):
    r = runs(o)
    predicted = statistics.median(x["predicted_iteration_s"] for x in r)
    measured = statistics.median(x["measured_iteration_s"] for x in r)
    medians[o] = (predicted, measured)
    each = ", ".join(f"{x['measured_iteration_s'] * 1e3:.1f}" for x in r)
    print(f"overlap_allreduce {o:5}: predicted {predicted * 1e3:6.1f} ms, measured "
          f"{measured * 1e3:6.1f} ms (error {100 * (predicted / measured - 1):+.1f}%; "
          f"runs {each} ms)")
p = medians["false"][0] / medians["true"][0]
m = medians["false"][1] / medians["true"][1]
print(f"overlap speed-up: predicted {p:.3f}x, measured {m:.3f}x")
PY
