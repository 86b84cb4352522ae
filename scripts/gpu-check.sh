#!/usr/bin/env bash
# The CUDA path, checked on the first GPU machine that comes (one script, under 10 minutes):
# configures against the torch of that machine's python3 (HYPERPIPE_PYTHON: a CUDA build,
# with NCCL) and the libraries scripts/pack-gpu-deps.sh packed into .gpu-deps/, builds,
# prints `hyperpipe --version` there, runs the runtime's unit tests on
# that libtorch, profiles the block of a GPT-3 1.3B-shaped model on the GPU and what the
# device holds besides (profile --memory), trains the
# shipped tiny-gpt on one GPU in bf16 with each recomputation mode (printing predicted
# against measured time and memory), and, with two GPUs or more, the multi-process
# equivalence tests over NCCL. Everything it prints also goes to $OUT/gpu-check.log (or
# ./gpu-check.log). Exit status: the first failing step's.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly LOG="${OUT:-.}/gpu-check.log"
readonly BUILD=build-gpu
readonly WORK="${OUT:-/tmp}/gpu-check"
mkdir -p "$WORK"
exec > >(tee "$LOG") 2>&1

step() { echo; echo "== $* ($(date +%T))"; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
readonly GPUS=$(nvidia-smi -L | wc -l)
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
            "nccl", torch.cuda.nccl.version())'

step "configure against PyTorch's libtorch and .gpu-deps"
if [[ ! -f .gpu-deps/env.sh ]]; then
  echo "gpu-check: .gpu-deps/ is missing: run scripts/pack-gpu-deps.sh on the Debian machine" \
       "and carry .gpu-deps with the working tree" >&2
  exit 2
fi
source .gpu-deps/env.sh
# No kernels of ours: the arch list only settles libtorch's own CUDA detection (H200: 9.0).
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHYPERPIPE_BUILD_BENCH=OFF \
  -DHYPERPIPE_PYTHON="$(command -v python3)" -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" \
  > "$WORK/configure.log" || { tail -40 "$WORK/configure.log"; exit 1; }
grep -q "HYPERPIPE_WITH_CUDA" "$BUILD/build.ninja" || {
  echo "gpu-check: this libtorch has no CUDA (torch_cuda not found)" >&2
  exit 1
}

step "build"
ninja -C "$BUILD" hyperpipe hyperpipe-worker runtime_test integration_test > "$WORK/build.log" ||
  { grep -E "error|Error" -A3 "$WORK/build.log" | head -60; exit 1; }
HP="$BUILD/hyperpipe"
"$HP" --version

step "runtime unit tests on this libtorch (CPU kernels, autograd, recomputation, precision)"
"$BUILD/tests/runtime_test" --gtest_brief=1

cat > "$WORK/h200.yaml" << 'YAML'
name: h200x1
nodes:
  - {name: gpu-0, gpu: H200, count: 1}
links:
  intra_node: {bandwidth: 450 GB/s, latency: 2 us}
YAML

step "profile: the embedding, a block and the head of a GPT-3 1.3B shape on the GPU (bf16)"
"$HP" profile --model gpt3-1.3b --device cuda --as H200 --micro-batch 1,2,4 --seq 2048 \
  --out "$WORK/profiles.json"
"$HP" describe --model gpt3-1.3b --cluster "$WORK/h200.yaml" --micro-batch 2 \
  --profiles "$WORK/profiles.json" 2> /dev/null | head -40 || true

step "profile --memory: the context, cuBLAS's workspace, the allocator's reserve (and NCCL's with two GPUs)"
"$HP" profile --memory --model gpt3-1.3b --device cuda --as H200 --micro-batch 2 --seq 2048 \
  --out "$WORK/profiles.json"

step "train tiny-gpt on one GPU in bf16 with each recomputation mode"
for recompute in none selective full; do
  cat > "$WORK/plan-$recompute.json" << JSON
{"format": "hyperpipe.plan/1", "model": "$PWD/examples/models/tiny-gpt.yaml",
 "cluster": "$WORK/h200.yaml", "recompute": "$recompute", "micro_batch_size": 8,
 "micro_batches": 4, "schedule": "1f1b", "stages": [{"layers": [0, 8], "devices": [0]}]}
JSON
  echo "-- recompute $recompute"
  "$HP" launch --plan "$WORK/plan-$recompute.json" --data examples/data/corpus.txt --steps 30 \
    --device cuda --dtype bf16 --profiles "$WORK/profiles.json" --metrics "$WORK/metrics-$recompute.jsonl" \
    --timeline "$WORK/timeline-$recompute.json" | grep -v "^\[rank 0\] step [0-9]*/" || exit 1
done

step "equivalence with one process over NCCL"
if (( GPUS >= 2 )); then
  HYPERPIPE_TEST_DEVICE=cuda "$BUILD/tests/integration_test" --gtest_brief=1 \
    --gtest_filter='Plans/MatchesOneProcess.*two_stage*:Plans/Bf16MatchesOneProcess.*two_stage*'
else
  echo "one GPU: NCCL puts no two ranks on one device, so the multi-process runs stay on CPU"
fi
step "done"
