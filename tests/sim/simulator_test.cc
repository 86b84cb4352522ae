#include "hyperpipe/sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "hyperpipe/schedule/epilogue.h"
#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::sim {
namespace {

using schedule::Op;
using schedule::OpKind;
using schedule::Schedule;
using schedule::ScheduleKind;

// The schedule with its communication and epilogue, as plan::schedule_for builds it.
SimInput make_input(const Schedule& compute_only, std::vector<StageCost> stages,
                    TransferCost transfer = {}, const schedule::EpilogueOptions& epilogue = {}) {
  SimInput input;
  input.schedule = schedule::add_epilogue(schedule::insert_communication(compute_only), epilogue);
  input.stages = std::move(stages);
  const size_t cuts = input.stages.size() - 1;
  input.activations.assign(cuts, transfer);
  input.gradients.assign(cuts, transfer);
  return input;
}

// Stage costs with backward = B + W split evenly, so BW costs `backward`.
StageCost stage(double forward, double backward) {
  StageCost cost;
  cost.forward = forward;
  cost.backward_input = backward / 2;
  cost.backward_weight = backward / 2;
  return cost;
}

// Independent reference: the longest path through the ops' dependency graph when links
// only add latency (nothing queues). Each op waits for the previous op of its rank and
// for its input: the same micro-batch's F on the stage before or B on the stage after,
// its own F for a backward, its own B for W. An input leaves its sender once the
// receiver's post has reached it (a latency after the post), then takes a latency to
// arrive; a rank posts an op's receive on reaching the compute op `lookahead[rank]`
// before it (at the end of the one before that), the first ones at the start.
double critical_path(const Schedule& s, const std::vector<StageCost>& costs,
                     const std::vector<double>& latency, std::vector<int> lookahead = {}) {
  const int stages = s.stages();
  const int m = s.micro_batches;
  if (lookahead.empty()) lookahead.assign(s.ranks, 1);
  std::vector<double> f_end(stages * m, -1), b_end(stages * m, -1);
  std::vector<std::vector<double>> ends(s.ranks);  // per rank: its ops' end times
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < s.ranks; ++r) {
      auto& done = ends[r];
      while (done.size() < s.ops[r].size()) {
        const size_t k = done.size();
        const Op& op = s.ops[r][k];
        const int st = s.stage_of(r, op.chunk);
        const int c = st * m + op.micro_batch;
        const long reached = static_cast<long>(k) - lookahead[r] - 1;
        const double posted = reached >= 0 ? done[reached] : 0.0;
        double ready = done.empty() ? 0.0 : done.back();
        const auto input = [&](double sent, double link) {
          ready = std::max(ready, std::max(sent, posted + link) + link);
        };
        double duration = 0;
        if (op.kind == OpKind::forward) {
          if (st > 0) {
            if (f_end[c - m] < 0) break;
            input(f_end[c - m], latency[st - 1]);
          }
          duration = costs[st].forward;
        } else if (op.kind == OpKind::backward_weight) {
          if (b_end[c] < 0) break;
          duration = costs[st].backward_weight;
        } else {
          if (f_end[c] < 0) break;
          if (st < stages - 1) {
            if (b_end[c + m] < 0) break;
            input(b_end[c + m], latency[st]);
          }
          duration = costs[st].backward_input +
                     (op.kind == OpKind::backward ? costs[st].backward_weight : 0.0);
        }
        done.push_back(ready + duration);
        if (op.kind == OpKind::forward) f_end[c] = done.back();
        if (schedule::is_backward(op.kind)) b_end[c] = done.back();
        progress = true;
      }
    }
  }
  double end = 0;
  for (const auto& done : ends) end = std::max(end, done.empty() ? 0.0 : done.back());
  return end;
}

