#include "hyperpipe/trace/timeline_json.h"

#include "hyperpipe/common/error.h"

namespace hyperpipe::trace {
namespace {

nlohmann::json intervals_to_json(const std::vector<Interval>& intervals) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& i : intervals) {
    list.push_back({i.op, i.stage, i.micro_batch, i.chunk, i.start, i.end});
  }
  return list;
}

std::vector<Interval> intervals_from_json(const nlohmann::json& list) {
  std::vector<Interval> intervals;
  for (const auto& i : list) {
    intervals.push_back({i.at(0).get<std::string>(), i.at(1).get<int>(), i.at(2).get<int>(),
                         i.at(3).get<int>(), i.at(4).get<double>(), i.at(5).get<double>()});
  }
  return intervals;
}

}  // namespace

nlohmann::json track_to_json(const Track& track) {
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& sample : track.memory) memory.push_back({sample.time, sample.bytes});
  nlohmann::json json{{"name", track.name},
                      {"devices", track.devices},
                      {"compute", intervals_to_json(track.compute)},
                      {"communication", intervals_to_json(track.communication)},
                      {"memory", memory}};
  if (track.pipeline != 0) json["pipeline"] = track.pipeline;
  if (track.group != 0) json["group"] = track.group;
  if (!track.ops.empty()) json["ops"] = track.ops;
  if (track.static_bytes > 0) json["static_bytes"] = track.static_bytes;
  if (track.device_peak_bytes > 0) json["device_peak_bytes"] = track.device_peak_bytes;
  if (track.allocator_ratio != 1) json["allocator_ratio"] = track.allocator_ratio;
  return json;
}

Track track_from_json(const nlohmann::json& json) {
  Track track;
  track.name = json.at("name").get<std::string>();
  track.devices = json.at("devices").get<std::vector<int>>();
  track.compute = intervals_from_json(json.at("compute"));
  track.communication = intervals_from_json(json.at("communication"));
  for (const auto& sample : json.at("memory")) {
    track.memory.push_back({sample.at(0).get<double>(), sample.at(1).get<double>()});
  }
  if (json.contains("pipeline")) track.pipeline = json.at("pipeline").get<int>();
  if (json.contains("group")) track.group = json.at("group").get<int>();
  if (json.contains("ops")) track.ops = json.at("ops").get<std::vector<std::string>>();
  if (json.contains("static_bytes")) track.static_bytes = json.at("static_bytes").get<double>();
  if (json.contains("allocator_ratio")) {
    track.allocator_ratio = json.at("allocator_ratio").get<double>();
  }
  if (json.contains("device_peak_bytes")) {
    track.device_peak_bytes = json.at("device_peak_bytes").get<double>();
  }
  return track;
}

nlohmann::json timeline_to_json(const Timeline& timeline) {
  nlohmann::json tracks = nlohmann::json::array();
  for (const auto& track : timeline.tracks) tracks.push_back(track_to_json(track));
  return {{"format", kTimelineFormat}, {"title", timeline.title}, {"tracks", tracks}};
}

Timeline timeline_from_json(const nlohmann::json& json, const std::string& source) {
  try {
    if (json.at("format") != kTimelineFormat) {
      throw InputError(source, "format", std::string("\"") + kTimelineFormat + "\"");
    }
    Timeline timeline;
    timeline.title = json.at("title").get<std::string>();
    for (const auto& track : json.at("tracks")) timeline.tracks.push_back(track_from_json(track));
    return timeline;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(source, "", std::string("a timeline document: ") + error.what());
  }
}

}  // namespace hyperpipe::trace
