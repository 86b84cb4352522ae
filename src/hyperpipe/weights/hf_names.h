// Which tensors of a Hugging Face checkpoint make each HyperPipe parameter, and how: the
// table behind loading GPT-2- and LLaMA-family weights (docs/formats.md lists it). A
// parameter is named as HyperPipe's checkpoints name it ("layer3.qkv": layer 0 the
// embedding, 1 to L the blocks, L + 1 the head) and is made of one or more Hugging Face
// tensors stacked along their first dimension (the fused qkv from separate q, k and v),
// each rearranged as its transform says. Plain names and shapes: no libtorch.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hyperpipe/model/transformer_config.h"

namespace hyperpipe::weights {

// The naming a checkpoint follows, from its config.json's model_type.
enum class HfArchitecture {
  kGpt2,   // gpt2
  kLlama,  // llama, mistral, qwen2: the same names (Qwen2 adds q/k/v biases)
};

// How a Hugging Face tensor becomes (a part of) a HyperPipe parameter.
enum class HfTransform {
  kAsIs,
  // GPT-2's Conv1D keeps its weight as [in, out]; HyperPipe's as [out, in].
  kTranspose,
  // Queries and keys of a rotary model: Hugging Face orders each head's rows as the first
  // halves of the rotated pairs, then the second halves (rotate_half); HyperPipe rotates
  // neighbouring rows as a pair (as Meta's reference model does). rotary_pair_rows()
  // gives the order.
  kRotaryPairs,
};

struct HfSource {
  std::string name;  // as the checkpoint names it (GPT-2's may lack "transformer.")
  HfTransform transform = HfTransform::kAsIs;
  int64_t heads = 0;           // kRotaryPairs: the heads the rows hold
  std::vector<int64_t> shape;  // as stored in the checkpoint
};

struct HfParameter {
  std::string name;               // HyperPipe's ("layer3.qkv")
  std::vector<int64_t> shape;     // HyperPipe's, whole (before any tensor-parallel split)
  std::vector<HfSource> sources;  // stacked along dim 0, in this order
};

// The architecture of a config.json's model_type; nothing for one whose weights HyperPipe
// cannot load yet (`why_not` then says why).
std::optional<HfArchitecture> hf_architecture(const std::string& model_type,
                                              std::string* why_not = nullptr);

// Every parameter of layers [first, end) of `config` (a model read from a config.json of
// `architecture`), in layer order.
std::vector<HfParameter> hf_parameters(const model::TransformerConfig& config,
                                       HfArchitecture architecture, int first, int end);

// For a [heads · head_dim, …] query or key weight in Hugging Face's order: for each row
// of HyperPipe's order, the Hugging Face row it comes from.
std::vector<int64_t> rotary_pair_rows(int64_t heads, int64_t head_dim);

// The name under which `wanted` is in a checkpoint holding `names`: itself, or GPT-2's
// without (or with) the "transformer." its model class adds; nothing if neither is there.
std::optional<std::string> find_hf_tensor(const std::string& wanted,
                                          const std::set<std::string>& names);

}  // namespace hyperpipe::weights
