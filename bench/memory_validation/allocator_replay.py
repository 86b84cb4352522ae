#!/usr/bin/env python3
"""What PyTorch's CUDA caching allocator reserves for torchtitan's FSDP step, by replay.

A device's reported peak is the caching allocator's *reserved* bytes: segments it got from
cudaMalloc and keeps, whether a tensor uses them or not. This script records every storage
torchtitan's training step (torchtitan_step.py, on fake tensors) allocates and frees, in
order, with the stream it is allocated on (FSDP2 allocates its all-gather outputs on the
all-gather copy-in stream and the reduce-scatter outputs, which become the sharded
gradients, on the reduce-scatter stream: torch/distributed/fsdp/_fully_shard/
_fsdp_collectives.py), and replays that sequence through the allocator's policy as
c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x, default settings) states it:

* requests round up to 512 B; up to 1 MiB they come from the small pool, in 2 MiB
  segments; larger ones from the large pool: 20 MiB segments below 10 MiB, else the size
  rounded up to 2 MiB;
* a request takes the smallest free block of its pool and stream that fits, split when the
  rest is at least 512 B (small pool) or over 1 MiB (large pool); with none, a new segment;
* a freed block merges with free neighbours of its segment and stays reserved (segments go
  back to the driver only when cudaMalloc fails or on empty_cache, which a step that fits
  never reaches);
* free blocks are kept per stream: a block serves requests on the stream it was made on.

It prints the peaks of allocated and reserved bytes over steady steps (the third and
fourth), the reserve held in the side streams' pools, and the default stream's reserved
over allocated ratio. `--sweep` runs the shapes that set HyperPipe's default ratio for
torchtitan (cost/device_memory.cc); `--hyperpipe` also prints HyperPipe's prediction.

  ~/.cache/hyperpipe/venv/bin/python bench/memory_validation/allocator_replay.py \\
      --hidden 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 \\
      --seq 8192 --batch 2 --dp 8 --version 2024-12 [--hyperpipe build/hyperpipe]
"""
import argparse
import bisect
import contextlib
import os
import statistics
import subprocess
import sys
import weakref
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchtitan_step  # noqa: E402

GIB = 2 ** 30
MIB = 2 ** 20
# c10/cuda/CUDACachingAllocator.cpp's constants.
MIN_BLOCK_SIZE = 512  # kMinBlockSize: every request rounds up to a multiple
SMALL_SIZE = MIB  # kSmallSize: the largest request the small pool serves
SMALL_BUFFER = 2 * MIB  # kSmallBuffer: a small pool segment
LARGE_BUFFER = 20 * MIB  # kLargeBuffer: a segment for large requests below kMinLargeAlloc
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc
ROUND_LARGE = 2 * MIB  # kRoundLarge: larger requests' segments round up to this
DEFAULT_STREAM = 0
STEPS = 4  # two to reach a steady state, two measured
MEASURED_FROM = 2

# The shapes whose replay sets the default ratio (a spread of widths, vocabularies, batch
# and dp); the published runs' configurations are not among them.
SWEEP_FIELDS = ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "seq", "batch", "dp")
SWEEP = [
    (4096, 32, 32, 8, 14336, 128256, 8192, 1, 8),
    (4096, 32, 32, 8, 14336, 128256, 4096, 2, 32),
    (2048, 22, 16, 16, 5632, 32000, 2048, 4, 8),
    (2048, 16, 16, 4, 8192, 128256, 4096, 2, 16),
    (1024, 12, 16, 4, 3584, 32000, 1024, 8, 4),
    (5120, 40, 40, 8, 13824, 152064, 4096, 1, 8),
]


