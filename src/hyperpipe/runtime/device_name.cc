#include "hyperpipe/runtime/device_name.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"

namespace hyperpipe::runtime {
namespace {

// More digits than any machine has devices: refused before std::stoi could overflow.
constexpr size_t kMaxDeviceDigits = 4;

}  // namespace

torch::Device parse_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  int index = 0;
  if (name != "cuda") {
    const std::string prefix = "cuda:";
    const std::string number = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : "";
    if (number.empty() || number.size() > kMaxDeviceDigits ||
        number.find_first_not_of("0123456789") != std::string::npos) {
      throw InputError("--device", name, "cpu, cuda or cuda:N");
    }
    index = std::stoi(number);
  }
  if (!torch::cuda::is_available()) {
    throw InputError("--device", name, "cpu: this libtorch or machine has no CUDA");
  }
  if (index >= static_cast<int>(torch::cuda::device_count())) {
    throw InputError("--device", name,
                     fmt::format("a CUDA device below {}", torch::cuda::device_count()));
  }
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(index)};
}

}  // namespace hyperpipe::runtime
