#include "hyperpipe/trace/chrome_trace.h"

#include <string>

namespace hyperpipe::trace {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::string event_name(const Interval& interval) {
  if (interval.micro_batch < 0) return interval.op;
  return interval.op + std::to_string(interval.micro_batch);
}

nlohmann::json thread_name(int tid, const std::string& name) {
  return {
      {"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json span(const Interval& interval, int tid, const char* category) {
  nlohmann::json args{{"stage", interval.stage}, {"chunk", interval.chunk}};
  if (interval.micro_batch >= 0) args["micro_batch"] = interval.micro_batch;
  return {{"name", event_name(interval)},
          {"cat", category},
          {"ph", "X"},
          {"pid", 0},
          {"tid", tid},
          {"ts", interval.start * kMicrosecondsPerSecond},
          {"dur", (interval.end - interval.start) * kMicrosecondsPerSecond},
          {"args", args}};
}

}  // namespace

nlohmann::json chrome_trace(const Timeline& timeline) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", timeline.title}}}});
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    const Track& track = timeline.tracks[t];
    const int compute_tid = static_cast<int>(2 * t);
    const int comm_tid = compute_tid + 1;
    events.push_back(thread_name(compute_tid, track.name));
    events.push_back(thread_name(comm_tid, track.name + " (communication)"));
    for (int tid : {compute_tid, comm_tid}) {
      events.push_back({{"name", "thread_sort_index"},
                        {"ph", "M"},
                        {"pid", 0},
                        {"tid", tid},
                        {"args", {{"sort_index", tid}}}});
    }
    for (const auto& interval : track.compute)
      events.push_back(span(interval, compute_tid, "compute"));
    for (const auto& interval : track.communication) {
      events.push_back(span(interval, comm_tid, "communication"));
    }
    for (const auto& sample : track.memory) {
      events.push_back({{"name", "memory " + track.name},
                        {"ph", "C"},
                        {"pid", 0},
                        {"ts", sample.time * kMicrosecondsPerSecond},
                        {"args", {{"GiB", sample.bytes / kBytesPerGiB}}}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace hyperpipe::trace
