# shellcheck shell=bash
# What the network-lab test scripts share (sourced, from the repository root): exit 77
# (skipped, with the reason) where this machine cannot build namespaces; a work directory
# removed on exit; `fail`; and the check that the lab left no namespace behind.
status=0
bash scripts/netlab.sh check || status=$?
[ "$status" -eq 0 ] || exit "$status"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
namespaces_before=$(ip netns list | grep -c '^hp' || true)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Fails when the lab left a namespace behind.
check_no_namespaces_left() {
  local namespaces_after
  namespaces_after=$(ip netns list | grep -c '^hp' || true)
  [ "$namespaces_after" -eq "$namespaces_before" ] || fail "the lab left namespaces: $(ip netns list)"
}
