#include "hyperpipe/model/dtype.h"

namespace hyperpipe::model {

int bytes_per_element(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return 4;
    case DType::fp16:
    case DType::bf16:
      return 2;
  }
  return 4;
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::fp16:
      return "fp16";
    case DType::bf16:
      return "bf16";
  }
  return "fp32";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32" || name == "float") return DType::fp32;
  if (name == "fp16" || name == "float16" || name == "half") return DType::fp16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  return std::nullopt;
}

std::vector<std::string> dtype_names() {
  return {"fp32", "fp16", "bf16"};
}

bool keeps_fp32_masters(DType dtype) {
  return dtype == DType::fp16 || dtype == DType::bf16;
}

std::optional<DType> costed_dtype(std::string_view run_dtype) {
  return parse_dtype(run_dtype == "fp64" ? "fp32" : run_dtype);
}

}  // namespace hyperpipe::model
