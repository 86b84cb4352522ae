#include "hyperpipe/runtime/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/text_excerpt.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::runtime {
namespace {

namespace fs = std::filesystem;

// The directory of a checkpoint after `steps` steps; zero-padded so names sort by step.
std::string step_directory(const std::string& dir, int64_t steps) {
  return (fs::path(dir) / fmt::format("step-{:08d}", steps)).string();
}

// One chunk's tensors as a checkpoint file holds them: parameters under their names, AdamW
// state under name/exp_avg, name/exp_avg_sq and name/step. Whole tensors, whatever the
// tensor parallelism and the optimizer's sharding: every shard of the chunk calls this
// (the slices are joined across them). The weights are what AdamW updates (fp32 masters
// under mixed precision), so a run resumes in any dtype without losing what the 16-bit
// copies round away. Copies, on the CPU: the live tensors change with the next step.
std::vector<std::pair<std::string, torch::Tensor>> chunk_snapshot(
    StageModule& module, const std::vector<TrainedState>& states) {
  const auto whole = [&](const std::string& name, const torch::Tensor& mine) {
    const auto split = module.split(name);
    const torch::Tensor joined = split ? whole_of(mine.detach(), *split, module.shard()) : mine;
    // .cpu() of a CPU tensor is the tensor itself; of a GPU one, a copy already.
    return joined.is_cpu() ? joined.detach().clone() : joined.detach().cpu();
  };
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  size_t i = 0;
  for (const auto& item : module.named_parameters()) {
    const TrainedState& state = states.at(i++);
    tensors.emplace_back(item.key(), whole(item.key(), state.value));
    if (!state.exp_avg.defined()) continue;  // no step taken yet
    tensors.emplace_back(item.key() + "/exp_avg", whole(item.key(), state.exp_avg));
    tensors.emplace_back(item.key() + "/exp_avg_sq", whole(item.key(), state.exp_avg_sq));
    tensors.emplace_back(item.key() + "/step", torch::tensor(state.steps, torch::kLong));
  }
  return tensors;
}

struct ChunkToWrite {
  std::string path;
  std::pair<int, int> layers;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
};

// Writes the chunks (to temporary names, renamed into place); their manifest entries.
nlohmann::json write_chunks(const std::vector<ChunkToWrite>& chunks) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& chunk : chunks) {
    torch::serialize::OutputArchive archive;
    for (const auto& [name, tensor] : chunk.tensors) archive.write(name, tensor);
    const std::string temporary = chunk.path + ".partial";
    archive.save_to(temporary);
    fs::rename(temporary, chunk.path);
    files.push_back({{"name", fs::path(chunk.path).filename().string()},
                     {"layers", {chunk.layers.first, chunk.layers.second}},
                     {"bytes", fs::file_size(chunk.path)},
                     {"crc32", file_crc32(chunk.path)}});
  }
  return files;
}

std::string files_key(int64_t steps_done, int rank) {
  return fmt::format("checkpoint/{}/{}", steps_done, rank);
}

}  // namespace

CheckpointWriter::CheckpointWriter(std::string dir, Communicator& communicator,
                                   const plan::RankLayout& layout, nlohmann::json plan,
                                   std::string model_name, nlohmann::json run, double write_delay)
    : dir_(std::move(dir)),
      communicator_(communicator),
      layout_(layout),
      plan_(std::move(plan)),
      model_name_(std::move(model_name)),
      run_(std::move(run)),
      write_delay_(write_delay) {}

CheckpointWriter::~CheckpointWriter() {
  if (written_.valid()) written_.wait();
}

