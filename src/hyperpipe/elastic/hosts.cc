#include "hyperpipe/elastic/hosts.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "hyperpipe/common/output_file.h"
#include "hyperpipe/elastic/joins.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kHeartbeatSuffix = ".json";

// A heartbeat rewritten a moment too late is harmless; one the thread's sleeping stops
// from being given up on is not: it sleeps in slices this long.
constexpr std::chrono::milliseconds kHeartbeatSlice{50};

fs::path round_file(const std::string& elastic_dir, const std::string& run, int number,
                    const std::string& suffix) {
  return fs::path(elastic_dir) / kRoundsDirectory / fmt::format("{}-{}{}", run, number, suffix);
}

const char* to_string(RoundState state) {
  switch (state) {
    case RoundState::kRunning:
      return "running";
    case RoundState::kFinished:
      return "finished";
    case RoundState::kEnded:
      return "ended";
  }
  return "ended";
}

json heartbeat_json(const Heartbeat& heartbeat) {
  return {{"format", kHeartbeatFormat},     {"name", heartbeat.name},
          {"instance", heartbeat.instance}, {"run", heartbeat.run},
          {"devices", heartbeat.devices},   {"address", heartbeat.address},
          {"beat", heartbeat.beat}};
}

}  // namespace

std::string new_instance_id() {
  std::random_device random("/dev/urandom");
  return fmt::format("{:08x}{:08x}", random(), random());
}

std::string heartbeat_path(const std::string& elastic_dir, const std::string& name) {
  if (name == kLeaderName) return (fs::path(elastic_dir) / kLeaderHeartbeatFile).string();
  return (fs::path(elastic_dir) / kAgentsDirectory / (name + kHeartbeatSuffix)).string();
}

