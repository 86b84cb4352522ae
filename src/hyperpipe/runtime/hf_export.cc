#include "hyperpipe/runtime/hf_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/hf_weights.h"
#include "hyperpipe/weights/hf_config.h"
#include "hyperpipe/weights/safetensors.h"

namespace hyperpipe::runtime {
namespace {

namespace fs = std::filesystem;

struct OutputType {
  weights::TensorDtype file;
  torch::ScalarType torch;
  const char* torch_dtype;  // config.json's name
};

OutputType output_type(const std::string& dtype) {
  if (dtype == "fp32") return {weights::TensorDtype::kF32, torch::kFloat, "float32"};
  if (dtype == "bf16") return {weights::TensorDtype::kBF16, torch::kBFloat16, "bfloat16"};
  if (dtype == "fp16") return {weights::TensorDtype::kF16, torch::kHalf, "float16"};
  throw InputError("--dtype", dtype, "fp32, bf16 or fp16");
}

// One tensor of the output, where it goes.
struct Placed {
  const weights::HfSource* source = nullptr;
  size_t shard = 0;
};

// What Hugging Face's loaders require of a safetensors file's metadata.
const std::map<std::string, std::string> kPytorchMetadata = {{"format", "pt"}};

std::string shard_name(size_t shard, size_t shards) {
  return shards == 1 ? weights::kHfWeightsFile
                     : fmt::format("model-{:05d}-of-{:05d}.safetensors", shard + 1, shards);
}

// The layer ranges of the checkpoint's files, ascending, checked to cover layers
// [0, layers) once each.
std::vector<std::pair<std::pair<int, int>, std::string>> files_by_layer(
    const CheckpointInfo& checkpoint, int layers) {
  std::vector<std::pair<std::pair<int, int>, std::string>> files;
  for (const auto& file : checkpoint.manifest.at("files")) {
    files.push_back({{file.at("layers")[0].get<int>(), file.at("layers")[1].get<int>()},
                     (fs::path(checkpoint.path) / file.at("name").get<std::string>()).string()});
  }
  std::sort(files.begin(), files.end());
  int next = 0;
  for (const auto& [range, path] : files) {
    if (range.first != next || range.second <= range.first) {
      throw InputError(
          (fs::path(checkpoint.path) / kCheckpointManifest).string(), "files",
          fmt::format("files holding layers 0 to {} once each; layer {} is {}", layers - 1, next,
                      range.first > next ? "missing" : "held twice"));
    }
    next = range.second;
  }
  if (next != layers) {
    throw InputError(
        (fs::path(checkpoint.path) / kCheckpointManifest).string(), "files",
        fmt::format("files holding layers 0 to {}; they end at {}", layers - 1, next - 1));
  }
  return files;
}

// The Hugging Face tensor `source` from its rows of HyperPipe's parameter.
torch::Tensor as_hf(const torch::Tensor& part, const weights::HfSource& source) {
  switch (source.transform) {
    case weights::HfTransform::kTranspose:
      return part.t();
    case weights::HfTransform::kRotaryPairs: {
      // HyperPipe's row i is Hugging Face's row pair_rows[i]: put each back.
      const int64_t head_dim = source.shape.front() / source.heads;
      const auto rows =
          torch::tensor(weights::rotary_pair_rows(source.heads, head_dim), torch::kLong);
      return torch::empty_like(part).index_copy_(0, rows, part);
    }
    case weights::HfTransform::kAsIs:
      break;
  }
  return part;
}

void clear_earlier_export(const fs::path& dir, bool overwrite) {
  std::vector<fs::path> earlier;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == model::kHfConfigFile || name == weights::kHfWeightsIndexFile ||
        (name.starts_with("model") && name.ends_with(".safetensors"))) {
      earlier.push_back(entry.path());
    }
  }
  if (earlier.empty()) return;
  if (!overwrite) {
    throw InputError(dir.string(), "",
                     fmt::format("a folder without a Hugging Face checkpoint (it holds {}); "
                                 "give --overwrite to replace it",
                                 earlier.front().filename().string()));
  }
  // config.json first: a folder without it is no checkpoint while the rest goes.
  std::stable_partition(earlier.begin(), earlier.end(), [](const fs::path& path) {
    return path.filename() == model::kHfConfigFile;
  });
  for (const auto& path : earlier) fs::remove(path);
}

}  // namespace