class Trace:
    """Every storage the step allocates and frees, in order, with its stream."""

    def __init__(self, torch):
        self.events = []  # ("alloc", id, bytes, stream) or ("free", id)
        self.live = set()
        self.ids = weakref.WeakKeyDictionary()  # storage -> its id while it holds memory
        self.next_id = 0
        self.streams = [DEFAULT_STREAM]
        self.torch = torch

    def allocate(self, storage):
        size = storage.nbytes()
        if size == 0:
            return None
        i = self.next_id
        self.next_id += 1
        self.events.append(("alloc", i, size, self.streams[-1]))
        self.live.add(i)
        weakref.finalize(storage, self.free, i)
        return i

    def free(self, i):
        if i in self.live:
            self.live.discard(i)
            self.events.append(("free", i))

    def see(self, tensor):
        if type(tensor).__name__ == "DTensor":
            tensor = tensor._local_tensor
        storage = tensor.untyped_storage()
        if storage not in self.ids:
            self.ids[storage] = self.allocate(storage)

    def install(self):
        """Hooks storage resizes (FSDP2 frees and re-gathers parameters so) and streams."""
        torch = self.torch
        trace = self
        resize = torch.UntypedStorage.resize_

        def traced_resize(storage, size):
            had = storage.nbytes()
            result = resize(storage, size)
            if had > 0 and trace.ids.get(storage) is not None:
                trace.free(trace.ids[storage])
                trace.ids[storage] = None
            if size > 0:
                trace.ids[storage] = trace.allocate(storage)
            return result

        @contextlib.contextmanager
        def traced_stream(stream):
            trace.streams.append(id(stream))
            try:
                yield
            finally:
                trace.streams.pop()

        torch.UntypedStorage.resize_ = traced_resize
        torch.cpu.stream = traced_stream  # FSDP2's device handle on a CPU

    def mode(self):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten
        trace = self

        class Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for t in tree_flatten(out)[0]:
                    if isinstance(t, trace.torch.Tensor):
                        trace.see(t)
                return out

        return Recorder()


class Block:
    __slots__ = ("size", "stream", "small", "free", "prev", "next", "key")

    def __init__(self, size, stream, small):
        self.size, self.stream, self.small = size, stream, small
        self.free, self.prev, self.next, self.key = False, None, None, None