TEST(Simulator, HomogeneousFreeLinksMatchTheTextbook) {
  const int S = 4, m = 8;
  const double tf = 1, tb = 2;
  for (const Schedule& s : {schedule::gpipe(S, m), schedule::one_f_one_b(S, m)}) {
    const SimOutput out = simulate(make_input(s, std::vector<StageCost>(S, stage(tf, tb))));
    EXPECT_DOUBLE_EQ(out.iteration_time, (m + S - 1) * (tf + tb)) << to_string(s.kind);
    // Every rank idles (S − 1)(tf + tb) in total, and the accounting adds up.
    for (const RankStats& rank : out.ranks) {
      EXPECT_DOUBLE_EQ(rank.busy, m * (tf + tb));
      EXPECT_DOUBLE_EQ(rank.bubble, (S - 1) * (tf + tb));
      EXPECT_DOUBLE_EQ(rank.comm_wait, 0);
    }
  }
}

TEST(Simulator, HeterogeneousStagesFreeLinks) {
  // τ_j = F + B per stage; the slowest stage sets the pace: Σ τ_j + (m − 1)·max τ_j. For
  // GPipe in any stage order (F and B proportional); for 1F1B when the slowest stage is
  // last, so it never waits once started (elsewhere 1F1B overlaps better than that).
  const std::vector<StageCost> gpipe_costs{stage(1, 2), stage(2, 4), stage(1.5, 3), stage(0.5, 1)};
  const std::vector<StageCost> slow_last{stage(1, 2), stage(0.5, 1), stage(1.5, 3), stage(2, 4)};
  const double sum = 3 + 6 + 4.5 + 1.5, slowest = 6;
  for (int m : {1, 3, 4, 9}) {
    EXPECT_DOUBLE_EQ(simulate(make_input(schedule::gpipe(4, m), gpipe_costs)).iteration_time,
                     sum + (m - 1) * slowest)
        << "gpipe m=" << m;
    EXPECT_DOUBLE_EQ(simulate(make_input(schedule::one_f_one_b(4, m), slow_last)).iteration_time,
                     sum + (m - 1) * slowest)
        << "1f1b m=" << m;
    EXPECT_LE(simulate(make_input(schedule::one_f_one_b(4, m), gpipe_costs)).iteration_time,
              sum + (m - 1) * slowest);
  }
}

TEST(Simulator, LatencyAddsWhatTheCriticalPathSays) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> time(0.5, 3.0);
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1,
                            ScheduleKind::interleaved}) {
    for (int S : {2, 3, 5}) {
      for (int m : {1, 4, 7, 10}) {
        const int chunks = kind == ScheduleKind::interleaved ? 2 : 1;
        const Schedule s = schedule::make_schedule(kind, S, m, chunks);
        std::vector<StageCost> costs;
        for (int j = 0; j < s.stages(); ++j) {
          StageCost c;
          c.forward = time(random);
          c.backward_input = time(random);
          c.backward_weight = time(random);
          costs.push_back(c);
        }
        SimInput input = make_input(s, costs);
        std::vector<double> latency;
        for (int j = 0; j + 1 < s.stages(); ++j) {
          latency.push_back(time(random));
          input.activations[j].latency = latency.back();
          input.gradients[j].latency = latency.back();
        }
        EXPECT_NEAR(simulate(input).iteration_time, critical_path(s, costs, latency), 1e-9)
            << to_string(kind) << " S=" << S << " m=" << m;
      }
    }
  }
}

TEST(Simulator, GPipeWithLatencyClosedForm) {
  const int S = 3, m = 5;
  const double tf = 1, tb = 2, d = 0.25;
  SimInput input =
      make_input(schedule::gpipe(S, m), std::vector<StageCost>(S, stage(tf, tb)), {0.0, d, -1});
  EXPECT_DOUBLE_EQ(simulate(input).iteration_time, (m + S - 1) * (tf + tb) + 2 * (S - 1) * d);
}

