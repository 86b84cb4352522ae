// Schedule generators: each a small pure function of (ranks, micro-batches, chunks,
// per-rank parameters) returning compute ops only; insert_communication() adds the rest.
// Arguments that cannot make a schedule throw std::invalid_argument with a message for
// the user.
#pragma once

#include <algorithm>
#include <vector>

#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::schedule {

// GPipe (Huang et al., 2019): all forwards, then all backwards (BW), in micro-batch order.
Schedule gpipe(int ranks, int micro_batches);

// 1F1B, PipeDream-Flush (Narayanan et al., 2021) as in Megatron-LM: rank r runs
// S − r forwards, then alternates one backward and one forward, then drains.
Schedule one_f_one_b(int ranks, int micro_batches);

// The micro-batches a rank holds at its peak under 1F1B (forward done, backward not):
// its warm-up forwards, one per rank from it to the last, and never more than there are:
// min(S − r, m) for rank r of S, `limit` = m (at least 1). What the planner costs a stage's
// activations with before it has a schedule; peak_in_flight (passes.h) of one_f_one_b()
// agrees. With `limit` what memory allows instead of m, 1F1B's depth cut to it.
constexpr int one_f_one_b_in_flight(int ranks_from_here, int limit) {
  return std::min(ranks_from_here, std::max(1, limit));
}

// 1F1B with a warm-up depth per rank: warmup[r] forwards before rank r's first backward
// (HAPT/HARP's heterogeneity-aware 1F1B, arXiv 2509.24859). Depths must be at least 1
// and must not grow along the pipeline (a rank cannot wait for more forwards than the
// rank before it sends before needing a gradient back); depths above the micro-batch
// count are cut to it. one_f_one_b() is this with depths S − r.
Schedule hetero_1f1b(int micro_batches, const std::vector<int>& warmup);

// Interleaved 1F1B (Narayanan et al., SC'21): each rank holds `chunks` model chunks;
// stage c·S + r is chunk c of rank r. Micro-batches advance in groups of S through the
// chunks (the first group also takes the m mod S left over); warm-up of rank r is
// 2(S − r − 1) + (v − 1)·S forwards, as in Megatron-LM (with the first group's size for S).
// With m < S every rank runs all forwards first; m = S follows the rule too, as
// Megatron-LM's schedules.py does since it dropped its all-forwards case for m = S.
// chunks = 1 is plain 1F1B.
Schedule interleaved_1f1b(int ranks, int micro_batches, int chunks);

// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): 1F1B with the
// backward split into B and W. Rank r runs each W r backwards late, so gradients travel
// back sooner and the r deferred W fill the drain bubble. A deferred W holds weight-gradient
// inputs only, so every rank stays within the S micro-batches' worth of 1F1B's first rank;
// micro-batches in flight (F done, B not) are exactly 1F1B's.
Schedule zb_h1(int ranks, int micro_batches);

// Dispatches on `kind`; `warmup` is used by hetero_1f1b only, `chunks` by interleaved only.
Schedule make_schedule(ScheduleKind kind, int ranks, int micro_batches, int chunks = 1,
                       const std::vector<int>& warmup = {});

// Warm-up depths for the heterogeneity-aware 1F1B. Rank r starts from 1F1B's depth and adds
// enough micro-batches to cover the round trip over its outgoing link:
//   depth[S−1] = 1, depth[r] = depth[r+1] + 1 + ceil(2 · link_time[r] / rank_time[r]),
// then each depth is cut to max_in_flight[r] (what its memory allows) and no depth may
// exceed the one before it. rank_time[r] is F + B of one micro-batch on rank r;
// link_time[r] the one-way transfer from rank r to r + 1 (size S − 1).
std::vector<int> link_aware_warmup(const std::vector<double>& rank_time,
                                   const std::vector<double>& link_time,
                                   const std::vector<int>& max_in_flight);

}  // namespace hyperpipe::schedule
