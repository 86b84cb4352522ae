// Starts the processes of a run on this machine, like torchrun: one copy of a command
// per rank with the rendezvous variables set, their output forwarded line by line with
// the rank in front, and all of them stopped as soon as one fails.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/common/rendezvous.h"  // kJobTokenVariable: the run's secret

namespace hyperpipe::launch {

struct LaunchSpec {
  std::vector<std::string> command;  // program and arguments, the same for every rank
  int processes = 1;
  // A run across hosts, each with a launcher of its own: the global rank of each process
  // started here (empty: 0 to processes - 1) and the run's world size (0: processes).
  std::vector<int> ranks;
  int world_size = 0;
  std::string address = "127.0.0.1";
  int port = 0;                                    // 0: a free port of this machine
  std::map<std::string, std::string> environment;  // added to every process's
  // After the first failure, how long the others get to exit after SIGTERM before SIGKILL.
  std::chrono::milliseconds grace{5000};
  // When set, this rank's stdout passes to `out` as it is (a JSON document a script
  // reads), and every other rank's stdout goes to `err` with the rank in front.
  int raw_stdout_rank = -1;
  // One process whose output is the launcher's own (a pre-flight check, a help text): its
  // lines pass as they are, without "[rank 0] ", and the launcher adds no "[launch]" lines.
  bool bare = false;
  // LOCAL_RANK of each rank (which CUDA device it drives on this machine); empty: its
  // rank. An elastic restart keeps each device's process on the GPU it had.
  std::vector<int> local_ranks;
  // An exit code that is not a failure: the process checkpointed and ended for the run to
  // go on with another plan (-1: none).
  int handover_exit_code = -1;
  // Called on the launcher's thread every time it looks for output and exits (about every
  // 50 ms) while the processes run.
  std::function<void()> tick;
  // Asked right after each tick: once true, every process is stopped as on a forwarded
  // SIGTERM (SIGKILL after `grace`), and those that end on it have not failed (another
  // host's side of the run failed, say).
  std::function<bool()> stop_when;
};

struct LaunchResult {
  int exit_code = 0;       // 0, or the first failing rank's (128 + signal when killed)
  int failed_rank = -1;    // the first rank to fail (a global rank), -1 when none did
  std::vector<int> codes;  // per process started, in the order of LaunchSpec::ranks
  int signal = 0;          // the stop signal forwarded to the workers, 0 if none
  // The first error line any process wrote to stderr ("error: …" or the logger's
  // "[error] …"), without that prefix, and its rank (-1: none). When a process fails on
  // its own input, the others fail after it on losing it; its line comes first.
  int first_error_rank = -1;
  std::string first_error;
  // The rank a report blames for the failure, its exit code and its message (empty when it
  // wrote none): the first to write an error when it failed too, unless the first to fail
  // was killed outright (its survivors' errors only say they lost it).
  int blamed_rank = -1;
  int blamed_code = 0;
  std::string blamed_message;
  bool stopped = false;  // stop_when asked for the stop
  // Wall-clock times (std::chrono::system_clock): when the failed rank was seen to have
  // exited, and when the last process had.
  std::chrono::system_clock::time_point failure_seen;
  std::chrono::system_clock::time_point all_exited;
};

// Blocks until every process has exited. The first rank to fail is the one whose exit was
// seen first; of several seen at once, one a signal ended (a process killed outright)
// before those that exited on their own (typically on losing it). SIGINT, SIGTERM or SIGHUP
// received meanwhile is forwarded to every process (a second one, or `grace` later, SIGKILL), and
// the exit code becomes 128 + that signal unless a rank failed first. Every process gets
// HYPERPIPE_LAUNCHER_PID, so it can die with the launcher (parent_watch.h), and
// HYPERPIPE_JOB_TOKEN, a fresh secret of the run (unless the launcher's environment has
// one), under which the run keeps its rendezvous keys. Lines are written to
// `out` (stdout) and `err` (stderr) as "[rank 3] text". Throws std::runtime_error when a process
// cannot start.
LaunchResult launch_processes(const LaunchSpec& spec, std::ostream& out, std::ostream& err);

// "rank 0 of 3 failed (exit code 2): --data: …": the blamed rank of a failed run, for the
// launcher's last line.
std::string failure_summary(const LaunchResult& result, int world_size);

// A TCP port that was free a moment ago on 127.0.0.1.
int free_port();

// Whether a server could listen on `port` on every interface now.
bool port_is_free(int port);

}  // namespace hyperpipe::launch