TEST(Simulator, TransfersQueueOnTheirLink) {
  // Sends at 1, 2, 3 each hold the link for 2: activations arrive at 3, 5, 7; the
  // gradients leave stage 1 at 9, 10, 11 and arrive at 11, 13, 15.
  SimInput input = make_input(schedule::gpipe(2, 3), {stage(1, 1), stage(1, 1)}, {2.0, 0.0, -1});
  const SimOutput out = simulate(input);
  EXPECT_DOUBLE_EQ(out.iteration_time, 16);
  ASSERT_EQ(out.timeline.tracks[1].compute.size(), 6u);
  EXPECT_DOUBLE_EQ(out.timeline.tracks[1].compute[1].start, 5);
  EXPECT_DOUBLE_EQ(out.timeline.tracks[1].compute[2].start, 7);
  // Rank 1 waited on transfers in flight 2 (of its first 3 idle) + 1 + 1.
  EXPECT_DOUBLE_EQ(out.ranks[1].comm_wait, 2 + 1 + 1);
}

TEST(Simulator, SharedLinkSerialisesDifferentRankPairs) {
  // Interleaved over 2 ranks: stage 1→2 goes rank 1→0, stage 0→1 rank 0→1. Giving every
  // transfer the same link id makes opposite directions queue for one another.
  const Schedule s = schedule::interleaved_1f1b(2, 4, 2);
  std::vector<StageCost> costs(4, stage(1, 2));
  SimInput separate = make_input(s, costs, {2.0, 0.0, -1});
  SimInput shared = make_input(s, costs, {2.0, 0.0, 0});
  EXPECT_GT(simulate(shared).iteration_time, simulate(separate).iteration_time);
}

TEST(Simulator, InterleavingCutsTheBubbleByTheChunkCount) {
  const int S = 4, m = 8;
  const double tf = 1, tb = 2;
  const double one_f_one_b =
      simulate(make_input(schedule::one_f_one_b(S, m), std::vector<StageCost>(S, stage(tf, tb))))
          .iteration_time;
  for (int v : {2, 4}) {
    const SimOutput out = simulate(make_input(
        schedule::interleaved_1f1b(S, m, v), std::vector<StageCost>(S * v, stage(tf / v, tb / v))));
    EXPECT_NEAR(out.iteration_time - m * (tf + tb), (one_f_one_b - m * (tf + tb)) / v, 1e-9)
        << "v=" << v;
  }
}

TEST(Simulator, ZeroBubbleH1CutsTheBubbleToAThird) {
  const int S = 4, m = 12;
  StageCost cost;
  cost.forward = cost.backward_input = cost.backward_weight = 1;
  const std::vector<StageCost> costs(S, cost);
  const double work = m * 3.0;
  const double base =
      simulate(make_input(schedule::one_f_one_b(S, m), costs)).iteration_time - work;
  const double zero_bubble =
      simulate(make_input(schedule::zb_h1(S, m), costs)).iteration_time - work;
  EXPECT_DOUBLE_EQ(base, 3.0 * (S - 1));
  EXPECT_NEAR(zero_bubble / base, 1.0 / 3.0, 0.05);
}

// A whole backward may cost less than B and W run apart (split_extra): the combined op
// takes B + W − extra, the split ones B and W. Textbook 1F1B on the combined time.
TEST(Simulator, CombinedBackwardTakesTheWholeBackwardsTime) {
  const int S = 3, m = 6;
  StageCost cost;
  cost.forward = 1;
  cost.backward_input = 1.5;
  cost.backward_weight = 1;
  cost.split_extra = 0.5;  // the whole backward: 2
  const std::vector<StageCost> costs(S, cost);
  const SimOutput combined = simulate(make_input(schedule::one_f_one_b(S, m), costs));
  EXPECT_DOUBLE_EQ(combined.iteration_time, (m + S - 1) * (1 + 2.0));
  // Split: each rank computes m · (F + B + W) = m · 3.5, more than 1F1B's m · 3.
  const SimOutput split = simulate(make_input(schedule::zb_h1(S, m), costs));
  for (const RankStats& rank : split.ranks) EXPECT_DOUBLE_EQ(rank.busy, m * 3.5);
}

