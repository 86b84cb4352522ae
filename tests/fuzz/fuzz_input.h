// What every fuzz harness shares (fuzz_init.cc silences the logger): the input as text, and
// the rule that an InputError (a clear message for the user) is a correct answer while any
// other exception, a crash or a sanitizer report is a defect for libFuzzer to keep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"

namespace hyperpipe::fuzz {

inline void silence_logger() {
  set_log_level("off");
}

// Runs `action` on the input as text; InputError is the expected way to refuse it.
template <typename Action>
int run_on_text(const uint8_t* data, size_t size, Action&& action) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    action(text);
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace hyperpipe::fuzz
