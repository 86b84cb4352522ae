// The runtime's speed on this machine (issue: measured vs predicted, and overhead under
// 10%): a 2-stage 1F1B run of a small GPT (8 blocks, hidden 256) through `hyperpipe
// launch`, against
//   * the simulator's prediction from each stage's forward and backward timed in this
//     process on the same machine (a profile of the same layers), and
//   * pure compute: the simulator fed with the op times the run itself measured, which is
//     the iteration the schedule allows with no runtime cost at all; the measured
//     iteration over it, less one, is the runtime's overhead.
// Usage: runtime_bench [steps] (default 12; the first 2 are warm-up).
#include <fmt/format.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "hyperpipe/common/host_memory.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/layers.h"
#include "hyperpipe/runtime/optimizer.h"
#include "hyperpipe/runtime/stage_module.h"
#include "hyperpipe/runtime/timing.h"
#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"
#include "hyperpipe/sim/simulator.h"
#include "hyperpipe/trace/timeline_json.h"
#include "two_stage_gpt.h"

namespace {

using namespace hyperpipe;
using namespace hyperpipe::bench;
using runtime::median;
using runtime::seconds_since;

constexpr int kProfileRepeats = 15;

struct StageTimes {
  double forward = 0;
  double backward = 0;
  double optimizer = 0;
};

// Median forward, backward and optimizer step of layers [first, end) for one micro-batch.
StageTimes profile_stage(const model::Model& model, int first, int end) {
  runtime::StageModule stage(model, first, end, 0);
  auto adamw = runtime::make_optimizer(stage.parameters(), {});
  const int64_t seq = model.config().seq_len;
  std::vector<double> forward, backward, optimizer;
  for (int r = 0; r < kProfileRepeats + 3; ++r) {
    torch::Tensor input =
        first == 0 ? torch::randint(0, 256, {kMicroBatch, seq}, torch::kLong)
                   : torch::randn({kMicroBatch, seq, model.config().hidden}).requires_grad_(true);
    auto start = std::chrono::steady_clock::now();
    auto output = stage.forward(input);
    if (stage.holds_head()) {
      output = runtime::cross_entropy_sum(output,
                                          torch::randint(0, 256, {kMicroBatch, seq}, torch::kLong));
    }
    const double f = seconds_since(start);
    start = std::chrono::steady_clock::now();
    if (stage.holds_head()) {
      output.backward();
    } else {
      output.backward(torch::randn_like(output));
    }
    const double b = seconds_since(start);
    start = std::chrono::steady_clock::now();
    adamw->step();
    const double o = seconds_since(start);
    if (r >= 3) {
      forward.push_back(f);
      backward.push_back(b);
      optimizer.push_back(o);
    }
  }
  return {median(forward), median(backward), median(optimizer)};
}

// The simulated 1F1B iteration of two stages with these op times and free transfers.
double simulate(const std::vector<StageTimes>& stages) {
  sim::SimInput input;
  input.schedule = schedule::insert_communication(
      schedule::make_schedule(schedule::ScheduleKind::one_f_one_b, 2, kMicroBatches, 1, {}));
  for (const auto& s : stages) {
    sim::StageCost cost;
    cost.forward = s.forward;
    cost.backward_input = s.backward;
    cost.optimizer = s.optimizer;
    input.stages.push_back(cost);
  }
  input.activations.assign(1, {});
  input.gradients.assign(1, {});
  return sim::simulate(input).iteration_time;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 12;
  torch::set_num_threads(1);
  hyperpipe::keep_freed_memory();  // as the training processes do
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("hyperpipe-runtime-bench-{}", getpid());
  fs::create_directories(dir);
  write_two_stage_plan(dir);
  const model::Model model(model::read_model_yaml(YamlField::load_string(kModel, "bench")));

  // 1. The prediction from a profile of the same layers in this process.
  const std::vector<StageTimes> profiled{profile_stage(model, 0, kCut),
                                         profile_stage(model, kCut, model.num_layers())};
  const double predicted = simulate(profiled);

  // 2. The run.
  try {
    launch_two_stage_plan(dir, steps);
  } catch (const std::exception& error) {
    std::cerr << error.what() << '\n';
    return 1;
  }
  const double measured = median_step_seconds(dir);

  // 3. Pure compute: the simulator with the op times of the measured (last) step.
  std::ifstream timeline_file(dir / "timeline.json");
  const auto timeline =
      trace::timeline_from_json(nlohmann::json::parse(timeline_file), "timeline.json");
  std::vector<StageTimes> measured_ops(2);
  double measured_end = 0;
  for (size_t r = 0; r < 2; ++r) {
    std::map<std::string, std::vector<double>> by_op;
    for (const auto& i : timeline.tracks[r].compute) by_op[i.op].push_back(i.end - i.start);
    measured_ops[r] = {median(by_op["F"]), median(by_op["BW"]), median(by_op["optimizer"])};
    measured_end = std::max(measured_end, timeline.end_time());
  }
  const double ideal = simulate(measured_ops);

  std::cout << fmt::format(
      "2-stage 1F1B, {} micro-batches of {} × {} tokens, GPT 8 × 256 (median of {} steps)\n"
      "  profiled stage F/B: {:.2f}/{:.2f} ms and {:.2f}/{:.2f} ms\n"
      "  measured stage F/B: {:.2f}/{:.2f} ms and {:.2f}/{:.2f} ms (in the run)\n"
      "  predicted (profile + simulator): {:.1f} ms\n"
      "  measured iteration:              {:.1f} ms  (prediction error {:+.1f}%)\n"
      "  pure compute of the run's ops:   {:.1f} ms  (runtime overhead {:+.1f}%)\n",
      kMicroBatches, kMicroBatch, model.config().seq_len, steps - kWarmupSteps,
      1e3 * profiled[0].forward, 1e3 * profiled[0].backward, 1e3 * profiled[1].forward,
      1e3 * profiled[1].backward, 1e3 * measured_ops[0].forward, 1e3 * measured_ops[0].backward,
      1e3 * measured_ops[1].forward, 1e3 * measured_ops[1].backward, 1e3 * predicted,
      1e3 * measured, 100 * (predicted / measured - 1), 1e3 * ideal, 100 * (measured / ideal - 1));
  fs::remove_all(dir);
  return 0;
}
