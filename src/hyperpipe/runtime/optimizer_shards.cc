#include "hyperpipe/runtime/optimizer_shards.h"

#include <algorithm>

#include "hyperpipe/runtime/optimizer.h"

namespace hyperpipe::runtime {
namespace {

int64_t part_length(int64_t size, int ranks) {
  return (size + ranks - 1) / ranks;
}

}  // namespace

FlatRange owned_part(int64_t size, int ranks, int index) {
  const int64_t length = part_length(size, ranks);
  return {std::min(size, index * length), std::min(size, (index + 1) * length)};
}

std::vector<FlatRange> owned_pieces(const std::vector<int64_t>& sizes, int ranks, int index) {
  int64_t total = 0;
  for (const int64_t size : sizes) total += size;
  const FlatRange part = owned_part(total, ranks, index);
  std::vector<FlatRange> pieces;
  int64_t start = 0;
  for (const int64_t size : sizes) {
    const int64_t begin = std::max(start, part.begin);
    const int64_t end = std::min(start + size, part.end);
    pieces.push_back(begin < end ? FlatRange{begin - start, end - start} : FlatRange{});
    start += size;
  }
  return pieces;
}

std::vector<FlatRange> pieces_of(const std::vector<std::vector<torch::Tensor>>& chunks, int dp,
                                 int dp_index) {
  std::vector<FlatRange> all;
  for (const auto& chunk : chunks) {
    std::vector<int64_t> sizes;
    for (const auto& p : chunk) sizes.push_back(p.numel());
    for (const auto& piece : owned_pieces(sizes, dp, dp_index)) all.push_back(piece);
  }
  return all;
}

OptimizerShards::OptimizerShards(const std::vector<std::vector<torch::Tensor>>& chunks, int dp,
                                 int dp_index, const MasterWeights* masters)
    : dp_(dp), dp_index_(dp_index), masters_(masters) {
  const auto pieces = pieces_of(chunks, dp, dp_index);
  size_t next = 0;
  for (const auto& chunk : chunks) {
    std::vector<Entry> entries;
    int64_t start = 0;
    for (const auto& p : chunk) {
      Entry entry{p, start, pieces[next++], std::nullopt};
      start += p.numel();
      if (entry.piece.size() > 0) {
        entry.slot = pieces_.size();
        pieces_.push_back(
            masters_ ? masters_->master_of(p)
                     : p.detach().view(-1).narrow(0, entry.piece.begin, entry.piece.size()));
        decayed_.push_back(p.dim() >= 2);
      }
      entries.push_back(std::move(entry));
    }
    chunk_sizes_.push_back(start);
    chunks_.push_back(std::move(entries));
  }
}

void OptimizerShards::point_gradients() {
  if (masters_) return;  // the masters' gradients are views of the main grads
  for (const auto& chunk : chunks_) {
    for (const auto& e : chunk) {
      if (!e.slot) continue;
      const auto& grad = e.parameter.grad();
      pieces_[*e.slot].mutable_grad() =
          grad.defined()
              ? grad.reshape(-1).narrow(0, e.piece.begin, e.piece.size())
              : torch::zeros({e.piece.size()}, e.parameter.options().requires_grad(false));
    }
  }
}

void OptimizerShards::release_gradients() {
  if (masters_) return;  // views of the main grads, which stay
  for (auto& piece : pieces_) piece.mutable_grad() = torch::Tensor();
}

torch::Tensor OptimizerShards::gather_chunk(int c,
                                            const std::function<torch::Tensor(const Entry&)>& of,
                                            torch::ScalarType type,
                                            const GatherParts& gather) const {
  const int64_t length = part_length(chunk_sizes_[c], dp_);
  const auto options = chunks_[c].front().parameter.options().dtype(type).requires_grad(false);
  std::vector<torch::Tensor> mine_parts;
  for (const auto& e : chunks_[c]) {
    if (e.slot) mine_parts.push_back(of(e).reshape(-1).to(type));
  }
  torch::Tensor mine = torch::zeros({length}, options);
  if (!mine_parts.empty()) {
    const torch::Tensor values = torch::cat(mine_parts);
    mine.narrow(0, 0, values.numel()).copy_(values);
  }
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < dp_; ++r) parts.push_back(torch::empty_like(mine));
  gather(mine, parts);
  // Only the last non-empty part is short, so the first n elements are the chunk's.
  return torch::cat(parts).narrow(0, 0, chunk_sizes_[c]);
}

