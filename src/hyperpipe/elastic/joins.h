// Devices that join an elastic run (`hyperpipe join`): the request and the launcher's
// answer travel as small files in CHECKPOINT_DIR/elastic/joins/, beside the checkpoints
// every process of the run already shares (a run across hosts resumes from them, so they
// are on a shared file system there too). The launcher, when a plan with the new device
// pays, asks the run's rank 0 to end after its next checkpoint (kHandoverFile), and
// resumes with that plan. Plain files and types: no libtorch.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"

namespace hyperpipe::elastic {

inline constexpr const char* kJoinsDirectory = "joins";
inline constexpr const char* kJoinFormat = "hyperpipe.join/1";
// Written by the launcher, read by rank 0 after each checkpoint (train
// --hand-over-on-request): end after this checkpoint, the launcher has another plan.
inline constexpr const char* kHandoverFile = "handover.json";
inline constexpr const char* kHandoverFormat = "hyperpipe.handover/1";

// The JSON object in `path`, or nothing when it is missing or not whole (files here are
// written by rename, so a reader sees all of one or none).
std::optional<nlohmann::json> read_whole_document(const std::string& path);

struct JoinAnswer {
  bool accepted = false;
  std::string message;  // what happens next, or why not
};

// Asks the launcher watching `elastic_dir` to take `device` (an id of the run's cluster).
void request_join(const std::string& elastic_dir, int device);

// The devices asked for and not yet answered, ascending.
std::vector<int> join_requests(const std::string& elastic_dir);

// The launcher's answer to the request for `device`.
void answer_join(const std::string& elastic_dir, int device, const JoinAnswer& answer);

// The answer to the request for `device`, once there is one.
std::optional<JoinAnswer> join_answer(const std::string& elastic_dir, int device);

// Offers `devices` to the launcher watching `elastic_dir` and waits up to `wait_seconds`
// for its answers, and for the directory itself (a launcher started a moment ago makes it
// only once its checks pass). The answers, by device (a device unanswered is missing, its
// request withdrawn so that a launcher started later does not take it); nothing when the
// directory never appeared.
std::optional<std::map<int, JoinAnswer>> offer_and_wait(const std::string& elastic_dir,
                                                        const std::vector<int>& devices,
                                                        double wait_seconds);

// Withdraws the request for `device` and any answer (a joiner that gave up waiting).
void withdraw_join(const std::string& elastic_dir, int device);

// Removes every request and answer (a launcher starting: none is for it).
void clear_joins(const std::string& elastic_dir);

// Why `device` cannot join a run of `cluster` whose devices are `in_run`; nothing when it
// can.
std::optional<std::string> join_refusal(const cluster::Cluster& cluster,
                                        const std::vector<int>& in_run, int device);

// Asks the run's rank 0 to end after its next checkpoint, for `reason`.
void request_handover(const std::string& elastic_dir, const std::string& reason);

// The reason of a pending hand-over request, if there is one.
std::optional<std::string> handover_requested(const std::string& elastic_dir);

// Withdraws the hand-over request (the launcher about to start the next plan's processes).
void clear_handover(const std::string& elastic_dir);

}  // namespace hyperpipe::elastic
