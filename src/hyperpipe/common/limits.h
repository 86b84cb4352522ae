// Sizes beyond these are typos, not models, clusters or plans. Rejecting them up front keeps
// every count inside 64-bit integers and every schedule and simulation inside memory.
#pragma once

#include <cstdint>

namespace hyperpipe {

// Any size read from a file or flag (hidden size, vocabulary, sequence length, batch).
inline constexpr int64_t kMaxSize = int64_t{1} << 24;
// Decoder blocks of a model (the largest published models have a few hundred).
inline constexpr int64_t kMaxLayers = 10'000;
// Hidden size and MLP width (published models stay below 2^16).
inline constexpr int64_t kMaxWidth = int64_t{1} << 20;
// GPUs in one node.
inline constexpr int64_t kMaxGpusPerNode = 1024;
// Streaming multiprocessors of one GPU (today's largest have under 200).
inline constexpr int64_t kMaxMultiprocessors = 4096;
// Micro-batches in one iteration, pipeline stages, model chunks: each schedule has
// stages × micro-batches × chunks ops, which must fit in memory.
inline constexpr int64_t kMaxMicroBatches = int64_t{1} << 16;
inline constexpr int64_t kMaxScheduleOps = int64_t{1} << 26;

// Nesting of a YAML or JSON input: specs and plans nest four or five levels; yaml-cpp's own
// parser stops at 500 (its DepthGuard), deep enough for recursive readers to matter.
inline constexpr int kMaxNestingDepth = 64;
// Values in one input document, aliases expanded: a profile database of a large sweep holds
// a few hundred thousand; billions come only from aliases of aliases.
inline constexpr int64_t kMaxDocumentNodes = int64_t{1} << 24;

}  // namespace hyperpipe