void CheckpointWriter::begin(int64_t steps_done, const Executor& executor) {
  complete();
  const auto began = std::chrono::steady_clock::now();
  const std::string where = step_directory(dir_, steps_done);
  const auto& role = executor.role();
  std::vector<ChunkToWrite> chunks;
  // The plan's own pipeline holds every layer; its first data-parallel ranks write, the
  // others of a sharded optimizer gather their parts of the state to them.
  if (role.pipeline == 0 && (role.dp_index == 0 || executor.shards_optimizer())) {
    if (role.dp_index == 0) fs::create_directories(where);
    for (size_t c = 0; c < executor.chunks().size(); ++c) {
      const auto& chunk = executor.chunks()[c];
      const auto states = executor.trained_state(static_cast<int>(c));
      if (role.dp_index != 0) continue;
      auto tensors = chunk_snapshot(*chunk, states);
      if (role.tp_index != 0) continue;  // the first shard writes the whole chunk
      chunks.push_back({(fs::path(where) / fmt::format("layers-{:05d}-{:05d}.pt",
                                                       chunk->first_layer(), chunk->end_layer()))
                            .string(),
                        {chunk->first_layer(), chunk->end_layer()},
                        std::move(tensors)});
    }
  }
  // The schedule the steps so far followed: a resume continues it (lr_schedule.h).
  manifest_extras_ = {{"lr_schedule", executor.lr_schedule().to_json()}};
  // Every rank's scaler is the same: where it was, so a resumed run scales as this one.
  if (const auto* scaler = executor.loss_scaler()) {
    manifest_extras_["loss_scale"] = {{"scale", scaler->scale()},
                                      {"clean_steps", scaler->clean_steps()}};
  }
  open_ = steps_done;
  copy_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  written_ = std::async(std::launch::async, [chunks = std::move(chunks), delay = write_delay_] {
    const auto began = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    Written written;
    written.files = write_chunks(chunks);
    written.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return written;
  });
}

