#!/usr/bin/env bash
# HyperPipe's claims about links, measured on the network lab (scripts/netlab.sh, root):
# tiny-gpt on examples/clusters/lab-two-islands.yaml (two islands of two hosts, stand-in
# speeds 0.4 and 0.2, 10 Gbit/s inside an island, 100 Mbit/s between), each plan trained
# in the lab and its prediction (profiled compute, the cluster file's links) printed beside
# the measurement and the replay (the plan simulated again with the compute the run
# measured: what is left is the schedule and communication model's own error).
#   contiguous   stages island by island: the slow link crossed once
#   alternating  the same work per device, stages alternating islands: crossed 3 times
#   1f1b         the planner's hetero-1F1B split, with plain 1F1B's warm-up
#   hetero-1f1b  the same split with the planner's deeper warm-up before the slow link
#   planner      the planner's plan (every schedule kind)
#   uniform      layers split evenly over the four devices in cluster order
#   bash bench/netlab_claims.sh [STEPS] [PASSES]  (about 2 minutes a pass)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-16}
passes=${2:-1}
hyperpipe=build/hyperpipe
model=examples/models/tiny-gpt.yaml
cluster=examples/clusters/lab-two-islands.yaml
readonly GLOBAL_BATCH=32
readonly MICRO_BATCH=4

bash scripts/netlab.sh check
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$hyperpipe" profile --model "$model" --cluster "$cluster" --micro-batch 1,2,4,8 --no-links \
  --out "$work/profiles.json" >/dev/null
# The lab's links, measured across its hosts into the same database (some 15 s: the slow
# link's ladder stops at 4 MiB, 0.35 s each way).
bash scripts/netlab.sh run --cluster "$cluster" -- "$hyperpipe" profile --links --cluster "$cluster" \
  --out "$work/profiles.json" >"$work/links.log" 2>&1 || {
  tail -20 "$work/links.log"
  exit 1
}
grep -A11 'island' "$work/links.log" | sed 's/^\[rank 0\] //'
plan=("$hyperpipe" plan --model "$model" --cluster "$cluster" --global-batch "$GLOBAL_BATCH"
  --profiles "$work/profiles.json")
"${plan[@]}" --out "$work/planner.json" >/dev/null
"${plan[@]}" --baseline uniform --out "$work/uniform.json" >/dev/null
"${plan[@]}" --schedule hetero-1f1b --micro-batch "$MICRO_BATCH" --out "$work/hetero-1f1b.json" \
  >/dev/null

# The hand-made plans: tiny-gpt's layers are the embedding (0), six blocks (1-6) and the
# head (7); devices 0, 1 are island "fast" (speed 0.4), 2, 3 island "slow" (0.2). Both
# splits give each device the same work per unit of speed: the embedding and two blocks,
# two blocks on the other fast device, one block, one block and the head.
python3 - "$work" "$PWD/$model" "$PWD/$cluster" "$GLOBAL_BATCH" "$MICRO_BATCH" <<'EOF'
import json, sys
work, model, cluster, batch, micro = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def plan(name, stages, schedule="1f1b"):
    return {"format": "hyperpipe.plan/1", "name": name, "model": model, "cluster": cluster,
            "micro_batch_size": micro, "micro_batches": batch // micro, "schedule": schedule,
            "stages": [{"layers": l, "devices": [d]} for l, d in stages]}
contiguous = plan("contiguous", [([0, 3], 0), ([3, 5], 1), ([5, 6], 2), ([6, 8], 3)])
alternating = plan("alternating", [([0, 3], 0), ([3, 4], 2), ([4, 6], 1), ([6, 8], 3)])
hetero = json.load(open(f"{work}/hetero-1f1b.json"))
plain = dict(hetero, schedule="1f1b")
for name, p in [("contiguous", contiguous), ("alternating", alternating), ("1f1b", plain)]:
    json.dump(p, open(f"{work}/{name}.json", "w"), indent=1)
EOF

printf '%-12s %-28s %12s %12s %8s %8s\n' plan stages predicted measured error replay
for ((pass = 0; pass < passes; ++pass)); do
  for name in contiguous alternating 1f1b hetero-1f1b planner uniform; do
    log=$work/$name.log
    # The compute of this run's micro-batch size profiled just before it, as in
    # bench/accuracy.sh: this host's speed drifts by 10-30% over minutes.
    micro=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["micro_batch_size"])' \
      "$work/$name.json")
    "$hyperpipe" profile --model "$model" --cluster "$cluster" --micro-batch "$micro" --no-links \
      --out "$work/profiles.json" >/dev/null
    bash scripts/netlab.sh run --plan "$work/$name.json" -- "$hyperpipe" train \
      --plan "$work/$name.json" --data examples/data/corpus.txt --steps "$steps" \
      --profiles "$work/profiles.json" >"$log" 2>&1 || {
      echo "$name: the lab run failed:"
      tail -20 "$log"
      exit 1
    }
    python3 - "$name" "$work/$name.json" "$log" <<'EOF'
import json, re, sys
name, plan_path, log = sys.argv[1:]
text = open(log).read()
plan = json.load(open(plan_path))
schedule = plan.get("schedule", "1f1b")
kind = schedule if isinstance(schedule, str) else schedule["kind"]
warmup = "" if isinstance(schedule, str) else ",".join(map(str, schedule.get("warmup", [])))
stages = " ".join("{}-{}:{}".format(s["layers"][0], s["layers"][1] - 1,
                                     "".join(map(str, s["devices"]))) for s in plan["stages"])
predicted = re.search(r"predicted ([0-9.]+ \w+) per iteration", text)
measured = re.search(r"measured ([0-9.]+ \w+) \(median", text)
error = re.search(r"\(median of \d+ steps\): error ([-+0-9.]+%)", text)
replay = re.search(r"measured compute: [0-9.]+ \w+, error ([-+0-9.]+%)", text)
if not (predicted and measured and error and replay):
    sys.exit(f"{name}: no prediction in the run's output:\n{text[-2000:]}")
label = f"{kind}" + (f" [{warmup}]" if warmup else "")
print(f"{name:<12} {stages:<28} {predicted[1]:>12} {measured[1]:>12} {error[1]:>8} {replay[1]:>8}   {label}, mb {plan['micro_batch_size']}x{plan['micro_batches']}")
EOF
  done
done
