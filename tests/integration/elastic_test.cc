// `hyperpipe launch --elastic`: a worker killed outright mid-run, and the run goes on with a
// new plan on the devices left from its last complete checkpoint, as a run planned for
// them from that checkpoint would; the limits (restarts, devices, memory) end it with a
// message that says which.
#include <gtest/gtest.h>
#include <spawn.h>

#include <algorithm>
#include <set>

#include "hyperpipe/common/crc32.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/statistics.h"
#include "hyperpipe/cost/cost_options.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/runtime/checkpoint.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;
namespace fs = std::filesystem;

constexpr double kRunSeconds = 180;  // the longest an elastic test run may take

std::string elastic_options(const std::string& dir, int steps, const std::string& extra = "",
                            int checkpoint_every = 2) {
  // --force: the hand-written first plan is over the small clusters' memory (they shape
  // the plans made after a loss); launch would refuse it.
  return fmt::format(
      "--elastic --force --data {} --steps {} --timeout 10 --checkpoint-dir {}/checkpoints "
      "--checkpoint-every {} --metrics {}/metrics.jsonl {} {}",
      kCorpus, steps, dir, checkpoint_every, dir, device_options(), extra);
}

// Kills rank `victim` of the launcher's run with SIGKILL once a checkpoint is complete.
void kill_rank_once_checkpointed(pid_t launcher, const std::string& dir, int victim) {
  EXPECT_TRUE(wait_for_checkpoint(dir + "/checkpoints", 60));
  bool killed = false;
  for (const pid_t child : children_of(launcher)) {
    if (rank_of(child) == victim) killed = kill(child, SIGKILL) == 0;
  }
  EXPECT_TRUE(killed) << "no rank " << victim << " among the launcher's processes";
}

// The launcher's exit code (-1 if it outlived kRunSeconds and was killed).
int end_of(pid_t launcher) {
  const int code = wait_for(launcher, kRunSeconds);
  if (code < 0) {
    kill(launcher, SIGKILL);
    waitpid(launcher, nullptr, 0);
  }
  return code;
}

// Kills rank `victim` once a checkpoint is complete; the launcher's exit code.
int kill_once_checkpointed(pid_t launcher, const std::string& dir, int victim) {
  kill_rank_once_checkpointed(launcher, dir, victim);
  return end_of(launcher);
}

// Every checkpoint whose manifest exists holds the files it names, CRC-32s matching.
void expect_every_checkpoint_intact(const std::string& dir) {
  int complete = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto manifest_path = entry.path() / kCheckpointManifest;
    if (!fs::exists(manifest_path)) continue;
    ++complete;
    const auto manifest = nlohmann::json::parse(slurp(manifest_path.string()));
    for (const auto& file : manifest["files"]) {
      const auto path = entry.path() / file["name"].get<std::string>();
      EXPECT_EQ(file_crc32(path.string()), file["crc32"].get<uint32_t>()) << path;
    }
  }
  EXPECT_GT(complete, 0);
}

// The run in `dir` from the checkpoint of `resumed` steps on, against a run of `plan` from
// a copy of that checkpoint in a directory of its own: the same losses and the same
// final weights, bit for bit.
void expect_as_run_from_checkpoint(const std::string& dir, const std::string& plan, int64_t resumed,
                                   int steps) {
  const auto losses = metric_losses(dir);
  const std::string reference = dir + "-reference";
  fs::remove_all(reference);
  const std::string step = fmt::format("step-{:08d}", resumed);
  fs::create_directories(reference + "/checkpoints");
  fs::copy(dir + "/checkpoints/" + step, reference + "/checkpoints/" + step);
  ASSERT_EQ(run_command(fmt::format("{} launch --plan {} --data {} --steps {} --timeout 10 "
                                    "--checkpoint-dir {}/checkpoints --resume --metrics "
                                    "{}/metrics.jsonl {} > {}/log.txt 2>&1",
                                    kBinary, plan, kCorpus, steps, reference, reference,
                                    device_options(), reference)),
            0)
      << slurp(reference + "/log.txt");
  const auto reference_losses = metric_losses(reference);
  ASSERT_EQ(reference_losses.size(), static_cast<size_t>(steps - resumed));
  for (int64_t s = resumed; s < steps; ++s) {
    EXPECT_EQ(losses[static_cast<size_t>(s)], reference_losses[static_cast<size_t>(s - resumed)])
        << "step " << s;
  }
  const auto weights = checkpoint_weights(dir);
  const auto reference_weights = checkpoint_weights(reference);
  ASSERT_EQ(weights.size(), reference_weights.size());
  ASSERT_FALSE(weights.empty());
  for (const auto& [key, value] : reference_weights) {
    EXPECT_TRUE(torch::equal(weights.at(key), value)) << key;
  }
}

