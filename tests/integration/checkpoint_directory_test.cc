// One run per checkpoint directory: a new run does not overwrite another's checkpoints,
// two runs do not share a directory, --resume continues only the run that wrote the
// checkpoint, a corrupt newest checkpoint gives way to an intact one, and manifests name
// only files of their own checkpoint.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/runtime/checkpoint.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;
namespace fs = std::filesystem;

// Two stages launched for `steps` steps into `dir`/checkpoints, a checkpoint every step.
int launch_into(const std::string& dir, int steps, const std::string& extra = "") {
  return run_command(fmt::format(
      "{} launch --plan {}/plan.json --data {} --steps {} --timeout 20 --checkpoint-dir "
      "{}/checkpoints --checkpoint-every 1 {} > {}/log.txt 2>&1",
      kBinary, dir, kCorpus, steps, dir, extra, dir));
}

// Rank 0 alone (the checks all come before the rendezvous), `extra` options added.
int rank0_into(const std::string& dir, const std::string& extra) {
  return run_command(fmt::format(
      "RANK=0 WORLD_SIZE=2 MASTER_PORT=1 {} train --plan {}/plan.json --data {} --steps 3 "
      "--timeout 5 --checkpoint-dir {}/checkpoints {} > {}/log.txt 2>&1",
      kBinary, dir, kCorpus, dir, extra, dir));
}

TEST(CheckpointDirectory, ANewRunDoesNotOverwriteAnotherUnlessAsked) {
  const std::string dir = prepare("ckdir-new", kTinyGpt, kTwoStages);
  ASSERT_EQ(launch_into(dir, 2), 0) << slurp(dir + "/log.txt");
  EXPECT_EQ(launch_into(dir, 1), 2);
  EXPECT_NE(slurp(dir + "/log.txt").find("holds 2 checkpoints of an earlier run; --resume"),
            std::string::npos)
      << slurp(dir + "/log.txt");
  EXPECT_TRUE(fs::exists(dir + "/checkpoints/step-00000002"));  // untouched
  // --overwrite: the earlier run's steps go, so a later --resume cannot pick them.
  ASSERT_EQ(launch_into(dir, 1, "--overwrite"), 0) << slurp(dir + "/log.txt");
  EXPECT_FALSE(fs::exists(dir + "/checkpoints/step-00000002"));
  EXPECT_EQ(latest_checkpoint(dir + "/checkpoints")->steps_done, 1);
}

TEST(CheckpointDirectory, TwoRunsCannotShareOne) {
  const std::string dir = prepare("ckdir-lock", kTinyGpt, kTwoStages);
  const pid_t first = start_launcher(
      dir,
      fmt::format("--data {} --steps 100000 --timeout 20 --checkpoint-dir {}/checkpoints "
                  "--checkpoint-every 5",
                  kCorpus, dir),
      dir + "/first.txt");
  wait_for_checkpoint(dir + "/checkpoints", 60);
  const int second = rank0_into(dir, "--resume");
  kill(first, SIGINT);
  if (wait_for(first, 30) < 0) kill(first, SIGKILL);
  EXPECT_EQ(second, 2);
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("in use by another run (pid "), std::string::npos) << log;
}

TEST(CheckpointDirectory, ResumeRefusesAnotherSeedOrData) {
  const std::string dir = prepare("ckdir-identity", kTinyGpt, kTwoStages);
  ASSERT_EQ(launch_into(dir, 1), 0) << slurp(dir + "/log.txt");
  EXPECT_EQ(rank0_into(dir, "--resume --seed 1"), 2);
  std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("seed 0"), std::string::npos) << log;
  EXPECT_NE(log.find("seed 1"), std::string::npos) << log;
  EXPECT_NE(log.find("(seed differs)"), std::string::npos) << log;
  const std::string other_data = dir + "/other.txt";
  std::ofstream(other_data) << slurp(kCorpus) << "more text";
  EXPECT_EQ(run_command(fmt::format("RANK=0 WORLD_SIZE=2 MASTER_PORT=1 {} train --plan "
                                    "{}/plan.json --data {} --steps 3 --checkpoint-dir "
                                    "{}/checkpoints --resume > {}/log.txt 2>&1",
                                    kBinary, dir, other_data, dir, dir)),
            2);
  log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("(data differs)"), std::string::npos) << log;
}

TEST(CheckpointDirectory, ACorruptNewestCheckpointGivesWayToTheNewestIntactOne) {
  const std::string dir = prepare("ckdir-fallback", kTinyGpt, kTwoStages);
  ASSERT_EQ(launch_into(dir, 2), 0) << slurp(dir + "/log.txt");
  const auto newest = latest_checkpoint(dir + "/checkpoints");
  ASSERT_EQ(newest->steps_done, 2);
  const std::string file =
      newest->path + "/" + newest->manifest["files"][0]["name"].get<std::string>();
  std::string bytes = slurp(file);
  bytes[bytes.size() / 2] ^= 0x40;
  std::ofstream(file, std::ios::binary) << bytes;
  // An interrupted save's leftover, cleaned when the directory is next opened.
  std::ofstream(newest->path + "/layers-00000-00003.pt.partial") << "half";
  ASSERT_EQ(launch_into(dir, 3, "--resume"), 0) << slurp(dir + "/log.txt");
  const std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("the file is corrupt or truncated; resuming from the newest intact "
                     "checkpoint instead"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("resuming from " + dir + "/checkpoints/step-00000001 (1 step done)"),
            std::string::npos)
      << log;
  EXPECT_FALSE(fs::exists(newest->path + "/layers-00000-00003.pt.partial"));
}

// Rewrites the first file entry of step 1's manifest as `name`, with the size and CRC-32
// of `content_of`, so only the name (or the content) is wrong.
void point_manifest_at(const std::string& dir, const std::string& name,
                       const std::string& content_of) {
  const std::string path = dir + "/checkpoints/step-00000001/checkpoint.json";
  nlohmann::json manifest = nlohmann::json::parse(slurp(path));
  manifest["files"][0]["name"] = name;
  manifest["files"][0]["bytes"] = fs::file_size(content_of);
  manifest["files"][0]["crc32"] = file_crc32(content_of);
  std::ofstream(path) << manifest.dump();
}

TEST(CheckpointDirectory, ManifestsNameOnlyCheckpointFilesOfTheirOwn) {
  const std::string dir = prepare("ckdir-manifest", kTinyGpt, kTwoStages);
  ASSERT_EQ(launch_into(dir, 1), 0) << slurp(dir + "/log.txt");
  point_manifest_at(dir, "../../plan.json", dir + "/plan.json");
  EXPECT_EQ(rank0_into(dir, "--resume"), 2);
  std::string log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("file names inside the checkpoint's directory, got '../../plan.json'"),
            std::string::npos)
      << log;
  // The right size and CRC-32, but not a checkpoint.
  fs::copy_file(dir + "/plan.json", dir + "/checkpoints/step-00000001/notes.pt");
  point_manifest_at(dir, "notes.pt", dir + "/plan.json");
  EXPECT_EQ(rank0_into(dir, "--resume"), 2);
  log = slurp(dir + "/log.txt");
  EXPECT_NE(log.find("notes.pt: a checkpoint file written by hyperpipe"), std::string::npos) << log;
}

}  // namespace
}  // namespace hyperpipe::runtime
