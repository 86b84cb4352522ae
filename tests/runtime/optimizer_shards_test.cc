// ZeRO-1's parts and steps, against brute force and against AdamW over the whole
// parameters: a data-parallel group of threads in one process, gathering through memory.
#include "hyperpipe/runtime/optimizer_shards.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "hyperpipe/runtime/optimizer.h"

namespace hyperpipe::runtime {
namespace {

// Every element of a vector owned by exactly one rank, the parts in rank order, none
// longer than ceil(n / ranks): brute force over small sizes.
TEST(OptimizerShards, PartsCoverEveryElementOnce) {
  for (int64_t size = 0; size <= 40; ++size) {
    for (int ranks = 1; ranks <= 5; ++ranks) {
      std::vector<int> owners(static_cast<size_t>(size), 0);
      int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const FlatRange part = owned_part(size, ranks, r);
        EXPECT_EQ(part.begin, next) << size << " over " << ranks;
        EXPECT_LE(part.size(), (size + ranks - 1) / ranks);
        for (int64_t i = part.begin; i < part.end; ++i) ++owners[static_cast<size_t>(i)];
        next = part.end;
      }
      EXPECT_EQ(next, size);
      for (const int owned : owners) EXPECT_EQ(owned, 1);
    }
  }
}

// The pieces of tensors (7, 1, 12 elements) cut the owned part at the tensors' edges.
TEST(OptimizerShards, PiecesAreTheOwnedPartCutAtTensorEdges) {
  const std::vector<int64_t> sizes{7, 1, 12};  // 20 elements: parts of 7, 7, 6 over 3
  EXPECT_EQ(owned_pieces(sizes, 3, 0), (std::vector<FlatRange>{{0, 7}, {}, {}}));
  EXPECT_EQ(owned_pieces(sizes, 3, 1), (std::vector<FlatRange>{{}, {0, 1}, {0, 6}}));
  EXPECT_EQ(owned_pieces(sizes, 3, 2), (std::vector<FlatRange>{{}, {}, {6, 12}}));
  // More ranks than elements: the last own nothing.
  EXPECT_EQ(owned_pieces({2}, 3, 2), (std::vector<FlatRange>{{}}));
}

// An all-gather among the threads of a group: each call waits for every rank's part.
class MemoryGroup {
 public:
  explicit MemoryGroup(int ranks) : ranks_(ranks) {}

  GatherParts gather_for(int rank) {
    return [this, rank](const torch::Tensor& mine, std::vector<torch::Tensor>& parts) {
      std::unique_lock<std::mutex> lock(mutex_);
      const int round = calls_[rank]++;
      auto& board = boards_[round];
      board.resize(static_cast<size_t>(ranks_));
      board[static_cast<size_t>(rank)] = mine.clone();
      ready_.notify_all();
      ready_.wait(lock, [&] {
        return std::all_of(board.begin(), board.end(), [](const auto& t) { return t.defined(); });
      });
      for (int r = 0; r < ranks_; ++r) parts[static_cast<size_t>(r)].copy_(board[r]);
    };
  }

