// A hand-written product of two 192² float matrices, vectorised by the compiler for this
// host: a fixed piece of compute whose time shows the host's speed, free of any library.
#pragma once

#include <functional>
#include <memory>
#include <vector>

namespace hyperpipe::bench {

// 192² floats: three matrices fit in a core's L2.
constexpr int kSide = 192;

inline std::function<void()> vector_product() {
  auto m = std::make_shared<std::vector<float>>(3 * kSide * kSide, 0.5f);
  return [m] {
    float* a = m->data();
    float* b = a + kSide * kSide;
    float* c = b + kSide * kSide;
    for (int i = 0; i < kSide; ++i) {
      for (int k = 0; k < kSide; ++k) {
        for (int j = 0; j < kSide; ++j) c[i * kSide + j] += a[i * kSide + k] * b[k * kSide + j];
      }
    }
  };
}

}  // namespace hyperpipe::bench
