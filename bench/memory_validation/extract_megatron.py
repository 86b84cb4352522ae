#!/usr/bin/env python3
"""Transcribes the measured peaks of Megatron-LM's GPT functional tests into cases.

Megatron-LM's CI trains each functional test (tests/functional_tests/test_cases/gpt/NAME/
model_config.yaml: the arguments; one node of 8 GPUs, tests/test_utils/recipes/*/gpt.yaml)
on DGX A100 and DGX H100 machines and keeps what the run logged as golden values
(golden_values_{dev,lts}_dgx_{a100,h100}.json). With --log-memory-to-tensorboard the run
logs torch.cuda.memory_stats() of its last rank (the tensorboard writer's, which sits on
the last pipeline stage): `mem-max-allocated-bytes`, the allocator's peak so far, each
logged iteration. The largest of them is the run's measured peak of what the allocator
handed out.

Only tests whose arguments HyperPipe's model and plan files state exactly are kept; every
other one is listed with the argument that left it out. Usage:

  python3 bench/memory_validation/extract_megatron.py --megatron PATH_TO_CHECKOUT \
      --out bench/memory_validation/megatron_functional_tests.json
"""
import argparse
import glob
import json
import os
import subprocess
import sys

import yaml

GPUS_PER_TEST = 8  # tests/test_utils/recipes/h100/gpt.yaml: nodes 1, gpus 8
PLATFORMS = {"dgx_a100": "A100-80GB", "dgx_h100": "H100-SXM"}
# Megatron-LM's default --make-vocab-size-divisible-by.
VOCAB_DIVISOR = 128
GPT2_BPE_VOCAB = 50257  # the GPT-2 vocabulary files the tests' GPT2BPETokenizer reads

# Arguments with no bearing on what a device holds (logging, data, checkpoints, schedules of
# the learning rate, seeds), or whose bearing HyperPipe's model covers as stated below.
NEUTRAL = {
    "--log-throughput", "--log-params-norm", "--log-num-zeros-in-grad",
    "--log-validation-ppl-to-tensorboard", "--log-timers-to-tensorboard",
    "--log-memory-to-tensorboard", "--tensorboard-dir", "--timing-log-level", "--log-interval",
    "--save", "--load", "--save-interval", "--eval-interval", "--eval-iters", "--train-iters",
    "--exit-interval", "--lr", "--min-lr", "--lr-decay-iters", "--lr-decay-style",
    "--lr-warmup-fraction", "--weight-decay", "--clip-grad", "--split", "--data-path",
    "--data-cache-path", "--vocab-file", "--merge-file", "--tokenizer-type", "--mock-data",
    "--distributed-backend", "--use-mcore-models", "--ckpt-format", "--dist-ckpt-strictness",
    "--async-save", "--use-persistent-ckpt-worker", "--deterministic-mode", "--seed",
    "--init-method-std", "--adam-beta1", "--adam-beta2", "--max-position-embeddings",
    "--no-gradient-accumulation-fusion", "--attention-softmax-in-fp32", "--num-workers",
    "--no-mmap-bin-files", "--dist-ckpt-optim-fully-reshardable", "--ckpt-fully-parallel-save",
    "--ckpt-fully-parallel-load", "--ckpt-assume-constant-structure", "--use-checkpoint-args",
    "--log-straggler", "--disable-straggler-on-startup", "--straggler-minmax-count",
    "--test-mode", "--rerun-mode", "--logging-level", "--wandb-project", "--wandb-exp-name",
    "--log-progress", "--manual-gc", "--manual-gc-interval", "--dataloader-type",
    "--check-weight-hash-across-dp-replicas-interval", "--auto-detect-ckpt-format",
    "--calculate-per-token-loss", "--decoupled-lr", "--decoupled-min-lr",
    "--no-create-attention-mask-in-dataloader", "--full-validation", "--num-dataset-builder-threads",
    "--distributed-timeout-minutes", "--object-storage-cache-path", "--exit-on-missing-checkpoint",
    "--ddp-average-in-collective", "--log-memory-interval", "--use-checkpoint-opt_param-scheduler",
    "--no-ckpt-fully-parallel-save", "--disable-gloo-process-groups",
    "--apply-query-key-layer-scaling", "--no-persist-layer-norm",
    # Shape and plan arguments, read below.
    "--num-layers", "--hidden-size", "--num-attention-heads", "--ffn-hidden-size",
    "--group-query-attention", "--num-query-groups", "--seq-length", "--micro-batch-size",
    "--global-batch-size", "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
    "--num-layers-per-virtual-pipeline-stage", "--use-distributed-optimizer",
    "--overlap-grad-reduce", "--overlap-param-gather", "--sequence-parallel", "--bf16",
    "--fp16", "--untie-embeddings-and-output-weights", "--transformer-impl",
    "--attention-backend", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--hidden-dropout", "--attention-dropout", "--vocab-size",
    "--disable-bias-linear",
}


def golden_peak(path):
    with open(path) as f:
        values = json.load(f)
    series = values.get("mem-max-allocated-bytes")
    if not isinstance(series, dict) or "values" not in series:
        return None
    numbers = [v for v in series["values"].values() if isinstance(v, (int, float))]
    return max(numbers) if numbers else None


def cublas_workspace_bytes(config):
    """CUBLAS_WORKSPACE_CONFIG's ":SIZE:COUNT" pairs (KiB), as PyTorch reads them."""
    numbers = [int(n) for n in config.strip(":").split(":")]
    return sum(numbers[i] * numbers[i + 1] for i in range(0, len(numbers) - 1, 2)) * 1024


