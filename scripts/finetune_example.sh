#!/usr/bin/env bash
# The fine-tuning walkthrough of docs/guide/huggingface.md: a small Hugging Face-format model (made by
# scripts/make_hf_model.py, as no weights can be downloaded here) fine-tuned across the
# emulated heterogeneous cluster (cpu-emulated: CPU stand-ins for an A100, a V100 and a
# T4) from its safetensors files, on a Megatron-LM indexed dataset that its own byte-level
# BPE tokenizer makes from the example corpus, then exported back to safetensors.
#   FLAVOUR=gpt2|llama  the model's architecture (default gpt2)
#   STEPS=N             fine-tuning steps (default 40)
#   OUT=DIR             where everything goes (default build/finetune)
#   HYPERPIPE=PATH      the hyperpipe to run (default: build/hyperpipe, built first)
#   MICRO_BATCHES=LIST  the micro-batch sizes to profile (default 1,2,4,8)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${FLAVOUR:-gpt2}
steps=${STEPS:-40}
out=${OUT:-build/finetune}
if [ -z "${HYPERPIPE:-}" ]; then
  # Only the executables the walkthrough runs, as scripts/demo.sh builds them.
  bash scripts/build.sh hyperpipe hyperpipe-worker
fi
hyperpipe=${HYPERPIPE:-./build/hyperpipe}
model="$out/tiny-$flavour"
tuned="$out/tiny-$flavour-tuned"
mkdir -p "$out"
section() { printf '\n== %s\n\n' "$1"; }

section "A Hugging Face model directory: config.json, model.safetensors, vocab.json, merges.txt"
python3 scripts/make_hf_model.py --corpus examples/data/corpus.txt --out "$model" \
  --flavour "$flavour"
"$hyperpipe" describe --model "$model" --cluster cpu-emulated
section "Tokenized with the model's BPE into a Megatron-LM indexed dataset"
"$hyperpipe" tokenize --input examples/data/corpus.txt --tokenizer "$model" --append-eod \
  --output-prefix "$out/corpus"
section "Profiled on this host, planned for the emulated A100, V100 and T4"
"$hyperpipe" profile --model "$model" --cluster cpu-emulated \
  --micro-batch "${MICRO_BATCHES:-1,2,4,8}" --out "$out/profiles.json"
"$hyperpipe" plan --model "$model" --cluster cpu-emulated --global-batch 16 --max-tp 1 \
  --profiles "$out/profiles.json" --out "$out/plan.json"
section "Fine-tuned from the model's weights"
"$hyperpipe" launch --plan "$out/plan.json" --data "$out/corpus" --init-from "$model" \
  --steps "$steps" --lr 3e-4 --checkpoint-dir "$out/checkpoints" --overwrite \
  --profiles "$out/profiles.json" --metrics "$out/metrics.jsonl"
section "Exported back to safetensors, with the tokenizer beside it"
"$hyperpipe" export-checkpoint --checkpoint "$out/checkpoints" --model "$model" --out "$tuned" \
  --overwrite
cp "$model/vocab.json" "$model/merges.txt" "$tuned/"
"$hyperpipe" describe --model "$tuned" --cluster cpu-emulated