// The devices a plan file runs on.
std::set<int> devices_of(const std::string& plan_path) {
  const auto devices = plan::devices_in_rank_order(plan::load_plan(plan_path));
  return {devices.begin(), devices.end()};
}

// Three GPUs whose memory is so small that the test model needs more than one of them:
// `memory` each for the plan to use (their reserved memory a token 1 KiB; the file's
// memory has the default margin on top), and `type_fields` changed from the A100's
// datasheet.
std::string small_cluster(const std::string& dir, const std::string& usable,
                          const std::string& type_fields = "") {
  const std::string path = dir + "/small.yaml";
  const std::string memory =
      fmt::format("{:.0f} B", *parse_bytes(usable) / (1 - cost::kDefaultMemoryMargin));
  std::ofstream(path) << fmt::format(R"(name: small-memory
gpu_types:
  - {{name: A100-80GB, reserved_memory: 1 KiB{1}}}
nodes:
  - {{name: n0, gpu: A100-80GB, count: 1, memory: {0}}}
  - {{name: n1, gpu: A100-80GB, count: 1, memory: {0}}}
  - {{name: n2, gpu: A100-80GB, count: 1, memory: {0}}}
links: {{intra_island: {{bandwidth: 10 GB/s, latency: 20 us}}}}
)",
                                     memory, type_fields);
  return path;
}

// small_cluster's GPUs as slow as a core of this host (50 GFLOP/s, 20 GB/s): on the
// datasheet A100 the test model's steps are so short that a third stage would gain
// nothing, so a device that comes back would not be taken.
std::string slow_small_cluster(const std::string& dir) {
  return small_cluster(dir, "600 KiB",
                       ", peak: {fp32: 0.05, tf32: 0.05, fp16: 0.05, bf16: 0.05}, "
                       "memory_bandwidth: 20 GB/s");
}

// The model needs two of these GPUs (1.03 MiB of weights, gradients and Adam state): the
// new plan must use both devices left.
TEST(Elastic, AKilledWorkersRunGoesOnWithANewPlanAsOnePlannedForTheDevicesLeft) {
  const std::string dir = prepare("elastic-kill", kTinyGpt, kThreeStages);
  constexpr int kSteps = 10;
  const std::string cluster = small_cluster(dir, "600 KiB");
  const pid_t launcher =
      start_launcher(dir, elastic_options(dir, kSteps, "--cluster " + cluster), dir + "/log.txt");
  const int code = kill_once_checkpointed(launcher, dir, 1);
  const std::string log = slurp(dir + "/log.txt");
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("rank 1 (device 1, A100-80GB) was lost"), std::string::npos) << log;

  // One recovery: device 1 lost, a plan on devices 0 and 2 alone, resumed from a
  // checkpoint and timed to its first step.
  const auto recoveries =
      nlohmann::json::parse(slurp(dir + "/checkpoints/elastic/recovery.json"))["recoveries"];
  ASSERT_EQ(recoveries.size(), 1u) << log;
  const auto& recovery = recoveries[0];
  EXPECT_EQ(recovery["lost"]["device"], 1);
  EXPECT_EQ(recovery["devices_left"], nlohmann::json({0, 2}));
  const int64_t resumed = recovery["steps_done"];
  EXPECT_GE(resumed, 2);
  EXPECT_EQ(resumed % 2, 0);
  EXPECT_GT(recovery["seconds"]["total"].get<double>(), 0);
  const std::string new_plan = recovery["plan"];
  EXPECT_EQ(devices_of(new_plan), (std::set<int>{0, 2}));
  const std::string replanned_cluster = plan::load_plan(new_plan).cluster;
  EXPECT_TRUE(fs::equivalent(replanned_cluster, cluster)) << replanned_cluster;

  // The step count goes on: every step once in the metrics, none lost or repeated.
  ASSERT_EQ(metric_losses(dir).size(), static_cast<size_t>(kSteps)) << log;
  expect_every_checkpoint_intact(dir + "/checkpoints");
  expect_as_run_from_checkpoint(dir, new_plan, resumed, kSteps);
}

