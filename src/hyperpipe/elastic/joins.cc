#include "hyperpipe/elastic/joins.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "hyperpipe/common/output_file.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// How often a joiner looks for the answers: the launcher looks for requests as often.
constexpr auto kAnswerPoll = std::chrono::milliseconds(100);

constexpr const char* kRequestSuffix = ".request.json";
constexpr const char* kAnswerSuffix = ".answer.json";

fs::path joins_dir(const std::string& elastic_dir) {
  return fs::path(elastic_dir) / kJoinsDirectory;
}

fs::path request_path(const std::string& elastic_dir, int device) {
  return joins_dir(elastic_dir) / fmt::format("device-{}{}", device, kRequestSuffix);
}

fs::path answer_path(const std::string& elastic_dir, int device) {
  return joins_dir(elastic_dir) / fmt::format("device-{}{}", device, kAnswerSuffix);
}

}  // namespace

std::optional<json> read_whole_document(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  json document = json::parse(in, nullptr, false);
  if (document.is_discarded() || !document.is_object()) return std::nullopt;
  return document;
}

void request_join(const std::string& elastic_dir, int device) {
  fs::create_directories(joins_dir(elastic_dir));
  fs::remove(answer_path(elastic_dir, device));
  write_file_atomically(request_path(elastic_dir, device).string(),
                        json{{"format", kJoinFormat}, {"device", device}}.dump() + "\n");
}

std::vector<int> join_requests(const std::string& elastic_dir) {
  std::vector<int> devices;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(joins_dir(elastic_dir), error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= std::string(kRequestSuffix).size() ||
        name.compare(name.size() - std::string(kRequestSuffix).size(), std::string::npos,
                     kRequestSuffix) != 0) {
      continue;
    }
    const auto request = read_whole_document(entry.path().string());
    if (!request || request->value("format", "") != kJoinFormat ||
        !(*request)["device"].is_number_integer()) {
      continue;
    }
    const int device = (*request)["device"].get<int>();
    if (!fs::exists(answer_path(elastic_dir, device))) devices.push_back(device);
  }
  std::sort(devices.begin(), devices.end());
  return devices;
}

void answer_join(const std::string& elastic_dir, int device, const JoinAnswer& answer) {
  write_file_atomically(answer_path(elastic_dir, device).string(),
                        json{{"format", kJoinFormat},
                             {"device", device},
                             {"accepted", answer.accepted},
                             {"message", answer.message}}
                                .dump() +
                            "\n");
}

std::optional<JoinAnswer> join_answer(const std::string& elastic_dir, int device) {
  const auto document = read_whole_document(answer_path(elastic_dir, device).string());
  if (!document || !(*document)["accepted"].is_boolean()) return std::nullopt;
  return JoinAnswer{(*document)["accepted"].get<bool>(), document->value("message", "")};
}

void withdraw_join(const std::string& elastic_dir, int device) {
  fs::remove(request_path(elastic_dir, device));
  fs::remove(answer_path(elastic_dir, device));
}

std::optional<std::map<int, JoinAnswer>> offer_and_wait(const std::string& elastic_dir,
                                                        const std::vector<int>& devices,
                                                        double wait_seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(wait_seconds * 1e3));
  while (!fs::is_directory(elastic_dir) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kAnswerPoll);
  }
  if (!fs::is_directory(elastic_dir)) return std::nullopt;
  for (int device : devices) request_join(elastic_dir, device);
  std::map<int, JoinAnswer> answers;
  while (answers.size() < devices.size() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kAnswerPoll);
    for (int device : devices) {
      if (answers.count(device)) continue;
      if (auto answer = join_answer(elastic_dir, device)) answers[device] = *answer;
    }
  }
  // Answered, or given up on (a launcher started later must not take it): done with.
  for (int device : devices) withdraw_join(elastic_dir, device);
  return answers;
}

void clear_joins(const std::string& elastic_dir) {
  fs::remove_all(joins_dir(elastic_dir));
}

std::optional<std::string> join_refusal(const cluster::Cluster& cluster,
                                        const std::vector<int>& in_run, int device) {
  const int count = static_cast<int>(cluster.devices().size());
  if (device < 0 || device >= count) {
    return fmt::format("the run's cluster {} has devices 0 to {}; there is no device {}",
                       cluster.name(), count - 1, device);
  }
  if (std::find(in_run.begin(), in_run.end(), device) != in_run.end()) {
    return fmt::format("device {} is in the run already", device);
  }
  return std::nullopt;
}

void request_handover(const std::string& elastic_dir, const std::string& reason) {
  write_file_atomically((fs::path(elastic_dir) / kHandoverFile).string(),
                        json{{"format", kHandoverFormat}, {"reason", reason}}.dump() + "\n");
}

std::optional<std::string> handover_requested(const std::string& elastic_dir) {
  const auto document = read_whole_document((fs::path(elastic_dir) / kHandoverFile).string());
  if (!document || document->value("format", "") != kHandoverFormat) return std::nullopt;
  return document->value("reason", "the launcher asks");
}

void clear_handover(const std::string& elastic_dir) {
  fs::remove(fs::path(elastic_dir) / kHandoverFile);
}

}  // namespace hyperpipe::elastic
