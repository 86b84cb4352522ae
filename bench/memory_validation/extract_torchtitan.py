#!/usr/bin/env python3
"""Transcribes the measured peaks of torchtitan's published benchmarks into cases.

torchtitan's benchmarks/ folder keeps the results of its team's runs (and of others') as
Markdown: per table a caption (model, GPU count, local batch size, activation
checkpointing, parallelism) and rows of techniques with `Memory(GiB)`, which torchtitan's
training loop logs as the caching allocator's reserved peak (torch.cuda.memory_stats()'s
reserved_bytes.all.peak, torchtitan/metrics.py at the runs' commit), the largest over all
GPUs (the file's footnote). Each row becomes a case if HyperPipe's model and plan files
state everything that sets its memory; every other row is listed with the reason.

  python3 bench/memory_validation/extract_torchtitan.py --torchtitan PATH_TO_CHECKOUT \\
      --out bench/memory_validation/torchtitan_benchmarks.json
"""
import argparse
import json
import os
import re
import subprocess
import sys

GIB = 2 ** 30
BENCHMARK = "benchmarks/llama3_h100_202412_torchtitan.md"
# Its hardware section: Grand Teton hosts of 8 H100 with 96 GB of HBM2e each.
GPU = "H100-SXM"
GPU_MEMORY = "96 GiB"
# The runs' torchtitan (the file's versions table): train_configs/llama3_8b.toml there sets
# seq_len 8192, AdamW, selective_ac_option "op"; the model's shape is
# torchtitan/models/llama/__init__.py's "8B" (dim 4096, 32 layers, 32 heads, 8 key/value
# heads, ffn_dim_multiplier 1.3 and multiple_of 1024: 14336) with Llama 3's 128,256-token
# vocabulary; training.mixed_precision_param bf16, mixed_precision_reduce fp32.
RUNS_COMMIT = "9dec370ad26b5f8e9a7333a0e36165018262644b"
SEQ_LEN = 8192
MODELS = {
    "8B": {"flavour": "llama", "hidden": 4096, "layers": 32, "heads": 32, "kv_heads": 8,
           "ffn_hidden": 14336, "vocab": 128256, "seq_len": SEQ_LEN, "tied_embeddings": False,
           "dropout": False, "flash_attention": True, "dtype": "bf16"},
}
# What a row's technique or a table's caption may add that HyperPipe's files do not state.
NOT_STATED = {
    "torch.compile": "torch.compile fuses the blocks' element-wise work, which changes what "
                     "is kept and rerun (not modelled)",
    "Float8": "Float8 linears gather fp8 weights and keep fp8 casts (not modelled)",
    "AsyncTP": "asynchronous tensor parallelism's symmetric-memory buffers (not modelled)",
    "CP": "context parallelism is not in HyperPipe's plan space",
    "TP": "torchtitan's tensor parallelism here comes with torch.compile and Float8",
}
OTHER_FILES = {
    "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md":
        "reports throughput only, no memory",
    "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md":
        "every run used --training.compile and Float8 linears (not modelled)",
}


def read(checkout, path):
    if os.path.isdir(os.path.join(checkout, ".git")) or os.path.isfile(
            os.path.join(checkout, "HEAD")):
        shown = subprocess.run(["git", "-C", checkout, "show", f"HEAD:{path}"],
                               capture_output=True, text=True, check=False)
        if shown.returncode == 0:
            return shown.stdout
    with open(os.path.join(checkout, path)) as f:
        return f.read()


def tables(text):
    """Yields (number, caption, header, rows) for each captioned Markdown table."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        caption = re.match(r"\*\*Table (\d+)\*\* (.*)", line)
        if not caption:
            continue
        body = []
        for row in lines[i + 1:]:
            if row.startswith("|"):
                body.append([cell.strip() for cell in row.strip("|").split("|")])
            elif body:
                break
        header, rows = body[0], [r for r in body[2:]]
        yield int(caption.group(1)), caption.group(2), header, rows


def reason_left_out(caption, technique):
    for word, why in NOT_STATED.items():
        if word in technique or word in caption:
            return why
    if "1D Parallelism (FSDP)" not in caption:
        return "a parallelism other than FSDP alone"
    return None


def cases_of(number, caption, header, rows, cases, left_out):
    model = re.search(r"Llama 3\.1 (\d+B)", caption).group(1)
    gpus = int(re.search(r"(\d+) GPUs", caption).group(1))
    local_batch = int(re.search(r"Local batch size (\d+)", caption).group(1))
    recompute = "selective" if "Selective activation checkpointing" in caption else "full"
    memory_column = header.index("Memory(GiB)")
    for row in rows:
        technique = row[0]
        why = reason_left_out(caption, technique)
        if why is None and model not in MODELS:
            why = f"Llama 3.1 {model}'s shape is not transcribed"
        if why:
            left_out.append({"table": number, "row": technique, "why": why})
            continue
        gib = float(row[memory_column])
        cases.append({
            "id": f"table{number}_llama3.1_{model.lower()}_fsdp{gpus}_{technique.lower()}",
            "source": "torchtitan-benchmarks", "framework": "torchtitan",
            "where": f"{BENCHMARK}, Table {number}, row {technique}",
            "gpu": GPU, "gpu_memory": GPU_MEMORY, "devices": gpus,
            "model": MODELS[model],
            "plan": {"pp": 1, "tp": 1, "dp": gpus, "chunks": 1, "micro_batch_size": local_batch,
                     "micro_batches": 1, "recompute": recompute, "sequence_parallel": False,
                     "shard_optimizer": True, "overlap_allreduce": True},
            "measured": "max_reserved_max_rank", "measured_bytes": gib * GIB,
        })


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torchtitan", required=True, help="a checkout or bare clone")
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    commit = subprocess.run(["git", "-C", options.torchtitan, "rev-parse", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    cases, left_out = [], []
    for number, caption, header, rows in tables(read(options.torchtitan, BENCHMARK)):
        cases_of(number, caption, header, rows, cases, left_out)
    for path, why in OTHER_FILES.items():
        left_out.append({"file": path, "why": why})
    if not cases:
        sys.exit(f"extract_torchtitan: no case found in {BENCHMARK}")
    document = {
        "source": "torchtitan-benchmarks", "repository": "pytorch/torchtitan", "commit": commit,
        "runs_commit": RUNS_COMMIT,
        "what": "torch.cuda reserved peak, largest over all GPUs, as torchtitan logs `memory` "
                "(benchmarks/llama3_h100_202412_torchtitan.md, runs of December 2024)",
        "cases": cases, "left_out": left_out,
    }
    with open(options.out, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(cases)} cases, {len(left_out)} left out -> {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