HfExportSummary export_hf_checkpoint(const CheckpointInfo& checkpoint,
                                     const model::TransformerConfig& model,
                                     const std::string& out_dir, const HfExportOptions& options) {
  const std::string manifest = (fs::path(checkpoint.path) / kCheckpointManifest).string();
  const auto trained_as = checkpoint.manifest.at("model").get<std::string>();
  if (trained_as != model.name) {
    throw InputError(
        "--model", model.name,
        fmt::format("the model the checkpoint was trained as ({} names {})", manifest, trained_as));
  }
  std::string why_not;
  const auto architecture = weights::hf_export_architecture(model, &why_not);
  if (!architecture) {
    throw InputError(
        "--model", model.name,
        "a model a Hugging Face GPT-2 or LLaMA config can describe; it has " + why_not);
  }
  const OutputType type = output_type(options.dtype);
  if (options.max_shard_bytes == 0) {
    throw InputError("--max-shard-size", "0", "a positive number of bytes");
  }
  const int layers = static_cast<int>(model.layers) + 2;
  const auto files = files_by_layer(checkpoint, layers);
  const auto parameters = weights::hf_parameters(model, *architecture, 0, layers);

  // Every tensor's shard, decided from the shapes before any is read; a tensor two
  // parameters share (the tied embedding) is written once.
  std::vector<Placed> placed;
  std::map<std::string, size_t> placed_index;
  uint64_t total = 0;
  uint64_t in_shard = 0;
  size_t shards = 1;
  for (const auto& parameter : parameters) {
    for (const auto& source : parameter.sources) {
      if (placed_index.count(source.name)) continue;
      int64_t numel = 1;
      for (int64_t size : source.shape) numel *= size;
      const uint64_t bytes = static_cast<uint64_t>(numel) * weights::element_size(type.file);
      if (in_shard > 0 && in_shard + bytes > options.max_shard_bytes) {
        ++shards;
        in_shard = 0;
      }
      in_shard += bytes;
      total += bytes;
      placed_index[source.name] = placed.size();
      placed.push_back({&source, shards - 1});
    }
  }

  const fs::path dir(out_dir);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw InputError("--out", out_dir, "a folder that can be made and written");
  }
  clear_earlier_export(dir, options.overwrite);

  HfExportSummary summary;
  summary.model_type = options.source_config
                           ? options.source_config->value("model_type", std::string())
                       : *architecture == weights::HfArchitecture::kGpt2 ? "gpt2"
                       : model.qkv_bias                                  ? "qwen2"
                                                                         : "llama";
  summary.steps_done = checkpoint.steps_done;
  summary.bytes = total;
  // The tensors of the shard being filled; written when its last arrives.
  std::vector<std::pair<std::string, torch::Tensor>> pending;
  size_t shard = 0;
  std::map<std::string, uint32_t> written_crc;  // to check the tied copies agree
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  const auto flush = [&] {
    std::vector<weights::TensorToWrite> tensors;
    for (const auto& [name, value] : pending) {
      tensors.push_back({name,
                         type.file,
                         value.sizes().vec(),
                         {static_cast<const std::byte*>(value.data_ptr()), value.nbytes()}});
    }
    const std::string name = shard_name(shard, shards);
    weights::write_safetensors((dir / name).string(), tensors, kPytorchMetadata);
    for (const auto& [tensor, value] : pending) weight_map[tensor] = name;
    summary.files.push_back((dir / name).string());
    pending.clear();
    ++shard;
  };

  for (const auto& [range, path] : files) {
    const auto stored = read_checkpoint_parameters(path);
    for (const auto& parameter :
         weights::hf_parameters(model, *architecture, range.first, range.second)) {
      const auto found = stored.find(parameter.name);
      if (found == stored.end()) {
        throw InputError(path, parameter.name, "the parameter the model has; it is missing");
      }
      const torch::Tensor& whole = found->second;
      if (whole.sizes().vec() != parameter.shape) {
        throw InputError(path, parameter.name,
                         fmt::format("shape {} as {} has; got {}", fmt::join(parameter.shape, "×"),
                                     model.name, fmt::join(whole.sizes(), "×")));
      }
      int64_t row = 0;
      for (const auto& source : parameter.sources) {
        const int64_t rows = source.transform == weights::HfTransform::kTranspose ? source.shape[1]
                                                                                  : source.shape[0];
        const auto value = as_hf(whole.narrow(0, row, rows), source).to(type.torch).contiguous();
        row += rows;
        const uint32_t crc = crc32(value.data_ptr(), value.nbytes());
        if (const auto earlier = written_crc.find(source.name); earlier != written_crc.end()) {
          if (earlier->second != crc) {
            log().warn("{}: {} differs from the copy written for {}; the first is kept", path,
                       parameter.name, source.name);
          }
          continue;
        }
        written_crc[source.name] = crc;
        const Placed& place = placed[placed_index.at(source.name)];
        if (place.shard != shard) flush();
        pending.emplace_back(source.name, value);
        ++summary.tensors;
      }
    }
  }
  if (!pending.empty()) flush();
  if (shards > 1) {
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}},
                                          {"weight_map", weight_map}};
    const auto path = (dir / weights::kHfWeightsIndexFile).string();
    write_file_atomically(path, index.dump(2) + "\n");
    summary.files.push_back(path);
  }
  const auto config =
      options.source_config
          ? weights::hf_config_kept(*options.source_config, type.torch_dtype)
          : weights::hf_config_json(model, *architecture, runtime_computation(), type.torch_dtype);
  const auto config_path = (dir / model::kHfConfigFile).string();
  write_file_atomically(config_path, config.dump(2) + "\n");
  summary.files.push_back(config_path);
  return summary;
}

}  // namespace hyperpipe::runtime
