"""The host time PyTorch's pipeline runtime (torch.distributed.pipelining) spends per
action, apart from the layers' compute and from waiting on its neighbours: building and
posting the exchanges, keeping each micro-batch's state, calling autograd. On CPU
stand-ins the same thread computes, so this time adds to every action; the simulator's
torchtitan semantics take it from here (plan/framework.cc, host_seconds_per_action).

It runs each schedule of the side-by-side bench (GPipe, 1F1B, interleaved 1F1B, ZB-H1) on
two processes over Gloo with stages that compute almost nothing: each layer is one scalar
weight times a one-value-per-token tensor, so compute and transfers are negligible and a
rank's time in the schedule, less its time waiting on its neighbour, is the runtime's
own (less the action's compute, timed alone). Prints a table: µs per action, the median
over steps, each rank; --widths repeats it with larger exchanges.
These stages share no shape with the side-by-side bench's models, whose steps test what
is measured here.

    ~/.cache/hyperpipe/venv/bin/python bench/pipelining/torch_host_time.py [--steps 30] \
        [--widths 1,256,1024]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining import schedules
from torch.distributed.pipelining import stage as stage_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_pipelining_run as run  # noqa: E402  (its schedule table and port helper)

MICRO_BATCHES, MICRO_BATCH_SIZE, TOKENS = 8, 4, 64  # the side-by-side bench's counts
LAYERS_PER_STAGE = 2
WARMUP_STEPS = 3


class Scale(nn.Module):
    """A layer that computes almost nothing: one weight times its input, `width` values
    per token (the first layer spreads each token id over them)."""

    def __init__(self, first, width):
        super().__init__()
        self.first = first
        self.width = width
        self.weight = nn.Parameter(torch.ones(()))

    def forward(self, x):
        if self.first:
            x = x.float().unsqueeze(-1).expand(-1, -1, self.width)
        return x * self.weight


def loss_fn(output, target):
    return (output.mean(-1) - target.float()).square().mean()


def compute_seconds(width):
    """One action's own compute at `width` (half a stage's forward and backward), timed in
    this process alone, to take out of the per-action time."""
    torch.set_num_threads(1)
    stage = nn.Sequential(*(Scale(False, width) for _ in range(LAYERS_PER_STAGE)))
    x = torch.ones(MICRO_BATCH_SIZE, TOKENS, width, requires_grad=True)
    samples = []
    for _ in range(50):
        began = time.perf_counter()
        stage(x).sum().backward()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) / 2


def timed(owner, name, totals, key):
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            totals[key] += time.perf_counter() - began

    setattr(owner, name, wrapper)


def count_actions(owner, name, counts):
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        counts[0] += 1
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


def run_rank(rank, world, port, kind, width, steps, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    totals = {"wait": 0.0}
    actions = [0]
    timed(schedules, "_wait_batch_p2p", totals, "wait")
    for name in ("forward_one_chunk", "backward_one_chunk", "backward_weight_one_chunk"):
        count_actions(stage_module._PipelineStageBase, name, actions)
    stage_count = 4 if kind == "interleaved" else 2
    stages = []
    for index in range(rank, stage_count, world):
        layers = [Scale(index == 0 and i == 0, width) for i in range(LAYERS_PER_STAGE)]
        stages.append(PipelineStage(nn.Sequential(*layers), index, stage_count,
                                    torch.device("cpu")))
    multi = kind in ("interleaved", "zb-h1")
    schedule = run.SCHEDULES[kind](stages if multi else stages[0], MICRO_BATCHES,
                                   loss_fn=loss_fn)
    holds_first = any(s.stage_index == 0 for s in stages)
    holds_last = any(s.stage_index == stage_count - 1 for s in stages)
    per_action = []
    for _ in range(steps):
        tokens = torch.randint(0, 100, (MICRO_BATCH_SIZE * MICRO_BATCHES, TOKENS))
        dist.barrier()
        totals["wait"], actions[0] = 0.0, 0
        began = time.perf_counter()
        arguments = (tokens,) if holds_first else ()
        keywords = {"target": tokens, "losses": []} if holds_last else {}
        schedule.step(*arguments, **keywords)
        seconds = time.perf_counter() - began
        per_action.append((seconds - totals["wait"]) / actions[0])
    with open(f"{out}.{rank}", "w", encoding="utf-8") as f:
        json.dump(per_action[WARMUP_STEPS:], f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--widths", default="1",
                        help="values per token exchanged, comma-separated: 1 leaves the "
                             "exchanges a few hundred bytes; more measures what they add")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    world = 2
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for width in (int(w) for w in args.widths.split(",")):
            compute = compute_seconds(width)
            for kind in run.SCHEDULES:
                out = os.path.join(work, f"{kind}-{width}")
                torch.multiprocessing.spawn(run_rank, args=(world, run.free_port(), kind, width,
                                                            args.steps, out), nprocs=world)
                ranks = []
                for rank in range(world):
                    with open(f"{out}.{rank}", encoding="utf-8") as f:
                        ranks.append(statistics.median(json.load(f)) - compute)
                rows.append({"schedule": kind, "width": width,
                             "message_bytes": MICRO_BATCH_SIZE * TOKENS * width * 4,
                             "host_s": ranks})
    if args.json:
        print(json.dumps(rows))
        return 0
    print("| schedule | bytes exchanged per action | rank 0 | rank 1 |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print(f"| {row['schedule']} | {row['message_bytes']} | " +
              " | ".join(f"{x * 1e6:.0f} µs" for x in row["host_s"]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
