#include "hyperpipe/runtime/memory_profiler.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/runtime/process_memory.h"
#include "small_models.h"

namespace hyperpipe::runtime {
namespace {

// Above glibc's largest mmap threshold (32 MiB): the block is mapped afresh, every page of
// it new to the resident set, and unmapped when freed.
constexpr size_t kBlock = size_t{96} << 20;
constexpr double kPageSlack = 0.1;

// The resident set grows by the pages a block touches and shrinks when it is unmapped; the
// high-water mark keeps the block until it is reset.
TEST(ProcessMemory, TheResidentSetAndItsPeakFollowTouchedPages) {
  ASSERT_TRUE(resident_bytes().has_value());
  const double before = *resident_bytes();
  ASSERT_TRUE(reset_peak_resident());
  {
    std::vector<char> block(kBlock);
    std::memset(block.data(), 1, block.size());
    EXPECT_NEAR(*resident_bytes() - before, static_cast<double>(kBlock), kPageSlack * kBlock);
  }
  EXPECT_LT(*resident_bytes() - before, kPageSlack * kBlock);
  EXPECT_GT(*peak_resident_bytes() - before, (1 - kPageSlack) * kBlock);
  ASSERT_TRUE(reset_peak_resident());
  EXPECT_LT(*peak_resident_bytes() - *resident_bytes(), kPageSlack * kBlock);
  // On CPU the device is this process.
  EXPECT_NEAR(*device_used_bytes(torch::kCPU), *resident_bytes(), kPageSlack * kBlock);
  EXPECT_FALSE(allocator_reserve(torch::kCPU).has_value());
}

// A CPU profile measures every term but cuBLAS's workspace (none): the context is this
// process's resident set when the probe began, a two-rank Gloo group's buffers are a small
// part of it, and the allocator's ratio is a reserve, at least 1.
TEST(MemoryProfiler, MeasuresThisProcessGlooAndTheHeapOnCpu) {
  const double resident_before = *resident_bytes();
  ASSERT_TRUE(reset_peak_resident());
  MemoryProfileSettings settings;
  settings.port = launch::free_port();
  settings.micro_batch = 2;
  std::vector<std::string> progress;
  settings.progress = [&](int, int, const std::string& what) { progress.push_back(what); };
  const auto profile = profile_device_memory(testing::small_model(testing::kGpt), settings);
  const auto& o = profile.overheads;
  std::set<std::string> terms;
  for (const auto& probe : profile.probes) {
    terms.insert(probe.term);
    EXPECT_TRUE(probe.measured.has_value()) << probe.term << ": " << probe.how;
  }
  EXPECT_EQ(terms, (std::set<std::string>{"workspace", "context", "collective_communicator",
                                          "p2p_peer", "allocator_ratio"}));
  EXPECT_EQ(o.workspace, 0);
  EXPECT_GT(o.context, (1 - kPageSlack) * resident_before);
  EXPECT_LE(o.context, *peak_resident_bytes());
  EXPECT_GE(o.collective_communicator, 0);
  EXPECT_LT(o.collective_communicator, 0.25 * o.context);
  EXPECT_GE(o.p2p_peer, 0);
  EXPECT_GE(o.allocator_ratio, 1.0);
  EXPECT_NE(o.source.find("profile --memory on "), std::string::npos) << o.source;
  EXPECT_EQ(progress.back(), "done");
}

}  // namespace
}  // namespace hyperpipe::runtime
