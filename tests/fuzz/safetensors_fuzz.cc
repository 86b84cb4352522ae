// Fuzzes the safetensors header reader: any bytes are a file of that size, and every entry
// it accepts lies inside the file.
#include <cstdlib>
#include <span>

#include "fuzz_input.h"
#include "hyperpipe/weights/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const auto header = hyperpipe::weights::parse_safetensors_header(bytes, size, "fuzz");
    for (const auto& entry : header.tensors) {
      if (header.data_offset + entry.end > size) std::abort();  // a read out of bounds
    }
  } catch (const hyperpipe::InputError&) {
  }
  return 0;
}
