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

}  // namespace hyperpipe::model