std::optional<Heartbeat> read_heartbeat(const std::string& path) {
  const auto document = read_whole_document(path);
  if (!document || document->value("format", "") != kHeartbeatFormat) return std::nullopt;
  try {
    Heartbeat heartbeat;
    heartbeat.name = document->at("name").get<std::string>();
    heartbeat.instance = document->at("instance").get<std::string>();
    heartbeat.run = document->value("run", "");
    heartbeat.devices = document->at("devices").get<std::vector<int>>();
    heartbeat.address = document->value("address", "");
    heartbeat.beat = document->at("beat").get<int64_t>();
    return heartbeat;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::map<std::string, Heartbeat> read_agent_heartbeats(const std::string& elastic_dir) {
  std::map<std::string, Heartbeat> agents;
  std::error_code error;
  for (const auto& entry :
       fs::directory_iterator(fs::path(elastic_dir) / kAgentsDirectory, error)) {
    if (entry.path().extension() != kHeartbeatSuffix) continue;
    if (auto heartbeat = read_heartbeat(entry.path().string())) {
      agents[heartbeat->name] = std::move(*heartbeat);
    }
  }
  return agents;
}

Heartbeater::Heartbeater(std::string path, Heartbeat heartbeat)
    : path_(std::move(path)), heartbeat_(std::move(heartbeat)) {
  fs::create_directories(fs::path(path_).parent_path());
  write_file_atomically(path_, heartbeat_json(heartbeat_).dump() + "\n");
  thread_ = std::thread([this] {
    auto next = std::chrono::steady_clock::now() + kHeartbeatInterval;
    while (!stop_) {
      std::this_thread::sleep_for(kHeartbeatSlice);
      if (std::chrono::steady_clock::now() < next) continue;
      next += kHeartbeatInterval;
      ++heartbeat_.beat;
      try {
        write_file_atomically(path_, heartbeat_json(heartbeat_).dump() + "\n");
      } catch (const std::exception&) {
        // A file system that refuses a beat makes this side look gone to its peers,
        // which is what it is to them; the next beat tries again.
      }
    }
  });
}

Heartbeater::~Heartbeater() {
  stop_ = true;
  thread_.join();
  std::error_code error;
  fs::remove(path_, error);
}

void Liveness::see(const std::string& name, const std::optional<Heartbeat>& heartbeat,
                   Clock::time_point now) {
  if (!heartbeat) return;
  auto found = peers_.find(name);
  if (found == peers_.end() || found->second.instance != heartbeat->instance) {
    peers_[name] = Peer{heartbeat->instance, heartbeat->beat, false, now};
    return;
  }
  Peer& peer = found->second;
  if (peer.beat != heartbeat->beat) {
    peer.beat = heartbeat->beat;
    peer.changed = true;
    peer.last_change = now;
  }
}

bool Liveness::alive(const std::string& name, Clock::time_point now) const {
  const auto found = peers_.find(name);
  return found != peers_.end() && found->second.changed &&
         std::chrono::duration<double>(now - found->second.last_change).count() < timeout_;
}

std::optional<std::string> Liveness::instance(const std::string& name) const {
  const auto found = peers_.find(name);
  if (found == peers_.end() || !found->second.changed) return std::nullopt;
  return found->second.instance;
}

void write_round(const std::string& elastic_dir, const Round& round) {
  json assignments = json::array();
  for (const auto& a : round.assignments) {
    assignments.push_back({{"device", a.device},
                           {"rank", a.rank},
                           {"local_rank", a.local_rank},
                           {"host", a.host},
                           {"instance", a.instance}});
  }
  const json document{{"format", kRoundFormat},
                      {"run", round.run},
                      {"round", round.number},
                      {"state", to_string(round.state)},
                      {"reason", round.reason},
                      {"plan", round.plan},
                      {"directory", round.directory},
                      {"arguments", round.arguments},
                      {"master_addr", round.master_address},
                      {"master_port", round.port},
                      {"world_size", round.world_size},
                      {"assignments", assignments}};
  write_file_atomically((fs::path(elastic_dir) / kRoundFile).string(), document.dump(2) + "\n");
}

std::optional<Round> read_round(const std::string& elastic_dir) {
  const auto document = read_whole_document((fs::path(elastic_dir) / kRoundFile).string());
  if (!document || document->value("format", "") != kRoundFormat) return std::nullopt;
  try {
    Round round;
    round.run = document->at("run").get<std::string>();
    round.number = document->at("round").get<int>();
    const std::string state = document->at("state").get<std::string>();
    round.state = state == "running"    ? RoundState::kRunning
                  : state == "finished" ? RoundState::kFinished
                                        : RoundState::kEnded;
    round.reason = document->value("reason", "");
    round.plan = document->at("plan").get<std::string>();
    round.directory = document->value("directory", "");
    round.arguments = document->at("arguments").get<std::vector<std::string>>();
    round.master_address = document->at("master_addr").get<std::string>();
    round.port = document->at("master_port").get<int>();
    round.world_size = document->at("world_size").get<int>();
    for (const auto& a : document->at("assignments")) {
      round.assignments.push_back({a.at("device").get<int>(), a.at("rank").get<int>(),
                                   a.at("local_rank").get<int>(), a.at("host").get<std::string>(),
                                   a.value("instance", "")});
    }
    return round;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void request_round_stop(const std::string& elastic_dir, const std::string& run, int number) {
  const fs::path path = round_file(elastic_dir, run, number, ".stop");
  fs::create_directories(path.parent_path());
  write_file_atomically(path.string(), "{}\n");
}

bool round_stop_requested(const std::string& elastic_dir, const std::string& run, int number) {
  return fs::exists(round_file(elastic_dir, run, number, ".stop"));
}

void write_round_report(const std::string& elastic_dir, const std::string& run,
                        const RoundReport& report) {
  const fs::path path = round_file(elastic_dir, run, report.number, "." + report.host + ".json");
  fs::create_directories(path.parent_path());
  const json document{{"format", kRoundReportFormat},
                      {"host", report.host},
                      {"instance", report.instance},
                      {"round", report.number},
                      {"ranks", report.ranks},
                      {"codes", report.codes},
                      {"failed_rank", report.failed_rank},
                      {"exit_code", report.exit_code},
                      {"failure_seen", report.failure_seen}};
  write_file_atomically(path.string(), document.dump() + "\n");
}

std::optional<RoundReport> read_round_report(const std::string& elastic_dir, const std::string& run,
                                             int number, const std::string& host) {
  const auto document =
      read_whole_document(round_file(elastic_dir, run, number, "." + host + ".json").string());
  if (!document || document->value("format", "") != kRoundReportFormat) return std::nullopt;
  try {
    RoundReport report;
    report.host = document->at("host").get<std::string>();
    report.instance = document->value("instance", "");
    report.number = document->at("round").get<int>();
    report.ranks = document->at("ranks").get<std::vector<int>>();
    report.codes = document->at("codes").get<std::vector<int>>();
    report.failed_rank = document->at("failed_rank").get<int>();
    report.exit_code = document->at("exit_code").get<int>();
    report.failure_seen = document->at("failure_seen").get<double>();
    return report;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void clear_rounds(const std::string& elastic_dir) {
  fs::remove_all(fs::path(elastic_dir) / kRoundsDirectory);
  fs::remove(fs::path(elastic_dir) / kRoundFile);
}

}  // namespace hyperpipe::elastic
