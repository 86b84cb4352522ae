#include "hyperpipe/plan/framework.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "hyperpipe/common/error.h"
#include "hyperpipe/plan/plan.h"

namespace hyperpipe::plan {
namespace {

using schedule::ScheduleKind;

constexpr std::array kNames{"hyperpipe", "megatron", "deepspeed", "torchtitan"};

// PyTorch pipelining's host seconds per action (t[3] below says where they come from).
constexpr double kTorchGpipeHostSeconds = 430e-6;
constexpr double kTorch1f1bHostSeconds = 230e-6;
constexpr double kTorchInterleavedHostSeconds = 630e-6;

const std::array<FrameworkTraits, 4>& all_traits() {
  static const std::array<FrameworkTraits, 4> table = [] {
    std::array<FrameworkTraits, 4> t{};
    // HyperPipe's own runtime: every plan of the planner's space (runtime/executor.h).
    t[0].framework = Framework::hyperpipe;
    t[0].display_name = "HyperPipe";
    t[0].version = "this build";
    t[0].schedules = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved,
                      ScheduleKind::zb_h1, ScheduleKind::hetero_1f1b};
    // Its ZeRO-1 (runtime/sharded_optimizer.h) all-reduces the gradients whole.
    t[0].shards_optimizer = true;
    t[0].reduce_scatters_gradients = false;
    // Megatron-LM (core_r0.13): megatron/core/pipeline_parallel/schedules.py runs 1F1B
    // (forward_backward_pipelining_without_interleaving) and interleaved 1F1B
    // (--num-layers-per-virtual-pipeline-stage); its 1F1B exchanges through
    // p2p_communication.send_forward_recv_backward and friends, which wait for the
    // transfer before the next compute; --overlap-p2p-comm, for the interleaved schedule
    // only, posts those beside the next chunk's compute (an exported plan sets it).
    // --overlap-grad-reduce sums each bucket during the backward. One
    // --tensor-model-parallel-size and one data-parallel size for the whole model (the
    // rank grid of parallel_state.initialize_model_parallel); one --recompute-granularity.
    // Uneven layer splits: --pipeline-model-parallel-layout. --use-distributed-optimizer
    // shards the optimizer state over dp (docs/source/distrib_optimizer.md).
    t[1].framework = Framework::megatron;
    t[1].display_name = "Megatron-LM";
    t[1].version = "core_r0.13";
    t[1].blocking_p2p = true;
    t[1].interleaved_p2p_overlapped = true;
    t[1].schedules = {ScheduleKind::one_f_one_b, ScheduleKind::interleaved};
    t[1].any_warmup = false;
    t[1].uniform_shape = true;
    t[1].uniform_recompute = true;
    t[1].replicas = false;
    t[1].shards_optimizer = true;
    // DeepSpeed (0.16): deepspeed/runtime/pipe/schedule.py's TrainSchedule is its only
    // training schedule (1F1B order); deepspeed/runtime/pipe/p2p.py sends and receives
    // with blocking dist.send / dist.recv; the engine's ReduceGrads instruction sums the
    // gradients after the last micro-batch's backward. One grid of pipe × data × model
    // parallel ranks (deepspeed/runtime/pipe/topology.py); PipelineModule's
    // activation_checkpoint_interval recomputes whole layers, the same on every stage.
    // ZeRO stage 1 works with its pipeline (stages 2 and 3 do not: the engine asserts it).
    t[2].framework = Framework::deepspeed;
    t[2].display_name = "DeepSpeed";
    t[2].version = "0.16";
    t[2].blocking_p2p = true;
    t[2].overlapped_grad_reduce = false;
    t[2].schedules = {ScheduleKind::one_f_one_b};
    t[2].any_warmup = false;
    t[2].uniform_shape = true;
    t[2].uniform_recompute = true;
    t[2].selective_recompute = false;
    t[2].replicas = false;
    t[2].shards_optimizer = true;
    // torchtitan (0.2.2, on torch.distributed.pipelining): schedules GPipe,
    // 1F1B, Interleaved1F1B and others of its own (ZBVZeroBubble is not ZB-H1's order);
    // sends posted with batch_isend_irecv beside compute; FSDP reduce-scatters gradients
    // during the backward. One mesh of pp × dp × tp (torchtitan/distributed/
    // parallel_dims.py); one activation_checkpoint.mode. Its FSDP (data_parallel_shard_degree)
    // shards the optimizer state, with the weights and gradients (only the optimizer's share
    // is costed so far); data_parallel_replicate_degree alone does not.
    t[3].framework = Framework::torchtitan;
    t[3].display_name = "torchtitan";
    // The last release read from a TOML file (--job.config_file); 0.3 builds its settings
    // in Python (config_registry) and takes the same fields as command-line overrides.
    t[3].version = "0.2.2";
    // Its multi-stage schedules need two or more stages per rank (distributed/
    // pipeline_parallel.py), so InterleavedZeroBubble is no ZB-H1, which has one.
    t[3].schedules = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved};
    // torch.distributed.pipelining's host time per action on a CPU stand-in, measured on
    // this project's reference host (2-core Xeon VM, Python 3.11, PyTorch 2.15) with
    // bench/pipelining/torch_host_time.py: stages that compute nothing, the median over 3
    // runs × 2 ranks. The schedules differ: GPipe posts each exchange alone, 1F1B fuses a
    // send with the next receive, the interleaved schedule interprets an action list.
    t[3].host_seconds_per_action = {{ScheduleKind::gpipe, kTorchGpipeHostSeconds},
                                    {ScheduleKind::one_f_one_b, kTorch1f1bHostSeconds},
                                    {ScheduleKind::interleaved, kTorchInterleavedHostSeconds}};
    t[3].any_warmup = false;
    t[3].uniform_shape = true;
    t[3].uniform_recompute = true;
    t[3].replicas = false;
    t[3].shards_optimizer = true;
    return t;
  }();
  return table;
}

}  // namespace

