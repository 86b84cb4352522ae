#include "hyperpipe/plan/rank_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "hyperpipe/common/error.h"

namespace hyperpipe::plan {

SampleRange shard(int64_t micro_batch, int dp, int index) {
  const int64_t base = micro_batch / dp;
  const int64_t extra = micro_batch % dp;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

std::vector<Slice> reshard(int64_t micro_batch, int from_dp, int to_dp) {
  std::vector<Slice> slices;
  for (int i = 0; i < from_dp; ++i) {
    const SampleRange held = shard(micro_batch, from_dp, i);
    for (int j = 0; j < to_dp; ++j) {
      const SampleRange needed = shard(micro_batch, to_dp, j);
      const int64_t begin = std::max(held.begin, needed.begin);
      const int64_t end = std::min(held.end, needed.end);
      if (begin < end) slices.push_back({i, j, {begin, end}});
    }
  }
  return slices;
}

RankLayout::RankLayout(const plan::Plan& plan, const std::string& source) {
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const plan::Pipeline& pipeline = plan.pipeline(p);
    const std::string where = p == 0 ? "" : fmt::format("replicas[{}].", p - 1);
    first_rank_.emplace_back();
    for (int group = 0; group < pipeline.ranks(); ++group) {
      const plan::StagePlan& stage = pipeline.stages[group];
      for (int s = group + pipeline.ranks(); s < static_cast<int>(pipeline.stages.size());
           s += pipeline.ranks()) {
        if (pipeline.stages[s].dp != stage.dp || pipeline.stages[s].tp != stage.tp) {
          throw InputError(source, fmt::format("{}stages[{}]", where, s),
                           fmt::format("dp = {} and tp = {} as stages[{}], the chunk on the same "
                                       "devices (a process holds one shard of each chunk)",
                                       stage.dp, stage.tp, group));
        }
      }
      first_rank_.back().push_back(static_cast<int>(roles_.size()));
      for (int i = 0; i < stage.dp; ++i) {
        for (int t = 0; t < stage.tp; ++t) {
          roles_.push_back({static_cast<int>(roles_.size()), p, group, i, stage.dp, t, stage.tp,
                            stage.devices[plan::index_in_group(i, t, stage.tp)]});
        }
      }
    }
  }
}

std::vector<int> RankLayout::dp_ranks(int pipeline, int group, int tp_index) const {
  const ProcessRole& first = roles_.at(first_rank_.at(pipeline).at(group));
  std::vector<int> ranks(first.dp);
  for (int i = 0; i < first.dp; ++i) ranks[i] = rank_of(pipeline, group, i, tp_index);
  return ranks;
}

std::vector<int> RankLayout::group_ranks(int pipeline, int group) const {
  const int first = first_rank_.at(pipeline).at(group);
  const ProcessRole& role = roles_.at(first);
  std::vector<int> ranks(role.dp * role.tp);
  std::iota(ranks.begin(), ranks.end(), first);
  return ranks;
}

std::vector<int> RankLayout::tp_ranks(int pipeline, int group, int dp_index) const {
  const ProcessRole& first = roles_.at(first_rank_.at(pipeline).at(group));
  std::vector<int> ranks(first.tp);
  for (int t = 0; t < first.tp; ++t) ranks[t] = rank_of(pipeline, group, dp_index, t);
  return ranks;
}

}  // namespace hyperpipe::plan