// Waits up to `seconds` for the elastic run's recovery number `index` to reach its first
// step; whether it did.
bool wait_for_recovery(const std::string& dir, size_t index, double seconds) {
  const std::string path = dir + "/checkpoints/elastic/recovery.json";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto recoveries = nlohmann::json::parse(slurp(path), nullptr, false);
    if (!recoveries.is_discarded() && recoveries["recoveries"].size() > index &&
        recoveries["recoveries"][index].contains("seconds")) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Device 1 is lost (killed), the run goes on with devices 0 and 2, and device 1 is offered
// back (hyperpipe join): after the next checkpoint the run plans again over all three and
// goes on with them, as a run of that plan from that checkpoint would.
TEST(Elastic, ADeviceThatJoinsIsUsedAfterTheNextCheckpoint) {
  const std::string dir = prepare("elastic-join", kTinyGpt, kThreeStages);
  // Steps take about 10 ms here: enough of them that the offers are made and answered
  // well before the run's last checkpoint, on a loaded host too.
  constexpr int kSteps = 300;
  constexpr int kCheckpointEvery = 10;
  const std::string cluster = slow_small_cluster(dir);
  const pid_t launcher =
      start_launcher(dir, elastic_options(dir, kSteps, "--cluster " + cluster, kCheckpointEvery),
                     dir + "/log.txt");
  kill_rank_once_checkpointed(launcher, dir, 1);
  ASSERT_TRUE(wait_for_recovery(dir, 0, 60)) << slurp(dir + "/log.txt");
  const auto join = [&](const std::string& devices, const std::string& output) {
    return run_command(fmt::format("{} join --checkpoint-dir {}/checkpoints {} > {} 2>&1", kBinary,
                                   dir, devices, output));
  };
  // Refused: a device the run has, and one its cluster does not.
  EXPECT_EQ(join("--device 0", dir + "/join-0.txt"), 2);
  EXPECT_NE(slurp(dir + "/join-0.txt").find("device 0: refused: device 0 is in the run already"),
            std::string::npos)
      << slurp(dir + "/join-0.txt");
  EXPECT_EQ(join("--device 3", dir + "/join-3.txt"), 2);
  EXPECT_NE(slurp(dir + "/join-3.txt").find("there is no device 3"), std::string::npos)
      << slurp(dir + "/join-3.txt");
  ASSERT_EQ(join("--device 1", dir + "/join-1.txt"), 0) << slurp(dir + "/join-1.txt");
  EXPECT_NE(slurp(dir + "/join-1.txt")
                .find("device 1: taken: the run plans again with it after its next checkpoint"),
            std::string::npos)
      << slurp(dir + "/join-1.txt");
  const int code = end_of(launcher);
  const std::string log = slurp(dir + "/log.txt");
  ASSERT_EQ(code, 0) << log;

  // A loss, then a join: the last plan runs on all three devices again, from a
  // checkpoint after the loss's.
  const auto recoveries =
      nlohmann::json::parse(slurp(dir + "/checkpoints/elastic/recovery.json"))["recoveries"];
  ASSERT_EQ(recoveries.size(), 2u) << log;
  EXPECT_EQ(recoveries[0]["kind"], "loss");
  EXPECT_EQ(devices_of(recoveries[0]["plan"]), (std::set<int>{0, 2}));
  const auto& joined = recoveries[1];
  EXPECT_EQ(joined["kind"], "join");
  EXPECT_EQ(joined["joined"], nlohmann::json({1}));
  EXPECT_EQ(devices_of(joined["plan"]), (std::set<int>{0, 1, 2}));
  const int64_t resumed = joined["steps_done"];
  EXPECT_GT(resumed, recoveries[0]["steps_done"].get<int64_t>());
  EXPECT_EQ(resumed % kCheckpointEvery, 0);
  EXPECT_LT(joined["predicted_iteration_s"]["after"].get<double>(),
            joined["predicted_iteration_s"]["before"].get<double>());

  ASSERT_EQ(metric_losses(dir).size(), static_cast<size_t>(kSteps)) << log;
  expect_every_checkpoint_intact(dir + "/checkpoints");
  expect_as_run_from_checkpoint(dir, joined["plan"], resumed, kSteps);

  // No launcher watches the directory now: an offer says so, and leaves no request behind.
  EXPECT_EQ(join("--device 1 --wait 0.5", dir + "/join-late.txt"), 1);
  EXPECT_NE(slurp(dir + "/join-late.txt").find("no elastic launcher answered in 0.5 s"),
            std::string::npos)
      << slurp(dir + "/join-late.txt");
  EXPECT_TRUE(fs::is_empty(dir + "/checkpoints/elastic/joins"));
}

// The devices in `record`'s "devices" field (a loss's lost devices).
std::vector<int> lost_devices(const nlohmann::json& record) {
  return record["lost"]["devices"].get<std::vector<int>>();
}

// An elastic run across two "hosts" on 127.0.0.1: the leader has devices 0 and 1, an agent
// device 2. The agent's host dies (agent and rank killed outright): the run goes on with
// devices 0 and 1; the agent comes back (a new process): after the next checkpoint the
// run plans over all three again, and ends as a run of that plan from that checkpoint.
TEST(Elastic, AnAgentsHostThatDiesIsPlannedAroundAndUsedAgainWhenItComesBack) {
  const std::string dir = prepare("elastic-hosts", kTinyGpt, kThreeStages);
  constexpr int kSteps = 300;
  constexpr int kCheckpointEvery = 10;
  const std::string cluster = slow_small_cluster(dir);
  const std::string token = "HYPERPIPE_JOB_TOKEN=one-secret-for-every-host";
  const int port = launch::free_port();
  const std::string agent_arguments = fmt::format(
      "agent --checkpoint-dir {}/checkpoints --devices 2 --name host-b --heartbeat-timeout 2 "
      "--wait 60",
      dir);
  const pid_t first_agent = start_hyperpipe(token, agent_arguments, dir + "/agent-1.txt");
  const pid_t leader = start_launcher(
      dir,
      elastic_options(dir, kSteps,
                      fmt::format("--cluster {} --devices-here 0,1 --master-addr 127.0.0.1 "
                                  "--port {} --heartbeat-timeout 2 --host-wait 60",
                                  cluster, port),
                      kCheckpointEvery),
      dir + "/log.txt", token);
  // The host dies: its agent and its rank at once.
  ASSERT_TRUE(wait_for_checkpoint(dir + "/checkpoints", 60)) << slurp(dir + "/log.txt");
  const auto ranks = children_of(first_agent);
  ASSERT_EQ(ranks.size(), 1u) << slurp(dir + "/agent-1.txt");
  EXPECT_EQ(rank_of(ranks[0]), 2);
  kill(first_agent, SIGKILL);
  kill(ranks[0], SIGKILL);
  EXPECT_EQ(wait_for(first_agent, 10), 128 + SIGKILL);
  ASSERT_TRUE(wait_for_recovery(dir, 0, 60)) << slurp(dir + "/log.txt");

  const pid_t second_agent = start_hyperpipe(token, agent_arguments, dir + "/agent-2.txt");
  const int code = end_of(leader);
  const std::string log = slurp(dir + "/log.txt");
  ASSERT_EQ(code, 0) << log;
  EXPECT_EQ(wait_for(second_agent, 20), 0) << slurp(dir + "/agent-2.txt");
  EXPECT_NE(slurp(dir + "/agent-2.txt").find("the run finished"), std::string::npos)
      << slurp(dir + "/agent-2.txt");

  const auto recoveries =
      nlohmann::json::parse(slurp(dir + "/checkpoints/elastic/recovery.json"))["recoveries"];
  ASSERT_EQ(recoveries.size(), 2u) << log;
  EXPECT_EQ(recoveries[0]["kind"], "loss");
  EXPECT_EQ(recoveries[0]["lost"]["host"], "host-b");
  EXPECT_EQ(lost_devices(recoveries[0]), std::vector<int>{2});
  EXPECT_EQ(devices_of(recoveries[0]["plan"]), (std::set<int>{0, 1}));
  const auto& joined = recoveries[1];
  EXPECT_EQ(joined["kind"], "join");
  EXPECT_EQ(joined["joined"], nlohmann::json({2}));
  EXPECT_EQ(devices_of(joined["plan"]), (std::set<int>{0, 1, 2}));
  const int64_t resumed = joined["steps_done"];
  EXPECT_GT(resumed, recoveries[0]["steps_done"].get<int64_t>());
  EXPECT_EQ(resumed % kCheckpointEvery, 0);

  ASSERT_EQ(metric_losses(dir).size(), static_cast<size_t>(kSteps)) << log;
  expect_every_checkpoint_intact(dir + "/checkpoints");
  expect_as_run_from_checkpoint(dir, joined["plan"], resumed, kSteps);
}

// Rank 0 on an agent's host (so the run meets at the agent's address), and that rank
// alone killed: the agent reports it, the loss is blamed on its device rather than on the
// leader's ranks that failed on losing it, and the leader's devices go on alone.
TEST(Elastic, ARankKilledOnAnAgentsHostIsBlamedAndPlannedAround) {
  const std::string dir = prepare("elastic-agent-rank", kTinyGpt, kThreeStages);
  constexpr int kSteps = 10;
  const std::string cluster = small_cluster(dir, "600 KiB");
  const std::string token = "HYPERPIPE_JOB_TOKEN=one-secret-for-every-host";
  const pid_t agent =
      start_hyperpipe(token,
                      fmt::format("agent --checkpoint-dir {}/checkpoints --devices 0 --name host-a "
                                  "--address 127.0.0.1 --wait 60",
                                  dir),
                      dir + "/agent.txt");
  const pid_t leader = start_launcher(
      dir,
      elastic_options(
          dir, kSteps,
          fmt::format("--cluster {} --devices-here 1,2 --port {}", cluster, launch::free_port())),
      dir + "/log.txt", token);
  kill_rank_once_checkpointed(agent, dir, 0);
  const int code = end_of(leader);
  const std::string log = slurp(dir + "/log.txt");
  ASSERT_EQ(code, 0) << log << slurp(dir + "/agent.txt");
  EXPECT_NE(log.find("rank 0 (device 0, A100-80GB) was lost (exit code 137)"), std::string::npos)
      << log;
  // Its host lives on, its device not offered again: it waits out the run as a spare.
  EXPECT_EQ(wait_for(agent, 20), 0) << slurp(dir + "/agent.txt");

  const auto recoveries =
      nlohmann::json::parse(slurp(dir + "/checkpoints/elastic/recovery.json"))["recoveries"];
  ASSERT_EQ(recoveries.size(), 1u) << log;
  EXPECT_EQ(recoveries[0]["lost"]["host"], "host-a");
  EXPECT_EQ(recoveries[0]["lost"]["rank"], 0);
  EXPECT_EQ(lost_devices(recoveries[0]), std::vector<int>{0});
  EXPECT_EQ(devices_of(recoveries[0]["plan"]), (std::set<int>{1, 2}));
  ASSERT_EQ(metric_losses(dir).size(), static_cast<size_t>(kSteps)) << log;
  expect_every_checkpoint_intact(dir + "/checkpoints");
  expect_as_run_from_checkpoint(dir, recoveries[0]["plan"], recoveries[0]["steps_done"], kSteps);
}

// The step of a checkpoint directory whose save has begun (rank 0 made it) and not ended
// (no manifest), if there is one.
std::optional<int64_t> save_in_progress(const std::string& dir) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || fs::exists(entry.path() / kCheckpointManifest)) continue;
    return std::stoll(name.substr(5));
  }
  return std::nullopt;
}

