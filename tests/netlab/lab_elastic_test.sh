#!/usr/bin/env bash
# CI's elastic network-lab case: tiny-gpt over the lab's two hosts (namespaces joined by a
# shaped 1 Gbit/s link), led from host 0 with an agent on host 1 (elastic_lab_host.sh).
# Host 1 dies outright after the first checkpoint and comes back after the recovery:
# the run must finish every step, blame host 1 for the loss, and leave nothing behind;
# host 1's agent must end with the run. Exit 77 (skipped, with the reason) where this
# machine cannot build namespaces.
#   tests/netlab/lab_elastic_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: lab_elastic_test.sh BUILD_DIR}
# Enough steps (0.2 to 0.5 s each in the lab, the stand-ins being slow) that the loss,
# the recovery and the host's return come before the run's end.
readonly STEPS=60

# shellcheck source=tests/netlab/lab_test_common.sh
source tests/netlab/lab_test_common.sh

bash scripts/netlab.sh run --cluster examples/clusters/lab-two-hosts.yaml --launcher per-host \
  --logs "$work/hosts" -- bash tests/netlab/elastic_lab_host.sh "$build" "$work" "$STEPS" \
  >"$work/lab.log" 2>&1 || fail "the elastic lab run failed: $(grep -v '\[rank [0-9]*\] step' "$work/lab.log" | tail -30)"

recovery=$work/checkpoints/elastic/recovery.json
python3 - "$recovery" "$work/metrics.jsonl" "$STEPS" <<'PY' || fail "$(grep -v '^\[host [01]\] \[rank' "$work/lab.log" | tail -30)"
import json, sys
recoveries = json.load(open(sys.argv[1]))["recoveries"]
steps = [json.loads(line)["step"] for line in open(sys.argv[2])]
first = recoveries[0]
assert first["kind"] == "loss", first
assert first["lost"]["host"] == "v0" and first["lost"]["devices"] == [1], first["lost"]
assert steps == list(range(1, int(sys.argv[3]) + 1)), f"steps in the metrics: {steps}"
print(f"ok: host v0 lost; recovered in {first['seconds']['total']:.2f} s "
      f"(stopping {first['seconds']['stopping']:.2f} s); then "
      + (", ".join(r["kind"] for r in recoveries[1:]) or "no further change of plan"))
PY
grep -q "\[agent v0\] the run finished" "$work/lab.log" || fail "host 1's agent did not end with the run"
# Back, its device is offered again and answered (taken, or kept as a spare, as the planner says).
[ "$(grep -c 'agent v0 offers device 1' "$work/lab.log")" -eq 2 ] ||
  fail "host 1's device was not offered again after its return"
grep -q "device 1 (V100-16GB) offered: " "$work/lab.log" || fail "the leader did not answer host 1's return"
grep -E '^\[host [0-9]+\] (\[elastic\]|\[agent|host )' "$work/lab.log"

check_no_namespaces_left