bool CheckpointWriter::written() const {
  return !open_ || written_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

std::optional<int64_t> CheckpointWriter::complete() {
  if (!open_) return std::nullopt;
  const int64_t steps_done = *open_;
  open_.reset();
  const Written written = written_.get();
  last_save_seconds_ = copy_seconds_ + written.seconds;
  const nlohmann::json& files = written.files;
  communicator_.store_set(files_key(steps_done, communicator_.rank()), files.dump());
  if (communicator_.rank() == 0) {
    const std::string where = step_directory(dir_, steps_done);
    nlohmann::json all = nlohmann::json::array();
    for (int group = 0; group < layout_.groups(); ++group) {
      const int writer = layout_.rank_of(group, 0);
      for (auto& file :
           nlohmann::json::parse(communicator_.store_get(files_key(steps_done, writer)))) {
        all.push_back(file);
      }
    }
    nlohmann::json manifest{{"format", kCheckpointFormat},
                            {"model", model_name_},
                            {"steps_done", steps_done},
                            {"run", run_},
                            {"plan", plan_},
                            {"files", all}};
    manifest.update(manifest_extras_);
    // An interrupted save of this step by an earlier attempt (another split, say) may have
    // left files no manifest names: they go before this one's manifest makes it complete.
    std::set<std::string> named;
    for (const auto& file : all) named.insert(file["name"].get<std::string>());
    for (const auto& entry : fs::directory_iterator(where)) {
      if (named.count(entry.path().filename().string())) continue;
      log().info("{}: removing what an interrupted save left", entry.path().string());
      fs::remove_all(entry.path());
    }
    write_file_atomically((fs::path(where) / kCheckpointManifest).string(), manifest.dump(2));
  }
  communicator_.barrier();
  return steps_done;
}

namespace {

// Opens a checkpoint file into `archive`; InputError naming it when it is not a libtorch
// archive.
void load_archive(torch::serialize::InputArchive& archive, const std::string& path) {
  try {
    archive.load_from(path);
  } catch (const c10::Error&) {
    throw InputError(path, "",
                     "a checkpoint file written by hyperpipe (a torch archive); it is not one");
  }
}

// libtorch's archives (torch::serialize::OutputArchive::save_to) are zip files: they start
// with a zip local file header.
bool is_torch_archive(const std::string& path) {
  constexpr char kZipMagic[] = {'P', 'K', '\x03', '\x04'};
  char head[sizeof kZipMagic] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  return in.gcount() == sizeof head && std::equal(head, head + sizeof head, kZipMagic);
}

// A file name from a manifest: a plain name inside the step's directory, never a path out
// of it ("../../etc/hostname") nor a hidden or special entry.
std::string checked_file_name(const nlohmann::json& file, const std::string& manifest_path) {
  const std::string name = file.at("name").get<std::string>();
  if (name.empty() || name.front() == '.' || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    throw InputError(manifest_path, "files",
                     fmt::format("file names inside the checkpoint's directory, got '{}'",
                                 printable_excerpt(name)));
  }
  return name;
}

// The checkpoint in `path`, its manifest read and every file checked against its CRC-32.
CheckpointInfo read_checkpoint(const std::string& path) {
  CheckpointInfo info;
  info.path = path;
  const std::string manifest_path = (fs::path(info.path) / kCheckpointManifest).string();
  try {
    info.manifest = nlohmann::json::parse(
        read_input_file(manifest_path, kMaxSpecFileBytes, "a checkpoint manifest"));
    if (info.manifest.at("format") != kCheckpointFormat) {
      throw InputError(manifest_path, "format", std::string("\"") + kCheckpointFormat + "\"");
    }
    info.steps_done = info.manifest.at("steps_done").get<int64_t>();
    for (const auto& file : info.manifest.at("files")) {
      const std::string path =
          (fs::path(info.path) / checked_file_name(file, manifest_path)).string();
      if (!fs::is_regular_file(path)) {
        throw InputError(path, "", "the checkpoint file its manifest lists");
      }
      if (!is_torch_archive(path)) {
        throw InputError(path, "",
                         "a checkpoint file written by hyperpipe (a torch archive); it is not "
                         "one");
      }
      if (fs::file_size(path) != file.at("bytes").get<uint64_t>() ||
          file_crc32(path) != file.at("crc32").get<uint32_t>()) {
        throw InputError(path, "",
                         fmt::format("{} bytes with CRC-32 {:08x} as {} records: the file is "
                                     "corrupt or truncated",
                                     file.at("bytes").get<uint64_t>(),
                                     file.at("crc32").get<uint32_t>(), manifest_path));
      }
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError(manifest_path, "", std::string("a checkpoint manifest: ") + error.what());
  }
  return info;
}

}  // namespace

std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir) {
  if (!fs::is_directory(dir)) return std::nullopt;
  std::vector<std::string> complete;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("step-", 0) == 0 &&
        fs::exists(entry.path() / kCheckpointManifest)) {
      complete.push_back(entry.path().string());
    }
  }
  // Newest first; a corrupt one gives way to the newest intact one before it.
  std::sort(complete.rbegin(), complete.rend());
  std::optional<InputError> newest_error;
  for (const auto& path : complete) {
    try {
      CheckpointInfo info = read_checkpoint(path);
      if (newest_error) {
        log().warn("{}; resuming from the newest intact checkpoint instead, {}",
                   newest_error->what(), path);
      }
      return info;
    } catch (const InputError& error) {
      if (!newest_error) newest_error = error;
    }
  }
  if (newest_error) throw *newest_error;  // none is intact
  return std::nullopt;
}

CheckpointInfo find_checkpoint(const std::string& path) {
  if (fs::is_regular_file(fs::path(path) / kCheckpointManifest)) return read_checkpoint(path);
  if (auto latest = latest_checkpoint(path)) return *latest;
  throw InputError(path, "",
                   fmt::format("a checkpoint: a step's directory holding {}, or a checkpoint "
                               "directory (train --checkpoint-dir) holding one",
                               kCheckpointManifest));
}

