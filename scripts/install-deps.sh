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
# module (`import hyperpipe`).
PACKAGES=(
  build-essential cmake ninja-build ccache clang-format git python3
  clang libclang-rt-14-dev clang-tidy
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libopenblas0-openmp libgloo-dev
  iproute2 openmpi-bin
  pybind11-dev python3-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
