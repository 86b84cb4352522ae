#include "hyperpipe/planner/stage_search.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <random>

#include "planner/fake_oracle.h"

namespace hyperpipe::planner {
namespace {

using testing::FakeOracle;

// Brute force over the same plan space: every order of every subset of classes, every
// split into consecutive stages, every shape and every recomputation, memory checked with
// 1F1B's in-flight counts once the stage count is known; scored by the same objective.
// `stages` and `recompute`, where set, fix the stage count and every stage's recomputation.
double brute_force(const StageOracle& o, int micro_batches, int stages_wanted = 0,
                   std::optional<model::Recompute> recompute = std::nullopt) {
  double best = std::numeric_limits<double>::infinity();
  const int layers = o.num_layers();
  std::vector<StageChoice> stages;
  std::vector<bool> class_used(o.num_classes(), false);
  std::function<void(int, int, int)> extend = [&](int first, int cls, int used) {
    if (first == layers) {
      const int count = static_cast<int>(stages.size());
      if (stages_wanted != 0 && count != stages_wanted) return;
      for (int s = 0; s < count; ++s) {
        const auto& st = stages[s];
        if (!o.fits(st.cls, st.shape, st.first, st.end, st.recompute,
                    std::min(count - s, micro_batches))) {
          return;
        }
      }
      best = std::min(best, objective(stages, micro_batches));
      return;
    }
    // The next stage: the current class again, or a class not used yet.
    for (int next = 0; next < o.num_classes(); ++next) {
      const bool same = next == cls;
      if (!same && class_used[next]) continue;
      const int base = same ? used : 0;
      for (int g = 0; g < static_cast<int>(o.shapes(next).size()); ++g) {
        const int size = o.shapes(next)[g].size();
        if (base + size > o.class_size(next)) continue;
        for (int end = first + 1; end <= layers; ++end) {
          for (model::Recompute r : kRecomputeOptions) {
            if (recompute && r != *recompute) continue;
            if (!stages.empty()) {
              stages.back().link_after =
                  o.link_time(stages.back().cls, stages.back().shape, next, stages.back().end);
            }
            stages.push_back({next, g, first, end, r, o.stage_time(next, g, first, end, r), 0});
            const bool opened = !same;
            if (opened) class_used[next] = true;
            extend(end, next, base + size);
            if (opened) class_used[next] = false;
            stages.pop_back();
            if (!stages.empty()) stages.back().link_after = 0;
          }
        }
      }
    }
  };
  extend(0, -1, 0);
  return best;
}

class SearchMatchesBruteForce : public ::testing::TestWithParam<int> {};

TEST_P(SearchMatchesBruteForce, OnSmallRandomInstances) {
  std::mt19937 rng(GetParam());
  const std::vector<std::vector<int>> clusters{{2}, {1, 2}, {2, 2}, {1, 1, 1}, {2, 1, 3}, {3, 3}};
  for (const auto& counts : clusters) {
    for (int layers : {3, 5, 7}) {
      const FakeOracle oracle = FakeOracle::random(rng, layers, counts);
      for (int m : {1, 4, 16}) {
        const auto found = search_pipelines(oracle, {m, 32});
        const double expected = brute_force(oracle, m);
        if (std::isinf(expected)) {
          EXPECT_TRUE(found.empty());
          continue;
        }
        ASSERT_FALSE(found.empty());
        EXPECT_NEAR(found.front().objective, expected, 1e-9 * expected)
            << "seed " << GetParam() << " layers " << layers << " m " << m;
        // The reported objective is that of the reported stages.
        EXPECT_NEAR(objective(found.front().stages, m), found.front().objective, 1e-9 * expected);
      }
    }
  }
}

// The shape a user fixes (`plan --pp`, `--recompute`): the best pipeline of exactly that
// stage count, every stage recomputing as asked, or none where none exists.
TEST_P(SearchMatchesBruteForce, WithTheStageCountOrTheRecomputationFixed) {
  std::mt19937 rng(GetParam() + 100);
  const std::vector<std::vector<int>> clusters{{2}, {1, 2}, {2, 2}, {2, 1, 3}};
  for (const auto& counts : clusters) {
    for (int layers : {3, 6}) {
      const FakeOracle oracle = FakeOracle::random(rng, layers, counts);
      for (int m : {1, 4}) {
        for (int stages : {0, 1, 2, 3, 5}) {
          for (auto recompute :
               {std::optional<model::Recompute>{}, std::optional{model::Recompute::none},
                std::optional{model::Recompute::full}}) {
            if (stages == 0 && !recompute) continue;  // the search above
            SearchOptions options{m, 32};
            options.stages = stages;
            options.recompute = recompute;
            const auto found = search_pipelines(oracle, options);
            const double expected = brute_force(oracle, m, stages, recompute);
            const std::string where =
                fmt::format("seed {} layers {} m {} stages {} recompute {}", GetParam(), layers, m,
                            stages, recompute ? model::to_string(*recompute) : "-");
            if (std::isinf(expected)) {
              EXPECT_TRUE(found.empty()) << where;
              continue;
            }
            ASSERT_FALSE(found.empty()) << where;
            EXPECT_NEAR(found.front().objective, expected, 1e-9 * expected) << where;
            for (const auto& pipeline : found) {
              if (stages != 0) {
                EXPECT_EQ(pipeline.stages.size(), static_cast<size_t>(stages)) << where;
              }
              for (const auto& stage : pipeline.stages) {
                if (recompute) {
                  EXPECT_EQ(stage.recompute, *recompute) << where;
                }
              }
            }
          }
        }
      }
    }
  }
}

// Runners-up wanted only within a margin of the best: the search drops partial pipelines
// that cannot finish within it, and keeps every runner-up the unlimited search finds
// within it, the same pipelines with the same objectives; every order's best is unchanged.
TEST_P(SearchMatchesBruteForce, ARunnerUpMarginKeepsEveryRunnerUpWithinIt) {
  std::mt19937 rng(GetParam());
  constexpr double kMargin = 1.25;
  int compared = 0;
  for (const auto& counts : std::vector<std::vector<int>>{{2, 2}, {1, 1, 1}, {2, 1, 3}, {4, 4}}) {
    for (int layers : {5, 8}) {
      const FakeOracle oracle = FakeOracle::random(rng, layers, counts);
      for (int m : {1, 4, 16}) {
        SearchOptions every{m, 32};
        every.keep = 2;
        SearchOptions within = every;
        within.runner_up_margin = kMargin;
        std::vector<Pipeline> all_runners_up, kept_runners_up;
        const auto best = search_pipelines(oracle, every, &all_runners_up);
        const auto same_best = search_pipelines(oracle, within, &kept_runners_up);
        ASSERT_EQ(best.size(), same_best.size());
        for (size_t i = 0; i < best.size(); ++i) {
          EXPECT_EQ(best[i].objective, same_best[i].objective);
          EXPECT_EQ(best[i].order, same_best[i].order);
        }
        if (best.empty()) continue;
        const double limit = kMargin * best.front().objective;
        for (const auto& runner_up : all_runners_up) {
          if (runner_up.objective > limit) continue;
          ++compared;
          const auto found = std::find_if(kept_runners_up.begin(), kept_runners_up.end(),
                                          [&](const Pipeline& kept) {
                                            return kept.order == runner_up.order &&
                                                   kept.stages.size() == runner_up.stages.size() &&
                                                   kept.objective == runner_up.objective;
                                          });
          EXPECT_NE(found, kept_runners_up.end())
              << "seed " << GetParam() << ": a runner-up of " << runner_up.stages.size()
              << " stages within the margin was dropped";
        }
      }
    }
  }
  EXPECT_GT(compared, 0);  // the instances have runners-up within the margin to compare
}

// Alternatives (other arrangements the sweep met) add to the search's answer and change
// nothing in it: the same best pipelines and runners-up with or without them. Each is a
// pipeline of the space (every layer once, in order; each class's stages together, within
// its devices; every stage fitting with 1F1B's in-flight micro-batches), scored by the
// objective of its own stages, within the margin of its order's best, and none repeats
// its order's best, a runner-up or another alternative.
TEST_P(SearchMatchesBruteForce, AlternativesAreOtherValidPipelinesWithinTheMargin) {
  std::mt19937 rng(GetParam());
  constexpr double kMargin = 1.25;
  const auto same_layout = [](const Pipeline& a, const Pipeline& b) {
    return a.order == b.order &&
           std::equal(a.stages.begin(), a.stages.end(), b.stages.begin(), b.stages.end(),
                      [](const StageChoice& x, const StageChoice& y) {
                        return x.cls == y.cls && x.shape == y.shape && x.first == y.first &&
                               x.end == y.end && x.recompute == y.recompute;
                      });
  };
  int checked = 0;
  for (const auto& counts : std::vector<std::vector<int>>{{4}, {2, 2}, {2, 1, 3}, {4, 4}}) {
    for (int layers : {5, 8}) {
      const FakeOracle oracle = FakeOracle::random(rng, layers, counts);
      for (int m : {4, 16}) {
        SearchOptions options{m, 32};
        options.keep = 2;
        options.runner_up_margin = kMargin;
        std::vector<Pipeline> runners_up, with_runners_up, alternatives;
        const auto best = search_pipelines(oracle, options, &runners_up);
        const auto same_best = search_pipelines(oracle, options, &with_runners_up, &alternatives);
        ASSERT_EQ(best.size(), same_best.size());
        for (size_t i = 0; i < best.size(); ++i) EXPECT_TRUE(same_layout(best[i], same_best[i]));
        ASSERT_EQ(runners_up.size(), with_runners_up.size());
        for (size_t i = 0; i < runners_up.size(); ++i) {
          EXPECT_TRUE(same_layout(runners_up[i], with_runners_up[i]));
        }
        for (size_t a = 0; a < alternatives.size(); ++a) {
          const Pipeline& alternative = alternatives[a];
          const std::string where =
              fmt::format("seed {} layers {} m {} alternative {}", GetParam(), layers, m, a);
          ++checked;
          const auto order_best = std::find_if(best.begin(), best.end(), [&](const Pipeline& p) {
            return p.order == alternative.order;
          });
          ASSERT_NE(order_best, best.end()) << where << ": of an order with no best";
          EXPECT_LE(alternative.objective, kMargin * order_best->objective * (1 + 1e-12)) << where;
          EXPECT_FALSE(same_layout(alternative, *order_best)) << where;
          for (const auto& runner_up : runners_up) {
            EXPECT_FALSE(same_layout(alternative, runner_up)) << where;
          }
          for (size_t b = 0; b < a; ++b) {
            EXPECT_FALSE(same_layout(alternative, alternatives[b])) << where;
          }
          EXPECT_NEAR(objective(alternative.stages, m), alternative.objective,
                      1e-9 * alternative.objective)
              << where;
          // A pipeline of the space.
          const int count = static_cast<int>(alternative.stages.size());
          std::vector<int> used(oracle.num_classes(), 0);
          size_t in_order = 0;
          int next_layer = 0;
          for (int s = 0; s < count; ++s) {
            const StageChoice& stage = alternative.stages[s];
            EXPECT_EQ(stage.first, next_layer) << where;
            EXPECT_LT(stage.first, stage.end) << where;
            next_layer = stage.end;
            if (stage.cls != alternative.order[in_order]) ++in_order;
            ASSERT_LT(in_order, alternative.order.size()) << where;
            EXPECT_EQ(stage.cls, alternative.order[in_order]) << where;
            used[stage.cls] += oracle.shapes(stage.cls)[stage.shape].size();
            EXPECT_TRUE(oracle.fits(stage.cls, stage.shape, stage.first, stage.end, stage.recompute,
                                    std::min(count - s, m)))
                << where << ": stage " << s;
          }
          EXPECT_EQ(next_layer, layers) << where;
          EXPECT_EQ(in_order + 1, alternative.order.size()) << where;
          for (int c = 0; c < oracle.num_classes(); ++c) {
            EXPECT_LE(used[c], oracle.class_size(c)) << where;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);  // the instances have alternatives to check
}

INSTANTIATE_TEST_SUITE_P(Seeds, SearchMatchesBruteForce, ::testing::Values(1, 2, 3, 4));

TEST(StageSearch, FasterClassGetsMoreLayers) {
  FakeOracle o = FakeOracle::uniform(12, 1.0, 0.0, 0.0, 0.0);
  o.classes = {{1, 3.0, 1e9, {{1, 1}}}, {1, 1.0, 1e9, {{1, 1}}}};
  o.bandwidth = {{1, 1}, {1, 1}};
  const auto found = search_pipelines(o, {32, 32});
  ASSERT_FALSE(found.empty());
  const auto& stages = found.front().stages;
  ASSERT_EQ(stages.size(), 2u);
  const int fast = stages[0].cls == 0 ? 0 : 1;
  EXPECT_EQ(stages[fast].end - stages[fast].first, 9);  // 3× the speed, 3× the layers
}

TEST(StageSearch, HomogeneousClusterRecoversTheEvenSplit) {
  FakeOracle o = FakeOracle::uniform(16, 1.0, 1.0, 1.0, 0.01);
  o.classes = {{4, 1.0, 1e9, {{1, 1}}}};
  o.bandwidth = {{100}};
  const auto found = search_pipelines(o, {64, 32});
  ASSERT_FALSE(found.empty());
  ASSERT_EQ(found.front().stages.size(), 4u);
  for (const auto& stage : found.front().stages) EXPECT_EQ(stage.end - stage.first, 4);
}

TEST(StageSearch, TightMemoryBuysRecomputationOrMoreStages) {
  FakeOracle o = FakeOracle::uniform(8, 1.0, 0.1, 1.0, 0.01);
  // Eight layers, 4 micro-batches in flight on stage 0 without recomputation: 32 units of
  // activation; the memory holds 6.
  o.classes = {{2, 1.0, 6.0, {{1, 1}}}};
  o.bandwidth = {{100}};
  const auto found = search_pipelines(o, {4, 32});
  ASSERT_FALSE(found.empty());
  bool recomputes = false;
  for (const auto& stage : found.front().stages) {
    recomputes = recomputes || stage.recompute != model::Recompute::none;
  }
  EXPECT_TRUE(recomputes);
  // With no memory at all nothing fits.
  o.classes[0].memory = 0.05;
  EXPECT_TRUE(search_pipelines(o, {4, 32}).empty());
}

}  // namespace
}  // namespace hyperpipe::planner
