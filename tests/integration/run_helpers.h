// What the multi-process tests share: the hyperpipe binary, a tiny model and plans of it,
// fresh run directories, and starting and waiting for processes.
#pragma once

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hyperpipe/runtime/checkpoint.h"
#include "test_files.h"

extern char** environ;

namespace hyperpipe::runtime::integration {

inline const std::string kBinary = HYPERPIPE_BINARY;
inline const std::string kCorpus = std::string(HYPERPIPE_EXAMPLES) + "/data/corpus.txt";

// Four blocks: a chain of six layers; tied embeddings, so the embedding's and the head's
// copies must be summed across stages.
inline const char* kTinyGpt =
    "name: test-gpt\nflavour: gpt\nhidden: 32\nlayers: 4\nheads: 2\nvocab: 256\nseq_len: 16\n"
    "tied_embeddings: true\ndropout: false\ndtype: fp32\n";

inline const char* kTwoStages =
    R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "1f1b",
       "stages": [{"layers": [0, 3], "devices": [0]}, {"layers": [3, 6], "devices": [1]}])";
inline const char* kThreeStages =
    R"("micro_batch_size": 2, "micro_batches": 3, "schedule": "zb-h1",
       "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 5], "devices": [1]},
                  {"layers": [5, 6], "devices": [2]}])";

// The weights of the newest checkpoint in dir/checkpoints, by name.
inline std::map<std::string, torch::Tensor> checkpoint_weights(const std::string& dir) {
  const auto checkpoint = latest_checkpoint(dir + "/checkpoints");
  std::map<std::string, torch::Tensor> weights;
  if (!checkpoint) return weights;
  for (const auto& file : checkpoint->manifest["files"]) {
    torch::serialize::InputArchive archive;
    archive.load_from(checkpoint->path + "/" + file["name"].get<std::string>());
    for (const auto& key : archive.keys()) {
      if (key.find('/') != std::string::npos) continue;
      torch::Tensor value;
      archive.read(key, value);
      weights[key] = value;
    }
  }
  return weights;
}

// One field of dir/metrics.jsonl, step by step.
inline std::vector<double> metric_values(const std::string& dir, const std::string& field) {
  std::vector<double> values;
  std::ifstream in(dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) values.push_back(nlohmann::json::parse(line)[field]);
  return values;
}

// The losses of dir/metrics.jsonl, step by step.
inline std::vector<double> metric_losses(const std::string& dir) {
  return metric_values(dir, "loss");
}

// The options for the device the multi-process runs train on: HYPERPIPE_TEST_DEVICE
// (scripts/gpu-check.sh sets cuda where a machine has a GPU per rank), else the CPU. The
// test plans name a100x8's types whatever GPUs run them: no placement check on CUDA.
inline std::string device_options() {
  const char* device = std::getenv("HYPERPIPE_TEST_DEVICE");
  const std::string name = device && *device ? device : "cpu";
  return "--device " + name + (name == "cpu" ? "" : " --no-placement-check");
}

inline int run_command(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `hyperpipe launch` of DIR/plan.json for `steps` with `data_options` ("--data …"), its
// metrics and checkpoints in DIR/NAME; expects it to succeed and returns DIR/NAME.
inline std::string launch_into(const std::string& dir, const std::string& data_options, int steps,
                               const std::string& name) {
  const std::string out = dir + "/" + name;
  std::filesystem::create_directories(out);
  const int code = run_command(
      fmt::format("{} launch --plan {}/plan.json {} --steps {} --metrics {}/metrics.jsonl "
                  "--checkpoint-dir {}/checkpoints {} > {}/log.txt 2>&1",
                  kBinary, dir, data_options, steps, out, out, device_options(), out));
  EXPECT_EQ(code, 0) << slurp(out + "/log.txt");
  return out;
}

// A fresh directory with the model and a plan of it on the built-in a100x8 (no emulated
// slowdown); returns the directory.
inline std::string prepare(const std::string& name, const std::string& model_yaml,
                           const std::string& plan_body, bool fresh = true) {
  const std::string dir = hyperpipe::testing::temp_path(name);
  if (fresh) std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/model.yaml") << model_yaml;
  std::ofstream(dir + "/plan.json") << R"({"format": "hyperpipe.plan/1", "model": "model.yaml",
    "cluster": "a100x8", )" << plan_body
                                    << "}";
  return dir;
}

// Starts `hyperpipe train` as rank `rank` of `world` directly (the test is the launcher),
// output to `log`; returns its pid.
inline pid_t start_worker(const std::string& plan, int rank, int world, int port,
                          const std::string& options, const std::string& log) {
  const std::string command = fmt::format(
      "RANK={} WORLD_SIZE={} MASTER_ADDR=127.0.0.1 MASTER_PORT={} exec {} train --plan {} {} "
      "> {} 2>&1",
      rank, world, port, kBinary, plan, options, log);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  return pid;
}

// Waits up to `seconds` for the process; its exit code, or -1 if it is still running.
inline int wait_for(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// `hyperpipe ARGUMENTS` (exec, so the pid is its own), with `variables` ("NAME=value …")
// in its environment, output to `log`.
inline pid_t start_hyperpipe(const std::string& variables, const std::string& arguments,
                             const std::string& log) {
  const std::string command =
      fmt::format("{} exec {} {} > {} 2>&1", variables, kBinary, arguments, log);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  return pid;
}

// The launcher itself (exec, so the pid is its own), output to `log`.
inline pid_t start_launcher(const std::string& dir, const std::string& options,
                            const std::string& log, const std::string& variables = "") {
  return start_hyperpipe(variables, fmt::format("launch --plan {}/plan.json {}", dir, options),
                         log);
}

// Waits up to `seconds` for a complete checkpoint in `dir`; whether one came.
inline bool wait_for_checkpoint(const std::string& dir, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!latest_checkpoint(dir) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return latest_checkpoint(dir).has_value();
}

// The parent pid and state letter of a process from /proc, or (-1, 0) if it is gone.
inline std::pair<pid_t, char> parent_and_state(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos || close + 4 > text.size()) return {-1, 0};
  const char state = text[close + 2];
  return {static_cast<pid_t>(std::atol(text.c_str() + close + 4)), state};
}

inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atol(entry->d_name));
    if (pid > 0 && parent_and_state(pid).first == parent) children.push_back(pid);
  }
  closedir(proc);
  return children;
}

// The rank a process of a run was started as (its RANK variable), -1 if it has none.
inline int rank_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/environ", pid));
  std::string variable;
  while (std::getline(in, variable, '\0')) {
    if (variable.rfind("RANK=", 0) == 0) return std::atoi(variable.c_str() + 5);
  }
  return -1;
}

}  // namespace hyperpipe::runtime::integration
