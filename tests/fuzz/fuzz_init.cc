// libFuzzer's start-up hook, linked into every harness: the logger stays silent, so a
// fuzz run prints only libFuzzer's own lines and its findings.
#include "fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  hyperpipe::set_log_level("off");
  return 0;
}
