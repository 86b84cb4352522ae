// One step of a pipeline stage's work: compute (F, B, W, BW) or point-to-point
// communication. A schedule is nothing but per-stage lists of these.
#pragma once

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
};

// "F", "B", "W", "BW", "SF", "RF", "SB", "RB".
std::string_view letter(OpKind kind);
bool is_compute(OpKind kind);
bool is_communication(OpKind kind);
// B and BW: the ops that consume the gradient from the next stage and end a micro-batch's
// life in flight.
bool is_backward(OpKind kind);

struct Op {
  OpKind kind = OpKind::forward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this device (interleaved schedules have several)
  int peer = -1;  // communication only: the pipeline rank on the other end

  bool operator==(const Op& other) const = default;
};

// Compact text: "F3", "BW0", "W2"; with chunks "F3.1" (micro-batch 3, chunk 1);
// communication as "SF3>2" (send to rank 2) and "RB1<3" (receive from rank 3).
std::string to_string(const Op& op, bool show_chunk = false);

}  // namespace hyperpipe::schedule
