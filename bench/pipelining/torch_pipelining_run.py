"""One run of a HyperPipe plan on PyTorch's own pipeline runtime (torch.distributed.pipelining):
the same GPT (HyperPipe's layers written in PyTorch: learned positions, pre-norm blocks
with a fused q/k/v projection and materialised causal attention, tanh-GELU MLP, an untied
head), the same split into stages, the same schedule, micro-batches and AdamW with the
same global-norm clipping, one process per device group over Gloo, one thread each as
HyperPipe's processes. Prints one JSON line: each step's seconds (rank 0, from a barrier
to the end of its optimizer step).

    python3 torch_pipelining_run.py --plan P --model M.yaml --steps N
"""
import argparse
import json
import math
import os
import socket
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining import schedules

# HyperPipe's schedule kinds → PyTorch's classes. zb-h1 is ZB-H1 with one stage per rank:
# PyTorch's ScheduleInterleavedZeroBubble (ZB1P) given one local stage.
SCHEDULES = {"gpipe": schedules.ScheduleGPipe, "1f1b": schedules.Schedule1F1B,
             "interleaved": schedules.ScheduleInterleaved1F1B,
             "zb-h1": schedules.ScheduleInterleavedZeroBubble}
# HyperPipe's train defaults (train --help): AdamW, clipping at global norm 1.
LEARNING_RATE, WEIGHT_DECAY, CLIP = 1e-3, 0.1, 1.0
NORM_EPS = 1e-5  # GPT's LayerNorm, as HyperPipe's model files default


def read_model(path):
    fields = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if ":" in line:
                key, value = (part.strip() for part in line.split(":", 1))
                fields[key] = value
    return {key: int(fields[key]) for key in ("hidden", "layers", "heads", "vocab", "seq_len")}


class Embedding(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.tokens = nn.Embedding(m["vocab"], m["hidden"])
        self.positions = nn.Embedding(m["seq_len"], m["hidden"])

    def forward(self, ids):
        return self.tokens(ids) + self.positions(torch.arange(ids.size(1)))


class Block(nn.Module):
    def __init__(self, m):
        super().__init__()
        h = m["hidden"]
        self.heads = m["heads"]
        self.attention_norm = nn.LayerNorm(h, eps=NORM_EPS)
        self.qkv = nn.Linear(h, 3 * h)
        self.out = nn.Linear(h, h)
        self.mlp_norm = nn.LayerNorm(h, eps=NORM_EPS)
        self.up = nn.Linear(h, 4 * h)
        self.down = nn.Linear(4 * h, h)

    def attention(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = (t.view(b, s, self.heads, d).transpose(1, 2).contiguous()
                   for t in self.qkv(x).split(h, -1))
        scores = q.matmul(k.transpose(-2, -1)) / math.sqrt(d)
        future = torch.ones(s, s, dtype=torch.bool).triu(1)
        mixed = scores.masked_fill(future, float("-inf")).softmax(-1).matmul(v)
        return self.out(mixed.transpose(1, 2).reshape(b, s, h))

    def forward(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.down(F.gelu(self.up(self.mlp_norm(x)), approximate="tanh"))


class Head(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.norm = nn.LayerNorm(m["hidden"], eps=NORM_EPS)
        self.output = nn.Linear(m["hidden"], m["vocab"], bias=False)

    def forward(self, x):
        return self.output(self.norm(x))


def chain_layer(m, index):
    """The plan's chain: 0 the embedding, 1 … layers the blocks, then the head."""
    if index == 0:
        return Embedding(m)
    return Block(m) if index <= m["layers"] else Head(m)


def loss_fn(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def run_rank(rank, world, port, plan, model, steps, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    kind = plan["schedule"] if isinstance(plan["schedule"], str) else plan["schedule"]["kind"]
    stages, modules = [], []
    for index, stage in enumerate(plan["stages"]):
        if index % world != rank:
            continue
        module = nn.Sequential(*(chain_layer(model, layer) for layer in range(*stage["layers"])))
        modules.append(module)
        stages.append(PipelineStage(module, index, len(plan["stages"]), torch.device("cpu")))
    micro_batches = plan["micro_batches"]
    schedule_class = SCHEDULES[kind]
    schedule = schedule_class(stages if kind in ("interleaved", "zb-h1") else stages[0],
                              micro_batches, loss_fn=loss_fn)
    parameters = [p for module in modules for p in module.parameters()]
    matrices = [p for p in parameters if p.dim() >= 2]
    others = [p for p in parameters if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": WEIGHT_DECAY},
                                   {"params": others, "weight_decay": 0.0}], lr=LEARNING_RATE)
    batch = plan["micro_batch_size"] * micro_batches
    generator = torch.Generator().manual_seed(0)
    holds_first = 0 in [s.stage_index for s in stages]
    holds_last = len(plan["stages"]) - 1 in [s.stage_index for s in stages]
    seconds = []
    for _ in range(steps):
        tokens = torch.randint(0, model["vocab"], (batch, model["seq_len"] + 1),
                               generator=generator)
        dist.barrier()
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        arguments = (tokens[:, :-1],) if holds_first else ()
        keywords = {"target": tokens[:, 1:], "losses": []} if holds_last else {}
        schedule.step(*arguments, **keywords)
        # Clipping at the global norm: every rank's share of the squares summed.
        squares = torch.stack([p.grad.pow(2).sum() for p in parameters if p.grad is not None])
        total = squares.sum()
        dist.all_reduce(total)
        scale = min(1.0, CLIP / (total.sqrt().item() + 1e-6))
        if scale < 1.0:
            for p in parameters:
                if p.grad is not None:
                    p.grad.mul_(scale)
        optimizer.step()
        seconds.append(time.perf_counter() - began)
    if rank == 0:
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"seconds": seconds}, f)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    with open(args.plan, encoding="utf-8") as f:
        plan = json.load(f)
    world = len({tuple(stage["devices"]) for stage in plan["stages"]})
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "seconds.json")
        torch.multiprocessing.spawn(run_rank, args=(world, free_port(), plan,
                                                    read_model(args.model), args.steps, out),
                                    nprocs=world)
        with open(out, encoding="utf-8") as f:
            print(json.dumps(json.load(f)))


if __name__ == "__main__":
    sys.exit(main())
