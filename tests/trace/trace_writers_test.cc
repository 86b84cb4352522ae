#include <gtest/gtest.h>

#include <regex>

#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"

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

}  // namespace
}  // namespace hyperpipe::trace
