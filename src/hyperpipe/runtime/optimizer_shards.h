// ZeRO stage 1 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
// Parameter Models", SC'20; Megatron-LM's distributed optimizer) over a stage's
// data-parallel ranks: each rank keeps AdamW's moments, and under mixed precision the fp32
// master weights, for its part of the parameters only, steps that part, and the ranks
// all-gather the updated weights.
//
// Each chunk's parameters, flattened in order into one vector of n elements (the order of
// its gradient bucket), are cut into dp parts of ceil(n / dp) elements, the last shorter
// (Megatron-LM pads its buffer the same way); rank i owns part i. The gradients are
// all-reduced whole, as without sharding, so the global norm, the tied embedding's sum
// and the replicas' sums see what they did; AdamW is elementwise, so stepping parts steps
// every element exactly as the whole would.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "hyperpipe/runtime/mixed_precision.h"

namespace hyperpipe::runtime {

// The part of a vector of `size` elements that rank `index` of `ranks` owns.
FlatRange owned_part(int64_t size, int ranks, int index);

// Rank `index`'s piece of each of a chunk's tensors (their element counts in order): the
// range of its elements inside the owned part, empty where none.
std::vector<FlatRange> owned_pieces(const std::vector<int64_t>& sizes, int ranks, int index);

// A parameter's trained value and AdamW state, each whole and shaped as the parameter.
struct TrainedState {
  torch::Tensor value;                // fp32 master under mixed precision, else the parameter
  torch::Tensor exp_avg, exp_avg_sq;  // undefined before the first step
  int64_t steps = 0;
};

// Gathers `mine` from every rank of the data-parallel group into `parts` (in rank order,
// each shaped as `mine`).
using GatherParts = std::function<void(const torch::Tensor& mine, std::vector<torch::Tensor>&)>;

// Every parameter's piece, chunk after chunk: what a MasterWeights of the rank keeps.
std::vector<FlatRange> pieces_of(const std::vector<std::vector<torch::Tensor>>& chunks, int dp,
                                 int dp_index);

class OptimizerShards {
 public:
  // `chunks`: each chunk's parameters, in the executor's order; `masters` (under mixed
  // precision) keeps exactly this rank's pieces (pieces_of).
  OptimizerShards(const std::vector<std::vector<torch::Tensor>>& chunks, int dp, int dp_index,
                  const MasterWeights* masters);

  // What AdamW steps: the fp32 master pieces, or views into the parameters themselves
  // (their storage, so a step writes into the weights), none empty.
  const std::vector<torch::Tensor>& pieces() const { return pieces_; }
  // Whether AdamW decays each of pieces() (matrices only, as make_optimizer decides).
  const std::vector<bool>& decayed() const { return decayed_; }

  // Before the step: each view piece's gradient points at its part of the parameter's
  // (all-reduced) gradient (masters' pieces have theirs already).
  void point_gradients();
  // After the step: the views let go, so the parameters' gradients are freed with them.
  void release_gradients();
  // After the step (and the masters' copy into the model): every rank's updated part of
  // each chunk's weights, gathered into the weights of all.
  void gather_weights(const GatherParts& gather);
  void stepped() { ++steps_; }

  // Collective over the group: chunk `c`'s parameters' values and AdamW state, whole.
  std::vector<TrainedState> whole_state(int c, const torch::optim::AdamW& adamw,
                                        const GatherParts& gather) const;
  // A parameter's value and state from a checkpoint's whole ones: the parameter takes the
  // value, this rank's piece its part of the value and the state.
  void restore(int c, size_t i, const TrainedState& whole, torch::optim::AdamW& adamw);

 private:
  struct Entry {
    torch::Tensor parameter;
    int64_t start = 0;           // of the parameter in the chunk's flat vector
    FlatRange piece;             // of the parameter's elements
    std::optional<size_t> slot;  // in pieces_, where the piece is not empty
  };
  // Chunk `c`'s flat vector of `type`, gathered from every rank's part of it: `of` gives
  // the flat values of an entry's piece (those with a slot).
  torch::Tensor gather_chunk(int c, const std::function<torch::Tensor(const Entry&)>& of,
                             torch::ScalarType type, const GatherParts& gather) const;

  int dp_ = 1;
  int dp_index_ = 0;
  const MasterWeights* masters_ = nullptr;
  std::vector<std::vector<Entry>> chunks_;
  std::vector<int64_t> chunk_sizes_;
  std::vector<torch::Tensor> pieces_;
  std::vector<bool> decayed_;
  int64_t steps_ = 0;  // AdamW's steps taken (every rank takes or skips each together)
};

}  // namespace hyperpipe::runtime