TEST(Simulator, DeeperWarmUpHidesASlowLink) {
  // The link after stage 0 takes 4 each way, more than a stage's F + B of 3: 1F1B stalls
  // stage 0 on every round trip, the link-aware depths keep it busy.
  const int m = 12;
  const std::vector<StageCost> costs(3, stage(1, 2));
  SimInput plain = make_input(schedule::one_f_one_b(3, m), costs);
  plain.activations[0].latency = plain.gradients[0].latency = 4;
  const auto depths = schedule::link_aware_warmup({3, 3, 3}, {4, 0}, {99, 99, 99});
  EXPECT_EQ(depths, (std::vector<int>{6, 2, 1}));
  SimInput aware = make_input(schedule::hetero_1f1b(m, depths), costs);
  aware.activations[0].latency = aware.gradients[0].latency = 4;
  const SimOutput a = simulate(plain);
  const SimOutput b = simulate(aware);
  EXPECT_LT(b.iteration_time, a.iteration_time);
  // With enough in flight the slow link costs only its one-time fill, m·3 + 2·4 + 2·(1 + 2),
  // and the first receive's notice: F0 leaves at 4, when stage 1's post (at 0) has crossed
  // the link, not at 1.
  EXPECT_DOUBLE_EQ(b.iteration_time, m * 3 + 2 * 4 + 2 * 3 + (4 - 1));
  EXPECT_EQ(b.ranks[0].peak_in_flight, 6);
  // Both ends of the slow link post 1 + 2·(6 − 2 − 1) compute ops ahead; the last stage
  // one, as in 1F1B. Posting one ahead everywhere, stage 0 would stall on every gradient.
  const std::vector<int> lookahead{7, 7, 1};
  EXPECT_DOUBLE_EQ(b.iteration_time,
                   critical_path(schedule::hetero_1f1b(m, depths), costs, {4, 0}, lookahead));
  EXPECT_GT(critical_path(schedule::hetero_1f1b(m, depths), costs, {4, 0}), b.iteration_time + 10);
}

TEST(Simulator, GradientAllReduceThenOptimizer) {
  std::vector<StageCost> costs(2, stage(1, 2));
  costs[0].allreduce = 0.5;
  costs[0].optimizer = 0.25;
  costs[1].allreduce = 2.0;
  SimInput input = make_input(schedule::one_f_one_b(2, 2), costs);
  const SimOutput out = simulate(input);
  // Compute ends at (m + S − 1)·3 = 9 on rank 0 and at 7 on rank 1 (its last BW); the
  // all-reduces end at 9.5 and 9; the global norm (free here) waits for both: 9.5.
  EXPECT_DOUBLE_EQ(out.ranks[0].end, 9 + 0.5 + 0.25);
  EXPECT_DOUBLE_EQ(out.ranks[1].end, 9.5);
  EXPECT_DOUBLE_EQ(out.iteration_time, 9.75);
  EXPECT_DOUBLE_EQ(out.ranks[1].allreduce, 2.0);
  EXPECT_DOUBLE_EQ(out.ranks[1].bubble, 9.75 - 6 - 2.0);  // waits at the norm for rank 0
}

TEST(Simulator, OverlappedAllReduceHidesBehindLaterChunks) {
  const Schedule s = schedule::interleaved_1f1b(2, 4, 2);
  std::vector<StageCost> costs(4, stage(1, 2));
  for (auto& c : costs) c.allreduce = 1.0;
  const double plain = simulate(make_input(s, costs)).iteration_time;
  const SimOutput overlapped = simulate(make_input(s, costs, {}, {.overlap_allreduce = true}));
  EXPECT_LT(overlapped.iteration_time, plain);
  // At least one chunk's all-reduce is fully hidden: less than 2 exposed on rank 0.
  EXPECT_LT(overlapped.ranks[0].allreduce, 2.0);
}

