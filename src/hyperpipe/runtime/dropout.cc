#include "hyperpipe/runtime/dropout.h"

#include <ATen/CPUGeneratorImpl.h>

#include <utility>
#include <vector>

namespace hyperpipe::runtime {
namespace {

thread_local std::optional<DropoutPlace> current_place;

// SplitMix64's finaliser (Steele et al., 2014): neighbouring indices give unrelated seeds.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t seed_of(const DropoutPlace& place, int layer, DropoutSite site, int64_t sample,
                 int64_t head) {
  uint64_t h = mix(place.seed);
  for (const int64_t part : {place.step, static_cast<int64_t>(layer), static_cast<int64_t>(site),
                             place.first_sample + sample, head}) {
    h = mix(h ^ static_cast<uint64_t>(part));
  }
  return h;
}

// Ones where an element is kept, as bool, shaped as `like` [b, rest…]; `units` per row
// (heads for attention) each drawn from its own generator.
torch::Tensor keep_mask(const torch::Tensor& like, const DropoutPlace& place, int layer,
                        DropoutSite site, int64_t units, int64_t first_unit) {
  const int64_t rows = like.size(0);
  std::vector<torch::Tensor> masks;
  masks.reserve(static_cast<size_t>(rows * units));
  const size_t leading = site == DropoutSite::attention ? 2 : 1;  // [b] or [b, heads]
  const auto unit_shape = like.sizes().slice(leading).vec();
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t unit = 0; unit < units; ++unit) {
      auto generator =
          at::detail::createCPUGenerator(seed_of(place, layer, site, row, first_unit + unit));
      masks.push_back(torch::empty(unit_shape, torch::kFloat)
                          .bernoulli_(1.0 - kDropoutRate, generator)
                          .to(torch::kBool));
    }
  }
  return torch::stack(masks).view(like.sizes()).to(like.device());
}

torch::Tensor apply(const torch::Tensor& x, const torch::Tensor& keep) {
  return x.masked_fill(keep.logical_not(), 0) * (1.0 / (1.0 - kDropoutRate));
}

}  // namespace

DropoutScope::DropoutScope(std::optional<DropoutPlace> place)
    : previous_(std::exchange(current_place, place)) {}

DropoutScope::~DropoutScope() {
  current_place = previous_;
}

std::optional<DropoutPlace> current_dropout_place() {
  return current_place;
}

torch::Tensor dropout(const torch::Tensor& x, int layer, DropoutSite site,
                      std::optional<SequencePart> part) {
  if (!current_place) return x;
  if (!part) return apply(x, keep_mask(x, *current_place, layer, site, 1, 0));
  auto shape = x.sizes().vec();
  shape[1] = part->whole;
  const auto whole = torch::empty(shape, x.options().device(torch::kCPU).dtype(torch::kBool));
  const auto mask = keep_mask(whole, *current_place, layer, site, 1, 0);
  return apply(x, mask.narrow(1, part->first, x.size(1)).to(x.device()));
}

torch::Tensor attention_dropout(const torch::Tensor& probabilities, int layer, int64_t first_head) {
  if (!current_place) return probabilities;
  return apply(probabilities, keep_mask(probabilities, *current_place, layer,
                                        DropoutSite::attention, probabilities.size(1), first_head));
}

}  // namespace hyperpipe::runtime
