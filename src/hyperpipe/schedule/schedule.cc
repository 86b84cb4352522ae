#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::schedule {
namespace {

struct KindName {
  ScheduleKind kind;
  const char* name;
};

constexpr KindName kKindNames[] = {{ScheduleKind::gpipe, "gpipe"},
                                   {ScheduleKind::one_f_one_b, "1f1b"},
                                   {ScheduleKind::interleaved, "interleaved"},
                                   {ScheduleKind::zb_h1, "zb-h1"},
                                   {ScheduleKind::hetero_1f1b, "hetero-1f1b"}};

}  // namespace

std::string_view to_string(ScheduleKind kind) {
  for (const auto& entry : kKindNames) {
    if (entry.kind == kind) return entry.name;
  }
  return "?";
}

std::optional<ScheduleKind> parse_schedule_kind(std::string_view name) {
  for (const auto& entry : kKindNames) {
    if (name == entry.name) return entry.kind;
  }
  return std::nullopt;
}

std::vector<std::string> schedule_kind_names() {
  std::vector<std::string> names;
  for (const auto& entry : kKindNames) names.emplace_back(entry.name);
  return names;
}

size_t Schedule::op_count() const {
  size_t count = 0;
  for (const auto& rank_ops : ops) count += rank_ops.size();
  return count;
}

std::string format_schedule(const Schedule& schedule, bool with_communication) {
  std::string text;
  for (const auto& rank_ops : schedule.ops) {
    std::string line;
    for (const Op& op : rank_ops) {
      if (!with_communication && is_communication(op.kind)) continue;
      if (!line.empty()) line += ' ';
      line += to_string(op, schedule.chunks > 1);
    }
    text += line + '\n';
  }
  return text;
}

}  // namespace hyperpipe::schedule
