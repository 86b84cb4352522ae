// Checkpoints that outlive the split they were written with: every parameter and its
// AdamW state is stored under its layer's name ("layer7.qkv"), one file per pipeline stage,
// so a run with another plan of the same model can load them; tensor-parallel shards
// write and read whole tensors too, so the tp may change as well. A checkpoint is complete
// once its manifest exists: files are written to temporary names and renamed, their
// CRC-32s go into the manifest, and the manifest is renamed into place last.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hyperpipe/runtime/communicator.h"
#include "hyperpipe/runtime/executor.h"

namespace hyperpipe::runtime {

inline constexpr const char* kCheckpointFormat = "hyperpipe.checkpoint/1";
inline constexpr const char* kCheckpointManifest = "checkpoint.json";

struct CheckpointInfo {
  std::string path;  // the step's directory
  int64_t steps_done = 0;
  nlohmann::json manifest;
};

// Saves a run's checkpoints without holding its steps up for the disk. begin() is
// collective and quick: the first data-parallel rank of each device group of the plan's
// own pipeline gathers its chunks' whole tensors (across tensor and optimizer shards) and
// copies them, so the next steps may change the live ones; a thread of its own then writes
// them and their CRC-32s while training goes on. complete() is collective too: each rank's
// files are listed in the store, and rank 0 writes the manifest (with the plan document
// and the run's identity, checkpoint_directory.h) in `dir`/step-NNNNNNNN, which makes the
// checkpoint complete. One checkpoint is open at a time: begin() completes the one before.
class CheckpointWriter {
 public:
  // `write_delay`: seconds the writing thread waits before it writes (emulated slow
  // storage, TrainOptions::checkpoint_write_delay).
  CheckpointWriter(std::string dir, Communicator& communicator, const plan::RankLayout& layout,
                   nlohmann::json plan, std::string model_name, nlohmann::json run,
                   double write_delay = 0);
  // Waits for the writing thread (a checkpoint left open stays incomplete: no manifest).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Collective: copies this rank's part of the checkpoint after `steps_done` steps and
  // starts writing it.
  void begin(int64_t steps_done, const Executor& executor);
  // The steps of the checkpoint begun and not yet complete, if there is one.
  std::optional<int64_t> open() const { return open_; }
  // Whether this rank's part of the open checkpoint is on disk (true when none is open);
  // never waits.
  bool written() const;
  // Collective: waits for every rank's part and makes the open checkpoint complete; its
  // steps, or nothing when none was open. Rethrows what failed the writing thread.
  std::optional<int64_t> complete();
  // What this rank's part of the last completed checkpoint took to copy and to write,
  // seconds: what a save costs a run that waits for it (one ending to hand over).
  double last_save_seconds() const { return last_save_seconds_; }

 private:
  std::string dir_;
  Communicator& communicator_;
  const plan::RankLayout& layout_;
  nlohmann::json plan_;
  std::string model_name_;
  nlohmann::json run_;
  double write_delay_ = 0;
  std::optional<int64_t> open_;
  nlohmann::json manifest_extras_;  // what rank 0 knew at begin() (the loss scale)
  struct Written {
    nlohmann::json files;  // this rank's, as the manifest lists them
    double seconds = 0;    // writing them
  };
  std::future<Written> written_;
  double copy_seconds_ = 0;  // begin()'s copy of the open checkpoint
  double last_save_seconds_ = 0;
};

// The checkpoint with the most steps in `dir` whose manifest exists (incomplete ones,
// without it, are passed over), its files checked against their CRC-32s; a corrupt or
// truncated one gives way, with a warning, to the newest intact one. nullopt when there is
// none; InputError naming the newest's bad file when none is intact. Manifests may name
// only plain files inside their own directory.
std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir);

// The checkpoint at `path`: a step's directory (holding checkpoint.json), checked, or the
// newest intact one in a run's checkpoint directory. InputError naming `path` when there is
// none or it is damaged.
CheckpointInfo find_checkpoint(const std::string& path);

// The parameters in one of the checkpoint's files (whole tensors, by name: "layer3.qkv"),
// without their optimizer state. InputError naming the file when it is not a checkpoint
// file.
std::map<std::string, torch::Tensor> read_checkpoint_parameters(const std::string& path);

// Parameters and optimizer state for the executor's chunks, from a checkpoint of any
// split of the same model. Throws InputError when the model differs or a layer is missing.
void load_checkpoint(const CheckpointInfo& checkpoint, Executor& executor,
                     const std::string& model_name);

}  // namespace hyperpipe::runtime
