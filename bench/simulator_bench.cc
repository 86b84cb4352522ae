// Simulation speed: a 1F1B iteration with 64 stages and 1024 micro-batches (issue target:
// at least 5 million simulated operations per second on one core), plus the schedule
// generator and validation on the same size.
#include <benchmark/benchmark.h>

#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"
#include "hyperpipe/sim/simulator.h"

namespace {

using namespace hyperpipe;

constexpr int kStages = 64;
constexpr int kMicroBatches = 1024;

sim::SimInput big_input(schedule::ScheduleKind kind) {
  sim::SimInput input;
  input.schedule =
      schedule::insert_communication(schedule::make_schedule(kind, kStages, kMicroBatches));
  // Uneven stage times and real transfer costs, so queues and waits happen.
  for (int s = 0; s < kStages; ++s) {
    sim::StageCost cost;
    cost.forward = 1e-3 * (1.0 + 0.1 * (s % 5));
    cost.backward_input = 1.1 * cost.forward;
    cost.backward_weight = 0.9 * cost.forward;
    cost.activation_bytes = 1e8;
    cost.allreduce = 5e-3;
    cost.optimizer = 1e-3;
    input.stages.push_back(cost);
  }
  input.activations.assign(kStages - 1, {2e-4, 5e-6, -1});
  input.gradients.assign(kStages - 1, {2e-4, 5e-6, -1});
  return input;
}

void BM_Simulate(benchmark::State& state, schedule::ScheduleKind kind) {
  const sim::SimInput input = big_input(kind);
  size_t ops = 0;
  for (auto _ : state) {
    const sim::SimOutput out = sim::simulate(input);
    ops = out.simulated_ops;
    benchmark::DoNotOptimize(out.iteration_time);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ops));
  state.counters["ops"] = static_cast<double>(ops);
}
BENCHMARK_CAPTURE(BM_Simulate, 1f1b_64x1024, schedule::ScheduleKind::one_f_one_b)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Simulate, zb_h1_64x1024, schedule::ScheduleKind::zb_h1)
    ->Unit(benchmark::kMillisecond);

void BM_GenerateAndValidate(benchmark::State& state) {
  for (auto _ : state) {
    const auto s = schedule::insert_communication(schedule::one_f_one_b(kStages, kMicroBatches));
    benchmark::DoNotOptimize(schedule::validate(s));
  }
}
BENCHMARK(BM_GenerateAndValidate)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
