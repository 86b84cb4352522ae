// One step of a pipeline stage's work: compute (F, B, W, BW), point-to-point
// communication, or the iteration's end (the epilogue: gradient sums, the global norm, the
// optimizer step). A schedule is nothing but per-stage lists of these.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace hyperpipe::schedule {

enum class OpKind {
  forward,          // F
  backward_input,   // B: gradient with respect to the input (on the critical path)
  backward_weight,  // W: gradient with respect to the weights (deferrable)
  backward,         // BW: B and W as one op
  send_forward,     // activation to the next stage
  recv_forward,     // activation from the previous stage
  send_backward,    // gradient to the previous stage
  recv_backward,    // gradient from the next stage
  // The epilogue (schedule/epilogue.h):
  all_reduce,      // AR: a chunk's gradients summed over its stage's data-parallel group
  sync_replicas,   // RS: the gradients summed across the plan's pipelines side by side
  tied_embedding,  // TE: the first stage's embedding and the last stage's tied head summed
  global_norm,     // GN: the gradients' global norm, summed over every rank (for clipping)
  optimizer_step,  // OPT: the clipped optimizer update
};

// How many kinds there are, for the tables indexed by kind (each engine's handlers):
// optimizer_step stays last (tests/schedule/op_test.cc fails where a kind follows it).
inline constexpr size_t kOpKindCount = static_cast<size_t>(OpKind::optimizer_step) + 1;

// A table of one entry per kind, the entry of `kind` at op_index(kind).
template <typename Entry>
using OpKindTable = std::array<Entry, kOpKindCount>;
constexpr size_t op_index(OpKind kind) {
  return static_cast<size_t>(kind);
}

// Whether every kind has an entry (none left null): each engine asserts it of its handlers
// at compile time.
template <typename Entry>
constexpr bool every_kind_handled(const OpKindTable<Entry>& table) {
  for (const Entry& entry : table) {
    if (entry == nullptr) return false;
  }
  return true;
}

// "F", "B", "W", "BW", "SF", "RF", "SB", "RB", "AR", "RS", "TE", "GN", "OPT"; "?" for a
// value that is no kind.
std::string_view letter(OpKind kind);
// F, B, W, BW.
bool is_compute(OpKind kind);
// The point-to-point ops between stages.
bool is_communication(OpKind kind);
// The name both engines give an epilogue op on a timeline: "allreduce", "replica sync",
// "tied embedding", "global norm", "optimizer" (compute ops go by their letter).
std::string_view timeline_label(OpKind kind);
// AR, RS, TE, GN, OPT: once per iteration (AR once per chunk), after the backward work.
bool is_epilogue(OpKind kind);
// RS, TE, GN: collectives that ranks of several device groups of a pipeline run together.
bool is_group_collective(OpKind kind);
// B and BW: the ops that consume the gradient from the next stage and end a micro-batch's
// life in flight.
bool is_backward(OpKind kind);

struct Op {
  OpKind kind = OpKind::forward;
  int micro_batch = 0;  // -1 for the epilogue
  int chunk = 0;        // model chunk on this device (interleaved schedules have several)
  int peer = -1;        // communication only: the pipeline rank on the other end

  bool operator==(const Op& other) const = default;
};

// Compact text: "F3", "BW0", "W2"; with chunks "F3.1" (micro-batch 3, chunk 1);
// communication as "SF3>2" (send to rank 2) and "RB1<3" (receive from rank 3); the
// epilogue as "AR" ("AR.1" with chunks), "RS", "TE", "GN", "OPT".
std::string to_string(const Op& op, bool show_chunk = false);

}  // namespace hyperpipe::schedule