def padded_vocab(vocab, tp):
    multiple = VOCAB_DIVISOR * tp
    return (vocab + multiple - 1) // multiple * multiple


def convert(name, args):
    """(case fields, None) where the arguments map exactly, else (None, why)."""
    for key in args:
        if key not in NEUTRAL:
            return None, f"{key} is not stated by HyperPipe's model or plan files"
    if "resume" in name or "frozen" in name:
        return None, "a resumed run (its peak includes the checkpoint's load)"
    tp = int(args.get("--tensor-model-parallel-size", 1))
    pp = int(args.get("--pipeline-model-parallel-size", 1))
    if GPUS_PER_TEST % (tp * pp):
        return None, "tp × pp does not divide the node"
    dp = GPUS_PER_TEST // (tp * pp)
    layers = int(args["--num-layers"])
    hidden = int(args["--hidden-size"])
    heads = int(args["--num-attention-heads"])
    mbs = int(args["--micro-batch-size"])
    gbs = int(args["--global-batch-size"])
    if gbs % (mbs * dp) or layers % pp:
        return None, "a batch or layer split HyperPipe's plan cannot state"
    recompute = args.get("--recompute-granularity", "none")
    if recompute == "full" and (args.get("--recompute-method") != "uniform"
                                or int(args.get("--recompute-num-layers", 1)) != 1):
        return None, "full recomputation of several layers at a time"
    if args.get("--tokenizer-type") == "NullTokenizer":
        vocab = int(args["--vocab-size"])
    elif "--vocab-size" in args:
        return None, "a vocabulary size with a tokenizer"
    else:
        vocab = GPT2_BPE_VOCAB
    local = args.get("--transformer-impl") == "local" or "uninstall_te" in name
    flash = not local and args.get("--attention-backend", "auto") not in ("unfused", "local")
    dropout = (float(args.get("--hidden-dropout", 0.1)) > 0
               or float(args.get("--attention-dropout", 0.1)) > 0)
    chunks = 1
    if "--num-layers-per-virtual-pipeline-stage" in args:
        per_chunk = int(args["--num-layers-per-virtual-pipeline-stage"])
        if layers % (pp * per_chunk):
            return None, "virtual stages that do not split the layers evenly"
        chunks = layers // (pp * per_chunk)
    model = {
        "flavour": "gpt", "hidden": hidden, "layers": layers, "heads": heads,
        "kv_heads": int(args.get("--num-query-groups", heads))
        if args.get("--group-query-attention") else heads,
        "ffn_hidden": int(args.get("--ffn-hidden-size", 4 * hidden)),
        "vocab": padded_vocab(vocab, tp),
        "seq_len": int(args["--seq-length"]),
        "tied_embeddings": not args.get("--untie-embeddings-and-output-weights", False),
        "dropout": dropout, "flash_attention": flash,
        "dtype": "fp16" if args.get("--fp16") else "bf16",
    }
    plan = {
        "tp": tp, "pp": pp, "dp": dp, "micro_batch_size": mbs,
        "micro_batches": gbs // (mbs * dp), "chunks": chunks,
        "recompute": recompute if recompute in ("full", "selective") else "none",
        "sequence_parallel": bool(args.get("--sequence-parallel", False)) and tp > 1,
        "shard_optimizer": bool(args.get("--use-distributed-optimizer", False)),
        "overlap_allreduce": bool(args.get("--overlap-grad-reduce", False)),
    }
    return {"model": model, "plan": plan}, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron", required=True, help="a Megatron-LM checkout")
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    root = os.path.join(options.megatron, "tests/functional_tests/test_cases/gpt")
    commit = subprocess.run(["git", "-C", options.megatron, "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    cases, left_out = [], []
    for directory in sorted(glob.glob(os.path.join(root, "*/"))):
        name = os.path.basename(os.path.normpath(directory))
        config_path = os.path.join(directory, "model_config.yaml")
        if not os.path.exists(config_path):
            continue
        with open(config_path) as f:
            config = yaml.safe_load(f) or {}
        args = config.get("MODEL_ARGS") or {}
        environment = config.get("ENV_VARS") or {}
        for platform, gpu in PLATFORMS.items():
            # The dev branch's values where the test has them, else the LTS branch's.
            golden = next((p for p in (os.path.join(directory, f"golden_values_{b}_{platform}.json")
                                       for b in ("dev", "lts")) if os.path.exists(p)), None)
            if golden is None:
                continue
            peak = golden_peak(golden)
            if peak is None:
                continue
            fields, why = convert(name, args)
            if why:
                left_out.append({"test": name, "gpu": gpu, "why": why})
                continue
            cases.append({
                "id": f"{name}@{platform}",
                "source": "megatron-functional-tests",
                "where": os.path.relpath(golden, options.megatron),
                "framework": "megatron",
                "gpu": gpu,
                "devices": GPUS_PER_TEST,
                "measured": "max_allocated_last_rank",
                "measured_bytes": peak,
                **fields,
            })
            if "CUBLAS_WORKSPACE_CONFIG" in environment:
                # The run's own cuBLAS workspace, in place of the GPU's default.
                cases[-1]["cublas_workspace_bytes"] = cublas_workspace_bytes(
                    str(environment["CUBLAS_WORKSPACE_CONFIG"]))
    document = {
        "source": "megatron-functional-tests",
        "repository": "NVIDIA/Megatron-LM",
        "commit": commit,
        "what": "torch.cuda max allocated bytes of the last rank, largest over the logged "
                "iterations (golden values of the GPT functional tests)",
        "cases": cases,
        "left_out": left_out,
    }
    with open(options.out, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(cases)} cases, {len(left_out)} left out, written to {options.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
