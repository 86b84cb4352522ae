#include "hyperpipe/training/checkpoint_directory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/text_excerpt.h"
#include "hyperpipe/training/text_corpus.h"

namespace hyperpipe::training {
namespace {

namespace fs = std::filesystem;

bool is_step_directory(const fs::directory_entry& entry) {
  return entry.is_directory() && entry.path().filename().string().rfind("step-", 0) == 0;
}

// Files an interrupted save leaves: checkpoint files before their rename (.partial) and
// manifests before theirs (write_file_atomically's .tmp.).
bool is_leftover(const fs::path& file) {
  const std::string name = file.filename().string();
  return name.size() > 8 && (name.ends_with(".partial") || name.find(".tmp.") != std::string::npos);
}

// The refusal of a directory whose lock (open as `lock_fd`) another run holds, naming it.
InputError held_by_another(const std::string& dir, int lock_fd) {
  char holder[200] = {};
  const ssize_t got = pread(lock_fd, holder, sizeof holder - 1, 0);
  return InputError(
      dir, "",
      fmt::format("in use by another run ({}); one run at a time per checkpoint directory",
                  got > 0 ? printable_excerpt(std::string(holder, got), 120) : "holder unknown"));
}

// The refusal of a directory holding `steps` checkpoints of an earlier run.
InputError earlier_run(const std::string& dir, int steps) {
  return InputError(dir, "",
                    fmt::format("holds {} of an earlier run; --resume to continue it, "
                                "--overwrite to replace it, or another --checkpoint-dir",
                                counted(steps, "checkpoint")));
}

int step_directories(const std::string& dir) {
  int steps = 0;
  for (const auto& entry : fs::directory_iterator(dir)) steps += is_step_directory(entry) ? 1 : 0;
  return steps;
}

std::string this_holder() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  return fmt::format("pid {} on {} since unix time {}", getpid(), host, now);
}

}  // namespace

nlohmann::json RunIdentity::to_json() const {
  return {{"model", model},
          {"seed", seed},
          {"data", data},
          {"data_bytes", data_bytes},
          {"data_crc32", data_crc32},
          {"tokenizer", tokenizer}};
}

// A tokenizer's identity is longer than an excerpt: its CRC at the end is what tells two
// apart ("byte-level BPE, 50257 tokens, CRC-32 1a2b3c4d").
constexpr size_t kTokenizerIdentityChars = 80;

void RunIdentity::require_same(const nlohmann::json& recorded, const std::string& manifest) const {
  const nlohmann::json mine = to_json();
  for (const auto& [key, value] : mine.items()) {
    if (recorded.contains(key) && recorded[key] == value) continue;
    if (key == "tokenizer" && !recorded.contains(key) && value == kNoTokenizer) continue;
    const auto describe = [](const nlohmann::json& run) {
      return fmt::format(
          "model {}, seed {}, data {} ({} bytes, CRC-32 {:08x}), tokenizer {}",
          printable_excerpt(run.value("model", "?")), run.value("seed", 0),
          printable_excerpt(run.value("data", "?")), run.value("data_bytes", 0),
          run.value("data_crc32", 0u),
          printable_excerpt(run.value("tokenizer", kNoTokenizer), kTokenizerIdentityChars));
    };
    throw InputError(
        manifest, "run",
        fmt::format(
            "--resume continues the run that wrote this checkpoint ({}), but this run "
            "has {} ({} differs); give the same model, --seed, --data and --tokenizer, or another "
            "--checkpoint-dir",
            describe(recorded), describe(mine), key));
  }
}

RunIdentity identity_of(const std::string& model, uint64_t seed, const std::string& data_path,
                        const std::string& tokenizer) {
  RunIdentity identity;
  identity.tokenizer = tokenizer;
  identity.model = model;
  identity.seed = seed;
  identity.data = fs::path(data_path).filename().string();
  if (is_indexed_dataset(data_path)) {
    // Its token file may be terabytes: the index (every sequence's length and place) and the
    // token file's size stand for it.
    const std::string prefix = indexed_dataset_prefix(data_path);
    identity.data = fs::path(prefix).filename().string();
    identity.data_bytes = fs::file_size(prefix + ".bin");
    identity.data_crc32 = file_crc32(prefix + ".idx");
    return identity;
  }
  identity.data_bytes = fs::file_size(data_path);
  identity.data_crc32 = file_crc32(data_path);
  return identity;
}

void check_checkpoint_directory(const std::string& dir, bool resume, bool overwrite) {
  std::error_code error;
  if (!fs::exists(dir, error)) {
    // Created at the start: the nearest folder that exists must let us write.
    fs::path existing = fs::absolute(dir, error).parent_path();
    while (!existing.empty() && !fs::exists(existing, error)) existing = existing.parent_path();
    if (!fs::is_directory(existing, error) || ::access(existing.c_str(), W_OK) != 0) {
      throw InputError(
          dir, "",
          fmt::format("a directory for checkpoints: {} cannot be written", existing.string()));
    }
    return;
  }
  if (!fs::is_directory(dir, error)) {
    throw InputError(dir, "", "a directory for checkpoints: it is not a directory");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError(dir, "", "a directory for checkpoints that we may write");
  }
  const std::string lock_path = (fs::path(dir) / kCheckpointLockFile).string();
  const int lock_fd = ::open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (lock_fd >= 0) {
    // A shared lock is refused while a run holds the exclusive one, and released at once.
    const bool held = flock(lock_fd, LOCK_SH | LOCK_NB) != 0;
    const auto in_use = held ? std::optional(held_by_another(dir, lock_fd)) : std::nullopt;
    ::close(lock_fd);
    if (in_use) throw *in_use;
  }
  const int steps = step_directories(dir);
  if (!resume && !overwrite && steps > 0) throw earlier_run(dir, steps);
}

CheckpointDirectory::CheckpointDirectory(const std::string& dir, bool resume, bool overwrite) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw InputError(dir, "", "a directory for checkpoints: " + error.message());
  const std::string lock_path = (fs::path(dir) / kCheckpointLockFile).string();
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    throw InputError(lock_path, "", std::string("a lock file we may write: ") + strerror(errno));
  }
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const InputError in_use = held_by_another(dir, lock_fd_);
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw in_use;
  }
  const std::string holder = this_holder();
  if (ftruncate(lock_fd_, 0) != 0 ||
      pwrite(lock_fd_, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    log().warn("{}: could not record this run as the holder", lock_path);
  }
  int steps = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!is_step_directory(entry)) continue;
    ++steps;
    for (const auto& file : fs::directory_iterator(entry.path())) {
      if (!is_leftover(file.path())) continue;
      log().info("{}: removing what an interrupted save left", file.path().string());
      fs::remove(file.path(), error);
    }
  }
  if (resume || steps == 0) return;
  if (!overwrite) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw earlier_run(dir, steps);
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (is_step_directory(entry)) fs::remove_all(entry.path());
  }
  log().warn("{}: --overwrite removed the {} of an earlier run", dir, counted(steps, "checkpoint"));
}

CheckpointDirectory::~CheckpointDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // closing releases the flock
}

}  // namespace hyperpipe::training