// Rank 0 writes the manifest last: killed mid-save, its step never completes, and the
// restart goes back to the checkpoint before it (never a half-written one), then saves that
// step again, whole.
TEST(Elastic, AWorkerKilledWhileSavingLeavesThePreviousCheckpointToResumeFrom) {
  const std::string dir = prepare("elastic-kill-saving", kTinyGpt, kThreeStages);
  constexpr int kSteps = 400;
  const std::string cluster = small_cluster(dir, "600 KiB");
  const pid_t launcher = start_launcher(
      dir, elastic_options(dir, kSteps, "--cluster " + cluster, /*checkpoint_every=*/1),
      dir + "/log.txt");
  ASSERT_TRUE(wait_for_checkpoint(dir + "/checkpoints", 60));
  pid_t rank0 = -1;
  for (const pid_t child : children_of(launcher)) {
    if (rank_of(child) == 0) rank0 = child;
  }
  ASSERT_GT(rank0, 0);
  std::optional<int64_t> interrupted;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!interrupted && std::chrono::steady_clock::now() < deadline) {
    if (const auto step = save_in_progress(dir + "/checkpoints")) {
      kill(rank0, SIGKILL);
      // Rank 0 alone writes manifests: if none is there now, none will be for this attempt.
      if (!fs::exists(
              fmt::format("{}/checkpoints/step-{:08d}/{}", dir, *step, kCheckpointManifest))) {
        interrupted = step;
      }
      break;
    }
  }
  const int code = wait_for(launcher, kRunSeconds);
  if (code < 0) kill(launcher, SIGKILL);
  const std::string log = slurp(dir + "/log.txt");
  if (!interrupted) GTEST_SKIP() << "no save caught in progress: the race was lost";
  ASSERT_EQ(code, 0) << log;
  const auto recoveries =
      nlohmann::json::parse(slurp(dir + "/checkpoints/elastic/recovery.json"))["recoveries"];
  ASSERT_EQ(recoveries.size(), 1u) << log;
  EXPECT_LT(recoveries[0]["steps_done"].get<int64_t>(), *interrupted) << log;
  EXPECT_EQ(metric_losses(dir).size(), static_cast<size_t>(kSteps));
  // Saved again by the restarted run: complete, and every checkpoint intact.
  EXPECT_TRUE(fs::exists(
      fmt::format("{}/checkpoints/step-{:08d}/{}", dir, *interrupted, kCheckpointManifest)));
  expect_every_checkpoint_intact(dir + "/checkpoints");
}

