// Dropout as GPT-2 places it (Radford et al., 2019: after the embedding, on the attention
// probabilities, and on each residual branch before it is added), with masks that are a
// function of where they fall, not of which process draws them: each sample of the global
// batch, in each step and layer, has its own masks (the attention's one per head), drawn
// from a generator seeded by those indices. So a pipeline with any dp and tp draws exactly
// the masks one process draws for the same batch, and a recomputed forward the masks of the
// first (Megatron-LM gets the latter from its RNG tracker; per-sample seeds give both).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace hyperpipe::runtime {

// GPT-2's rates (its released configuration: embd_pdrop, attn_pdrop, resid_pdrop).
inline constexpr double kDropoutRate = 0.1;

// Where the rows of the forward now running fall: masks are drawn only inside a scope.
struct DropoutPlace {
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t first_sample = 0;  // the global batch's index of the input's row 0
};

// While alive on this thread, dropout draws masks for `place` (none when empty).
class DropoutScope {
 public:
  explicit DropoutScope(std::optional<DropoutPlace> place);
  ~DropoutScope();
  DropoutScope(const DropoutScope&) = delete;
  DropoutScope& operator=(const DropoutScope&) = delete;

 private:
  std::optional<DropoutPlace> previous_;
};

// The place of this thread's scope, if any (what a recomputed piece keeps for its rerun).
std::optional<DropoutPlace> current_dropout_place();

// Which dropout of a layer a mask is for.
enum class DropoutSite { embedding = 0, attention = 1, attention_residual = 2, mlp_residual = 3 };

// Under sequence parallelism a shard holds positions [first, first + x.size(1)) of
// sequences of `whole` positions.
struct SequencePart {
  int64_t first = 0;
  int64_t whole = 0;
};

// x [b, ...] with each element zeroed at kDropoutRate and the rest scaled by 1/(1 − rate),
// a mask per row drawn for (layer, site, sample); x itself outside a scope. The mask is
// kept as one byte per element for the backward. With `part`, x [b, s', h] is that part
// of each row, and takes that part of the whole row's mask.
torch::Tensor dropout(const torch::Tensor& x, int layer, DropoutSite site,
                      std::optional<SequencePart> part = std::nullopt);

// Attention probabilities [b, heads, s, s] of heads first_head … first_head + heads − 1 of
// the whole layer: a mask per (sample, head), so a tensor-parallel shard draws its heads'.
torch::Tensor attention_dropout(const torch::Tensor& probabilities, int layer, int64_t first_head);

}  // namespace hyperpipe::runtime
