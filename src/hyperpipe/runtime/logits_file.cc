#include "hyperpipe/runtime/logits_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "hyperpipe/common/error.h"
#include "hyperpipe/weights/safetensors.h"

namespace hyperpipe::runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFilePrefix = "logits-rank";

template <typename T>
std::span<const std::byte> bytes_of(const torch::Tensor& contiguous) {
  return {reinterpret_cast<const std::byte*>(contiguous.data_ptr<T>()),
          static_cast<size_t>(contiguous.numel()) * sizeof(T)};
}

}  // namespace

std::string logits_file_path(const std::string& dir, int rank) {
  return (fs::path(dir) / fmt::format("{}{}.safetensors", kFilePrefix, rank)).string();
}

void require_no_earlier_logits(const std::string& dir) {
  // Made now, so a folder that cannot be is refused before the run rather than after its
  // first step.
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw InputError("--logits", dir, "a folder that can be made and written");
  }
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().filename().string().rfind(kFilePrefix, 0) == 0) {
      throw InputError("--logits", dir,
                       fmt::format("a folder without an earlier run's logits files; it holds {} "
                                   "(remove them, or name another folder)",
                                   entry.path().filename().string()));
    }
  }
}

void write_logits_file(const std::string& dir, int rank, int64_t step,
                       const std::vector<LogitRows>& rows) {
  std::vector<const LogitRows*> ordered;
  for (const auto& row : rows) ordered.push_back(&row);
  std::sort(ordered.begin(), ordered.end(), [](const LogitRows* a, const LogitRows* b) {
    return a->first_sample < b->first_sample;
  });
  std::vector<torch::Tensor> samples, ids, targets, logits;
  for (const LogitRows* row : ordered) {
    samples.push_back(
        torch::arange(row->first_sample, row->first_sample + row->input_ids.size(0), torch::kLong));
    ids.push_back(row->input_ids.to(torch::kLong));
    targets.push_back(row->targets.to(torch::kLong));
    logits.push_back(row->logits.to(torch::kFloat));
  }
  const auto sample = torch::cat(samples).contiguous();
  const auto input_ids = torch::cat(ids).contiguous();
  const auto all_targets = torch::cat(targets).contiguous();
  const auto all_logits = torch::cat(logits).contiguous();
  weights::write_safetensors(
      logits_file_path(dir, rank),
      {{"sample", weights::TensorDtype::kI64, sample.sizes().vec(), bytes_of<int64_t>(sample)},
       {"input_ids", weights::TensorDtype::kI64, input_ids.sizes().vec(),
        bytes_of<int64_t>(input_ids)},
       {"targets", weights::TensorDtype::kI64, all_targets.sizes().vec(),
        bytes_of<int64_t>(all_targets)},
       {"logits", weights::TensorDtype::kF32, all_logits.sizes().vec(),
        bytes_of<float>(all_logits)}},
      {{"format", kLogitsFormat}, {"step", std::to_string(step + 1)}});  // from 1, as printed
}

}  // namespace hyperpipe::runtime
