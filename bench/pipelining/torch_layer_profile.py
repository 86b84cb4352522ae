"""Profiles the layers as PyTorch's own pipeline runtime runs them: the eager PyTorch modules of
torch_pipelining_run.py (the same GPT), timed the way `hyperpipe profile` times HyperPipe's
libtorch layers, written over a HyperPipe profile's entries (its links kept).

`hyperpipe simulate --runtime torchtitan` then predicts PyTorch's step from PyTorch's own
layer costs, as a profile taken under that runtime would give it. On a GPU the two
runtimes' layers launch the same kernels; on a CPU stand-in, eager Python modules (one
interpreter call per op, autograd hooks, their own attention and GELU ops) compute 2-12%
slower than HyperPipe's layers, and a profile of ours would hide that from the prediction.

    python3 torch_layer_profile.py --model M.yaml --profiles P.json --out Q.json

Each micro-batch size in P is profiled; the rounds, warm-up and block chain follow
`hyperpipe profile` (src/hyperpipe/runtime/profiler.h): rounds interleave every setting,
the median of the rounds after the warm-up is kept, blocks run as a chain of up to four
and each is charged its share, the head's forward includes the loss.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_pipelining_run as runtime  # noqa: E402  (the modules PyTorch's run trains)

WARMUP_ROUNDS, MEASURED_ROUNDS = 3, 9  # kProfileWarmup, kProfileRepeats
PROFILED_BLOCKS = 4  # kProfiledBlocks: a stage holds several blocks, one alone stays in cache
FLUSH_BYTES = 64 << 20  # as the profiler's cache flush before each timed quantity
LAYER_KINDS = ("embedding", "decoder_block", "head")
_flush = torch.zeros(FLUSH_BYTES // 4)


def timed(fn):
    _flush.add_(1.0)
    began = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - began


class LayerBench:
    """One layer kind of the model as PyTorch's run builds it, with the run's AdamW."""

    def __init__(self, model, kind):
        self.model = model
        self.kind = kind
        if kind == "decoder_block":
            self.count = min(PROFILED_BLOCKS, model["layers"])
            self.module = nn.Sequential(*(runtime.chain_layer(model, 1 + i)
                                          for i in range(self.count)))
        else:
            self.count = 1
            index = 0 if kind == "embedding" else model["layers"] + 1
            self.module = runtime.chain_layer(model, index)
        parameters = list(self.module.parameters())
        self.parameters = parameters
        self.optimizer = torch.optim.AdamW(
            [{"params": [p for p in parameters if p.dim() >= 2],
              "weight_decay": runtime.WEIGHT_DECAY},
             {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0}],
            lr=runtime.LEARNING_RATE)

    def run(self, micro_batch, samples):
        m = self.model
        seq = m["seq_len"]
        if self.kind == "embedding":
            inputs = torch.randint(0, m["vocab"], (micro_batch, seq))
        else:
            inputs = torch.randn(micro_batch, seq, m["hidden"], requires_grad=True)
        targets = torch.randint(0, m["vocab"], (micro_batch, seq))

        def forward():
            out = self.module(inputs)
            return runtime.loss_fn(out, targets) if self.kind == "head" else out

        output, seconds = timed(forward)
        samples["forward_ms"].append(seconds)
        grad = None if self.kind == "head" else torch.randn_like(output)
        _, seconds = timed(lambda: torch.autograd.backward(output, grad))
        samples["backward_ms"].append(seconds)

        def step():  # the run's optimizer work: the gradients' norm, clipping, AdamW
            norm = torch.stack([p.grad.pow(2).sum() for p in self.parameters]).sum().sqrt()
            scale = min(1.0, runtime.CLIP / (norm.item() + 1e-6))
            if scale < 1.0:
                for p in self.parameters:
                    p.grad.mul_(scale)
            self.optimizer.step()

        _, seconds = timed(step)
        samples["optimizer_ms"].append(seconds)
        # B apart from the whole backward, as PyTorch's zero-bubble schedules run it (the
        # input's gradient alone); W is the rest of the backward (finish).
        output = forward()
        if self.kind == "embedding":  # no input gradient: as HyperPipe's profile, all B
            samples["backward_input_ms"].append(samples["backward_ms"][-1])
        else:
            _, seconds = timed(lambda: torch.autograd.grad(output, [inputs], grad))
            samples["backward_input_ms"].append(seconds)

    def finish(self, times):
        """W as the whole backward less B (never below zero)."""
        times["backward_weight_ms"] = max(0.0, times["backward_ms"] - times["backward_input_ms"])
        return times


def profile(model, micro_batches):
    benches = {kind: LayerBench(model, kind) for kind in LAYER_KINDS}
    keys = ("forward_ms", "backward_ms", "optimizer_ms", "backward_input_ms")
    samples = {(kind, mb): {key: [] for key in keys} for kind in benches for mb in micro_batches}
    for round_index in range(WARMUP_ROUNDS + MEASURED_ROUNDS):
        for (kind, mb), taken in samples.items():
            benches[kind].run(mb, taken)
            if round_index < WARMUP_ROUNDS:
                for values in taken.values():
                    values.clear()
    return {(kind, mb): benches[kind].finish(
        {key: statistics.median(values) * 1e3 / benches[kind].count
         for key, values in taken.items()})
            for (kind, mb), taken in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the model file PyTorch's run trains")
    parser.add_argument("--profiles", required=True, help="a `hyperpipe profile` of it")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as each process of both runtimes
    torch.manual_seed(0)
    model = runtime.read_model(args.model)
    with open(args.profiles, encoding="utf-8") as f:
        document = json.load(f)
    entries = document["entries"]
    unknown = sorted({e["layer"] for e in entries} - set(LAYER_KINDS))
    if unknown or any(e.get("tp", 1) != 1 for e in entries):
        sys.exit(f"{args.profiles}: entries: expected tp 1 of the layer kinds "
                 f"{sorted(LAYER_KINDS)}; found {unknown or 'tp > 1'}")
    measured = profile(model, sorted({e["micro_batch"] for e in entries}))
    for entry in entries:
        entry.update(measured[(entry["layer"], entry["micro_batch"])])
    document["host"] = f"{document.get('host', '')} (PyTorch {torch.__version__} eager layers)"
    temporary = args.out + ".partial"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
    os.replace(temporary, args.out)  # never a half-written profile
    return 0


if __name__ == "__main__":
    sys.exit(main())
