#!/usr/bin/env bash
# Installs every Debian package HyperPipe needs to build, test and train, then libtorch:
# PyPI's torch wheel at the version scripts/requirements-torch.txt pins, in HyperPipe's own
# virtual environment (scripts/torch_env.sh). Idempotent: when everything is present it
# installs nothing and touches no package index. Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."

# Build tools, then libraries. python3-venv makes the environment libtorch comes in (PyPI's
# wheel carries its own BLAS, OpenMP, Gloo and NCCL, but not the Gloo headers its
# ProcessGroupGloo.hpp includes: libgloo-dev's, used for their declarations only); the CUDA
# toolkit it builds against (nvcc, headers) is /usr/local/cuda's (see below). clang and its
# runtime (libFuzzer, sanitizers) build the fuzz harnesses and the sanitizer tests.
# iproute2 (ip, tc) builds the network lab (scripts/netlab.sh), whose runs also start
# through Open MPI's mpirun (openmpi-bin). pybind11 and Python's headers build the Python
# module (`import hyperpipe`). rsvg-convert (librsvg2-bin) renders the SVG charts to PNG
# in the tests, which read the pixels with libpng, in the font fontconfig picks.
# libsentencepiece-dev reads SentencePiece tokenizers (LLaMA 2, Mistral); libpcre2-dev runs
# the byte-level BPEs' pre-tokenizer patterns, which need Unicode classes std::regex lacks;
# libutf8proc-dev composes text to NFC where a tokenizer.json asks (Qwen2's).
# One group per line: what it is for, then its packages.
PACKAGE_GROUPS=(
  "build tools:build-essential cmake ninja-build ccache clang-format git python3 python3-venv pkgconf"
  "fuzzing and sanitizers:clang libclang-rt-14-dev clang-tidy"
  "libraries:nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev"
  "tokenizers:libsentencepiece-dev libpcre2-dev libutf8proc-dev"
  "training runtime:libgloo-dev"
  "tests and benchmarks:libgtest-dev libgmock-dev libbenchmark-dev"
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
else
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
  echo "install-deps: Debian packages done"
fi

# The CUDA toolkit libtorch's CMake files ask for (nvcc and headers; nothing of ours is CUDA
# code, but the wheel's libtorch is a CUDA build): the machine's own, 12.6 or newer.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: note: nvcc is not on PATH; the build finds /usr/local/cuda/bin/nvcc"
elif ! command -v nvcc >/dev/null 2>&1; then
  echo "install-deps: no CUDA toolkit (nvcc) here: libtorch's CMake files need one (12.6 or" \
       "newer, e.g. NVIDIA's cuda-toolkit package under /usr/local/cuda); without it the" \
       "build leaves out the runtime (train, launch, profile)" >&2
fi

# libtorch: PyPI's torch in HyperPipe's environment, unless HYPERPIPE_PYTHON names a Python
# that has its own. The pip output goes to a log, shown only when something fails.
source scripts/torch_env.sh
pinned=$(pinned_torch_version)
if [ -n "${HYPERPIPE_PYTHON:-}" ]; then
  have=$(installed_torch_version "$HYPERPIPE_PYTHON")
  if [ -z "$have" ]; then
    echo "install-deps: HYPERPIPE_PYTHON=$HYPERPIPE_PYTHON has no torch; unset it to install" \
         "torch $pinned into $HYPERPIPE_VENV" >&2
    exit 1
  fi
  echo "install-deps: torch $have from HYPERPIPE_PYTHON=$HYPERPIPE_PYTHON (pinned: $pinned)"
  exit 0
fi
have=$(installed_torch_version "$HYPERPIPE_VENV/bin/python")
if [ "$have" = "$pinned" ]; then
  echo "install-deps: torch $pinned present in $HYPERPIPE_VENV"
else
  log=$(mktemp /tmp/hyperpipe-torch-XXXXXX.log)
  echo "install-deps: installing torch $pinned from PyPI into $HYPERPIPE_VENV" \
       "(about 3 GB with its CUDA libraries; log: $log)"
  if ! { python3 -m venv "$HYPERPIPE_VENV" &&
         "$HYPERPIPE_VENV/bin/pip" install --disable-pip-version-check \
           -r "$HYPERPIPE_TORCH_REQUIREMENTS"; } >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "install-deps: installing torch failed; the whole log is $log" >&2
    exit 1
  fi
fi

# The outside libraries the tests hold HyperPipe against (Hugging Face tokenizers, ...),
# pinned in scripts/requirements-oracles.txt, in the same environment. One that cannot be
# installed fails the install: the tests that need it are not skipped.
oracles="$(dirname "$HYPERPIPE_TORCH_REQUIREMENTS")/requirements-oracles.txt"
if "$HYPERPIPE_VENV/bin/python" - "$oracles" <<'PY'
import importlib.metadata as metadata, sys
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, version = line.split("==")
    try:
        if metadata.version(name) != version:
            sys.exit(1)
    except metadata.PackageNotFoundError:
        sys.exit(1)
PY
then
  echo "install-deps: the oracles' packages present in $HYPERPIPE_VENV"
else
  log=$(mktemp /tmp/hyperpipe-oracles-XXXXXX.log)
  echo "install-deps: installing the oracles' packages ($oracles; log: $log)"
  # Without build isolation: DeepSpeed's source package imports the installed torch.
  if ! DS_BUILD_OPS=0 "$HYPERPIPE_VENV/bin/pip" install --disable-pip-version-check \
    --no-build-isolation -r "$oracles" >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "install-deps: installing the oracles' packages failed; the whole log is $log" >&2
    exit 1
  fi
fi
echo "install-deps: done"
