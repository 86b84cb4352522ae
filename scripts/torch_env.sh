# Sourced by the scripts that install or build against libtorch: where HyperPipe's own
# virtual environment with the pinned torch lives (scripts/requirements-torch.txt), and
# which Python's torch a build uses. cmake/TorchFromPython.cmake looks in the same place.
#   HYPERPIPE_VENV    the environment (default: ~/.cache/hyperpipe/venv, shared by every
#                     clone on this machine, so a new clone installs nothing)
#   HYPERPIPE_PYTHON  a Python that already has torch 2.x (e.g. the GPU machine's python3):
#                     builds against it, and install-deps.sh makes no environment
HYPERPIPE_VENV="${HYPERPIPE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hyperpipe/venv}"
HYPERPIPE_TORCH_REQUIREMENTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/requirements-torch.txt"

# The Python whose torch the build uses.
torch_python() {
  if [ -n "${HYPERPIPE_PYTHON:-}" ]; then echo "$HYPERPIPE_PYTHON"; else echo "$HYPERPIPE_VENV/bin/python"; fi
}

# The pinned version, "2.15.0".
pinned_torch_version() {
  sed -n 's/^torch==\([0-9.]*\).*/\1/p' "$HYPERPIPE_TORCH_REQUIREMENTS"
}

# The torch version that Python has installed (without importing it), or nothing.
installed_torch_version() {
  "$1" -c 'import importlib.metadata as m; print(m.version("torch").split("+")[0])' 2>/dev/null || true
}
