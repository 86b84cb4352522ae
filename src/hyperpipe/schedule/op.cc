#include "hyperpipe/schedule/op.h"

#include <string>

namespace hyperpipe::schedule {

std::string_view letter(OpKind kind) {
  switch (kind) {
    case OpKind::forward:
      return "F";
    case OpKind::backward_input:
      return "B";
    case OpKind::backward_weight:
      return "W";
    case OpKind::backward:
      return "BW";
    case OpKind::send_forward:
      return "SF";
    case OpKind::recv_forward:
      return "RF";
    case OpKind::send_backward:
      return "SB";
    case OpKind::recv_backward:
      return "RB";
    case OpKind::all_reduce:
      return "AR";
    case OpKind::sync_replicas:
      return "RS";
    case OpKind::tied_embedding:
      return "TE";
    case OpKind::global_norm:
      return "GN";
    case OpKind::optimizer_step:
      return "OPT";
  }
  return "?";
}

std::string_view timeline_label(OpKind kind) {
  switch (kind) {
    case OpKind::all_reduce:
      return "allreduce";
    case OpKind::sync_replicas:
      return "replica sync";
    case OpKind::tied_embedding:
      return "tied embedding";
    case OpKind::global_norm:
      return "global norm";
    case OpKind::optimizer_step:
      return "optimizer";
    default:
      return letter(kind);
  }
}

bool is_compute(OpKind kind) {
  return kind == OpKind::forward || kind == OpKind::backward_input ||
         kind == OpKind::backward_weight || kind == OpKind::backward;
}

bool is_epilogue(OpKind kind) {
  return !is_compute(kind) && !is_communication(kind);
}

bool is_group_collective(OpKind kind) {
  return kind == OpKind::sync_replicas || kind == OpKind::tied_embedding ||
         kind == OpKind::global_norm;
}

bool is_communication(OpKind kind) {
  return kind == OpKind::send_forward || kind == OpKind::recv_forward ||
         kind == OpKind::send_backward || kind == OpKind::recv_backward;
}

bool is_backward(OpKind kind) {
  return kind == OpKind::backward_input || kind == OpKind::backward;
}

// Appends, not fmt::format: the simulator names every op it runs, and the planner's
// re-scoring runs millions (a quarter of `plan`'s time went to formatting them).
std::string to_string(const Op& op, bool show_chunk) {
  std::string text(letter(op.kind));
  if (is_epilogue(op.kind)) {
    if (op.kind == OpKind::all_reduce && show_chunk) text += '.' + std::to_string(op.chunk);
    return text;
  }
  text += std::to_string(op.micro_batch);
  if (show_chunk) text += '.' + std::to_string(op.chunk);
  if (op.kind == OpKind::send_forward || op.kind == OpKind::send_backward) {
    text += '>' + std::to_string(op.peer);
  } else if (is_communication(op.kind)) {
    text += '<' + std::to_string(op.peer);
  }
  return text;
}

}  // namespace hyperpipe::schedule
