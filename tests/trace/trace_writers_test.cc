#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"
#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::trace {
namespace {

Timeline two_tracks() {
  Timeline timeline;
  timeline.title = "test <plan> & co";
  Track a{"stage 0", {0}, {}, {}, {}, {}};
  a.compute = {{"F", 0, 0, 0, 0.0, 0.001}, {"BW", 0, 0, 0, 0.002, 0.004}};
  a.communication = {{"send F", 0, 0, 0, 0.001, 0.0015}};
  a.memory = {{0.0, 100.0}, {0.0, 200.0}, {0.004, 100.0}};
  Track b{"stage 1", {1}, {}, {}, {}, {}};
  b.compute = {{"F", 1, 0, 0, 0.0015, 0.0025},
               {"BW", 1, 0, 0, 0.0025, 0.0045},
               {"optimizer", -1, -1, 0, 0.0045, 0.005}};
  timeline.tracks = {a, b};
  return timeline;
}

TEST(ChromeTrace, OneThreadPerTrackAndLaneInMicroseconds) {
  const auto trace = chrome_trace(two_tracks());
  const auto& events = trace["traceEvents"];
  int spans = 0, counters = 0, names = 0;
  for (const auto& event : events) {
    const std::string phase = event["ph"];
    if (phase == "X") {
      ++spans;
      EXPECT_GE(event["dur"].get<double>(), 0);
    }
    if (phase == "C") ++counters;
    if (phase == "M" && event["name"] == "thread_name") ++names;
  }
  EXPECT_EQ(spans, 6);
  EXPECT_EQ(counters, 3);
  EXPECT_EQ(names, 4);  // compute and communication per track
  bool found = false;
  for (const auto& event : events) {
    if (event["ph"] == "X" && event["name"] == "BW0" && event["tid"] == 2) {
      EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 2500);
      EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 2000);
      EXPECT_EQ(event["args"]["stage"], 1);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// The flow events of a trace: (phase, tid, ts) of each "s" and "f", by id.
std::map<int, std::vector<std::tuple<std::string, int, double>>> flows_of(
    const nlohmann::json& trace, int pid) {
  std::map<int, std::vector<std::tuple<std::string, int, double>>> flows;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] != "s" && event["ph"] != "f") continue;
    if (event["pid"] != pid) continue;
    flows[event["id"]].emplace_back(event["ph"], event["tid"], event["ts"]);
  }
  return flows;
}

// The activation leaves on stage 0's send and arrives at stage 1's F; the gradient, with
// no send in the timeline, leaves stage 1's BW for stage 0's.
TEST(ChromeTrace, FlowsGoFromEachSendToTheOpThatConsumesIt) {
  const auto flows = flows_of(chrome_trace(two_tracks()), 0);
  ASSERT_EQ(flows.size(), 2u);
  using Event = std::tuple<std::string, int, double>;
  std::set<std::vector<Event>> found;
  for (const auto& [id, events] : flows) found.insert(events);
  EXPECT_TRUE(found.count({Event{"s", 1, 1000.0}, Event{"f", 2, 1500.0}}));  // send F → F
  EXPECT_TRUE(found.count({Event{"s", 2, 2500.0}, Event{"f", 0, 2000.0}}));  // BW → BW
}

// Two data-parallel ranks per stage: rank 0 feeds rank 2, rank 1 feeds rank 3.
TEST(ChromeTrace, FlowsPairDataParallelRanksInOrder) {
  Timeline timeline;
  for (int rank = 0; rank < 4; ++rank) {
    Track track{"rank " + std::to_string(rank), {rank}, {}, {}, {}, {}};
    track.compute = {{"F", rank / 2, 0, 0, 0.001 * rank, 0.001 * rank + 0.0005}};
    timeline.tracks.push_back(track);
  }
  const auto flows = flows_of(chrome_trace(timeline), 0);
  ASSERT_EQ(flows.size(), 2u);
  std::set<std::pair<int, int>> pairs;
  for (const auto& [id, events] : flows) {
    pairs.insert({std::get<1>(events[0]), std::get<1>(events[1])});
  }
  // Compute threads are 2 × track.
  EXPECT_EQ(pairs, (std::set<std::pair<int, int>>{{0, 4}, {2, 6}}));
}

