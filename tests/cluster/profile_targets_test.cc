#include "hyperpipe/cluster/profile_targets.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::cluster {
namespace {

std::vector<std::pair<std::string, double>> flat(const std::vector<ProfileTarget>& targets) {
  std::vector<std::pair<std::string, double>> result;
  for (const auto& target : targets) result.emplace_back(target.type, target.factor);
  return result;
}

// An emulated cluster's profile is filed under each stand-in type once, its times scaled
// by 1 / the type's speed; --as adds the measuring device's own type; alone, "host".
TEST(ProfileTargets, TheStandInsThenTheTypeAskedForElseTheHost) {
  const Cluster emulated = load_cluster(HYPERPIPE_EXAMPLES "/clusters/cpu-emulated.yaml");
  using Flat = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(flat(profile_targets(&emulated, "cpu-emulated.yaml", std::nullopt)),
            (Flat{{"A100-40GB", 1.0}, {"V100-16GB", 2.5}, {"T4", 5.0}}));
  EXPECT_EQ(flat(profile_targets(&emulated, "cpu-emulated.yaml", std::string("H100"))).back(),
            (std::pair<std::string, double>{"H100", 1.0}));
  EXPECT_EQ(flat(profile_targets(nullptr, "", std::string("H100"))), (Flat{{"H100", 1.0}}));
  EXPECT_EQ(flat(profile_targets(nullptr, "", std::nullopt)), (Flat{{"host", 1.0}}));
}

// A cluster of real GPUs has no stand-in to file a CPU profile under: refused, naming it.
TEST(ProfileTargets, ARealGpuClusterIsProfiledOnItsGpus) {
  const Cluster real = load_cluster("a100x8");
  const std::string message = hyperpipe::testing::error_message<InputError>(
      [&] { profile_targets(&real, "a100x8", std::nullopt); });
  EXPECT_NE(message.find("a100x8"), std::string::npos) << message;
  EXPECT_NE(message.find("--device cuda --as TYPE"), std::string::npos) << message;
}

}  // namespace
}  // namespace hyperpipe::cluster