std::string_view to_string(Framework framework) {
  return kNames.at(static_cast<size_t>(framework));
}

std::optional<Framework> parse_framework(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<Framework>(i);
  }
  return std::nullopt;
}

std::vector<std::string> framework_names() {
  return {kNames.begin(), kNames.end()};
}

const FrameworkTraits& traits(Framework framework) {
  return all_traits().at(static_cast<size_t>(framework));
}

double host_seconds_per_action(const FrameworkTraits& traits, schedule::ScheduleKind kind) {
  const auto found = traits.host_seconds_per_action.find(kind);
  return found == traits.host_seconds_per_action.end() ? 0.0 : found->second;
}

void check_runs_here(const Plan& plan, const std::string& source) {
  if (const auto refused = refusal(plan, Framework::hyperpipe)) {
    throw InputError(
        source, refused->field,
        fmt::format("expected a plan HyperPipe's runtime can run ({})", refused->reason));
  }
}

std::string schedules_text(const FrameworkTraits& traits) {
  std::vector<std::string> names;
  for (auto kind : traits.schedules) names.emplace_back(schedule::to_string(kind));
  return fmt::format("{}", fmt::join(names, ", "));
}

bool blocks_on_p2p(const Plan& plan) {
  const FrameworkTraits& t = traits(plan.runtime);
  return t.blocking_p2p &&
         !(t.interleaved_p2p_overlapped && plan.schedule == schedule::ScheduleKind::interleaved);
}

std::optional<Refusal> refusal(const Plan& plan, Framework framework) {
  const FrameworkTraits& t = traits(framework);
  const std::string who(t.display_name);
  if (!t.replicas && !plan.replicas.empty()) {
    return Refusal{"replicas", fmt::format("{} runs one pipeline shape; this plan has {} pipelines "
                                           "of different composition",
                                           who, plan.pipeline_count())};
  }
  if (std::find(t.schedules.begin(), t.schedules.end(), plan.schedule) == t.schedules.end()) {
    return Refusal{"schedule", fmt::format("{} runs {}, not {}", who, schedules_text(t),
                                           schedule::to_string(plan.schedule))};
  }
  if (!t.any_warmup && !plan.warmup.empty()) {
    return Refusal{"schedule.warmup", fmt::format("{} sets no warm-up depth per stage", who)};
  }
  if (!t.overlapped_grad_reduce && plan.overlap_allreduce) {
    return Refusal{"overlap_allreduce",
                   fmt::format("{} sums the gradients after the pipeline's last backward", who)};
  }
  if (plan.shard_optimizer && !t.shards_optimizer) {
    return Refusal{
        "shard_optimizer",
        fmt::format("{} keeps the whole optimizer state on every data-parallel rank", who)};
  }
  const auto& stages = plan.stages;
  if (!t.selective_recompute && !stages.empty() &&
      stages.front().recompute == model::Recompute::selective) {
    return Refusal{"stages[0].recompute",
                   fmt::format("{} recomputes whole layers, not selectively", who)};
  }
  for (size_t s = 0; s < stages.size(); ++s) {
    const auto& first = stages.front();
    if (t.uniform_shape && (stages[s].dp != first.dp || stages[s].tp != first.tp)) {
      return Refusal{fmt::format("stages[{}]", s),
                     fmt::format("{} uses one data- and one tensor-parallel size for every stage; "
                                 "stage 0 has dp {} × tp {}, stage {} dp {} × tp {}",
                                 who, first.dp, first.tp, s, stages[s].dp, stages[s].tp)};
    }
    if (t.uniform_recompute && stages[s].recompute != first.recompute) {
      return Refusal{
          fmt::format("stages[{}].recompute", s),
          fmt::format("{} recomputes alike on every stage; stage 0 has {}, stage {} {}", who,
                      model::to_string(first.recompute), s, model::to_string(stages[s].recompute))};
    }
  }
  return std::nullopt;
}

}  // namespace hyperpipe::plan
