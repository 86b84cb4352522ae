// Reading an input file whole, within a cap: a spec, plan or profile is a few kilobytes to
// megabytes, so anything far larger (or a device, a pipe, a directory) is a mistake that
// must fail at once instead of filling memory.
#pragma once

#include <cstdint>
#include <string>

namespace hyperpipe {

// Model and cluster specs, plans, profile databases, checkpoint manifests (docs/formats.md,
// "Size limits"). The largest file the project writes of these kinds, a profile database of
// every layer kind × GPU type × micro-batch, stays under 1 MiB.
inline constexpr uint64_t kMaxSpecFileBytes = uint64_t{64} << 20;
// Timeline files (`compare`): a trace of 1,000 devices × 10,000 ops stays under this.
inline constexpr uint64_t kMaxTimelineFileBytes = uint64_t{1} << 30;

// A byte-level training corpus, held whole in each process's memory.
inline constexpr uint64_t kMaxCorpusBytes = uint64_t{4} << 30;

// The contents of `path`. Throws InputError naming the file if it does not exist, is not a
// regular file (after following symbolic links), or is larger than `max_bytes`; `what` says
// what kind of file it should be ("a model spec").
std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// Throws InputError unless `path` names a regular file (after following links); returns
// its size.
uint64_t require_regular_file(const std::string& path, const std::string& what);

}  // namespace hyperpipe
