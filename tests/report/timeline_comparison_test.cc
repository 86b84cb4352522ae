#include "hyperpipe/report/timeline_comparison.h"

#include <gtest/gtest.h>

#include <sstream>

#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::report {
namespace {

// One device group, predicted and measured, with memory samples: the figures are the
// samples' own (static part, peak over the first sample, the first sample's rest).
TEST(TimelineComparison, MemoryPerGroupFromTheSamples) {
  trace::Timeline predicted;
  predicted.title = "predicted";
  trace::Track p{"stage 0: A100 ×1 [0]", {0}, {{"F", 0, 0, 0, 0.0, 0.001}}, {}, {}, {}};
  p.static_bytes = 100;
  p.memory = {{0.0, 1100}, {0.001, 1600}, {0.002, 1100}};  // 1000 reserved, 500 activations
  predicted.tracks = {p};
  trace::Timeline measured;
  measured.title = "measured";
  trace::Track m{"rank 0", {0}, {{"F", 0, 0, 0, 0.0, 0.002}}, {}, {}, {}};
  m.static_bytes = 100;
  m.memory = {{0.0, 150}, {0.002, 700}, {0.003, 160}};  // 50 the process's own, 550 peak
  // Through the timeline file's form and back, as `compare` reads it.
  measured.tracks = {trace::track_from_json(trace::track_to_json(m))};

  const auto report = compare_timelines(predicted, measured);
  ASSERT_EQ(report["groups"].size(), 1u);
  const auto& group = report["groups"][0];
  EXPECT_DOUBLE_EQ(group["predicted_static_bytes"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(group["measured_static_bytes"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(group["predicted_activation_bytes"].get<double>(), 500);
  EXPECT_DOUBLE_EQ(group["measured_activation_bytes"].get<double>(), 550);
  EXPECT_DOUBLE_EQ(group["activation_error"].get<double>(), 500.0 / 550 - 1);
  EXPECT_DOUBLE_EQ(group["predicted_other_bytes"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(group["measured_other_bytes"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(group["measured_peak_bytes"].get<double>(), 700);
  EXPECT_DOUBLE_EQ(group["model_peak_error"].get<double>(), 600.0 / 650 - 1);

  std::ostringstream out;
  print_comparison(report, out);
  EXPECT_NE(out.str().find("Memory per device"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("-9.1%"), std::string::npos) << out.str();
}

// The device's peak as the system saw it (a process's resident set, a GPU's reserve and
// what lies outside it) against the predicted peak: the largest of a group's processes,
// through the timeline file's form; a stand-in predicted without its process's own memory
// is pointed to profile --memory.
TEST(TimelineComparison, DevicePeakOfTheGroupsLargestProcess) {
  trace::Timeline predicted;
  trace::Track p{"stage 0: A100 ×2 [0-1]", {0, 1}, {{"F", 0, 0, 0, 0.0, 0.001}}, {}, {}, {}};
  p.static_bytes = 100;
  p.memory = {{0.0, 1100}, {0.001, 1600}};
  predicted.tracks = {p};
  trace::Timeline measured;
  trace::Track first{"rank 0", {0}, {{"F", 0, 0, 0, 0.0, 0.002}}, {}, {}, {}};
  first.static_bytes = 100;
  first.memory = {{0.0, 150}, {0.002, 700}};
  first.device_peak_bytes = 2000;
  trace::Track second = first;
  second.name = "rank 1";
  second.devices = {1};
  second.device_peak_bytes = 2500;
  measured.tracks = {trace::track_from_json(trace::track_to_json(first)),
                     trace::track_from_json(trace::track_to_json(second))};
  const auto report = compare_timelines(predicted, measured);
  ASSERT_EQ(report["groups"].size(), 1u);
  const auto& group = report["groups"][0];
  EXPECT_DOUBLE_EQ(group["predicted_device_peak_bytes"].get<double>(), 1600);
  EXPECT_DOUBLE_EQ(group["measured_device_peak_bytes"].get<double>(), 2500);
  EXPECT_DOUBLE_EQ(group["device_peak_error"].get<double>(), 1600.0 / 2500 - 1);
  std::ostringstream out;
  print_comparison(report, out);
  EXPECT_NE(out.str().find("Device peak predicted"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("-36.0%"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("profile --memory"), std::string::npos) << out.str();

  measured.tracks[1].device_peak_bytes = 4000;  // the predicted peak is 40% of it
  std::ostringstream unpredicted;
  print_comparison(compare_timelines(predicted, measured), unpredicted);
  EXPECT_NE(unpredicted.str().find("hyperpipe profile --memory"), std::string::npos)
      << unpredicted.str();

  // A prediction whose allocated bytes carry the allocator's reserve: its activations are
  // the model's again, without it.
  predicted.tracks[0].allocator_ratio = 1.25;
  predicted.tracks[0] = trace::track_from_json(trace::track_to_json(predicted.tracks[0]));
  EXPECT_DOUBLE_EQ(compare_timelines(predicted, measured)["groups"][0]["predicted_activation_bytes"]
                       .get<double>(),
                   500 / 1.25);

  // Processes that did not measure it (an older timeline file): no device peak.
  for (auto& track : measured.tracks) track.device_peak_bytes = 0;
  EXPECT_FALSE(compare_timelines(predicted, measured)["groups"][0].contains("device_peak_error"));
}

// Timelines of different plans are told apart: devices the prediction has no group for,
// a group no process ran, or a group whose ops differ.
TEST(TimelineComparison, TellsTimelinesOfAnotherPlan) {
  const auto track = [](std::string name, std::vector<int> devices, std::vector<std::string> ops) {
    trace::Track t{std::move(name), std::move(devices), {}, {}, {}, {}};
    t.ops = std::move(ops);
    return t;
  };
  trace::Timeline predicted;
  predicted.tracks = {track("stage 0", {0, 1}, {"F0", "B0", "OPT"}),
                      track("stage 1", {2}, {"F0", "B0", "OPT"})};
  trace::Timeline measured;
  measured.tracks = {track("rank 0", {0}, {"F0", "B0", "OPT"}),
                     track("rank 1", {1}, {"F0", "B0", "OPT"}),
                     track("rank 2", {2}, {"F0", "B0", "OPT"})};
  EXPECT_EQ(plan_mismatch(predicted, measured), std::nullopt);
  auto elsewhere = measured;
  elsewhere.tracks[2].devices = {5};
  EXPECT_EQ(plan_mismatch(predicted, elsewhere),
            "its track 'rank 2' runs on devices the predicted timeline has none of");
  auto fewer = measured;
  fewer.tracks.pop_back();
  EXPECT_EQ(plan_mismatch(predicted, fewer),
            "no track of it ran on the devices of the predicted 'stage 1'");
  auto reordered = measured;
  reordered.tracks[1].ops = {"B0", "F0", "OPT"};
  EXPECT_EQ(plan_mismatch(predicted, reordered),
            "its track 'rank 1' ran 3 ops where the predicted 'stage 0' has 3 in another order: "
            "another plan or schedule");
}

// Without memory samples (an older timeline file) there is no memory part.
TEST(TimelineComparison, NoMemoryWithoutSamples) {
  trace::Timeline predicted;
  predicted.tracks = {{"stage 0", {0}, {{"F", 0, 0, 0, 0.0, 0.001}}, {}, {}, {}}};
  trace::Timeline measured = predicted;
  const auto report = compare_timelines(predicted, measured);
  EXPECT_FALSE(report["groups"][0].contains("measured_activation_bytes"));
  std::ostringstream out;
  print_comparison(report, out);
  EXPECT_EQ(out.str().find("Memory per device"), std::string::npos);
}

// Both timelines as one trace and one chart: each measured process named after the device
// group the prediction has it in, the titles saying once which is which, the replay's error
// against the measured iteration.
TEST(TimelineComparison, BothTimelinesNameTheMeasuredProcessesByTheirGroup) {
  trace::Timeline predicted;
  predicted.title = "tiny on lab: step 3 (predicted)";
  predicted.tracks = {{"stage 0: A100 ×1 [0]", {0}, {{"F", 0, 0, 0, 0.0, 0.001}}, {}, {}, {}},
                      {"stage 1: V100 ×1 [1]", {1}, {{"F", 0, 0, 1, 0.001, 0.002}}, {}, {}, {}}};
  trace::Timeline measured;
  measured.title = "tiny on lab: step 3 (measured)";
  measured.tracks = {{"rank 1: cpu", {1}, {{"F", 0, 0, 1, 0.001, 0.004}}, {}, {}, {}},
                     {"rank 0: cpu", {0}, {{"F", 0, 0, 0, 0.0, 0.002}}, {}, {}, {}}};
  const std::string trace = both_traces(predicted, measured);
  EXPECT_NE(trace.find("stage 1: V100 ×1 [1] · rank 1"), std::string::npos) << trace;
  EXPECT_NE(trace.find("stage 0: A100 ×1 [0] · rank 0"), std::string::npos) << trace;
  EXPECT_NE(trace.find("predicted: tiny on lab: step 3"), std::string::npos) << trace;
  EXPECT_EQ(trace.find("(predicted)"), std::string::npos) << trace;
  const std::string chart = both_charts(predicted, measured);
  EXPECT_NE(chart.find("measured: tiny on lab: step 3"), std::string::npos);
  EXPECT_NE(chart.find("-50.0%"), std::string::npos);  // 2 ms predicted, 4 ms measured

  nlohmann::json report = compare_timelines(predicted, measured);
  add_replay(report, 0.003, measured);
  EXPECT_DOUBLE_EQ(report["replayed_iteration_s"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(report["replayed_error"].get<double>(), 0.003 / 0.004 - 1);
}

}  // namespace
}  // namespace hyperpipe::report
