// What `hyperpipe describe` is asked for, loaded, checked and described.
#include "hyperpipe/report/description.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/model/model_loader.h"
#include "test_files.h"

namespace hyperpipe::report {
namespace {

DescribeRequest gpt3_on_a100x8() {
  return {.model = "gpt3-2.7b", .cluster = "a100x8"};
}

// The request's document is the report of the cost model it names, built directly.
TEST(Description, DescribesTheNamedModelAndClusterAsTheCostModelSeesThem) {
  DescribeRequest request = gpt3_on_a100x8();
  request.settings.micro_batch = 2;
  request.settings.tp = 4;
  const model::Model model = model::load_model("gpt3-2.7b");
  const cluster::Cluster cluster = cluster::load_cluster("a100x8");
  const cost::CostModel costs(model, cluster, {}, nullptr);
  EXPECT_EQ(describe(request), describe_report(costs, request.settings));
  EXPECT_FALSE(describe(request).contains("op_estimate"));
  request.estimate = EstimateSettings{};
  EXPECT_EQ(describe(request).at("op_estimate"),
            estimate_report(costs, request.settings, EstimateSettings{}));
}

TEST(Description, RefusesPositionsAGptHasNotLearnedAndATpThatSplitsAHead) {
  DescribeRequest request = gpt3_on_a100x8();  // 2,048 learned positions, 32 heads
  request.settings.seq_len = 4096;
  EXPECT_THROW(describe(request), InputError);
  request.settings.seq_len = 2048;
  EXPECT_NO_THROW(describe(request));
  request.settings.tp = 3;
  EXPECT_NE(hyperpipe::testing::error_message<InputError>([&] {
              describe(request);
            }).find("32 attention heads"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::report
