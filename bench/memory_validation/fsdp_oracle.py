#!/usr/bin/env python3
"""Holds HyperPipe's memory count of a torchtitan FSDP plan against PyTorch's own count.

torchtitan trains a LLaMA with FSDP2 (torch.distributed.fsdp.fully_shard) over data-parallel
ranks, one pipeline stage, and its per-op selective activation checkpointing. This script
builds that training step in PyTorch on fake tensors (no memory, no GPU, a fake process
group of `--dp` ranks): the embedding, every block and the final norm with the output layer
as FSDP units, as torchtitan/distributed/fsdp.py groups them (all but the last reshard after
forward); each block wrapped in a selective checkpoint whose policy keeps the outputs of
every other matrix product and of the attention kernel (torchtitan/distributed/
activation_checkpoint.py, SelectiveAC); AdamW; the loss in fp32 with the output dropped
before the backward (torchtitan's train step). PyTorch's FSDPMemTracker
(torch.distributed._tools.fsdp2_mem_tracker) counts every tensor the step allocates; its
peak over a step's forward and backward (the second step, when the optimizer's state
exists) is compared with what `hyperpipe simulate` predicts the allocator hands out for the
same plan. The model code is written here after torchtitan's LLaMA (models/llama3), not
imported: torchtitan is not a dependency.

  python3 bench/memory_validation/fsdp_oracle.py --hyperpipe build/hyperpipe \\
      [--hidden 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 \\
       --seq 8192 --batch 2 --dp 8] [--tolerance 0.03]

Exit status 1 when |error| exceeds --tolerance (both counts are exact: nothing here is
timed or measured on hardware).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from functools import partial

GIB = 2 ** 30
# What the allocator hands out: every term but the allocator's reserve, what lies outside
# it, and cuBLAS's workspace (a CUDA library's, which fake tensors on a CPU never make).
NOT_COUNTED_BY_THE_TRACKER = {"allocator", "communicators", "context", "reserved", "workspaces"}


def pytorch_peak(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    head_dim = args.hidden // args.heads

    class RMSNorm(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            wide = x.float()
            scaled = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + 1e-5)
            return scaled.type_as(x) * self.weight

    def rotate(x, cos, sin):
        even, odd = x[..., ::2].float(), x[..., 1::2].float()
        turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1)
        return turned.flatten(-2).type_as(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            h, kv = args.hidden, args.kv_heads * head_dim
            self.attention_norm, self.ffn_norm = RMSNorm(h), RMSNorm(h)
            self.wq, self.wk = nn.Linear(h, h, bias=False), nn.Linear(h, kv, bias=False)
            self.wv, self.wo = nn.Linear(h, kv, bias=False), nn.Linear(h, h, bias=False)
            self.w1 = nn.Linear(h, args.ffn, bias=False)
            self.w3 = nn.Linear(h, args.ffn, bias=False)
            self.w2 = nn.Linear(args.ffn, h, bias=False)

        def forward(self, x, cos, sin):
            b, t, _ = x.shape
            n = self.attention_norm(x)
            q, k, v = self.wq(n), self.wk(n), self.wv(n)
            q = rotate(q.view(b, t, args.heads, head_dim), cos, sin)
            k = rotate(k.view(b, t, args.kv_heads, head_dim), cos, sin)
            v = v.view(b, t, args.kv_heads, head_dim)
            repeat = args.heads // args.kv_heads
            k = k.repeat_interleave(repeat, dim=2)
            v = v.repeat_interleave(repeat, dim=2)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(b, t, args.hidden))
            n = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(n)) * self.w3(n))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(args.vocab, args.hidden)
            self.layers = nn.ModuleDict({str(i): Block() for i in range(args.layers)})
            self.norm = RMSNorm(args.hidden)
            self.output = nn.Linear(args.hidden, args.vocab, bias=False)
            angles = torch.arange(args.seq)[:, None] * (
                500000.0 ** (-torch.arange(0, head_dim, 2) / head_dim))[None]
            self.register_buffer("cos", angles.cos()[None, :, None, :], persistent=False)
            self.register_buffer("sin", angles.sin()[None, :, None, :], persistent=False)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for block in self.layers.values():
                h = block(h, self.cos, self.sin)
            return self.output(self.norm(h))

    # The attention kernels whose outputs the policy keeps; on a CPU the fused kernel is
    # the _for_cpu one, which keeps the same output and log-sum-exp.
    kept_ops = {torch.ops.aten.mm.default,
                torch.ops.aten._scaled_dot_product_flash_attention.default,
                torch.ops.aten._scaled_dot_product_efficient_attention.default,
                torch.ops.aten._scaled_dot_product_cudnn_attention.default,
                torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default}

    def policy(counts, ctx, func, *unused, **unused_too):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            counts[key] += 1
        keep = func in kept_ops and not (func == torch.ops.aten.mm.default and counts[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    def contexts():
        return create_selective_checkpoint_contexts(partial(policy, {"forward": 0, "recompute": 0}))

    torch.distributed.init_process_group("fake", rank=0, world_size=args.dp, store=FakeStore())
    mesh = init_device_mesh("cpu", (args.dp,))
    with FakeTensorMode():
        model = Llama()
        for name, block in list(model.layers.items()):
            model.layers[name] = checkpoint_wrapper(block, context_fn=contexts,
                                                    preserve_rng_state=False)
        precision = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        fully_shard(model.tok_embeddings, mesh=mesh, mp_policy=precision)
        for block in model.layers.values():
            fully_shard(block, mesh=mesh, mp_policy=precision)
        fully_shard([model.norm, model.output], mesh=mesh, mp_policy=precision,
                    reshard_after_forward=False)
        fully_shard(model, mesh=mesh, mp_policy=precision)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, foreach=True)

        def forward_backward():
            tokens = torch.randint(0, args.vocab, (args.batch, args.seq))
            labels = torch.randint(0, args.vocab, (args.batch, args.seq))
            pred = model(tokens)
            loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
            del pred
            loss.backward()

        forward_backward()  # the first step makes the optimizer's state
        optimizer.step()
        optimizer.zero_grad()
        tracker = FSDPMemTracker(model, optimizer)
        with tracker:
            forward_backward()
        return tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]


def hyperpipe_prediction(args):
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "model.yaml"), "w") as f:
            f.write(f"name: fsdp-oracle\nflavour: llama\nhidden: {args.hidden}\n"
                    f"layers: {args.layers}\nheads: {args.heads}\nkv_heads: {args.kv_heads}\n"
                    f"ffn_hidden: {args.ffn}\nvocab: {args.vocab}\nseq_len: {args.seq}\n"
                    "tied_embeddings: false\ndropout: false\nflash_attention: true\n"
                    "dtype: bf16\n")
        with open(os.path.join(directory, "cluster.yaml"), "w") as f:
            f.write(f"name: oracle\nnodes:\n  - {{name: node-0, gpu: H100-SXM, count: {args.dp}}}\n"
                    "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n")
        plan = {"format": "hyperpipe.plan/1", "model": "model.yaml", "cluster": "cluster.yaml",
                "runtime": "torchtitan", "micro_batch_size": args.batch * args.dp,
                "micro_batches": 1, "schedule": "1f1b", "recompute": "selective",
                "sequence_parallel": False, "shard_optimizer": True,
                "stages": [{"layers": [0, args.layers + 2], "devices": list(range(args.dp)),
                            "dp": args.dp, "tp": 1}]}
        with open(os.path.join(directory, "plan.json"), "w") as f:
            json.dump(plan, f)
        result = subprocess.run([args.hyperpipe, "simulate", "--plan",
                                 os.path.join(directory, "plan.json"), "--format", "json"],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            sys.exit(f"fsdp_oracle: hyperpipe simulate failed: {result.stderr.strip()}")
        report = json.loads(result.stdout)
    terms = report["ranks"][0]["memory"]["terms"]
    counted = {t["name"]: t["bytes"] for t in terms if t["name"] not in NOT_COUNTED_BY_THE_TRACKER}
    return sum(counted.values()), counted


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    # Defaults: a small LLaMA (a CI-sized run); the Llama 3.1 8B of torchtitan's benchmark
    # is --hidden 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256
    # --seq 8192 --batch 2 --dp 8.
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=3584)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--dp", type=int, default=8)
    parser.add_argument("--tolerance", type=float, default=None,
                        help="fail when |predicted/PyTorch's - 1| exceeds this")
    args = parser.parse_args()
    predicted, terms = hyperpipe_prediction(args)
    counted = pytorch_peak(args)
    error = predicted / counted - 1
    print(f"PyTorch's FSDPMemTracker peak  {counted / GIB:8.3f} GiB")
    print(f"HyperPipe's allocated count     {predicted / GIB:8.3f} GiB  ({100 * error:+.1f}%)")
    print("  " + ", ".join(f"{name} {b / GIB:.3f}" for name, b in terms.items() if b))
    if args.tolerance is not None and abs(error) > args.tolerance:
        print(f"fsdp_oracle: |error| {100 * abs(error):.1f}% exceeds {100 * args.tolerance:.1f}%",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