TEST(Simulator, OverlapHidesABucketBehindTheBackwardLeftClosedForm) {
  // One device group, two chunks: chunk 1 (the later layers) finishes its backwards first,
  // and its bucket (1.5 s) runs beside chunk 0's last backwards (at least one, 2 s).
  const Schedule s = schedule::interleaved_1f1b(1, 2, 2);
  std::vector<StageCost> costs(2, stage(1, 2));
  costs[0].allreduce = 3.0;
  costs[1].allreduce = 1.5;
  const auto& ops = s.ops[0];
  const auto last_of_chunk_1 = std::find_if(ops.rbegin(), ops.rend(), [](const Op& op) {
    return op.chunk == 1 && op.kind == OpKind::backward;
  });
  ASSERT_GE(std::count_if(ops.rbegin(), last_of_chunk_1,
                          [](const Op& op) { return op.kind == OpKind::backward; }),
            1);
  // Without overlap: 2 micro-batches × 2 chunks × (1 + 2) of compute, then both buckets.
  const double plain = simulate(make_input(s, costs)).iteration_time;
  EXPECT_DOUBLE_EQ(plain, 12 + 1.5 + 3.0);
  // With it: the plain iteration less the hidden bucket.
  const SimOutput overlapped = simulate(make_input(s, costs, {}, {.overlap_allreduce = true}));
  EXPECT_DOUBLE_EQ(overlapped.iteration_time, plain - 1.5);
  EXPECT_DOUBLE_EQ(overlapped.ranks[0].allreduce, 3.0);  // only chunk 0's is exposed
}

TEST(Simulator, TheTiedEmbeddingSumWaitsForBothEnds) {
  // Rank 1 ends its compute at 7 and rank 0 at 9 (as above); the tied sum (0.5) starts
  // when both are there, then the norm (0.25) over both, then the steps. Each rank's
  // interval runs from its arrival, as the runtime measures a collective from its call.
  std::vector<StageCost> costs(2, stage(1, 2));
  SimInput input = make_input(schedule::one_f_one_b(2, 2), costs, {}, {.tied_embeddings = true});
  input.tied_embedding = 0.5;
  input.global_norm = 0.25;
  const SimOutput out = simulate(input);
  EXPECT_DOUBLE_EQ(out.iteration_time, 9 + 0.5 + 0.25);
  const double arrival[] = {9, 7};
  for (size_t r = 0; r < out.timeline.tracks.size(); ++r) {
    const auto& track = out.timeline.tracks[r];
    const auto tied = std::find_if(track.communication.begin(), track.communication.end(),
                                   [](const auto& i) { return i.op == "tied embedding"; });
    ASSERT_NE(tied, track.communication.end());
    EXPECT_DOUBLE_EQ(tied->start, arrival[r]) << r;
    EXPECT_DOUBLE_EQ(tied->end, 9.5) << r;
    EXPECT_EQ(track.ops.back(), "OPT");
  }
  EXPECT_DOUBLE_EQ(out.ranks[1].tied_embedding, 0.5);
}

TEST(Simulator, MemoryFollowsTheMicroBatchesInFlight) {
  const int S = 4, m = 8;
  std::vector<StageCost> costs(S, stage(1, 2));
  for (auto& c : costs) {
    c.activation_bytes = 100;
    c.static_bytes = 1000;
  }
  SimInput input = make_input(schedule::one_f_one_b(S, m), costs);
  input.reserved_bytes.assign(S, 50);
  const SimOutput out = simulate(input);
  const auto expected = schedule::peak_in_flight(schedule::one_f_one_b(S, m));
  for (int r = 0; r < S; ++r) {
    EXPECT_EQ(out.ranks[r].peak_in_flight, expected[r]);
    EXPECT_DOUBLE_EQ(out.ranks[r].peak_activation_bytes, 100.0 * expected[r]);
    EXPECT_DOUBLE_EQ(out.ranks[r].peak_memory_bytes, 1050 + 100.0 * expected[r]);
    // The memory track rises and falls back to the static bytes.
    EXPECT_DOUBLE_EQ(out.timeline.tracks[r].memory.back().bytes, 1050);
  }
}

TEST(Simulator, ZeroBubbleKeepsWeightGradientInputsUntilW) {
  // Rank r of ZB-H1 runs each W r backwards late, holding W's inputs (40 of the 100 bytes
  // a micro-batch keeps) meanwhile: rank 3 peaks at one micro-batch plus 3 deferred Ws.
  const int S = 4, m = 8;
  std::vector<StageCost> costs(S, stage(1, 2));
  for (auto& c : costs) {
    c.activation_bytes = 100;
    c.weight_gradient_bytes = 40;
  }
  const SimOutput out = simulate(make_input(schedule::zb_h1(S, m), costs));
  EXPECT_DOUBLE_EQ(out.ranks[0].peak_activation_bytes, 4 * 100.0);
  EXPECT_DOUBLE_EQ(out.ranks[3].peak_activation_bytes, 100.0 + 3 * 40.0);
  for (const auto& track : out.timeline.tracks) EXPECT_DOUBLE_EQ(track.memory.back().bytes, 0);
}

