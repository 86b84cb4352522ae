"""The caching-allocator model of allocator_replay.py against the rules of PyTorch's
c10/cuda/CUDACachingAllocator.cpp it states (run: python3 -m unittest test_allocator_replay)."""
import unittest

from allocator_replay import DEFAULT_STREAM, MIB, CachingAllocator

SIDE_STREAM = 1


def freed_then_requested(freed, requested):
    """An allocator that made and freed one block, then served another request."""
    allocator = CachingAllocator()
    allocator.release(allocator.malloc(*freed))
    allocator.malloc(*requested)
    return allocator


class CachingAllocatorTest(unittest.TestCase):
    def test_requests_round_up_and_segments_by_size(self):
        allocator = CachingAllocator()
        allocator.malloc(100, DEFAULT_STREAM)  # 512 B from a 2 MiB small-pool segment
        self.assertEqual(allocator.allocated, 512)
        self.assertEqual(allocator.reserved, 2 * MIB)
        allocator.malloc(5 * MIB, DEFAULT_STREAM)  # below 10 MiB: a 20 MiB segment
        self.assertEqual(allocator.reserved, 22 * MIB)
        allocator.malloc(11 * MIB, DEFAULT_STREAM)  # fits the 15 MiB that segment has left
        self.assertEqual(allocator.reserved, 22 * MIB)
        allocator.malloc(16 * MIB + 1, DEFAULT_STREAM)  # a segment rounded up to 2 MiB
        self.assertEqual(allocator.reserved, 40 * MIB)

    def test_a_free_block_serves_smaller_requests_and_splits(self):
        allocator = CachingAllocator()
        big = allocator.malloc(64 * MIB, DEFAULT_STREAM)
        allocator.release(big)
        first = allocator.malloc(40 * MIB, DEFAULT_STREAM)
        second = allocator.malloc(20 * MIB, DEFAULT_STREAM)  # from the 24 MiB rest
        self.assertEqual(allocator.reserved, 64 * MIB)
        self.assertEqual(allocator.allocated, 60 * MIB)
        # Freed, the three pieces merge back into one block a 64 MiB request fits.
        allocator.release(first)
        allocator.release(second)
        allocator.malloc(64 * MIB, DEFAULT_STREAM)
        self.assertEqual(allocator.reserved, 64 * MIB)

    def test_a_larger_request_than_any_free_block_takes_a_new_segment(self):
        allocator = freed_then_requested((32 * MIB, DEFAULT_STREAM), (64 * MIB, DEFAULT_STREAM))
        self.assertEqual(allocator.reserved, 96 * MIB)
        self.assertEqual(allocator.free_bytes(side_streams_only=False), 32 * MIB)

    def test_blocks_serve_only_their_own_stream(self):
        allocator = freed_then_requested((64 * MIB, SIDE_STREAM), (64 * MIB, DEFAULT_STREAM))
        self.assertEqual(allocator.reserved, 128 * MIB)
        self.assertEqual(allocator.free_bytes(side_streams_only=True), 64 * MIB)
        allocator.malloc(64 * MIB, SIDE_STREAM)  # its own stream's block again
        self.assertEqual(allocator.reserved, 128 * MIB)

    def test_a_small_rest_stays_with_its_block(self):
        # A large-pool block splits only when more than 1 MiB would be left.
        allocator = CachingAllocator()
        allocator.release(allocator.malloc(12 * MIB, DEFAULT_STREAM))
        block = allocator.malloc(11 * MIB + 512, DEFAULT_STREAM)
        self.assertEqual(block.size, 12 * MIB)
        self.assertEqual(allocator.allocated, 12 * MIB)


if __name__ == "__main__":
    unittest.main()