void OptimizerShards::gather_weights(const GatherParts& gather) {
  torch::NoGradGuard no_grad;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const auto& entries = chunks_[c];
    const auto type = entries.front().parameter.scalar_type();
    const torch::Tensor whole = gather_chunk(
        static_cast<int>(c),
        [](const Entry& e) {
          return e.parameter.detach().view(-1).narrow(0, e.piece.begin, e.piece.size());
        },
        type, gather);
    for (const auto& e : entries) {
      e.parameter.detach().view(-1).copy_(whole.narrow(0, e.start, e.parameter.numel()));
    }
  }
}

std::vector<TrainedState> OptimizerShards::whole_state(int c, const torch::optim::AdamW& adamw,
                                                       const GatherParts& gather) const {
  const auto& entries = chunks_[c];
  const auto type = masters_ ? torch::kFloat : entries.front().parameter.scalar_type();
  const auto piece_of = [&](const Entry& e) { return pieces_[*e.slot]; };
  const auto moment = [&](bool squared) {
    return [&, squared](const Entry& e) {
      const auto found = adamw.state().find(adam_state_key(pieces_[*e.slot]));
      const auto& state = static_cast<const torch::optim::AdamWParamState&>(*found->second);
      return squared ? state.exp_avg_sq() : state.exp_avg();
    };
  };
  const torch::Tensor values = gather_chunk(c, piece_of, type, gather);
  torch::Tensor exp_avg, exp_avg_sq;
  if (steps_ > 0) {
    exp_avg = gather_chunk(c, moment(false), type, gather);
    exp_avg_sq = gather_chunk(c, moment(true), type, gather);
  }
  std::vector<TrainedState> states;
  for (const auto& e : entries) {
    // Each its own tensor, not a view into the gathered chunk (with its padding): a
    // checkpoint holds exactly what an unsharded run's does, byte for byte.
    const auto whole = [&](const torch::Tensor& flat) {
      return flat.defined()
                 ? flat.narrow(0, e.start, e.parameter.numel()).view(e.parameter.sizes()).clone()
                 : flat;
    };
    states.push_back({whole(values), whole(exp_avg), whole(exp_avg_sq), steps_});
  }
  return states;
}

void OptimizerShards::restore(int c, size_t i, const TrainedState& whole,
                              torch::optim::AdamW& adamw) {
  torch::NoGradGuard no_grad;
  const Entry& e = chunks_[c][i];
  e.parameter.detach().copy_(whole.value);
  steps_ = whole.steps;
  if (!e.slot) return;
  const auto part = [&](const torch::Tensor& t) {
    return t.reshape(-1).narrow(0, e.piece.begin, e.piece.size());
  };
  auto& piece = pieces_[*e.slot];
  // Without masters the piece is a view of the parameter, set above; a master is its own.
  if (masters_) piece.copy_(part(whole.value));
  if (!whole.exp_avg.defined()) return;
  auto state = std::make_unique<torch::optim::AdamWParamState>();
  state->step(whole.steps);
  state->exp_avg(part(whole.exp_avg).to(piece.options()).clone());
  state->exp_avg_sq(part(whole.exp_avg_sq).to(piece.options()).clone());
  adamw.state()[adam_state_key(piece)] = std::move(state);
}

}  // namespace hyperpipe::runtime
