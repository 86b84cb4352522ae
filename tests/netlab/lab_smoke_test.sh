#!/usr/bin/env bash
# CI's network-lab case: tiny-gpt over two hosts in two namespaces joined by one shaped
# 1 Gbit/s link (examples/clusters/lab-two-hosts.yaml). Measures that link across the lab
# (`profile --links`), then trains started torchrun-style and through mpirun. Checks each
# run trains (the loss falls), the prediction from profiled compute and the measured link
# table is within a loose bound of the measured iteration, and the lab leaves nothing
# behind. Exit 77 (skipped, with the
# reason) where this machine cannot build namespaces.
#   tests/netlab/lab_smoke_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: lab_smoke_test.sh BUILD_DIR}
hyperpipe=$build/hyperpipe
plan=examples/plans/tiny-gpt-lab-two-hosts.json
# Loose: CI hosts are shared and the run is short. The lab's own accuracy is measured by
# bench/netlab_claims.sh, not asserted here.
readonly MAX_PREDICTION_ERROR_PERCENT=30
readonly STEPS=6

# shellcheck source=tests/netlab/lab_test_common.sh
source tests/netlab/lab_test_common.sh

"$hyperpipe" profile --model examples/models/tiny-gpt.yaml --cluster examples/clusters/lab-two-hosts.yaml \
  --micro-batch 4 --no-links --out "$work/profiles.json" >"$work/profile.log"

# The link between the two hosts, measured across the lab into the same database: the
# prediction below then interpolates the lab's own table.
bash scripts/netlab.sh run --cluster examples/clusters/lab-two-hosts.yaml -- "$hyperpipe" profile \
  --links --cluster examples/clusters/lab-two-hosts.yaml --out "$work/profiles.json" \
  >"$work/links.log" 2>&1 || fail "profile --links across the lab failed: $(tail -20 "$work/links.log")"
grep -q 'inter_island' "$work/links.log" || fail "no inter-island link measured: $(cat "$work/links.log")"

# check_run LOG: the loss fell and the prediction is near the measurement.
check_run() {
  local log=$1
  local first last error
  first=$(grep -o 'step 1/[0-9]*  loss [0-9.]*' "$log" | awk '{print $NF}')
  last=$(grep -o "step $STEPS/$STEPS  loss [0-9.]*" "$log" | awk '{print $NF}')
  [ -n "$first" ] && [ -n "$last" ] || fail "no loss in $log: $(tail -5 "$log")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "loss $first -> $last did not fall"
  error=$(grep -o 'Iteration: predicted .* error [-+0-9.]*%' "$log" | grep -o '[-+0-9.]*%$' | tr -d '%+')
  [ -n "$error" ] || fail "no prediction in $log"
  awk -v e="$error" -v m="$MAX_PREDICTION_ERROR_PERCENT" 'BEGIN { exit !(e < m && e > -m) }' ||
    fail "predicted against measured: $error% (bound ±$MAX_PREDICTION_ERROR_PERCENT%)"
  echo "ok: loss $first -> $last, prediction error $error%"
}

train=("$hyperpipe" train --plan "$plan" --data examples/data/corpus.txt --steps "$STEPS"
  --profiles "$work/profiles.json")
bash scripts/netlab.sh run --plan "$plan" --logs "$work/env" -- "${train[@]}" >"$work/env.log" 2>&1 ||
  fail "the torchrun-style lab run failed: $(tail -20 "$work/env.log")"
check_run "$work/env.log"

command -v mpirun >/dev/null || fail "mpirun missing (scripts/install-deps.sh installs openmpi-bin)"
bash scripts/netlab.sh run --plan "$plan" --launcher mpirun --logs "$work/mpi" -- "${train[@]}" \
  >"$work/mpi.log" 2>&1 || fail "the mpirun lab run failed: $(tail -20 "$work/mpi.log")"
check_run "$work/mpi.log"

check_no_namespaces_left
