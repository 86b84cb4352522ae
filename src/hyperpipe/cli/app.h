// The `hyperpipe` command: argument parsing, dispatch, and the mapping of errors to exit
// codes (0 success, 2 bad input or usage, 1 an internal failure).
#pragma once

#include <ostream>

namespace hyperpipe::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternalError = 1;
inline constexpr int kExitBadInput = 2;

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace hyperpipe::cli