 private:
  int ranks_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::map<int, int> calls_;                          // each rank's gathers so far
  std::map<int, std::vector<torch::Tensor>> boards_;  // every rank's part, per gather
};

// Two chunks of parameters, shaped as a layer's (matrices decay, vectors do not), and
// each step's gradients: drawn once (libtorch's generator is not for threads to share),
// the same on every rank.
struct Draws {
  std::vector<std::vector<torch::Tensor>> values;
  std::vector<std::vector<std::vector<torch::Tensor>>> gradients;  // per step
};

constexpr int kSteps = 3;

const Draws& draws() {
  static const Draws drawn = [] {
    torch::manual_seed(3);
    const std::vector<std::vector<std::vector<int64_t>>> shapes{{{5, 3}, {5}, {4, 4}},
                                                                {{7}, {2, 3}}};
    const auto draw = [&] {
      std::vector<std::vector<torch::Tensor>> chunks;
      for (const auto& chunk : shapes) {
        chunks.emplace_back();
        for (const auto& shape : chunk) {
          chunks.back().push_back(torch::randn(shape, torch::kDouble));
        }
      }
      return chunks;
    };
    Draws d;
    d.values = draw();
    for (int s = 0; s < kSteps; ++s) d.gradients.push_back(draw());
    return d;
  }();
  return drawn;
}

// The parameters, in `type`; in fp32 where MasterWeights turns them into `type`.
std::vector<std::vector<torch::Tensor>> make_chunks(torch::ScalarType type) {
  if (needs_master_weights(type)) type = torch::kFloat;
  std::vector<std::vector<torch::Tensor>> chunks;
  for (const auto& chunk : draws().values) {
    chunks.emplace_back();
    for (const auto& p : chunk) {
      chunks.back().push_back(p.to(type, false, /*copy=*/true).requires_grad_(true));
    }
  }
  return chunks;
}

// The gradients of step `s` (as after the all-reduce): into the fp32 main grads in place
// under mixed precision.
void set_gradients(std::vector<std::vector<torch::Tensor>>& chunks, int s) {
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (size_t i = 0; i < chunks[c].size(); ++i) {
      auto& p = chunks[c][i];
      const auto& grad = draws().gradients.at(static_cast<size_t>(s))[c][i];
      if (p.grad().defined()) {
        p.mutable_grad().copy_(grad);
      } else {
        // A copy: the step scales gradients in place, and the draws serve every run.
        p.mutable_grad() = grad.to(p.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
      }
    }
  }
}

std::vector<torch::Tensor> flatten(const std::vector<std::vector<torch::Tensor>>& chunks) {
  std::vector<torch::Tensor> all;
  for (const auto& chunk : chunks) all.insert(all.end(), chunk.begin(), chunk.end());
  return all;
}

constexpr double kClip = 0.5;  // a clipping factor below 1, applied to the pieces

// What a run leaves: the weights, and what AdamW steps with its moments, per parameter.
struct Trained {
  std::vector<torch::Tensor> weights;
  std::vector<TrainedState> states;
};

// AdamW over the whole parameters, unsharded: the reference.
Trained whole_run(torch::ScalarType type) {
  auto chunks = make_chunks(type);
  std::vector<torch::Tensor> params = flatten(chunks);
  std::unique_ptr<MasterWeights> masters;
  if (needs_master_weights(type)) masters = std::make_unique<MasterWeights>(params, type);
  const auto stepped = masters ? masters->masters() : params;
  auto adamw = make_optimizer(stepped, training::OptimizerOptions{});
  for (int s = 0; s < kSteps; ++s) {
    if (masters) masters->zero_main_grads();
    set_gradients(chunks, s);
    clipped_step(*adamw, stepped, kClip);
    if (masters) masters->copy_to_model();
  }
  Trained trained{params, {}};
  for (const auto& t : stepped) {
    const auto& adam = static_cast<const torch::optim::AdamWParamState&>(
        *adamw->state().find(adam_state_key(t))->second);
    trained.states.push_back({t, adam.exp_avg(), adam.exp_avg_sq(), adam.step()});
  }
  return trained;
}

// The same steps with the state sharded over `dp` threads: each rank's weights after, and
// the state gathered whole.
std::vector<Trained> sharded_run(torch::ScalarType type, int dp) {
  MemoryGroup group(dp);
  std::vector<Trained> results(static_cast<size_t>(dp));
  std::vector<std::thread> threads;
  for (int r = 0; r < dp; ++r) {
    threads.emplace_back([&, r] {
      auto chunks = make_chunks(type);
      std::vector<torch::Tensor> params = flatten(chunks);
      std::unique_ptr<MasterWeights> masters;
      if (needs_master_weights(type)) {
        masters = std::make_unique<MasterWeights>(params, type, pieces_of(chunks, dp, r));
      }
      OptimizerShards shards(chunks, dp, r, masters.get());
      auto adamw = make_optimizer(shards.pieces(), shards.decayed(), training::OptimizerOptions{});
      for (int s = 0; s < kSteps; ++s) {
        if (masters) masters->zero_main_grads();
        set_gradients(chunks, s);
        shards.point_gradients();
        clipped_step(*adamw, shards.pieces(), kClip);
        if (masters) masters->copy_to_model();
        shards.stepped();
        shards.gather_weights(group.gather_for(r));
      }
      auto& result = results[static_cast<size_t>(r)];
      result.weights = params;
      for (int c = 0; c < static_cast<int>(chunks.size()); ++c) {
        for (auto& state : shards.whole_state(c, *adamw, group.gather_for(r))) {
          result.states.push_back(std::move(state));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

class ShardedAdamW : public ::testing::TestWithParam<std::tuple<torch::ScalarType, int>> {};

// AdamW is elementwise: stepping parts and gathering them leaves every rank's weights
// bit for bit those of the whole step, with dp 2 and 3 (parts of unequal length), and
// the state gathered whole is the whole run's.
TEST_P(ShardedAdamW, EqualsTheWholeStepBitForBit) {
  const auto [type, dp] = GetParam();
  draws();  // drawn before the threads start
  const Trained expected = whole_run(type);
  const auto ranks = sharded_run(type, dp);
  for (int r = 0; r < dp; ++r) {
    const Trained& rank = ranks[static_cast<size_t>(r)];
    ASSERT_EQ(rank.weights.size(), expected.weights.size());
    ASSERT_EQ(rank.states.size(), expected.states.size());
    for (size_t i = 0; i < expected.weights.size(); ++i) {
      EXPECT_TRUE(torch::equal(rank.weights[i], expected.weights[i]))
          << "rank " << r << " parameter " << i;
      const auto& got = rank.states[i];
      const auto& want = expected.states[i];
      EXPECT_TRUE(torch::equal(got.value, want.value)) << "rank " << r << " parameter " << i;
      EXPECT_TRUE(torch::equal(got.exp_avg, want.exp_avg)) << r << " " << i;
      EXPECT_TRUE(torch::equal(got.exp_avg_sq, want.exp_avg_sq)) << r << " " << i;
      EXPECT_EQ(got.steps, kSteps);
    }
  }
  // And the steps moved the weights.
  const auto initial = flatten(make_chunks(type));
  EXPECT_FALSE(torch::equal(initial[0].to(torch::kDouble), expected.weights[0].to(torch::kDouble)));
}

// Under mixed precision only the owned pieces have fp32 masters: dp 3 keeps about a third.
TEST(OptimizerShards, MastersOnlyForTheOwnedPieces) {
  auto chunks = make_chunks(torch::kFloat);
  const auto params = flatten(chunks);
  int64_t elements = 0;
  for (const auto& p : params) elements += p.numel();
  const MasterWeights masters(params, torch::kBFloat16, pieces_of(chunks, 3, 1));
  int64_t kept = 0;
  for (const auto& m : masters.masters()) kept += m.numel();
  // Chunks of 15 + 5 + 16 = 36 and 7 + 6 = 13 elements: parts of 12 and 5.
  EXPECT_EQ(elements, 49);
  EXPECT_EQ(kept, 12 + 5);
  // Master and main grad: the main grads whole, the masters kept.
  EXPECT_DOUBLE_EQ(masters.bytes(), 4.0 * (elements + kept));
}

INSTANTIATE_TEST_SUITE_P(Types, ShardedAdamW,
                         ::testing::Combine(::testing::Values(torch::kFloat, torch::kDouble,
                                                              torch::kBFloat16),
                                            ::testing::Values(2, 3)));

}  // namespace
}  // namespace hyperpipe::runtime
