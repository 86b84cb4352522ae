#include "hyperpipe/runtime/hf_weights.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "hyperpipe/common/error.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/layers.h"
#include "hyperpipe/runtime/lean_ops.h"

namespace hyperpipe::runtime {
namespace {

torch::ScalarType scalar_type(weights::TensorDtype dtype) {
  switch (dtype) {
    case weights::TensorDtype::kF16:
      return torch::kHalf;
    case weights::TensorDtype::kBF16:
      return torch::kBFloat16;
    case weights::TensorDtype::kF64:
      return torch::kDouble;
    default:
      return torch::kFloat;  // F32: HfCheckpoint::tensor() lets floating point alone through
  }
}

// The source's tensor as HyperPipe lays it out, in `dtype`, copied out of the mapped file.
torch::Tensor tensor_of(const weights::HfCheckpoint& checkpoint, const weights::HfSource& source,
                        torch::ScalarType dtype) {
  const auto found = checkpoint.tensor(source);
  // from_blob only views the mapped bytes; the copy below owns its memory.
  auto value = torch::from_blob(const_cast<std::byte*>(found.bytes.data()), source.shape,
                                torch::TensorOptions().dtype(scalar_type(found.entry->dtype)));
  switch (source.transform) {
    case weights::HfTransform::kTranspose:
      value = value.t();
      break;
    case weights::HfTransform::kRotaryPairs: {
      const int64_t head_dim = source.shape.front() / source.heads;
      value = value.index_select(
          0, torch::tensor(weights::rotary_pair_rows(source.heads, head_dim), torch::kLong));
      break;
    }
    case weights::HfTransform::kAsIs:
      break;
  }
  return value.to(dtype, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

}  // namespace

weights::HfComputation runtime_computation() {
  return {kDropoutRate};
}

weights::HfCheckpoint open_hf_checkpoint(const std::string& dir,
                                         const model::TransformerConfig& model) {
  weights::HfCheckpoint checkpoint(dir, runtime_computation());
  if (const auto mismatch = weights::hf_model_mismatch(model, checkpoint.config())) {
    throw InputError(
        (std::filesystem::path(dir) / model::kHfConfigFile).string(), "",
        fmt::format("the model of the plan (make the plan with --model {}); {}", dir, *mismatch));
  }
  // Every tensor's name, dtype and shape, from the headers alone: a checkpoint that does
  // not hold the model is refused before any process meets another.
  const auto& config = checkpoint.config();
  for (const auto& parameter : weights::hf_parameters(config, checkpoint.architecture(), 0,
                                                      static_cast<int>(config.layers) + 2)) {
    for (const auto& source : parameter.sources) checkpoint.tensor(source);
  }
  return checkpoint;
}

void load_hf_weights(const std::string& dir, Executor& executor,
                     const model::TransformerConfig& model) {
  const auto checkpoint = open_hf_checkpoint(dir, model);
  for (size_t c = 0; c < executor.chunks().size(); ++c) {
    const auto& chunk = executor.chunks()[c];
    auto wanted = chunk->named_parameters();
    std::set<std::string> loaded;
    for (const auto& parameter :
         weights::hf_parameters(checkpoint.config(), checkpoint.architecture(),
                                chunk->first_layer(), chunk->end_layer())) {
      const auto* found = wanted.find(parameter.name);
      if (!found) {
        throw std::logic_error("the Hugging Face table names " + parameter.name +
                               ", which the runtime's layers do not have");
      }
      std::vector<torch::Tensor> parts;
      for (const auto& source : parameter.sources) {
        // Master weights are fp32 (fp64 in an fp64 run); the executor casts to the model's.
        parts.push_back(
            tensor_of(checkpoint, source,
                      found->scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat));
      }
      const auto whole = parts.size() == 1 ? parts.front() : torch::cat(parts, 0);
      const auto value = chunk->share_of_whole(parameter.name, whole);
      if (value.sizes() != found->sizes()) {
        throw std::logic_error(fmt::format("{}: {} from the checkpoint, {} in the runtime",
                                           parameter.name, fmt::join(value.sizes(), "×"),
                                           fmt::join(found->sizes(), "×")));
      }
      executor.restore_trained_state(static_cast<int>(c), chunk->parameter_index(parameter.name),
                                     {value.to(found->device()), {}, {}, 0});
      loaded.insert(parameter.name);
    }
    for (const auto& item : wanted) {
      if (!loaded.count(item.key())) {
        throw std::logic_error("no Hugging Face tensor makes " + item.key());
      }
    }
  }
  executor.trained_weights_changed();
}

}  // namespace hyperpipe::runtime
