#include "hyperpipe/trace/chrome_trace.h"

#include <map>
#include <string>
#include <tuple>

namespace hyperpipe::trace {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::string event_name(const Interval& interval) {
  if (interval.micro_batch < 0) return interval.op;
  return interval.op + std::to_string(interval.micro_batch);
}

nlohmann::json thread_name(int pid, int tid, const std::string& name) {
  return {
      {"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json span(const Interval& interval, int pid, int tid, const char* category) {
  nlohmann::json args{{"stage", interval.stage}, {"chunk", interval.chunk}};
  if (interval.micro_batch >= 0) args["micro_batch"] = interval.micro_batch;
  return {{"name", event_name(interval)},
          {"cat", category},
          {"ph", "X"},
          {"pid", pid},
          {"tid", tid},
          {"ts", interval.start * kMicrosecondsPerSecond},
          {"dur", (interval.end - interval.start) * kMicrosecondsPerSecond},
          {"args", args}};
}

int compute_thread(size_t track) {
  return static_cast<int>(2 * track);
}
int communication_thread(size_t track) {
  return static_cast<int>(2 * track + 1);
}

// Where an interval was drawn: its thread and the interval.
struct Placed {
  int tid;
  const Interval* interval;
};

// (direction, stage, micro-batch): direction 0 is an activation going forward, 1 a
// gradient going back.
using MessageKey = std::tuple<int, int, int>;
constexpr int kForward = 0;
constexpr int kBackward = 1;

// Every op that consumes a message, and every send (or producing op) of one, in track
// order: the i-th of k consumers of a key takes the (i·n/k)-th of its n producers, which
// pairs data-parallel ranks in order where a stage runs on several.
struct Messages {
  std::map<MessageKey, std::vector<Placed>> consumers;
  std::map<MessageKey, std::vector<Placed>> producers;  // the ops that computed it
  std::map<MessageKey, std::vector<Placed>> sends;

  explicit Messages(const Timeline& timeline) {
    for (size_t t = 0; t < timeline.tracks.size(); ++t) {
      const Track& track = timeline.tracks[t];
      for (const auto& i : track.compute) {
        if (i.micro_batch < 0) continue;
        const Placed placed{compute_thread(t), &i};
        if (i.op == "F") {
          consumers[{kForward, i.stage, i.micro_batch}].push_back(placed);
          producers[{kForward, i.stage + 1, i.micro_batch}].push_back(placed);
        } else if (i.op == "B" || i.op == "BW") {
          consumers[{kBackward, i.stage, i.micro_batch}].push_back(placed);
          producers[{kBackward, i.stage - 1, i.micro_batch}].push_back(placed);
        }
      }
      for (const auto& i : track.communication) {
        const Placed placed{communication_thread(t), &i};
        if (i.op == "send F") sends[{kForward, i.stage + 1, i.micro_batch}].push_back(placed);
        if (i.op == "send B") sends[{kBackward, i.stage - 1, i.micro_batch}].push_back(placed);
      }
    }
  }
};

// Flow events ("s" at the message's origin, "f" at the op that consumed it).
void add_flows(const Timeline& timeline, int pid, int& next_id, nlohmann::json& events) {
  const Messages messages(timeline);
  for (const auto& [key, consumers] : messages.consumers) {
    const auto send = messages.sends.find(key);
    const auto produced = messages.producers.find(key);
    const std::vector<Placed>* origins = send != messages.sends.end()           ? &send->second
                                         : produced != messages.producers.end() ? &produced->second
                                                                                : nullptr;
    if (!origins) continue;  // the first stage's input, the last stage's loss
    for (size_t c = 0; c < consumers.size(); ++c) {
      const Placed& to = consumers[c];
      const Placed& from = (*origins)[c * origins->size() / consumers.size()];
      if (from.tid == to.tid) continue;  // stayed on the device
      const int id = next_id++;
      const std::string name = std::get<0>(key) == kForward ? "activation" : "gradient";
      // One end of the arrow, bound to the slice on `placed`'s thread at its start.
      const auto end = [&](const char* phase, const Placed& placed) {
        return nlohmann::json{{"name", name},
                              {"cat", "p2p"},
                              {"ph", phase},
                              {"id", id},
                              {"pid", pid},
                              {"tid", placed.tid},
                              {"ts", placed.interval->start * kMicrosecondsPerSecond}};
      };
      events.push_back(end("s", from));
      auto finish = end("f", to);
      finish["bp"] = "e";  // the enclosing slice, not the next one
      events.push_back(std::move(finish));
    }
  }
}

void add_timeline(const Timeline& timeline, int pid, int& next_flow, nlohmann::json& events) {
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", timeline.title}}}});
  events.push_back(
      {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    const Track& track = timeline.tracks[t];
    events.push_back(thread_name(pid, compute_thread(t), track.name));
    events.push_back(thread_name(pid, communication_thread(t), track.name + " (communication)"));
    for (int tid : {compute_thread(t), communication_thread(t)}) {
      events.push_back({{"name", "thread_sort_index"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", tid},
                        {"args", {{"sort_index", tid}}}});
    }
    for (const auto& interval : track.compute) {
      events.push_back(span(interval, pid, compute_thread(t), "compute"));
    }
    for (const auto& interval : track.communication) {
      events.push_back(span(interval, pid, communication_thread(t), "communication"));
    }
    for (const auto& sample : track.memory) {
      events.push_back({{"name", "memory " + track.name},
                        {"ph", "C"},
                        {"pid", pid},
                        {"ts", sample.time * kMicrosecondsPerSecond},
                        {"args", {{"GiB", sample.bytes / kBytesPerGiB}}}});
    }
  }
  add_flows(timeline, pid, next_flow, events);
}

}  // namespace

nlohmann::json chrome_trace(const Timeline& timeline) {
  return chrome_trace({&timeline});
}

nlohmann::json chrome_trace(const std::vector<const Timeline*>& timelines) {
  nlohmann::json events = nlohmann::json::array();
  int next_flow = 0;  // flow ids are unique across the trace
  for (size_t p = 0; p < timelines.size(); ++p) {
    add_timeline(*timelines[p], static_cast<int>(p), next_flow, events);
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace hyperpipe::trace