std::map<std::string, torch::Tensor> read_checkpoint_parameters(const std::string& path) {
  torch::serialize::InputArchive archive;
  load_archive(archive, path);
  std::map<std::string, torch::Tensor> parameters;
  for (const auto& key : archive.keys()) {
    if (key.find('/') != std::string::npos) continue;  // optimizer state
    archive.read(key, parameters[key]);
  }
  return parameters;
}

void load_checkpoint(const CheckpointInfo& checkpoint, Executor& executor,
                     const std::string& model_name) {
  const std::string manifest_path = (fs::path(checkpoint.path) / kCheckpointManifest).string();
  if (checkpoint.manifest.at("model").get<std::string>() != model_name) {
    throw InputError(manifest_path, "model",
                     fmt::format("{} (the model being trained), got {}", model_name,
                                 checkpoint.manifest.at("model").get<std::string>()));
  }
  if (auto* scaler = executor.loss_scaler(); scaler && checkpoint.manifest.contains("loss_scale")) {
    try {
      const auto& saved = checkpoint.manifest.at("loss_scale");
      scaler->restore(saved.at("scale").get<double>(), saved.at("clean_steps").get<int64_t>());
    } catch (const nlohmann::json::exception& error) {
      throw InputError(manifest_path, "loss_scale",
                       std::string("{\"scale\": x, \"clean_steps\": n}: ") + error.what());
    }
  }
  for (size_t c = 0; c < executor.chunks().size(); ++c) {
    const auto& chunk = executor.chunks()[c];
    auto wanted = chunk->named_parameters();
    std::set<std::string> loaded;
    for (const auto& file : checkpoint.manifest.at("files")) {
      const int first = file.at("layers")[0].get<int>();
      const int end = file.at("layers")[1].get<int>();
      if (end <= chunk->first_layer() || first >= chunk->end_layer()) continue;
      const std::string path =
          (fs::path(checkpoint.path) / checked_file_name(file, manifest_path)).string();
      torch::serialize::InputArchive archive;
      load_archive(archive, path);
      for (const auto& key : archive.keys()) {
        if (key.find('/') != std::string::npos) continue;  // optimizer state, read below
        const int layer = parameter_layer(key);
        if (layer < chunk->first_layer() || layer >= chunk->end_layer()) continue;
        auto* found = wanted.find(key);
        if (!found) {
          throw InputError(path, key, "a parameter of the model being trained");
        }
        const torch::Tensor& parameter = *found;
        torch::Tensor value;
        archive.read(key, value);
        // Checkpoints hold whole tensors: a shard takes its slice.
        const auto shard = [&](const torch::Tensor& whole) {
          return chunk->share_of_whole(key, whole);
        };
        value = shard(value);
        if (value.sizes() != parameter.sizes()) {
          throw InputError(
              path, key,
              fmt::format("shape {} as the model has, got {}", fmt::join(parameter.sizes(), "×"),
                          fmt::join(value.sizes(), "×")));
        }
        TrainedState whole{value.to(parameter.device()), {}, {}, 0};
        torch::Tensor exp_avg, exp_avg_sq, step;
        if (archive.try_read(key + "/exp_avg", exp_avg) &&
            archive.try_read(key + "/exp_avg_sq", exp_avg_sq) &&
            archive.try_read(key + "/step", step)) {
          whole.exp_avg = shard(exp_avg).to(parameter.device());
          whole.exp_avg_sq = shard(exp_avg_sq).to(parameter.device());
          whole.steps = step.item<int64_t>();
        }
        executor.restore_trained_state(static_cast<int>(c), chunk->parameter_index(key), whole);
        loaded.insert(key);
      }
    }
    for (const auto& item : wanted) {
      if (!loaded.count(item.key())) {
        throw InputError(
            manifest_path, "files",
            fmt::format("a file holding {} (layers {} of this process)", item.key(),
                        plan::format_layers(chunk->first_layer(), chunk->end_layer())));
      }
    }
  }
  executor.trained_weights_changed();
}

}  // namespace hyperpipe::runtime