// The shipped tiny-gpt over the A100, V100 and T4 stand-ins of cpu-emulated, profiled
// first; once step 2 is checkpointed, the A100 stand-in drops to a tenth of its speed
// (emulated throttling). --adapt sees it, re-plans at the measured speeds and switches;
// the new plan's steps are faster than the throttled old plan's.
// The share of an iteration's work (layers × samples, over every pipeline) that `device`
// does, each stage's work split evenly over its devices.
double work_share_of(const plan::Plan& plan, int device) {
  double mine = 0;
  double all = 0;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& pipeline = plan.pipeline(p);
    for (const auto& stage : pipeline.stages) {
      const double work = static_cast<double>(stage.end_layer - stage.first_layer) *
                          static_cast<double>(pipeline.samples());
      all += work;
      if (std::find(stage.devices.begin(), stage.devices.end(), device) != stage.devices.end()) {
        mine += work / static_cast<double>(stage.devices.size());
      }
    }
  }
  return mine / all;
}

TEST(Elastic, AThrottledDeviceIsPlannedAroundWithAdapt) {
  const std::string dir = hyperpipe::testing::temp_path("elastic-adapt");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string examples = HYPERPIPE_EXAMPLES;
  ASSERT_EQ(run_command(fmt::format("{} profile --model {}/models/tiny-gpt.yaml --cluster "
                                    "cpu-emulated --micro-batch 4 --out {}/profiles.json > "
                                    "{}/profile.txt 2>&1",
                                    kBinary, examples, dir, dir)),
            0)
      << slurp(dir + "/profile.txt");
  std::ofstream(dir + "/speeds.txt") << "# device speed\n";
  constexpr int kSteps = 24;
  // Host noise moves a stand-in ±30% off its profile; the throttle takes it to 0.1.
  const std::string command = fmt::format(
      "exec {} launch --adapt --adapt-threshold 0.5 --adapt-steps 3 --plan "
      "{}/plans/tiny-gpt-3stage.json --data {} --steps {} --checkpoint-dir {}/checkpoints "
      "--checkpoint-every 2 --profiles {}/profiles.json --stand-in-speeds {}/speeds.txt "
      "--metrics {}/metrics.jsonl > {}/log.txt 2>&1",
      kBinary, examples, kCorpus, kSteps, dir, dir, dir, dir, dir);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t launcher = -1;
  ASSERT_EQ(posix_spawn(&launcher, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ),
            0);
  ASSERT_TRUE(wait_for_checkpoint(dir + "/checkpoints", 60));
  std::ofstream(dir + "/speeds.txt") << "0 0.1\n";
  const int code = wait_for(launcher, kRunSeconds);
  if (code < 0) kill(launcher, SIGKILL);
  const std::string log = slurp(dir + "/log.txt");
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("device 0 (A100-40GB) at 0."), std::string::npos) << log;
  // One switch, or more where a loaded host made a stand-in look slower than it was first
  // (the adapter then measures again on the new plan): each a switch, the last made for
  // device 0 well under half its speed.
  const auto transitions =
      nlohmann::json::parse(slurp(dir + "/checkpoints/elastic/recovery.json"))["recoveries"];
  ASSERT_GE(transitions.size(), 1u) << log;
  for (const auto& transition : transitions) EXPECT_EQ(transition["kind"], "switch");
  const auto& adapted = transitions.back();
  EXPECT_LT(adapted["speeds"]["0"].get<double>(), 0.5);
  const int64_t first_switch = transitions.front()["steps_done"];
  const int64_t last_switch = adapted["steps_done"];
  // The old plan throttled (the steps the first switch was decided on) against the last
  // plan (its first step, a warm-up, left out).
  const auto seconds = metric_values(dir, "seconds");
  ASSERT_EQ(seconds.size(), static_cast<size_t>(kSteps)) << log;
  ASSERT_GE(first_switch, 4) << log;
  ASSERT_LE(last_switch + 4, kSteps) << log;
  const std::vector<double> old_plan(seconds.begin() + first_switch - 3,
                                     seconds.begin() + first_switch);
  const std::vector<double> new_plan(seconds.begin() + last_switch + 1, seconds.end());
  EXPECT_LT(median(new_plan), median(old_plan)) << log;
  // The last plan keeps work off the throttled A100 stand-in: a smaller share of the
  // iteration's layer × sample work there than it had (fewer layers, or a smaller share of
  // the batch in a pipeline of its own: the planner may take either way).
  const plan::Plan first = plan::load_plan(examples + "/plans/tiny-gpt-3stage.json");
  const plan::Plan next = plan::load_plan(adapted["plan"].get<std::string>());
  EXPECT_LT(work_share_of(next, 0), work_share_of(first, 0)) << log;
}

