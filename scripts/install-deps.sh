#!/usr/bin/env bash
# Installs every Debian package HyperPipe needs to build, test and (later) train.
# Idempotent: when all packages are present it installs nothing and touches no
# package index. Run as root (or with sudo available).
set -euo pipefail

# Build tools, then libraries. The runtime part (libtorch, gloo) is installed now so
# that later parts build on a machine set up once. libopenblas0-openmp sits beside
# libtorch because without it CPU training runs an order of magnitude slower. clang and its
# runtime (libFuzzer, sanitizers) build the fuzz harnesses and the sanitizer tests.
# iproute2 (ip, tc) builds the network lab (scripts/netlab.sh), whose runs also start
# through Open MPI's mpirun (openmpi-bin). pybind11 and Python's headers build the Python
# module (`import hyperpipe`). rsvg-convert (librsvg2-bin) renders the SVG charts to PNG
# in the tests, which read the pixels with libpng, in the font fontconfig picks.
# libsentencepiece-dev reads SentencePiece tokenizers (LLaMA 2, Mistral); libpcre2-dev runs
# GPT-2's pre-tokenizer pattern, which needs Unicode classes std::regex lacks.
# One group per line: what it is for, then its packages.
PACKAGE_GROUPS=(
  "build tools:build-essential cmake ninja-build ccache clang-format git python3 pkgconf"
  "fuzzing and sanitizers:clang libclang-rt-14-dev clang-tidy"
  "libraries:nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev"
  "tokenizers:libsentencepiece-dev libpcre2-dev"
  "tests and benchmarks:libgtest-dev libgmock-dev libbenchmark-dev"
  "training runtime:libtorch-dev libopenblas0-openmp libgloo-dev"
  "network lab:iproute2 openmpi-bin"
  "Python module:pybind11-dev python3-dev"
  "chart rendering tests:librsvg2-bin libpng-dev fonts-dejavu-core"
)

missing=()
total=0
for group in "${PACKAGE_GROUPS[@]}"; do
  name=${group%%:*}
  group_missing=()
  for pkg in ${group#*:}; do
    total=$((total + 1))
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
      group_missing+=("$pkg")
    fi
  done
  if [ ${#group_missing[@]} -gt 0 ]; then
    echo "install-deps: $name: ${group_missing[*]}"
    missing+=("${group_missing[@]}")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all $total packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# apt's and dpkg's hundreds of lines go to a log, shown only when something fails.
log=$(mktemp /tmp/hyperpipe-install-XXXXXX.log)
echo "install-deps: installing ${#missing[@]} packages from Debian's archive (log: $log)"
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && \
       $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  tail -30 "$log" >&2
  echo "install-deps: apt-get failed; the whole log is $log" >&2
  exit 1
fi
echo "install-deps: done"