TEST(Simulator, BlockingTransfersOverASlowLinkClosedForm) {
  // 1F1B over two stages, two micro-batches, each transfer holding the link for c > f + b.
  // Async: rank 0 sends F0 and F1 back to back, but F1 moves only once rank 1 posts its
  // receive, on reaching BW0 (after F0: f + c + f); rank 1 runs F1/BW1 as F1 arrives, so
  // the critical path is f, c, f, then F1's transfer, f, b, B1's transfer and b:
  // 3f + 3c + 2b. Blocking: rank 0 waits out its sends; its second (F1, batched with the
  // receive of B0) starts only when rank 1 posts F1's receive after sending B0, and rank
  // 1's F1 starts once that transfer is done: (f + c + b) three times.
  for (const auto& [f, b, c] : {std::tuple{1.0, 2.0, 5.0}, std::tuple{0.5, 1.5, 4.0}}) {
    ASSERT_GT(c, f + b);
    SimInput input =
        make_input(schedule::one_f_one_b(2, 2), {stage(f, b), stage(f, b)}, {c, 0.0, -1});
    EXPECT_DOUBLE_EQ(simulate(input).iteration_time, 3 * f + 3 * c + 2 * b);
    input.p2p = P2pMode::blocking;
    const SimOutput blocked = simulate(input);
    EXPECT_DOUBLE_EQ(blocked.iteration_time, 3 * (f + c + b));
    // Rank 0 holds its compute through both sends' transfers and B1's: three c; B0 was
    // in by the time rank 0 reached its receive.
    EXPECT_DOUBLE_EQ(blocked.ranks[0].comm_wait, 3 * c);
  }
}

TEST(Simulator, BlockingNeverBeatsAsync) {
  // A blocked sender only ever starts later; nothing in blocking mode runs earlier.
  std::mt19937 random(7);
  std::uniform_real_distribution<double> cost(0.5, 3.0);
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1}) {
    for (int trial = 0; trial < 20; ++trial) {
      const int S = 2 + trial % 3, m = S + trial % 4;
      std::vector<StageCost> costs;
      for (int i = 0; i < S; ++i) costs.push_back(stage(cost(random), cost(random)));
      SimInput input = make_input(schedule::make_schedule(kind, S, m), costs,
                                  {cost(random), cost(random) / 4, -1});
      const double async = simulate(input).iteration_time;
      input.p2p = P2pMode::blocking;
      EXPECT_GE(simulate(input).iteration_time, async - 1e-9) << to_string(kind);
    }
  }
}

TEST(Simulator, BlockingWithFreeLinksKeepsTheTextbookPipeline) {
  // Equal stages and free transfers: every receive is posted before its send, so GPipe and
  // 1F1B take (m + S - 1)(f + b) either way. (Zero-bubble schedules do not: a sender
  // blocks while its receiver runs W ops, where async sends would let it go on.)
  const int S = 4, m = 8;
  const double tf = 1, tb = 2;
  for (const Schedule& s : {schedule::gpipe(S, m), schedule::one_f_one_b(S, m)}) {
    SimInput input = make_input(s, std::vector<StageCost>(S, stage(tf, tb)));
    input.p2p = P2pMode::blocking;
    EXPECT_DOUBLE_EQ(simulate(input).iteration_time, (m + S - 1) * (tf + tb));
  }
}

TEST(Simulator, RejectsMismatchedInput) {
  SimInput input = make_input(schedule::gpipe(3, 2), std::vector<StageCost>(3, stage(1, 1)));
  input.gradients.pop_back();
  EXPECT_THROW(simulate(input), std::invalid_argument);
}

}  // namespace
}  // namespace hyperpipe::sim
