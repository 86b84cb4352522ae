"""torchtitan's FSDP training step of a LLaMA, built in PyTorch on fake tensors.

No memory is allocated and no GPU is needed: every tensor is a FakeTensor and the process
group is PyTorch's fake one of `dp` ranks (this process is rank 0). What is built follows
torchtitan (written here after it, not imported; torchtitan is not a dependency):

* the model: models/llama3 (RMSNorm computed in fp32, rotary embeddings, grouped-query
  attention through F.scaled_dot_product_attention, SwiGLU);
* its selective activation checkpointing, SelectiveAC (distributed/activation_checkpoint.py):
  each block checkpointed with a policy that keeps the outputs of every other aten.mm in
  forward order and of the attention kernel, and recomputes everything else;
* its FSDP2 units (distributed/fsdp.py): `version="2025"` shards the embedding, each block
  and the final norm with the output layer as units, the last kept gathered after forward;
  `version="2024-12"` (the commit of its December 2024 benchmarks, 9dec370) shards each block
  (all but the last resharded after forward) and the root (embedding, norm, output), and
  its model returns the logits upcast to fp32;
* its train step: forward, cross-entropy in fp32, the output deleted before the backward,
  gradient clipping, AdamW (foreach), zero_grad.
"""
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace


# Memory terms of `hyperpipe simulate` that fake tensors on a CPU never make: what lies
# outside the caching allocator, and cuBLAS's workspace (a CUDA library's). The
# allocator's own reserve (`allocator`, `stream_pools`) is what allocator_replay.py
# reproduces; fsdp_oracle.py leaves it out too.
NOT_MADE_ON_A_CPU = {"communicators", "context", "reserved", "workspaces"}
RESERVE_TERMS = {"allocator", "stream_pools"}


@dataclass
class Shape:
    hidden: int = 1024
    layers: int = 4
    heads: int = 16
    kv_heads: int = 4
    ffn: int = 3584
    vocab: int = 32000
    seq: int = 2048
    batch: int = 2  # sequences per rank
    dp: int = 8
    version: str = "2025"


def add_arguments(parser, defaults=Shape()):
    for name, value in vars(defaults).items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)


def shape_of(options):
    return Shape(**{name: getattr(options, name) for name in vars(Shape())})


