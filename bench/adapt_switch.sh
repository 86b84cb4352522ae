#!/usr/bin/env bash
# Re-planning when a device slows down (`launch --adapt`, issue 21): the example plan
# tiny-gpt-3stage (A100, V100 and T4 stand-ins of cpu-emulated) trains with profiles taken
# just before; once step 4 is checkpointed the A100 stand-in drops to a fifth of its speed
# (`--stand-in-speeds`, emulated throttling). Prints the step time of the old plan before
# and after the throttle, the new plan's once it has switched, the predicted iterations
# the switch was decided on, and what the switch cost (from the old plan's processes ending
# to the first step on the new one). Usage: bash bench/adapt_switch.sh [steps, default 40]
# (from the repository root, after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-40}
hp=./build/hyperpipe
out=build/adapt-switch
rm -rf "$out"
mkdir -p "$out"
$hp profile --model examples/models/tiny-gpt.yaml --cluster cpu-emulated --micro-batch 1,2,4,8 \
  --out "$out/profiles.json" >/dev/null 2>&1
echo "# device speed" >"$out/speeds.txt"
$hp launch --adapt --plan examples/plans/tiny-gpt-3stage.json --data examples/data/corpus.txt \
  --steps "$steps" --checkpoint-dir "$out/checkpoints" --checkpoint-every 4 \
  --profiles "$out/profiles.json" --stand-in-speeds "$out/speeds.txt" \
  --metrics "$out/metrics.jsonl" >"$out/log.txt" 2>&1 &
launcher=$!
trap 'kill $launcher 2>/dev/null || true' EXIT
until [ -f "$out/checkpoints/step-00000004/checkpoint.json" ]; do
  kill -0 "$launcher" 2>/dev/null || { cat "$out/log.txt"; exit 1; }
  sleep 0.05
done
echo "0 0.2" >"$out/speeds.txt"
wait "$launcher" || { cat "$out/log.txt"; exit 1; }
grep -h "\[adapt\]\|\[elastic\]" "$out/log.txt" | sed 's/^\[rank 0\] //'

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
seconds = [json.loads(line)["seconds"] for line in open(f"{out}/metrics.jsonl")]
switches = [r for r in json.load(open(f"{out}/checkpoints/elastic/recovery.json"))["recoveries"]
            if r["kind"] == "switch"]
if not switches:
    sys.exit("no switch: the run kept its plan")
first = switches[0]
at = first["steps_done"]
before = statistics.median(seconds[1:4])
throttled = statistics.median(seconds[5:at])
after = statistics.median(seconds[at + 1:(switches[1]["steps_done"] if len(switches) > 1 else None)])
p = first["predicted_iteration_s"]
print(f"old plan {before * 1e3:.0f} ms/step; throttled {throttled * 1e3:.0f} ms; after the "
      f"switch at step {at} {after * 1e3:.0f} ms ({throttled / after:.2f}× faster); predicted at "
      f"the measured speeds {p['before'] * 1e3:.0f} → {p['after'] * 1e3:.0f} ms; switch "
      f"{first['seconds']['total']:.2f} s (estimated {first['switch_cost_estimate_s']:.2f} s)")
PY
