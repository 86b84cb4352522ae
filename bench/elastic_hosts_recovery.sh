#!/usr/bin/env bash
# Time to recover from a lost host in an elastic run across hosts (issue 21): the network
# lab's two hosts (examples/clusters/lab-two-hosts.yaml, namespaces joined by a shaped
# 1 Gbit/s link), led from host 0 with an agent on host 1 (tests/netlab/elastic_lab_host.sh).
# Once the first checkpoint is complete, host 1's agent and rank are killed outright; from
# the kill to the first step on the new plan (host 0 alone), split into:
#   detection   the kill until the leader has stopped its own ranks and given host 1 up
#               (its heartbeat unchanged for --heartbeat-timeout, 2 s here);
#   re-plan     the planner on the devices left;
#   load        the new processes started, joined, built their layers and loaded the
#               checkpoint;
#   first step  the first step on the new plan;
# and the whole. Needs root (namespaces); each run's files are kept under
# build/elastic-hosts-recovery/.
# Usage: bash bench/elastic_hosts_recovery.sh [runs, default 3] (from the repository root,
#        after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=build/elastic-hosts-recovery
rm -rf "$out"
mkdir -p "$out"
export NETLAB_LAYOUT=${NETLAB_LAYOUT:-build/tests/netlab-layout}
for run in $(seq 1 "$runs"); do
  dir=$(realpath "$out")/run$run
  mkdir -p "$dir"
  bash scripts/netlab.sh run --cluster examples/clusters/lab-two-hosts.yaml --launcher per-host \
    --logs "$dir/hosts" -- bash tests/netlab/elastic_lab_host.sh "$(realpath build)" "$dir" 60 \
    >"$dir/lab.log" 2>&1 || { tail -30 "$dir/lab.log"; exit 1; }
done

python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = []
for run in range(1, runs + 1):
    killed = float(open(f"{out}/run{run}/killed_at").read())
    loss = json.load(open(f"{out}/run{run}/checkpoints/elastic/recovery.json"))["recoveries"][0]
    t, s = loss["times"], loss["seconds"]
    rows.append({"detection": t["others_stopped"] - killed, "replan": s["replan"],
                 "load": t["checkpoint_loaded"] - t["relaunched"], "first step": s["first_step"],
                 "total": t["first_step_done"] - killed})
print("run  " + "  ".join(f"{k:>11}" for k in rows[0]))
for i, row in enumerate(rows, 1):
    print(f"{i:>3}  " + "  ".join(f"{v:>10.3f}s" for v in row.values()))
print("med  " + "  ".join(f"{statistics.median(r[k] for r in rows):>10.3f}s" for k in rows[0]))
PY
