#!/usr/bin/env bash
# The network lab: a cluster file's hosts as Linux network namespaces of this machine,
# joined by veth pairs, one bridge per island and a router between islands, each link
# shaped with tc to the cluster's figures; then one `hyperpipe train` (or any command) per
# rank of a plan, each in its host's namespace, started the way a multi-host launcher
# would (torchrun-style variables, or OpenMPI's mpirun). Everything it creates is removed
# on exit, on Ctrl-C and on failure. The layout comes from build/tests/netlab-layout
# (tests/netlab/netlab_layout.h explains it).
#
#   scripts/netlab.sh check                  can this machine build a lab? (0, or 77 + why)
#   scripts/netlab.sh run --plan P [--cluster C] [--launcher env|mpirun] [--logs DIR] \
#       -- hyperpipe train --plan P --data D --steps 5 …
#   scripts/netlab.sh run --cluster C -- hyperpipe profile --links --cluster C --out P
#                                            (no plan: one rank per device of C, in order)
#   scripts/netlab.sh run --cluster C --launcher per-host [--logs DIR] -- COMMAND …
#                                            (COMMAND once per host, in its namespace, with
#                                             NETLAB_HOST, NETLAB_HOST_NAME,
#                                             NETLAB_HOST_ADDRESS, NETLAB_HOST_DEVICES (the
#                                             host's device ids, comma-separated),
#                                             NETLAB_MASTER_ADDR (host 0's) and
#                                             HYPERPIPE_JOB_TOKEN: a launcher per host)
#   scripts/netlab.sh down LAB               removes a lab left behind by a killed run
#
# Exit status: the command's (the first failing rank's), 77 when namespaces cannot be
# made here (not root, no CAP_NET_ADMIN, no veth or tbf in the kernel), 2 for bad use.
set -euo pipefail
cd "$(dirname "$0")/.."

# ctest's and automake's "skipped" status: a test that needs the lab reports a skip.
readonly EXIT_UNAVAILABLE=77
readonly LAYOUT_TOOL="${NETLAB_LAYOUT:-build/tests/netlab-layout}"
# tbf's bucket: 0.2 ms of the rate, at least two full Ethernet frames. A larger bucket lets
# a message that fits in it pass at the veth's own speed (a 128 KiB activation through a
# 128 KiB bucket crossed a 100 Mbit/s link in no time); larger GSO packets tbf segments
# itself. Its queue holds another 50 ms of the rate, so TCP sees delay before loss.
readonly TBF_MIN_BURST_BYTES=$((2 * 1514))
readonly TBF_BURST_SECONDS=0.0002
readonly TBF_QUEUE_SECONDS=0.05
# How long a rank gets to stop after SIGTERM before SIGKILL (as hyperpipe launch's grace).
readonly STOP_GRACE_SECONDS=5

