// `train --logits DIR`: the last stage's logits of a run's first step, whole over the
// vocabulary, with the token ids they were computed from and their places in the global
// batch, so a reference implementation (transformers' forward, say) can be run on the same
// tokens and compared number for number. One safetensors file per writing process
// (tensor-parallel shard 0 of each data-parallel rank of the last stage), named by rank;
// together they cover the global batch once. Format: docs/formats.md (hyperpipe.logits/1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hyperpipe/runtime/executor.h"

namespace hyperpipe::runtime {

inline constexpr const char* kLogitsFormat = "hyperpipe.logits/1";

// DIR/logits-rank<rank>.safetensors.
std::string logits_file_path(const std::string& dir, int rank);

// Makes the folder, and refuses (InputError naming --logits) one that cannot be made or
// already holds an earlier run's logits files: with them the files of this run could not
// be told from theirs.
void require_no_earlier_logits(const std::string& dir);

// Writes `rows` (a process's micro-batches, any order) as its file, whole or not at all:
// "sample" I64 [n], "input_ids" and "targets" I64 [n, seq], "logits" F32 [n, seq, vocab], rows in
// ascending place; the step in the metadata, counted from 1 (`step` is the trainer's, from 0).
void write_logits_file(const std::string& dir, int rank, int64_t step,
                       const std::vector<LogitRows>& rows);

}  // namespace hyperpipe::runtime
