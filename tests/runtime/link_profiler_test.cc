#include "hyperpipe/runtime/link_profiler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hyperpipe/launch/process_launcher.h"

namespace hyperpipe::runtime {
namespace {

// Exact data recovers the line; noise-free points on latency + bytes / bandwidth.
TEST(LinkProfiler, FitRecoversLatencyAndBandwidth) {
  const double latency = 30e-6, bandwidth = 2e9;
  std::vector<std::pair<double, double>> points;
  for (const double bytes : {1e4, 1e5, 1e6, 1e7})
    points.emplace_back(bytes, latency + bytes / bandwidth);
  const auto link = fit_link(points);
  EXPECT_NEAR(link.latency, latency, 1e-12);
  EXPECT_NEAR(link.bandwidth, bandwidth, 1e-3 * bandwidth);
  // Times that do not grow with size: no bandwidth limit, never a negative latency.
  const auto flat = fit_link({{1e4, 1e-3}, {1e6, 1e-3}});
  EXPECT_TRUE(std::isinf(flat.bandwidth));
  EXPECT_NEAR(flat.latency, 1e-3, 1e-15);
  EXPECT_GE(fit_link({{1e4, 0.0}, {1e6, 1e-2}}).latency, 0);
}

// Two real Gloo ranks on 127.0.0.1: every size measured, larger messages take longer, and
// the fit is a link a transfer can be costed with.
// The fit keeps the measured table beside it, one row per message size.
TEST(LinkProfiler, TheTabledLinkIsTheFitWithItsSamples) {
  LinkProfile links;
  links.point_to_point.latency = 2e-6;
  links.point_to_point.bandwidth = 1e10;
  links.samples = {{1024, 3e-6, 5e-6}, {1 << 20, 1.1e-4, 2.3e-4}};
  const cluster::Link tabled = tabled_link(links);
  EXPECT_DOUBLE_EQ(tabled.latency, 2e-6);
  EXPECT_DOUBLE_EQ(tabled.bandwidth, 1e10);
  ASSERT_EQ(tabled.table.size(), 2u);
  EXPECT_DOUBLE_EQ(tabled.table[1].bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(tabled.table[1].one_way, 1.1e-4);
  EXPECT_DOUBLE_EQ(tabled.table[1].all_reduce, 2.3e-4);
}

TEST(LinkProfiler, MeasuresGlooBetweenTwoRanks) {
  LinkProfileSettings settings;
  settings.port = launch::free_port();
  // Sizes 1024× apart, five of each: on a loaded 2-core host a 64 KiB message once took
  // longer than a 4 MiB one (waits of a scheduler tick, 4 ms, hit some transfers; a 16 MiB
  // one takes 5 ms or more).
  settings.sizes = {16 << 10, 16 << 20};
  settings.warmup = 1;
  settings.repeats = 5;
  const auto profile = profile_links(settings);
  EXPECT_EQ(profile.backend, "gloo");
  ASSERT_EQ(profile.samples.size(), 2u);
  for (const auto& s : profile.samples) {
    EXPECT_GT(s.point_to_point, 0);
    EXPECT_GT(s.all_reduce, 0);
  }
  EXPECT_GT(profile.samples[1].point_to_point, profile.samples[0].point_to_point);
  EXPECT_GT(profile.point_to_point.bandwidth, 0);
  EXPECT_GE(profile.point_to_point.latency, 0);
  EXPECT_GT(profile.all_reduce.bandwidth, 0);
}

// The ladder climbs only while a size's one-way time stays under `longest_message`; both
// ranks (and, across hosts, every rank) stop together, so nothing hangs.
TEST(LinkProfiler, LadderStopsAfterTheFirstLongMessage) {
  LinkProfileSettings settings;
  settings.port = launch::free_port();
  settings.sizes = {4 << 10, 16 << 10, 64 << 10};
  settings.warmup = 1;
  settings.repeats = 3;
  settings.longest_message = 0;  // every message is longer
  EXPECT_EQ(profile_links(settings).samples.size(), 1u);
  settings.port = launch::free_port();
  settings.longest_message = 10;  // none is
  EXPECT_EQ(profile_links(settings).samples.size(), 3u);
}

}  // namespace
}  // namespace hyperpipe::runtime