def build(shape):
    """The step's parts: fake_mode, model, optimizer, step() (one training step) and
    forward_backward() (the same without the optimizer); run them under `with fake_mode`."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    s = shape
    head_dim = s.hidden // s.heads

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
            h, kv = s.hidden, s.kv_heads * head_dim
            self.attention_norm, self.ffn_norm = RMSNorm(h), RMSNorm(h)
            self.wq, self.wk = nn.Linear(h, h, bias=False), nn.Linear(h, kv, bias=False)
            self.wv, self.wo = nn.Linear(h, kv, bias=False), nn.Linear(h, h, bias=False)
            self.w1 = nn.Linear(h, s.ffn, bias=False)
            self.w3 = nn.Linear(h, s.ffn, bias=False)
            self.w2 = nn.Linear(s.ffn, h, bias=False)

        def forward(self, x, cos, sin):
            b, t, _ = x.shape
            n = self.attention_norm(x)
            q, k, v = self.wq(n), self.wk(n), self.wv(n)
            q = rotate(q.view(b, t, s.heads, head_dim), cos, sin)
            k = rotate(k.view(b, t, s.kv_heads, head_dim), cos, sin)
            v = v.view(b, t, s.kv_heads, head_dim)
            k = k.repeat_interleave(s.heads // s.kv_heads, dim=2)
            v = v.repeat_interleave(s.heads // s.kv_heads, dim=2)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(b, t, s.hidden))
            n = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(n)) * self.w3(n))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(s.vocab, s.hidden)
            self.layers = nn.ModuleDict({str(i): Block() for i in range(s.layers)})
            self.norm = RMSNorm(s.hidden)
            self.output = nn.Linear(s.hidden, s.vocab, bias=False)
            angles = torch.arange(s.seq)[:, None] * (
                500000.0 ** (-torch.arange(0, head_dim, 2) / head_dim))[None]
            self.register_buffer("cos", angles.cos()[None, :, None, :], persistent=False)
            self.register_buffer("sin", angles.sin()[None, :, None, :], persistent=False)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for block in self.layers.values():
                h = block(h, self.cos, self.sin)
            logits = self.output(self.norm(h))
            return logits.float() if s.version == "2024-12" else logits

    # The attention kernels whose outputs the policy keeps; on a CPU the fused kernel is the
    # _for_cpu one, which keeps the same output and log-sum-exp.
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

    def shard(model, mesh):
        """Checkpoints every block and makes the FSDP units of the shape's torchtitan version."""
        for name, block in list(model.layers.items()):
            model.layers[name] = checkpoint_wrapper(block, context_fn=contexts,
                                                    preserve_rng_state=False)
        precision = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        if s.version == "2024-12":
            for name, block in model.layers.items():
                fully_shard(block, mesh=mesh, mp_policy=precision,
                            reshard_after_forward=int(name) < s.layers - 1)
            # Its `not pp_enabled` (PyTorch's own default keeps a root gathered).
            fully_shard(model, mesh=mesh, mp_policy=precision, reshard_after_forward=True)
        else:
            fully_shard(model.tok_embeddings, mesh=mesh, mp_policy=precision)
            for block in model.layers.values():
                fully_shard(block, mesh=mesh, mp_policy=precision)
            fully_shard([model.norm, model.output], mesh=mesh, mp_policy=precision,
                        reshard_after_forward=False)
            fully_shard(model, mesh=mesh, mp_policy=precision)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, foreach=True)
        return model, optimizer

    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group("fake", rank=0, world_size=s.dp, store=FakeStore())
    mesh = init_device_mesh("cpu", (s.dp,))  # outside fake mode: it reads its rank map
    fake_mode = FakeTensorMode()
    with fake_mode:
        model, optimizer = shard(Llama(), mesh)

    def forward_backward():
        tokens = torch.randint(0, s.vocab, (s.batch, s.seq))
        labels = torch.randint(0, s.vocab, (s.batch, s.seq))
        pred = model(tokens)
        loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
        del pred
        loss.backward()

    def step():
        forward_backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        optimizer.step()
        optimizer.zero_grad()

    return SimpleNamespace(fake_mode=fake_mode, model=model, optimizer=optimizer,
                           forward_backward=forward_backward, step=step)


def hyperpipe_terms(hyperpipe, shape):
    """`hyperpipe simulate`'s memory terms for the same plan, torchtitan running it."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    s = shape
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "model.yaml"), "w") as f:
            f.write(f"name: torchtitan-step\nflavour: llama\nhidden: {s.hidden}\n"
                    f"layers: {s.layers}\nheads: {s.heads}\nkv_heads: {s.kv_heads}\n"
                    f"ffn_hidden: {s.ffn}\nvocab: {s.vocab}\nseq_len: {s.seq}\n"
                    "tied_embeddings: false\ndropout: false\nflash_attention: true\n"
                    "dtype: bf16\n")
        with open(os.path.join(directory, "cluster.yaml"), "w") as f:
            f.write(f"name: oracle\nnodes:\n  - {{name: node-0, gpu: H100-SXM, count: {s.dp}, "
                    "memory: 1024 GiB}\n"
                    "links:\n  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n")
        plan = {"format": "hyperpipe.plan/1", "model": "model.yaml", "cluster": "cluster.yaml",
                "runtime": "torchtitan", "micro_batch_size": s.batch * s.dp,
                "micro_batches": 1, "schedule": "1f1b", "recompute": "selective",
                "sequence_parallel": False, "shard_optimizer": True,
                "stages": [{"layers": [0, s.layers + 2], "devices": list(range(s.dp)),
                            "dp": s.dp, "tp": 1}]}
        with open(os.path.join(directory, "plan.json"), "w") as f:
            json.dump(plan, f)
        result = subprocess.run([hyperpipe, "simulate", "--plan",
                                 os.path.join(directory, "plan.json"), "--format", "json"],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            sys.exit(f"hyperpipe simulate failed: {result.stderr.strip()}")
        report = json.loads(result.stdout)
    return {t["name"]: t["bytes"] for t in report["ranks"][0]["memory"]["terms"]}
