#include "hyperpipe/elastic/blame.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>

#include "hyperpipe/common/exit_codes.h"
#include "hyperpipe/common/stop_signals.h"

namespace hyperpipe::elastic {

RoundEnd read_round_end(const launch::LaunchResult& result, int handover_code) {
  const bool handed_over = result.failed_rank < 0 && !result.signal &&
                           std::count(result.codes.begin(), result.codes.end(), handover_code) > 0;
  if (handed_over) return RoundEnd::kHandedOver;
  if (result.exit_code == 0 && !result.stopped) return RoundEnd::kFinished;
  if (result.signal && result.failed_rank < 0) return RoundEnd::kStopped;
  if (result.failed_rank < 0) return RoundEnd::kUnblamed;
  if (result.exit_code == kExitBadInput) return RoundEnd::kInputsRefused;
  return RoundEnd::kRankLost;
}

std::optional<CommandFailed> ending_of(RoundEnd end, const launch::LaunchResult& result) {
  switch (end) {
    case RoundEnd::kStopped:
      return CommandFailed(fmt::format("stopped by {}: every worker stopped after its step",
                                       signal_name(result.signal)),
                           result.exit_code);
    case RoundEnd::kUnblamed:
      return CommandFailed("the run's processes were stopped with no failure to blame",
                           kExitInternalError);
    case RoundEnd::kInputsRefused:
      return CommandFailed(fmt::format("rank {} refused its inputs (exit code {}); not restarting: "
                                       "a restart would refuse them too",
                                       result.failed_rank, result.exit_code),
                           result.exit_code);
    case RoundEnd::kFinished:
    case RoundEnd::kHandedOver:
    case RoundEnd::kRankLost:
      return std::nullopt;
  }
  return std::nullopt;
}

bool ended_by_own_signal(int exit_code) {
  return exit_code > 128 && exit_code != 128 + SIGTERM;
}

std::optional<RankFailure> failure_to_blame(const std::vector<RankFailure>& failures) {
  if (failures.empty()) return std::nullopt;
  return *std::min_element(failures.begin(), failures.end(),
                           [](const RankFailure& a, const RankFailure& b) {
                             const bool a_own = ended_by_own_signal(a.exit_code);
                             const bool b_own = ended_by_own_signal(b.exit_code);
                             return a_own != b_own ? a_own : a.seen < b.seen;
                           });
}

}  // namespace hyperpipe::elastic
