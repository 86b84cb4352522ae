// The sizes a layer's FLOPs and bytes are counted in, shared by its closed forms
// (layer.h) and its op list (layer_ops.h) so the two count alike.
#pragma once

#include <cstdint>

namespace hyperpipe::model {

inline constexpr double kFlopsPerMultiplyAdd = 2.0;
// Token ids are int64 in PyTorch; the embedding's backward and the loss keep them.
inline constexpr int64_t kTokenIdBytes = 8;
// Dropout masks are stored as one byte per element (Korthikanti et al., 2022, §4.1).
inline constexpr int64_t kDropoutMaskBytes = 1;
// Softmax cross-entropy keeps fp32 logits (Korthikanti et al., 2022, §4.3: 4·s·b·v/t).
inline constexpr int64_t kLogitBytes = 4;

}  // namespace hyperpipe::model
