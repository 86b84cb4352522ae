// An elastic run across hosts: the leader (`hyperpipe launch --elastic --devices-here`) and
// one agent per other host (`hyperpipe agent`) meet through small files in
// CHECKPOINT_DIR/elastic/, which every host shares because the run resumes from it (the
// same path as `hyperpipe join`, joins.h). Each side heartbeats a file of its own;
// the leader writes each round (the plan, where rank 0 listens, each device's rank and
// host) and, when its side fails, a stop marker; each agent starts its devices' ranks
// and reports how they ended. A host whose heartbeat stops is gone, with its devices.
// Plain files and types: no libtorch.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace hyperpipe::elastic {

inline constexpr const char* kAgentsDirectory = "agents";
inline constexpr const char* kHeartbeatFormat = "hyperpipe.heartbeat/1";
inline constexpr const char* kLeaderHeartbeatFile = "leader.json";
inline constexpr const char* kRoundFile = "round.json";
inline constexpr const char* kRoundFormat = "hyperpipe.round/1";
inline constexpr const char* kRoundsDirectory = "rounds";
inline constexpr const char* kRoundReportFormat = "hyperpipe.round-report/1";
// The name the leader goes by in a round's assignments (an agent may not take it).
inline constexpr const char* kLeaderName = "leader";

// How often a side rewrites its heartbeat. Half a second keeps detection within the
// issue's 5 s on the default timeout while costing a shared file system two small writes
// a second per host.
inline constexpr std::chrono::milliseconds kHeartbeatInterval{500};
// A side whose heartbeat has not changed for this long is gone: six missed beats, so a
// loaded host or a slow file system does not lose a live peer.
inline constexpr double kDefaultHeartbeatTimeoutSeconds = 3;

// What a side says about itself, every kHeartbeatInterval.
struct Heartbeat {
  std::string name;      // the agent's name, or kLeaderName
  std::string instance;  // fresh each time the process starts: a restarted agent is new
  std::string run;       // the leader's: the run's id (a fresh one per leader start)
  std::vector<int>
      devices;          // the devices it offers (ids of the run's cluster), in LOCAL_RANK order
  std::string address;  // where its rank 0, if it had it, would listen
  int64_t beat = 0;     // counts up: a peer is alive while it changes
};

// A fresh id for a process's instance or a run: 64 bits from the kernel's random source.
std::string new_instance_id();

std::string heartbeat_path(const std::string& elastic_dir, const std::string& name);

// The heartbeat in `path`, if there is a whole one.
std::optional<Heartbeat> read_heartbeat(const std::string& path);

// Every agent's heartbeat in `elastic_dir`, by name.
std::map<std::string, Heartbeat> read_agent_heartbeats(const std::string& elastic_dir);

// Rewrites a heartbeat file every kHeartbeatInterval on a thread of its own until
// destroyed (then removes it: a side that ends says so at once).
class Heartbeater {
 public:
  Heartbeater(std::string path, Heartbeat heartbeat);
  ~Heartbeater();
  Heartbeater(const Heartbeater&) = delete;
  Heartbeater& operator=(const Heartbeater&) = delete;

 private:
  std::string path_;
  Heartbeat heartbeat_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Which peers are alive, on this host's clock alone (hosts' clocks may differ): a peer is
// alive from the first change of its beat seen until its beat stops changing for the
// timeout. A file left by a process gone before this one started is never alive.
class Liveness {
 public:
  explicit Liveness(double timeout_seconds) : timeout_(timeout_seconds) {}
  using Clock = std::chrono::steady_clock;

  // Takes in what `heartbeat` says now (missing: nothing; a new instance starts over).
  void see(const std::string& name, const std::optional<Heartbeat>& heartbeat,
           Clock::time_point now = Clock::now());
  bool alive(const std::string& name, Clock::time_point now = Clock::now()) const;
  // The instance seen alive last, if any.
  std::optional<std::string> instance(const std::string& name) const;
  double timeout_seconds() const { return timeout_; }

 private:
  struct Peer {
    std::string instance;
    int64_t beat = 0;
    bool changed = false;  // its beat changed since first seen
    Clock::time_point last_change;
  };
  double timeout_;
  std::map<std::string, Peer> peers_;
};

// One device of a round: its global rank, which host starts it (kLeaderName or an
// agent's name, with that agent's instance) and its LOCAL_RANK there.
struct RoundAssignment {
  int device = 0;
  int rank = 0;
  int local_rank = 0;
  std::string host;
  std::string instance;
};

enum class RoundState { kRunning, kFinished, kEnded };

// What the leader asks of every host for one round of the run.
struct Round {
  std::string run;
  int number = 0;
  RoundState state = RoundState::kRunning;
  std::string reason;     // kEnded: why the run ended
  std::string plan;       // the plan file
  std::string directory;  // the leader's working directory (relative paths are from it)
  std::vector<std::string> arguments;  // for `hyperpipe train`, after --plan
  std::string master_address;
  int port = 0;
  int world_size = 0;
  std::vector<RoundAssignment> assignments;
};

void write_round(const std::string& elastic_dir, const Round& round);
std::optional<Round> read_round(const std::string& elastic_dir);

// The leader's side of round `number` failed or stopped: every host stops its ranks.
void request_round_stop(const std::string& elastic_dir, const std::string& run, int number);
bool round_stop_requested(const std::string& elastic_dir, const std::string& run, int number);

// How one host's ranks of a round ended.
struct RoundReport {
  std::string host;
  std::string instance;
  int number = 0;
  std::vector<int> ranks;
  std::vector<int> codes;  // per rank
  int failed_rank = -1;    // its first rank to fail on its own (not on being stopped)
  int exit_code = 0;
  double failure_seen = 0;  // epoch seconds on its host's clock
};

void write_round_report(const std::string& elastic_dir, const std::string& run,
                        const RoundReport& report);
std::optional<RoundReport> read_round_report(const std::string& elastic_dir, const std::string& run,
                                             int number, const std::string& host);

// Removes every round, stop marker and report (a leader starting a run).
void clear_rounds(const std::string& elastic_dir);

}  // namespace hyperpipe::elastic
