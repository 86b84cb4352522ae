#!/usr/bin/env python3
"""Holds HyperPipe's memory count of a torchtitan FSDP plan against PyTorch's own count.

torchtitan_step.py builds torchtitan's training step (FSDP2 over `--dp` ranks, one pipeline
stage, per-op selective checkpointing, AdamW, the loss in fp32) on fake tensors. PyTorch's
FSDPMemTracker (torch.distributed._tools.fsdp2_mem_tracker) counts every tensor the step
allocates; its peak over the second step's forward and backward (when the optimizer's
state exists) is compared with what `hyperpipe simulate` predicts the allocator hands out
for the same plan, torchtitan running it.

  python3 bench/memory_validation/fsdp_oracle.py --hyperpipe build/hyperpipe \\
      [--hidden 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 \\
       --seq 8192 --batch 2 --dp 8] [--tolerance 0.03]

Exit status 1 when |error| exceeds --tolerance (both counts are exact: nothing here is
timed or measured on hardware).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchtitan_step  # noqa: E402

GIB = 2 ** 30
# What the allocator hands out: every term but its reserve and what fake tensors never make.
NOT_ALLOCATED_HERE = torchtitan_step.NOT_MADE_ON_A_CPU | torchtitan_step.RESERVE_TERMS


def pytorch_peak(shape):
    import torch
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

    step = torchtitan_step.build(shape)
    with step.fake_mode:
        step.step()  # the first step makes the optimizer's state
        tracker = FSDPMemTracker(step.model, step.optimizer)
        with tracker:
            step.forward_backward()
        return tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hyperpipe", default="build/hyperpipe")
    # Defaults: a small LLaMA (a CI-sized run); torchtitan's Llama 3.1 8B benchmark is
    # --hidden 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256
    # --seq 8192 --batch 2 --dp 8.
    torchtitan_step.add_arguments(parser)
    parser.add_argument("--tolerance", type=float, default=None,
                        help="fail when |predicted/PyTorch's - 1| exceeds this")
    options = parser.parse_args()
    shape = torchtitan_step.shape_of(options)
    terms = torchtitan_step.hyperpipe_terms(options.hyperpipe, shape)
    counted = {name: b for name, b in terms.items() if name not in NOT_ALLOCATED_HERE}
    predicted = sum(counted.values())
    pytorch = pytorch_peak(shape)
    error = predicted / pytorch - 1
    print(f"PyTorch's FSDPMemTracker peak  {pytorch / GIB:8.3f} GiB")
    print(f"HyperPipe's allocated count     {predicted / GIB:8.3f} GiB  ({100 * error:+.1f}%)")
    print("  " + ", ".join(f"{name} {b / GIB:.3f}" for name, b in counted.items() if b))
    if options.tolerance is not None and abs(error) > options.tolerance:
        print(f"fsdp_oracle: |error| {100 * abs(error):.1f}% exceeds {100 * options.tolerance:.1f}%",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
