// How an elastic run reads the end of a round: whether it finished, handed over to another
// plan, was stopped, or lost a rank, and which rank is blamed when ranks on several hosts
// failed. Plain types: the rules that decide, apart from the processes they read.
#pragma once

#include <optional>
#include <vector>

#include "hyperpipe/common/exit_codes.h"
#include "hyperpipe/launch/process_launcher.h"

namespace hyperpipe::elastic {

enum class RoundEnd {
  kFinished,       // every rank exited 0
  kHandedOver,     // a rank ended with the hand-over code after a checkpoint; none failed
  kStopped,        // a stop signal (Ctrl-C) reached every rank; none failed on its own
  kUnblamed,       // the ranks were stopped with no failure to blame
  kInputsRefused,  // the first rank to fail refused its inputs: a restart would too
  kRankLost,       // a rank failed: its device is lost, the run goes on without it
};

// What the round whose ranks ended as `result` (codes and the rank blamed merged over
// every host) means for the run; `handover_code`: the code a rank ends with to hand over.
RoundEnd read_round_end(const launch::LaunchResult& result, int handover_code);

// The error a run ends with after a round that ended `end` (stopped by a signal, stopped
// with no failure to blame, or a rank that refused its inputs, which a restart would
// refuse too), with its exit code; nothing for a round the run goes on from.
std::optional<CommandFailed> ending_of(RoundEnd end, const launch::LaunchResult& result);

// A process a signal ended other than the stop the launchers send (SIGKILL, SIGSEGV, an
// OOM kill) failed on its own; the others most likely failed on losing it.
bool ended_by_own_signal(int exit_code);

// One host's first failure in a round.
struct RankFailure {
  int rank = -1;
  int exit_code = 0;
  double seen = 0;  // epoch seconds, on that host's clock
};

// The failure to blame of the hosts' first failures: one a signal ended on its own before
// any other, then the earliest seen (each host's clock; hosts of one cluster keep theirs in
// step by NTP). Nothing when there is none.
std::optional<RankFailure> failure_to_blame(const std::vector<RankFailure>& failures);

}  // namespace hyperpipe::elastic