// compare's one trace: predicted and measured as two processes, flow ids not shared.
TEST(ChromeTrace, SeveralTimelinesAreProcessesInOrder) {
  Timeline predicted = two_tracks();
  predicted.title = "predicted";
  Timeline measured = two_tracks();
  measured.title = "measured";
  const auto trace = chrome_trace({&predicted, &measured});
  std::map<int, std::string> names;
  std::set<int> ids;
  int flow_events = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["name"] == "process_name") names[event["pid"]] = event["args"]["name"];
    if (event["ph"] == "s") {
      ids.insert(event["id"].get<int>());
      ++flow_events;
    }
  }
  EXPECT_EQ(names, (std::map<int, std::string>{{0, "predicted"}, {1, "measured"}}));
  EXPECT_EQ(flow_events, 4);
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(flows_of(trace, 1).size(), 2u);
}

TEST(SvgGantt, BarsLabelsAxisAndEscapedText) {
  const std::string svg = svg_gantt(two_tracks(), {1000});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("test &lt;plan&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(svg.find("<plan>"), std::string::npos);
  // Every compute interval is a bar (title), the send is on the lane, the bubble is hatched.
  const std::regex bar("<rect [^>]*><title>");
  const auto bars =
      std::distance(std::sregex_iterator(svg.begin(), svg.end(), bar), std::sregex_iterator());
  EXPECT_EQ(bars, 6);
  EXPECT_NE(svg.find("url(#bubble)"), std::string::npos);
  EXPECT_NE(svg.find(">stage 1</text>"), std::string::npos);
  EXPECT_NE(svg.find(">5.00 ms</text>"), std::string::npos);  // the axis reaches the end
  EXPECT_NE(svg.find("BW backward"), std::string::npos);      // legend of the ops present
  EXPECT_EQ(svg.find("W backward (weights)"), std::string::npos);
}

TEST(SvgGantt, BarsScaleWithTime) {
  // The 2 ms BW bar is twice as wide as the 1 ms F bar.
  const std::string svg = svg_gantt(two_tracks(), {1000});
  const std::regex widths(
      "<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\"[^>]*stroke=\"white\"");
  std::vector<double> found;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), widths); it != std::sregex_iterator();
       ++it) {
    found.push_back(std::stod((*it)[1]));
  }
  ASSERT_GE(found.size(), 2u);
  EXPECT_NEAR(found[1] / found[0], 2.0, 1e-3);
}

// 64 micro-batches × 4 chunks of F and BW in a row: the chart widens until every op of
// the busiest row has kMinPixelsPerOp, instead of squeezing them into 1200 px.
TEST(SvgGantt, ALongRunWidensTheChart) {
  Timeline timeline;
  timeline.title = "long";
  Track track{"stage 0", {0}, {}, {}, {}, {}};
  constexpr int kOps = 64 * 4 * 2;
  for (int i = 0; i < kOps; ++i) {
    track.compute.push_back({i % 2 ? "BW" : "F", 0, i / 8, (i / 2) % 4, i * 1.0, i + 1.0});
  }
  timeline.tracks = {track};
  const std::string svg = svg_gantt(timeline, {1200});
  const std::regex widths(
      "<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\"[^>]*stroke=\"white\"");
  int bars = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), widths); it != std::sregex_iterator();
       ++it) {
    EXPECT_GE(std::stod((*it)[1]), kMinPixelsPerOp - 0.01);
    ++bars;
  }
  EXPECT_EQ(bars, kOps);
  std::smatch canvas;
  ASSERT_TRUE(std::regex_search(svg, canvas, std::regex("<svg [^>]*width=\"([0-9]+)\"")));
  EXPECT_GT(std::stod(canvas[1]), kOps * kMinPixelsPerOp);
}

// A track's pipeline and device group go through the timeline file (a chart drawn by
// `compare` from files tells collectives apart by them); zeros are left implicit.
TEST(TimelineJson, ATracksPipelineAndGroupAreKept) {
  Track second{"pipeline 1, stage 0", {3}, {}, {}, {}, {}};
  second.pipeline = 1;
  second.group = 2;
  second.communication = {{"tied embedding", 0, -1, 0, 0.5, 0.6}};
  const auto json = track_to_json(second);
  EXPECT_EQ(json.at("pipeline"), 1);
  EXPECT_EQ(track_from_json(json).pipeline, 1);
  EXPECT_EQ(track_from_json(json).group, 2);
  Track first{"stage 0", {0}, {}, {}, {}, {}};
  EXPECT_FALSE(track_to_json(first).contains("pipeline"));
  EXPECT_FALSE(track_to_json(first).contains("group"));
  EXPECT_EQ(track_from_json(track_to_json(first)).pipeline, 0);
}

}  // namespace
}  // namespace hyperpipe::trace
