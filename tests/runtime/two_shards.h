// Two ranks (tensor-parallel shards, or plain members) as two threads of one test, joined
// over real Gloo.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/runtime/communicator.h"
#include "hyperpipe/runtime/layers.h"

namespace hyperpipe::runtime::testing {

inline constexpr int kShards = 2;

// Runs `work(communicator, rank)` on two ranks, threads joined over real Gloo, and
// rethrows what either threw.
inline void on_two_ranks(const std::function<void(Communicator&, int)>& work) {
  const int port = launch::free_port();
  std::exception_ptr failures[kShards];
  const auto run_rank = [&](int rank) {
    try {
      const auto communicator =
          connect(local_rendezvous(rank, kShards, port), torch::kCPU, std::chrono::seconds(60));
      work(*communicator, rank);
      communicator->barrier();
    } catch (...) {
      failures[rank] = std::current_exception();
    }
  };
  std::thread second(run_rank, 1);
  run_rank(0);
  second.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

// Runs `work(shard)` on two tensor-parallel ranks (on_two_ranks).
inline void on_two_shards(const std::function<void(const TensorShard&)>& work) {
  on_two_ranks([&](Communicator& communicator, int rank) {
    const TensorShard shard{kShards, rank,
                            std::make_shared<const ShardAllReduce>([&](torch::Tensor& tensor) {
                              std::vector<torch::Tensor> sum{tensor};
                              communicator.all_reduce_sum(sum, {0, 1});
                            }),
                            nullptr};
    work(shard);
  });
}

}  // namespace hyperpipe::runtime::testing
