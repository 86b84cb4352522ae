// A pipeline schedule as plain data: for each pipeline rank (a device group running one
// stage, or several model chunks of an interleaved schedule), the ordered list of ops.
// The simulator and the runtime execute the very same lists.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/schedule/op.h"

namespace hyperpipe::schedule {

enum class ScheduleKind { gpipe, one_f_one_b, interleaved, zb_h1, hetero_1f1b };

// "gpipe", "1f1b", "interleaved", "zb-h1", "hetero-1f1b".
std::string_view to_string(ScheduleKind kind);
std::optional<ScheduleKind> parse_schedule_kind(std::string_view name);
std::vector<std::string> schedule_kind_names();

struct Schedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  int ranks = 0;  // pipeline ranks (devices groups); stages = ranks · chunks
  int micro_batches = 0;
  int chunks = 1;  // model chunks per rank
  // Forwards each rank runs before its first backward (1F1B family); empty otherwise.
  std::vector<int> warmup;
  std::vector<std::vector<Op>> ops;  // ops[rank], in execution order

  int stages() const { return ranks * chunks; }
  // The pipeline stage (0 = first layers) that chunk `chunk` of rank `rank` runs.
  int stage_of(int rank, int chunk) const { return chunk * ranks + rank; }
  int rank_of_stage(int stage) const { return stage % ranks; }
  int chunk_of_stage(int stage) const { return stage / ranks; }
  size_t op_count() const;
};

// One line per rank: "F0 F1 B0 F2 B1 ..." (compute ops only unless `with_communication`).
std::string format_schedule(const Schedule& schedule, bool with_communication = false);

}  // namespace hyperpipe::schedule
