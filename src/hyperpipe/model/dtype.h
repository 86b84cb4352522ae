// Numeric formats of weights and activations.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hyperpipe::model {

enum class DType { fp32, fp16, bf16 };

int bytes_per_element(DType dtype);
std::string_view to_string(DType dtype);
// Accepts our names (fp32, fp16, bf16) and PyTorch's (float32, float16, bfloat16, half).
std::optional<DType> parse_dtype(std::string_view name);
// The canonical names, for error messages.
std::vector<std::string> dtype_names();

// The precision policy of training, in one place (Megatron-LM's mixed precision): weights
// of a 16-bit type keep fp32 masters, fp32 main grads and fp32 AdamW state; fp32 weights
// are their own masters. The cost model counts the bytes and the runtime keeps the
// tensors by it.
bool keeps_fp32_masters(DType dtype);

// A run's dtype (`train --dtype`: bf16, fp16, fp32, or fp64 to compare runs exactly) as
// the cost model costs it: fp64 as fp32 (the GPU types have no fp64 peaks). Nothing for a
// name that is no dtype.
std::optional<DType> costed_dtype(std::string_view run_dtype);

}  // namespace hyperpipe::model
