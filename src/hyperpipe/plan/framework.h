// The training frameworks a plan may be meant for, and what tells them apart for planning:
// how their pipelines exchange activations, which schedules and plan shapes they can
// express. HyperPipe's own runtime runs every plan; the others only some, each fact named
// with its source beside it (framework.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::plan {

struct Plan;

enum class Framework { hyperpipe, megatron, deepspeed, torchtitan };

// "hyperpipe", "megatron", "deepspeed", "torchtitan".
std::string_view to_string(Framework framework);
std::optional<Framework> parse_framework(std::string_view name);
std::vector<std::string> framework_names();

struct FrameworkTraits {
  Framework framework = Framework::hyperpipe;
  std::string_view display_name;  // "Megatron-LM"
  std::string_view version;       // the release these facts were read from
  // Its 1F1B exchanges block the compute stream with send/receive pairs with the
  // neighbour (sim::P2pMode::blocking) instead of posting them beside compute.
  bool blocking_p2p = false;
  // Except under the interleaved schedule, whose exchanges it posts beside compute.
  bool interleaved_p2p_overlapped = false;
  // It can sum a chunk's gradients over dp while the backward goes on.
  bool overlapped_grad_reduce = true;
  std::vector<schedule::ScheduleKind> schedules;  // those it runs
  bool any_warmup = true;                         // per-stage warm-up depths (hetero-1F1B)
  bool uniform_shape = false;                     // one dp and one tp for every stage
  // One recomputation setting for every stage (a flag of the whole run).
  bool uniform_recompute = false;
  bool selective_recompute = true;  // recomputes attention alone (else whole layers)
  bool replicas = true;             // pipelines of different composition side by side
  // Optimizer state sharded over the dp ranks (ZeRO stage 1 or its equivalent).
  bool shards_optimizer = false;
  // Sharded, it reduce-scatters the gradients (else all-reduces them whole and each rank
  // steps its share: cost::CostOptions::reduce_scatter_gradients).
  bool reduce_scatters_gradients = true;
  // The runtime's own host time per compute action (one stage's forward, backward or
  // weight-gradient pass of one micro-batch), by schedule: building and posting its
  // exchanges, keeping the micro-batch's state, entering autograd. On a CPU stand-in the
  // thread that computes spends it too, so it adds to every action there
  // (sim/plan_simulation.cc); a GPU's host queues kernels ahead of the device, which hides
  // it behind any layer longer than it. None listed: none modelled.
  std::map<schedule::ScheduleKind, double> host_seconds_per_action;
};

// `traits`' host time per action under `kind`; 0 where none is modelled.
double host_seconds_per_action(const FrameworkTraits& traits, schedule::ScheduleKind kind);

const FrameworkTraits& traits(Framework framework);

// The schedules a framework runs: "1f1b, interleaved".
std::string schedules_text(const FrameworkTraits& traits);

// Whether the plan's runtime blocks compute on its point-to-point exchanges, under the
// plan's schedule.
bool blocks_on_p2p(const Plan& plan);

// Why `framework` cannot run `plan`: the plan field at fault and the reason; nullopt when
// it can.
struct Refusal {
  std::string field;
  std::string reason;
};
std::optional<Refusal> refusal(const Plan& plan, Framework framework);

// Throws InputError naming `source` (the plan file) and the field when HyperPipe's own
// runtime cannot run the plan, whatever framework it was planned for (a sharded optimizer
// planned for Megatron-LM, say).
void check_runs_here(const Plan& plan, const std::string& source);

}  // namespace hyperpipe::plan
