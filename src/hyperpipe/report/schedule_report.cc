#include "hyperpipe/report/schedule_report.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::report {

nlohmann::json schedule_document(const schedule::Schedule& s) {
  const std::vector<int> in_flight = schedule::peak_in_flight(s);
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < s.ranks; ++r) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& op : s.ops[r]) {
      ops.push_back({{"op", schedule::letter(op.kind)},
                     {"micro_batch", op.micro_batch},
                     {"chunk", op.chunk},
                     {"peer", op.peer}});
    }
    nlohmann::json rank{{"rank", r}, {"peak_in_flight", in_flight[r]}, {"ops", ops}};
    if (!s.warmup.empty()) rank["warmup"] = s.warmup[r];
    ranks.push_back(rank);
  }
  return {
      {"format", kScheduleFormat}, {"kind", schedule::to_string(s.kind)}, {"stages", s.stages()},
      {"ranks", s.ranks},          {"micro_batches", s.micro_batches},    {"chunks", s.chunks},
      {"per_rank", ranks}};
}

void print_schedule(const schedule::Schedule& s, bool communication, std::ostream& out) {
  const std::vector<int> in_flight = schedule::peak_in_flight(s);
  out << fmt::format(
      "{} over {}, {}{}; valid, no deadlock\n", schedule::to_string(s.kind),
      counted(s.ranks, "device group"), counted(s.micro_batches, "micro-batch", "micro-batches"),
      s.chunks > 1 ? fmt::format(", {} chunks each (F3.1 = micro-batch 3, chunk 1)", s.chunks)
                   : "");
  const std::string text = schedule::format_schedule(s, communication);
  size_t start = 0;
  for (int r = 0; r < s.ranks; ++r) {
    const size_t end = text.find('\n', start);
    out << fmt::format("{:>3} [{} in flight] {}\n", r, in_flight[r],
                       text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace hyperpipe::report
