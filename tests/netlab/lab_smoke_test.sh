#!/usr/bin/env bash
# CI's network-lab case: tiny-gpt over two hosts in two namespaces joined by one shaped
# 1 Gbit/s link (examples/clusters/lab-two-hosts.yaml). Measures that link across the lab
# (`profile --links`), then trains started torchrun-style and through mpirun. Checks each
# run trains (the loss falls) and prints its prediction against the measured iteration
# (how close it comes is bench/netlab_claims.sh's to measure, not a test's to assert: a
# busy machine moves it); that while the first run trains, rank 0's rendezvous store
# listens on host 0's lab address alone (another address of host 0 refuses host 1); and
# that the lab leaves nothing behind. Exit 77 (skipped, with the reason) where this
# machine cannot build namespaces.
#   tests/netlab/lab_smoke_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: lab_smoke_test.sh BUILD_DIR}
hyperpipe=$build/hyperpipe
plan=examples/plans/tiny-gpt-lab-two-hosts.json
readonly STEPS=6
# scripts/netlab.sh's MASTER_PORT, and an address of host 0's island that no host has.
readonly STORE_PORT=29500
readonly SPARE_HOST_OCTET=250

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

# check_run LOG: the loss fell, and the run printed its prediction against the measurement.
check_run() {
  local log=$1
  local first last error
  first=$(grep -o 'step 1/[0-9]*  loss [0-9.]*' "$log" | awk '{print $NF}')
  last=$(grep -o "step $STEPS/$STEPS  loss [0-9.]*" "$log" | awk '{print $NF}')
  [ -n "$first" ] && [ -n "$last" ] || fail "no loss in $log: $(tail -5 "$log")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "loss $first -> $last did not fall"
  error=$(grep -o "step's iteration: predicted .* error [-+0-9.]*%" "$log" | grep -o '[-+0-9.]*%$')
  [ -n "$error" ] || fail "no prediction in $log"
  echo "ok: loss $first -> $last (prediction error $error, not asserted)"
}

# probe_store LAB_PID: while the lab started by LAB_PID (scripts/netlab.sh names its lab
# after its PID) trains, rank 0's store listens on host 0's address alone: a second address
# of host 0 refuses host 1's connection to the store's port, host 0's own takes it.
probe_store() {
  local pid=$1 lab layout host0 host1 address0 veth0 spare listener="" refused
  lab=$((pid % 100000))
  layout=$("$NETLAB_LAYOUT" --lab "$lab" --plan "$plan")
  read -r host0 address0 veth0 < <(awk '$1 == "host" && $2 == 0 { print $5, $6, $7 }' <<<"$layout")
  host1=$(awk '$1 == "host" && $2 == 1 { print $5 }' <<<"$layout")
  spare="${address0%.*}.$SPARE_HOST_OCTET"
  while [ -z "$listener" ]; do
    kill -0 "$pid" 2>/dev/null || fail "the run ended before its store was seen listening"
    listener=$(ip netns exec "$host0" ss -Hltn "sport = :$STORE_PORT" 2>/dev/null |
      awk '{ print $4 }' || true)
    sleep 0.1
  done
  [ "$listener" = "$address0:$STORE_PORT" ] ||
    fail "the store listens on '$listener', not on host 0's lab address $address0 alone"
  ip netns exec "$host0" ip addr add "$spare/24" dev "$veth0"
  connect() { ip netns exec "$host1" timeout 5 bash -c "exec 3<>/dev/tcp/$1/$STORE_PORT" 2>&1; }
  if refused=$(connect "$spare"); then fail "host 1 reached the store at host 0's other address $spare"; fi
  [[ $refused == *"Connection refused"* ]] || fail "host 1 to $spare:$STORE_PORT: $refused"
  connect "$address0" >/dev/null || fail "host 1 cannot reach the store at $address0:$STORE_PORT"
  echo "ok: the store listens on $listener alone; $spare:$STORE_PORT refused host 1"
}

train=("$hyperpipe" train --plan "$plan" --data examples/data/corpus.txt --steps "$STEPS"
  --profiles "$work/profiles.json")
bash scripts/netlab.sh run --plan "$plan" --logs "$work/env" -- "${train[@]}" >"$work/env.log" 2>&1 &
lab_pid=$!
# A failed probe stops the lab it probed (netlab.sh tears it down on TERM).
trap 'kill "$lab_pid" 2>/dev/null && wait "$lab_pid"; rm -rf "$work"' EXIT
probe_store "$lab_pid"
wait "$lab_pid" || fail "the torchrun-style lab run failed: $(tail -20 "$work/env.log")"
check_run "$work/env.log"

command -v mpirun >/dev/null || fail "mpirun missing (scripts/install-deps.sh installs openmpi-bin)"
bash scripts/netlab.sh run --plan "$plan" --launcher mpirun --logs "$work/mpi" -- "${train[@]}" \
  >"$work/mpi.log" 2>&1 || fail "the mpirun lab run failed: $(tail -20 "$work/mpi.log")"
check_run "$work/mpi.log"

check_no_namespaces_left
