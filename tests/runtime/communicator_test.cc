// The communicator's collectives over real Gloo, two ranks as two threads of one test:
// what each member gets, against the sums and cuts computed here.
#include "hyperpipe/runtime/communicator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "two_shards.h"

namespace hyperpipe::runtime {
namespace {

using testing::on_two_ranks;

// Rank r's whole [2, 6, 3]: distinct values per rank, so a part from the wrong place or a
// missing term shows.
torch::Tensor whole_of(int rank, torch::ScalarType type) {
  return (torch::arange(36, torch::kFloat).view({2, 6, 3}) * (rank + 1) + rank).to(type);
}

TEST(Communicator, AReduceScatterSumsAndCutsAlongTheDimensionInRankOrder) {
  for (const auto type : {torch::kFloat, torch::kBFloat16}) {
    const auto sum = whole_of(0, type) + whole_of(1, type);
    on_two_ranks([&](Communicator& communicator, int rank) {
      const auto part = communicator.reduce_scatter_sum(whole_of(rank, type), 1, {0, 1});
      EXPECT_EQ(part.scalar_type(), type);
      EXPECT_TRUE(torch::equal(part, sum.narrow(1, 3 * rank, 3))) << rank;
    });
  }
}

// PyTorch 2's Gloo sums and gathers bf16 as it is (1.13's refused it).
TEST(Communicator, Bf16IsSummedAndGatheredAsItIs) {
  const auto sum = whole_of(0, torch::kBFloat16) + whole_of(1, torch::kBFloat16);
  on_two_ranks([&](Communicator& communicator, int rank) {
    std::vector<torch::Tensor> tensors{whole_of(rank, torch::kBFloat16)};
    communicator.all_reduce_sum(tensors, {0, 1});
    EXPECT_TRUE(torch::equal(tensors[0], sum));
    std::vector<torch::Tensor> parts{torch::empty({2, 6, 3}, torch::kBFloat16),
                                     torch::empty({2, 6, 3}, torch::kBFloat16)};
    communicator.all_gather(whole_of(rank, torch::kBFloat16), parts, {0, 1});
    EXPECT_TRUE(torch::equal(parts[0], whole_of(0, torch::kBFloat16)));
    EXPECT_TRUE(torch::equal(parts[1], whole_of(1, torch::kBFloat16)));
  });
}

}  // namespace
}  // namespace hyperpipe::runtime
