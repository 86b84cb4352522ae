// One run at a time per checkpoint directory, and checkpoints that say which run wrote
// them: a new run never overwrites another's steps by accident, two launches into one
// directory never interleave, and --resume never continues another run's weights.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace hyperpipe::training {

// The lock file, beside the step directories: its advisory lock (flock) is held for the
// run's lifetime; its text names the last holder.
inline constexpr const char* kCheckpointLockFile = ".lock";

// What makes two runs the same run: the model, the seed (initial weights, dropout, data
// order) and the data. The plan may differ: a checkpoint loads into any split.
struct RunIdentity {
  std::string model;
  uint64_t seed = 0;
  std::string data;  // the data file's name
  uint64_t data_bytes = 0;
  uint32_t data_crc32 = 0;
  std::string tokenizer;  // tokenizers::Tokenizer::identity(), or kNoTokenizer

  nlohmann::json to_json() const;
  // Throws InputError unless `recorded` (a manifest's "run") is this run; both are named.
  void require_same(const nlohmann::json& recorded, const std::string& manifest) const;
};

// A run without --tokenizer (bytes of text, or indexed ids as they are), and every run a
// manifest recorded before tokenizers were.
inline constexpr char kNoTokenizer[] = "none";

RunIdentity identity_of(const std::string& model, uint64_t seed, const std::string& data_path,
                        const std::string& tokenizer = kNoTokenizer);

// What CheckpointDirectory's constructor would refuse, checked without taking the lock,
// creating the directory or removing anything: for a launcher's pre-flight, before any
// process of the run starts. Throws the same InputError.
void check_checkpoint_directory(const std::string& dir, bool resume, bool overwrite);

class CheckpointDirectory {
 public:
  // Creates `dir` if needed and takes its lock (InputError naming the holder when another
  // process has it). Without `resume`, a directory that holds checkpoints is refused
  // (InputError) unless `overwrite`, which removes them. Leftovers of interrupted saves
  // (*.partial, *.tmp.*) are removed.
  CheckpointDirectory(const std::string& dir, bool resume, bool overwrite);
  ~CheckpointDirectory();  // releases the lock
  CheckpointDirectory(const CheckpointDirectory&) = delete;
  CheckpointDirectory& operator=(const CheckpointDirectory&) = delete;

 private:
  int lock_fd_ = -1;
};

}  // namespace hyperpipe::training