// A loss the run does not survive: the launcher's options, the rank killed, the exit
// code (0: any but 0) and what the message must say.
struct EndingLoss {
  const char* name;
  const char* options;
  const char* cluster_memory;  // a small_cluster of GPUs this size, or nullptr: a100x8
  int victim;
  int code;
  std::vector<std::string> fragments;
};

void PrintTo(const EndingLoss& loss, std::ostream* os) {
  *os << loss.name;
}

class ElasticEnds : public ::testing::TestWithParam<EndingLoss> {};

TEST_P(ElasticEnds, SayingWhy) {
  const auto& c = GetParam();
  const std::string dir = prepare(std::string("elastic-") + c.name, kTinyGpt, kThreeStages);
  std::string options = c.options;
  if (c.cluster_memory) options += " --cluster " + small_cluster(dir, c.cluster_memory);
  const pid_t launcher =
      start_launcher(dir, elastic_options(dir, 100000, options), dir + "/log.txt");
  const int code = kill_once_checkpointed(launcher, dir, c.victim);
  const std::string log = slurp(dir + "/log.txt");
  if (c.code == 0) {
    EXPECT_GT(code, 0) << log;
  } else {
    EXPECT_EQ(code, c.code) << log;
  }
  for (const auto& fragment : c.fragments) {
    EXPECT_NE(log.find(fragment), std::string::npos) << fragment << "\n" << log;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Limits, ElasticEnds,
    ::testing::Values(EndingLoss{"max-restarts",
                                 "--max-restarts 0",
                                 nullptr,
                                 2,
                                 128 + SIGKILL,
                                 {"the 0 restarts --max-restarts allows are used up"}},
                      // Rank 0 also hosts the rendezvous store.
                      EndingLoss{"min-devices",
                                 "--min-devices 3",
                                 nullptr,
                                 0,
                                 0,
                                 {"2 devices left, fewer than --min-devices 3"}},
                      // Three GPUs of 500 KiB each hold the model; two do not.
                      EndingLoss{"no-fit",
                                 "",
                                 "500 KiB",
                                 1,
                                 2,
                                 {"a plan that fits the 2 devices left (0,2); none does",
                                  "1.03 MiB for weights, gradients and Adam state",
                                  "(27.3 KiB kept back on each)"}}),
    hyperpipe::testing::NameOfCase());

}  // namespace
}  // namespace hyperpipe::runtime
