#!/usr/bin/env bash
# One host of the network lab's elastic case (lab_elastic_test.sh), run by
# `scripts/netlab.sh run --launcher per-host` in that host's namespace: host 0 leads
# (`hyperpipe launch --elastic --devices-here`); every other host runs `hyperpipe agent`,
# dies outright (agent and ranks, SIGKILL) once the run has a checkpoint, and comes back
# once the run has recovered without it, as a host rebooted would (the time of the kill
# in WORK_DIR/killed_at).
#   tests/netlab/elastic_lab_host.sh BUILD_DIR WORK_DIR STEPS
set -euo pipefail
build=${1:?usage: elastic_lab_host.sh BUILD_DIR WORK_DIR STEPS}
work=${2:?usage: elastic_lab_host.sh BUILD_DIR WORK_DIR STEPS}
steps=${3:?usage: elastic_lab_host.sh BUILD_DIR WORK_DIR STEPS}
hyperpipe=$build/hyperpipe
checkpoints=$work/checkpoints
# A lab host's heartbeat crosses no network (the checkpoint directory is this machine's),
# so the default timeout would do; 2 s keeps the case short.
readonly HEARTBEAT_TIMEOUT=2
readonly PORT=29500

if [ "$NETLAB_HOST" = 0 ]; then
  exec "$hyperpipe" launch --elastic --plan examples/plans/tiny-gpt-lab-two-hosts.json \
    --devices-here "$NETLAB_HOST_DEVICES" --master-addr "$NETLAB_HOST_ADDRESS" --port "$PORT" \
    --heartbeat-timeout "$HEARTBEAT_TIMEOUT" --data examples/data/corpus.txt --steps "$steps" \
    --checkpoint-dir "$checkpoints" --checkpoint-every 5 --timeout 20 \
    --metrics "$work/metrics.jsonl"
fi

agent() {
  "$hyperpipe" agent --checkpoint-dir "$checkpoints" --devices "$NETLAB_HOST_DEVICES" \
    --address "$NETLAB_HOST_ADDRESS" --name "$NETLAB_HOST_NAME" \
    --heartbeat-timeout "$HEARTBEAT_TIMEOUT" --wait 60 &
  AGENT=$!
}

# wait_until SECONDS CONDITION…: polls CONDITION every 0.1 s; fails after SECONDS.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.1
  done
}
checkpointed() { compgen -G "$checkpoints/step-*/checkpoint.json" >/dev/null; }
recovered() { grep -q '"total"' "$checkpoints/elastic/recovery.json" 2>/dev/null; }

agent
wait_until 120 checkpointed
# The host dies: its agent and the ranks it started, at once.
# The file has no newline at its end: read says so with status 1.
read -ra ranks <"/proc/$AGENT/task/$AGENT/children" || true
date +%s.%N >"$work/killed_at"
kill -KILL "$AGENT" "${ranks[@]}"
wait "$AGENT" || true
echo "host $NETLAB_HOST_NAME: killed its agent and rank(s) ${ranks[*]}"
wait_until 120 recovered
echo "host $NETLAB_HOST_NAME: back"
agent
wait "$AGENT"
