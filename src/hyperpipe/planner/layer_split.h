// Ways to cut the model's chain into stages without a search, as frameworks do today.
// Each returns the end layer of every stage (the last is the chain's length).
#pragma once

#include <vector>

namespace hyperpipe::planner {

// Megatron-LM / DeepSpeed "uniform": decoder blocks as evenly as possible (the first
// stages take the remainder), the embedding on the first stage and the head on the last.
// `layers` is the chain's length (blocks + 2).
std::vector<int> uniform_split(int layers, int stages);

// DeepSpeed "parameters" (partition_balanced): contiguous parts whose largest weight sum
// is as small as possible; ties go to the earliest such split.
std::vector<int> balanced_split(const std::vector<double>& weights, int stages);

// Decoder blocks in proportion to each stage's share (largest remainder, at least one
// block each when there are enough), embedding first and head last.
std::vector<int> proportional_split(int layers, const std::vector<double>& shares);

}  // namespace hyperpipe::planner