say() { echo "netlab: $*" >&2; }
usage() {
  sed -n '/^#   scripts/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Why this machine cannot build a lab, or nothing.
unavailable_reason() {
  if [ "$(id -u)" -ne 0 ]; then echo "not root (namespaces and tc need CAP_NET_ADMIN)"; return; fi
  if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    echo "ip or tc missing (install iproute2: scripts/install-deps.sh)"
    return
  fi
  local probe="hpprobe$$"
  if ! ip netns add "$probe" 2>/dev/null; then echo "cannot create a network namespace"; return; fi
  local reason=""
  if ! ip link add "${probe}a" netns "$probe" type veth peer name "${probe}b" netns "$probe" \
    2>/dev/null; then
    reason="cannot create a veth pair (no CONFIG_VETH)"
  elif ! ip netns exec "$probe" tc qdisc add dev "${probe}a" root tbf rate 1gbit burst 128kb \
    limit 1mb 2>/dev/null; then
    reason="cannot shape with tc tbf (no CONFIG_NET_SCH_TBF)"
  fi
  ip netns del "$probe" 2>/dev/null || true
  echo "$reason"
}

# Whether tc can add latency here (sch_netem); without it the lab shapes bandwidth only.
have_netem() {
  local probe="hpnetem$$" ok=1
  ip netns add "$probe" 2>/dev/null || return 1
  ip netns exec "$probe" ip link add "${probe}a" type veth peer name "${probe}b" 2>/dev/null &&
    ip netns exec "$probe" tc qdisc add dev "${probe}a" root netem delay 1ms 2>/dev/null && ok=0
  ip netns del "$probe" 2>/dev/null || true
  return $ok
}

# shape NETNS DEV RATE_BITS DELAY_US: the egress of DEV in NETNS (nothing for rate 0).
shape() {
  local netns=$1 dev=$2 rate=$3 delay=$4
  [ "$rate" -gt 0 ] || return 0
  local burst limit
  burst=$(awk -v r="$rate" -v s="$TBF_BURST_SECONDS" -v m="$TBF_MIN_BURST_BYTES" \
    'BEGIN { b = r / 8 * s; printf "%d", (b > m ? b : m) }')
  limit=$(awk -v r="$rate" -v s="$TBF_QUEUE_SECONDS" -v b="$burst" \
    'BEGIN { printf "%d", r / 8 * s + b }')
  if [ "$NETEM" = 1 ] && [ "$delay" -gt 0 ]; then
    # netem delays, tbf below it paces: netem's own rate has no burst and costs a timer
    # per packet at 10 Gbit/s.
    ip netns exec "$netns" tc qdisc add dev "$dev" root handle 1: netem delay "${delay}us" \
      limit 100000
    ip netns exec "$netns" tc qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "${rate}bit" \
      burst "$burst" limit "$limit"
  else
    ip netns exec "$netns" tc qdisc add dev "$dev" root tbf rate "${rate}bit" burst "$burst" \
      limit "$limit"
  fi
}

# Everything of lab $1: its processes first (by the PIDs we started), then its namespaces,
# which take their veths, bridges and qdiscs with them.
teardown() {
  local lab=$1 pid netns waited
  for pid in "${RANK_PIDS[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${RANK_PIDS[@]}"; do
    for ((waited = 0; waited < STOP_GRACE_SECONDS * 10; ++waited)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  RANK_PIDS=()
  for netns in $(ip netns list | awk '{print $1}' | grep "^hp${lab}-" || true); do
    ip netns del "$netns" 2>/dev/null || say "could not remove namespace $netns"
  done
}

# Builds the lab of layout file $1 (netlab-layout's lines).
build_lab() {
  local layout=$1 switch
  switch=$(awk '$1 == "switch" { print $2 }' "$layout")
  ip netns add "$switch"
  ip netns exec "$switch" ip link set lo up
  ip netns exec "$switch" sysctl -qw net.ipv4.ip_forward=1
  local kind index name bridge gateway subnet rate delay
  while read -r kind index name bridge gateway subnet rate delay; do
    [ "$kind" = island ] || continue
    ip netns exec "$switch" ip link add "$bridge" type bridge
    ip netns exec "$switch" ip addr add "$gateway/24" dev "$bridge"
    ip netns exec "$switch" ip link set "$bridge" up
    # Routed traffic into this island leaves through the bridge device: the slow link.
    shape "$switch" "$bridge" "$rate" "$delay"
  done <"$layout"
  local node island netns address host_veth switch_veth
  while read -r kind index node island netns address host_veth switch_veth rate delay; do
    [ "$kind" = host ] || continue
    ip netns add "$netns"
    ip netns exec "$netns" ip link set lo up
    ip link add "$host_veth" netns "$netns" type veth peer name "$switch_veth" netns "$switch"
    ip netns exec "$netns" ip addr add "$address/24" dev "$host_veth"
    ip netns exec "$netns" ip link set "$host_veth" up
    ip netns exec "$switch" ip link set "$switch_veth" master "$(island_bridge "$layout" "$island")"
    ip netns exec "$switch" ip link set "$switch_veth" up
    ip netns exec "$netns" ip route add default via "$(island_gateway "$layout" "$island")"
    shape "$netns" "$host_veth" "$rate" "$delay"      # the host's sends
    shape "$switch" "$switch_veth" "$rate" "$delay"   # what it receives
  done <"$layout"
}

island_bridge() { awk -v i="$2" '$1 == "island" && $2 == i { print $4 }' "$1"; }
island_gateway() { awk -v i="$2" '$1 == "island" && $2 == i { print $5 }' "$1"; }
# rank_host_field LAYOUT RANK FIELD: FIELD of the host rank RANK runs on (5 netns, 6 address, 7 veth).
rank_host_field() {
  local host
  host=$(awk -v r="$2" '$1 == "rank" && $2 == r { print $3 }' "$1")
  awk -v h="$host" -v f="$3" '$1 == "host" && $2 == h { print $f }' "$1"
}
rank_local() { awk -v r="$2" '$1 == "rank" && $2 == r { print $4 }' "$1"; }

# exec-rank LAYOUT -- COMMAND: run by mpirun once per rank; becomes COMMAND inside the
# namespace of its rank's host. GLOO_SOCKET_IFNAME is left unset: the runtime finds the
# interface that reaches MASTER_ADDR by itself, as on a real cluster.
exec_rank() {
  local layout=$1
  shift
  [ "${1:-}" = "--" ] && shift
  local rank=${OMPI_COMM_WORLD_RANK:?exec-rank runs under mpirun}
  exec ip netns exec "$(rank_host_field "$layout" "$rank" 5)" "$@"
}

# Waits for RANK_PIDS; returns the exit status of the first to fail (0 when none did). The
# first to fail fails the run; the others are stopped at teardown.
wait_first_failure() {
  local running=("${RANK_PIDS[@]}") finished code left pid
  while [ ${#running[@]} -gt 0 ]; do
    code=0
    wait -n -p finished "${running[@]}" || code=$?
    left=()
    for pid in "${running[@]}"; do [ "$pid" = "$finished" ] || left+=("$pid"); done
    running=("${left[@]}")
    if [ "$code" -ne 0 ]; then return "$code"; fi
  done
}

# run_per_host LAYOUT LOGS MASTER TOKEN COMMAND…: COMMAND once per host in its namespace;
# the first to fail fails the run (the others are stopped at teardown).
run_per_host() {
  local layout=$1 logs=$2 master=$3 token=$4
  shift 4
  local host hosts devices
  hosts=$(grep -c '^host' "$layout")
  for ((host = 0; host < hosts; ++host)); do
    devices=$(awk -v h="$host" '$1 == "rank" && $3 == h { print $2 }' "$layout" | paste -sd,)
    setsid env NETLAB_HOST="$host" \
      NETLAB_HOST_NAME="$(awk -v h="$host" '$1 == "host" && $2 == h { print $3 }' "$layout")" \
      NETLAB_HOST_ADDRESS="$(awk -v h="$host" '$1 == "host" && $2 == h { print $6 }' "$layout")" \
      NETLAB_HOST_DEVICES="$devices" NETLAB_MASTER_ADDR="$master" HYPERPIPE_JOB_TOKEN="$token" \
      ip netns exec "$(awk -v h="$host" '$1 == "host" && $2 == h { print $5 }' "$layout")" "$@" \
      >"$logs/host-$host.log" 2>&1 &
    RANK_PIDS+=($!)
  done
  local status=0
  wait_first_failure || status=$?
  for ((host = 0; host < hosts; ++host)); do
    sed "s/^/[host $host] /" "$logs/host-$host.log"
  done
  return "$status"
}

run_lab() {
  local plan="" cluster="" launcher=env logs=""
  while [ $# -gt 0 ]; do
    case $1 in
      --plan) plan=$2; shift 2 ;;
      --cluster) cluster=$2; shift 2 ;;
      --launcher) launcher=$2; shift 2 ;;
      --logs) logs=$2; shift 2 ;;
      --) shift; break ;;
      *) say "unknown argument '$1'"; usage ;;
    esac
  done
  [ -n "$plan" ] || [ -n "$cluster" ] || usage
  [ $# -gt 0 ] || usage
  case $launcher in env | mpirun | per-host) ;; *) say "--launcher: env, mpirun or per-host, got '$launcher'"; exit 2 ;; esac
  if [ "$launcher" = per-host ] && [ -n "$plan" ]; then
    say "--launcher per-host takes --cluster, not --plan: each host gets its devices' ids in the cluster"
    exit 2
  fi
  if [ "$launcher" = mpirun ] && ! command -v mpirun >/dev/null; then
    say "--launcher mpirun: mpirun not found (install openmpi-bin: scripts/install-deps.sh)"
    exit 2
  fi
  local reason
  reason=$(unavailable_reason)
  if [ -n "$reason" ]; then say "unavailable: $reason"; exit $EXIT_UNAVAILABLE; fi
  [ -x "$LAYOUT_TOOL" ] || { say "$LAYOUT_TOOL not built (scripts/build.sh)"; exit 2; }

  local lab=$(($$ % 100000))
  local work
  work=$(mktemp -d)
  RANK_PIDS=()
  trap 'teardown '"$lab"'; rm -rf '"$work"'' EXIT
  trap 'say "stopped"; exit 130' INT
  trap 'say "stopped"; exit 143' TERM
  logs=${logs:-$work}
  mkdir -p "$logs"
  local layout=$work/layout.txt
  local layout_args=(--lab "$lab")
  if [ -n "$plan" ]; then layout_args+=(--plan "$plan"); fi
  if [ -n "$cluster" ]; then layout_args+=(--cluster "$cluster"); fi
  "$LAYOUT_TOOL" "${layout_args[@]}" >"$layout" || exit 2

  NETEM=0
  if have_netem; then NETEM=1; else say "no sch_netem in this kernel: links shaped in bandwidth only, latency is the veths' own"; fi
  build_lab "$layout"
  say "lab hp$lab: $(grep -c '^host' "$layout") hosts, $(grep -c '^island' "$layout") islands"

  local world master port token
  world=$(grep -c '^rank' "$layout")
  master=$(rank_host_field "$layout" 0 6)
  port=29500
  token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  local status=0
  if [ "$launcher" = per-host ]; then
    run_per_host "$layout" "$logs" "$master" "$token" "$@" || status=$?
  elif [ "$launcher" = mpirun ]; then
    MASTER_ADDR=$master MASTER_PORT=$port HYPERPIPE_JOB_TOKEN=$token \
      mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$world" \
      -x MASTER_ADDR -x MASTER_PORT -x HYPERPIPE_JOB_TOKEN \
      bash "$0" exec-rank "$layout" -- "$@" >"$logs/mpirun.log" 2>&1 &
    RANK_PIDS+=($!)
    wait "${RANK_PIDS[0]}" || status=$?
    cat "$logs/mpirun.log"
  else
    local rank
    for ((rank = 0; rank < world; ++rank)); do
      # setsid: each rank leads its own process group, so teardown stops all it started.
      setsid env RANK="$rank" WORLD_SIZE="$world" LOCAL_RANK="$(rank_local "$layout" "$rank")" \
        MASTER_ADDR="$master" MASTER_PORT="$port" HYPERPIPE_JOB_TOKEN="$token" \
        GLOO_SOCKET_IFNAME="$(rank_host_field "$layout" "$rank" 7)" \
        ip netns exec "$(rank_host_field "$layout" "$rank" 5)" "$@" \
        >"$logs/rank-$rank.log" 2>&1 &
      RANK_PIDS+=($!)
    done
    wait_first_failure || status=$?
    for ((rank = 0; rank < world; ++rank)); do
      sed "s/^/[rank $rank] /" "$logs/rank-$rank.log"
    done
  fi
  if [ "$status" -ne 0 ]; then
    # Without --logs the logs (printed above) go with the lab's temporary directory.
    if [ "$logs" = "$work" ]; then say "a rank failed (exit $status)"; else say "a rank failed (exit $status); logs in $logs"; fi
  fi
  return "$status"
}

command=${1:-}
[ $# -gt 0 ] && shift
case $command in
  check)
    reason=$(unavailable_reason)
    if [ -n "$reason" ]; then say "unavailable: $reason"; exit $EXIT_UNAVAILABLE; fi
    if have_netem; then say "available (bandwidth and latency)"; else say "available (bandwidth only: no sch_netem)"; fi
    ;;
  run) run_lab "$@" ;;
  exec-rank) exec_rank "$@" ;;
  down)
    [ $# -eq 1 ] || usage
    RANK_PIDS=()
    teardown "$1"
    ;;
  *) usage ;;
esac