class CachingAllocator:
    """CUDACachingAllocator's policy (see the module's docstring), counting bytes."""

    def __init__(self):
        self.pools = defaultdict(list)  # (stream, small) -> sorted [(size, serial, block)]
        self.serial = 0
        self.reserved = 0
        self.allocated = 0

    @staticmethod
    def round_size(size):
        return max(MIN_BLOCK_SIZE, -(-size // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE)

    @staticmethod
    def segment_size(size):
        if size <= SMALL_SIZE:
            return SMALL_BUFFER
        if size < MIN_LARGE_ALLOC:
            return LARGE_BUFFER
        return -(-size // ROUND_LARGE) * ROUND_LARGE

    def _insert(self, block):
        self.serial += 1
        block.key = (block.size, self.serial)
        bisect.insort(self.pools[(block.stream, block.small)], (block.size, self.serial, block),
                      key=lambda entry: entry[:2])

    def _remove(self, block):
        pool = self.pools[(block.stream, block.small)]
        at = bisect.bisect_left(pool, block.key, key=lambda entry: entry[:2])
        pool.pop(at)

    def malloc(self, size, stream):
        size = self.round_size(size)
        small = size <= SMALL_SIZE
        pool = self.pools[(stream, small)]
        at = bisect.bisect_left(pool, (size, -1), key=lambda entry: entry[:2])
        if at < len(pool):
            block = pool[at][2]
            self._remove(block)
        else:
            block = Block(self.segment_size(size), stream, small)
            self.reserved += block.size
        rest = block.size - size
        if (small and rest >= MIN_BLOCK_SIZE) or (not small and rest > SMALL_SIZE):
            remainder = Block(rest, stream, small)
            remainder.free = True
            remainder.prev, remainder.next = block, block.next
            if block.next:
                block.next.prev = remainder
            block.next, block.size = remainder, size
            self._insert(remainder)
        block.free = False
        self.allocated += block.size
        return block

    def release(self, block):
        self.allocated -= block.size
        block.free = True
        for neighbour in (block.prev, block.next):
            if neighbour is not None and neighbour.free:
                self._remove(neighbour)
                block.size += neighbour.size
                if neighbour is block.prev:
                    block.prev = neighbour.prev
                    if neighbour.prev:
                        neighbour.prev.next = block
                else:
                    block.next = neighbour.next
                    if neighbour.next:
                        neighbour.next.prev = block
        self._insert(block)

    def free_bytes(self, side_streams_only):
        return sum(size for (stream, _), pool in self.pools.items()
                   if not side_streams_only or stream != DEFAULT_STREAM
                   for size, _, _ in pool)


def replay(shape):
    import torch

    trace = Trace(torch)
    trace.install()
    step = torchtitan_step.build(shape)
    marks = []
    with step.fake_mode:
        # What exists before the first step: the sharded parameters and the buffers.
        for tensor in list(step.model.parameters()) + list(step.model.buffers()):
            trace.see(tensor)
        with trace.mode():
            for _ in range(STEPS):
                marks.append(len(trace.events))
                step.step()
    allocator = CachingAllocator()
    blocks = {}
    peak_allocated = peak_reserved = 0
    for n, event in enumerate(trace.events):
        if event[0] == "alloc":
            blocks[event[1]] = allocator.malloc(event[2], event[3])
        else:
            allocator.release(blocks.pop(event[1]))
        if n >= marks[MEASURED_FROM]:
            peak_allocated = max(peak_allocated, allocator.allocated)
            peak_reserved = max(peak_reserved, allocator.reserved)
    # Reserved bytes only grow, so at the end the side streams' pools hold what they held
    # at the peak; at the end of a step none of their blocks is in use.
    side = allocator.free_bytes(side_streams_only=True)
    return {"allocated": peak_allocated, "reserved": peak_reserved, "side_pools": side,
            "default_ratio": (peak_reserved - side) / peak_allocated}


def describe(shape, result):
    return (f"{shape.hidden}×{shape.layers} blocks, vocabulary {shape.vocab}, "
            f"{shape.batch}×{shape.seq} tokens, dp {shape.dp}: allocated "
            f"{result['allocated'] / GIB:.2f} GiB, reserved {result['reserved'] / GIB:.2f} GiB "
            f"(side streams {result['side_pools'] / GIB:.2f}); default stream's reserved / "
            f"allocated {result['default_ratio']:.3f}")


def sweep():
    ratios = []
    for case in SWEEP:
        # Each shape in a process of its own (the fake process group is per process).
        arguments = [f"--{k.replace('_', '-')}={v}" for k, v in zip(SWEEP_FIELDS, case)]
        out = subprocess.run([sys.executable, __file__, *arguments], capture_output=True,
                             text=True, check=True).stdout
        line = out.strip().splitlines()[-1]
        print(line)
        ratios.append(float(line.rsplit(" ", 1)[1]))
    print(f"median of the default stream's ratio over {len(ratios)} shapes: "
          f"{statistics.median(ratios):.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    torchtitan_step.add_arguments(parser)
    parser.add_argument("--sweep", action="store_true", help="the default ratio's shapes")
    parser.add_argument("--hyperpipe", help="also print `hyperpipe simulate`'s prediction")
    options = parser.parse_args()
    if options.sweep:
        sweep()
        return 0
    shape = torchtitan_step.shape_of(options)
    result = replay(shape)
    if options.hyperpipe:
        terms = torchtitan_step.hyperpipe_terms(options.hyperpipe, shape)
        reserved = sum(b for name, b in terms.items()
                       if name not in torchtitan_step.NOT_MADE_ON_A_CPU)
        print(f"HyperPipe predicts reserved {reserved / GIB:.2f} GiB "
              f"({100 * (reserved / result['reserved'] - 1):+.1f}% against the replay)")
    print(describe(shape, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
