#include "hyperpipe/planner/layer_split.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace hyperpipe::planner {
namespace {

// Stage ends from blocks per stage: the embedding (layer 0) joins the first stage and the
// head (the last layer) the last one.
std::vector<int> ends_from_blocks(const std::vector<int>& blocks) {
  std::vector<int> ends;
  int end = 1;  // after the embedding
  for (int count : blocks) {
    end += count;
    ends.push_back(end);
  }
  ends.back() += 1;  // the head
  return ends;
}

void check(int layers, int stages) {
  if (stages < 1 || stages > layers - 2) {
    throw std::invalid_argument("cannot cut the layers into that many stages");
  }
}

}  // namespace

std::vector<int> uniform_split(int layers, int stages) {
  check(layers, stages);
  const int blocks = layers - 2;
  std::vector<int> counts(stages, blocks / stages);
  for (int s = 0; s < blocks % stages; ++s) ++counts[s];
  return ends_from_blocks(counts);
}

std::vector<int> balanced_split(const std::vector<double>& weights, int stages) {
  const int n = static_cast<int>(weights.size());
  if (stages < 1 || stages > n) throw std::invalid_argument("cannot cut into that many stages");
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + weights[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][i]: smallest largest part for the first i layers in s parts.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= n; ++i) {
      for (int j = s - 1; j < i; ++j) {
        const double worst = std::max(best[s - 1][j], prefix[i] - prefix[j]);
        if (worst < best[s][i]) {
          best[s][i] = worst;
          cut[s][i] = j;
        }
      }
    }
  }
  std::vector<int> ends(stages);
  for (int s = stages, i = n; s >= 1; --s) {
    ends[s - 1] = i;
    i = cut[s][i];
  }
  return ends;
}

std::vector<int> proportional_split(int layers, const std::vector<double>& shares) {
  const int stages = static_cast<int>(shares.size());
  check(layers, stages);
  const int blocks = layers - 2;
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  std::vector<int> counts(stages, blocks >= stages ? 1 : 0);
  int left = blocks - std::accumulate(counts.begin(), counts.end(), 0);
  std::vector<double> exact(stages);
  for (int s = 0; s < stages; ++s) {
    exact[s] = std::max(0.0, shares[s] / total * blocks - counts[s]);
    const int whole = std::min(left, static_cast<int>(std::floor(exact[s])));
    counts[s] += whole;
    left -= whole;
  }
  std::vector<int> by_remainder(stages);
  std::iota(by_remainder.begin(), by_remainder.end(), 0);
  std::stable_sort(by_remainder.begin(), by_remainder.end(), [&](int a, int b) {
    return exact[a] - std::floor(exact[a]) > exact[b] - std::floor(exact[b]);
  });
  for (int i = 0; left > 0; i = (i + 1) % stages, --left) ++counts[by_remainder[i]];
  return ends_from_blocks(counts);
}

}  // namespace hyperpipe::planner
