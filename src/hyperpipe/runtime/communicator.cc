#include "hyperpipe/runtime/communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#ifdef HYPERPIPE_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "hyperpipe/common/log.h"
#include "hyperpipe/common/text_excerpt.h"
#include "hyperpipe/runtime/store_listener.h"

namespace hyperpipe::runtime {
namespace {

// How often the watchdog looks for a failure report; the reporter stays up this long
// times kReportLinger before exiting, so every watchdog reads its report.
constexpr std::chrono::milliseconds kWatchdogPoll{100};
constexpr int kReportLinger = 5;
constexpr const char* kFailureKey = "failure";
constexpr const char* kFailureCount = "failures";
// How often the watchdog reads every peer's heartbeat; a peer whose count has not moved
// for the run's timeout has died or hangs.
constexpr std::chrono::milliseconds kHeartbeatCheck{1000};
// The longest a single transfer or collective may wait on a peer whose heartbeat goes on:
// a slow first step (a large vocabulary on a CPU stand-in takes minutes) is not a death,
// which the heartbeats detect within the run's timeout instead.
constexpr std::chrono::minutes kLongestWait{30};
// The least time every rank gets to join: starting a process that loads libtorch takes
// 1-2 s on an idle development machine, several on a loaded one.
constexpr std::chrono::seconds kSlowestStart{10};
// Longest failure report shown from the store (a report names a rank, a transfer and the
// silent ranks: a few hundred characters).
constexpr size_t kMaxReportChars = 500;

}  // namespace

namespace {

// Gloo's and NCCL's process groups, under the ProcessGroup facade's backend base.
using Group = c10d::Backend;

std::string join(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ","));
}

class C10dPending final : public Pending {
 public:
  C10dPending(c10::intrusive_ptr<c10d::Work> work, torch::Tensor tensor,
              std::chrono::milliseconds timeout, std::string description)
      : work_(std::move(work)),
        tensor_(std::move(tensor)),
        timeout_(timeout),
        description_(std::move(description)) {}

  void wait() override {
    if (!work_) return;
    try {
      if (!work_->wait(timeout_)) {
        throw CommunicationError(
            fmt::format("{}: timed out after {} s", description_, timeout_.count() / 1000.0));
      }
    } catch (const c10::Error& error) {
      throw CommunicationError(fmt::format("{}: {}", description_, error.what_without_backtrace()));
    } catch (const std::runtime_error& error) {
      if (dynamic_cast<const CommunicationError*>(&error)) throw;
      throw CommunicationError(fmt::format("{}: {}", description_, error.what()));
    }
    work_.reset();
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  torch::Tensor tensor_;
  std::chrono::milliseconds timeout_;
  std::string description_;
};

class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(const Rendezvous& rendezvous, const torch::Device& device,
                   std::chrono::milliseconds timeout)
      : rank_(rendezvous.rank),
        world_(rendezvous.world_size),
        address_(rendezvous.address),
        port_(rendezvous.port),
        token_(rendezvous.token),
        device_(device),
        timeout_(timeout) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(rendezvous.port);
    options.isServer = rank_ == 0;
    options.waitWorkers = false;  // join() waits, and names who is missing
    // The store's client retries a connection refused or reset until this timeout (rank 0
    // may not listen yet): joining gets the join's limit, not a transfer's 30 minutes.
    options.timeout = join_limit();
    try {
      if (rank_ == 0) listen_only_on_master_address(options);
      store_ = job_store(c10::make_intrusive<c10d::TCPStore>(rendezvous.address, options));
      wait_for_everyone();
      store_->setTimeout(wait_limit());
      world_group_ =
          make_group(c10::make_intrusive<c10d::PrefixStore>("world", store_), rank_, world_);
    } catch (const c10::Error& error) {
      throw CommunicationError(joining_failed(error.what_without_backtrace()));
    } catch (const std::runtime_error& error) {
      // The store's sockets fail with std::system_error ("Broken pipe", "Connection reset
      // by peer") when its host, rank 0, goes while this rank joins.
      if (dynamic_cast<const CommunicationError*>(&error)) throw;
      throw CommunicationError(joining_failed(error.what()));
    }
  }

  // Rank 0's store takes a socket bound to MASTER_ADDR's address alone (store_listener.h).
  void listen_only_on_master_address(c10d::TCPStoreOptions& options) const {
    const auto listener = listen_for_store(address_, port_);
    if (listener.fd) {
      options.masterListenFd = *listener.fd;
      log().debug("rank 0: the rendezvous store listens on {} only", listener.where);
    } else {
      log().warn(
          "rank 0: the rendezvous store listens on every interface: {}; keep port {} "
          "behind a firewall",
          listener.where, port_);
    }
  }

  std::string joining_failed(const std::string& why) const {
    return fmt::format(
        "rank {}: joining the run at {}:{} ({} processes) failed: {} (rank 0, which holds the "
        "rendezvous store there, stopped or is not a HyperPipe run)",
        rank_, address_, port_, world_, why);
  }

  // Announces this rank and waits up to the timeout for every other; names those missing.
  void wait_for_everyone() {
    store_->set(fmt::format("joined/{}", rank_), std::vector<uint8_t>{1});
    const auto limit = join_limit();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<int> missing;
    do {
      missing.clear();
      for (int r = 0; r < world_; ++r) {
        if (!store_->check({fmt::format("joined/{}", r)})) missing.push_back(r);
      }
      if (missing.empty()) return;
      std::this_thread::sleep_for(kWatchdogPoll);
    } while (std::chrono::steady_clock::now() < deadline);
    throw CommunicationError(fmt::format(
        "rank {}: rank{} {} never joined the run at {}:{} within {} s (not started, or started "
        "with another rendezvous address, port or job token)",
        rank_, missing.size() > 1 ? "s" : "", join(missing), address_, port_,
        std::chrono::duration<double>(limit).count()));
  }

  // How long every rank gets to join the run.
  std::chrono::milliseconds join_limit() const {
    return std::max<std::chrono::milliseconds>(timeout_, kSlowestStart);
  }

  // What one wait may take: the timeout, or kLongestWait while the peers' hearts beat.
  std::chrono::milliseconds wait_limit() const {
    return std::max<std::chrono::milliseconds>(timeout_, kLongestWait);
  }

  ~C10dCommunicator() override { stop_watchdog(); }

  // Every key of the run under the job's token (rendezvous.h, kJobTokenVariable).
  c10::intrusive_ptr<c10d::Store> job_store(c10::intrusive_ptr<c10d::Store> store) const {
    return c10::make_intrusive<c10d::PrefixStore>("job/" + token_, std::move(store));
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  std::unique_ptr<Pending> send(torch::Tensor tensor, int peer, int tag,
                                const std::string& what) override {
    std::vector<torch::Tensor> tensors{tensor};
    const auto description =
        fmt::format("rank {}: sending {} to rank {} (did rank {} die?)", rank_, what, peer, peer);
    return start(description, tensor, [&] { return world_group_->send(tensors, peer, tag); });
  }

  std::unique_ptr<Pending> recv(torch::Tensor tensor, int peer, int tag,
                                const std::string& what) override {
    std::vector<torch::Tensor> tensors{tensor};
    const auto description = fmt::format("rank {}: receiving {} from rank {} (did rank {} die?)",
                                         rank_, what, peer, peer);
    return start(description, tensor, [&] { return world_group_->recv(tensors, peer, tag); });
  }

  void all_reduce_sum(std::vector<torch::Tensor>& tensors, const std::vector<int>& ranks) override {
    if (ranks.size() <= 1) return;
    const auto description =
        fmt::format("rank {}: summing over ranks {} (did one of them die?)", rank_, join(ranks));
    start(description, {}, [&] {
      c10d::AllreduceOptions options;
      options.reduceOp = c10d::ReduceOp::SUM;
      return group(ranks)->allreduce(tensors, options);
    })->wait();
  }

  std::unique_ptr<Pending> start_all_reduce_sum(torch::Tensor buffer,
                                                const std::vector<int>& ranks) override {
    if (ranks.size() <= 1) {
      return std::make_unique<C10dPending>(c10::intrusive_ptr<c10d::Work>(), buffer, wait_limit(),
                                           std::string());
    }
    const auto description =
        fmt::format("rank {}: summing over ranks {} (did one of them die?)", rank_, join(ranks));
    return start(description, buffer, [&] {
      c10d::AllreduceOptions options;
      options.reduceOp = c10d::ReduceOp::SUM;
      std::vector<torch::Tensor> tensors{buffer};
      return group(ranks)->allreduce(tensors, options);
    });
  }

  void all_gather(const torch::Tensor& mine, std::vector<torch::Tensor>& parts,
                  const std::vector<int>& ranks) override {
    if (ranks.size() <= 1) {
      parts.at(0).copy_(mine);
      return;
    }
    const auto description =
        fmt::format("rank {}: gathering from ranks {} (did one of them die?)", rank_, join(ranks));
    std::vector<std::vector<torch::Tensor>> outputs{parts};
    std::vector<torch::Tensor> inputs{mine};
    start(description, {}, [&] { return group(ranks)->allgather(outputs, inputs); })->wait();
  }

  torch::Tensor reduce_scatter_sum(const torch::Tensor& whole, int64_t dim,
                                   const std::vector<int>& ranks) override {
    const auto n = static_cast<int64_t>(ranks.size());
    if (n <= 1) return whole.clone();
    if (whole.size(dim) % n != 0) {
      throw std::logic_error(
          fmt::format("reduce-scatter of {} rows over {} ranks", whole.size(dim), n));
    }
    const auto description = fmt::format(
        "rank {}: reduce-scattering over ranks {} (did one of them die?)", rank_, join(ranks));
    std::vector<std::vector<torch::Tensor>> inputs{{}};
    for (const auto& piece : whole.chunk(n, dim)) inputs[0].push_back(piece.contiguous());
    const auto position = std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin();
    std::vector<torch::Tensor> mine{torch::empty_like(inputs[0].at(position))};
    start(description, {}, [&] {
      c10d::ReduceScatterOptions options;
      options.reduceOp = c10d::ReduceOp::SUM;
      return group(ranks)->reduce_scatter(mine, inputs, options);
    })->wait();
    return mine[0];
  }

  void barrier() override {
    const auto description = fmt::format("rank {}: waiting for every rank (did one die?)", rank_);
    start(description, {}, [&] { return world_group_->barrier(); })->wait();
  }

  std::string report_failure(const std::string& message) override {
    // This process knows already: its watchdog keeps the heartbeat (so others do not
    // count it silent) but must not end it before it has reported.
    reporting_ = true;
    std::string report = message;
    try {
      // Who stopped: every live process's watchdog counts its heartbeat up.
      const auto beats = heartbeats();
      std::this_thread::sleep_for(kWatchdogPoll * kReportLinger);
      const auto later = heartbeats();
      std::vector<int> silent;
      for (int r = 0; r < world_; ++r) {
        if (r != rank_ && later[r] == beats[r]) silent.push_back(r);
      }
      if (!silent.empty()) {
        report += fmt::format(" [no heartbeat from rank {}]", join(silent));
      }
      if (store_->add(kFailureCount, 1) == 1) {
        store_set(kFailureKey, report);
        // Rank 0 hosts the store: it stays up until the others have read the report.
        if (rank_ == 0) std::this_thread::sleep_for(kWatchdogPoll * kReportLinger);
      }
    } catch (const std::exception& error) {
      log().debug("rank {}: could not report the failure: {}", rank_, error.what());
      if (rank_ != 0) report += " [rank 0, which hosts the rendezvous store, is gone: did it die?]";
    }
    stop_watchdog();
    return report;
  }

  void start_watchdog(std::function<void(const std::string&)> on_failure) override {
    stop_watchdog();
    watching_ = true;
    watchdog_ = std::thread([this, on_failure = std::move(on_failure)] {
      // A client of its own: the store's client connection is not shared across threads.
      c10::intrusive_ptr<c10d::Store> store;
      try {
        c10d::TCPStoreOptions options;
        options.port = static_cast<uint16_t>(port_);
        options.waitWorkers = false;
        options.timeout = wait_limit();
        store = job_store(c10::make_intrusive<c10d::TCPStore>(address_, options));
      } catch (const std::exception& error) {
        log().debug("rank {}: no watchdog: {}", rank_, error.what());
        return;
      }
      using Clock = std::chrono::steady_clock;
      std::vector<int64_t> last_beat(world_, -1);
      std::vector<Clock::time_point> last_change(world_, Clock::now());
      auto next_check = Clock::now() + kHeartbeatCheck;
      while (watching_) {
        std::this_thread::sleep_for(kWatchdogPoll);
        if (!watching_) break;
        std::string message;
        try {
          store->add(fmt::format("heartbeat/{}", rank_), 1);
          if (!reporting_ && Clock::now() >= next_check) {
            next_check = Clock::now() + kHeartbeatCheck;
            message = silent_peer(*store, last_beat, last_change);
            if (!message.empty()) {
              // This thread's own client: the main thread may be inside the store's.
              if (store->add(kFailureCount, 1) == 1) {
                store->set(kFailureKey, std::vector<uint8_t>(message.begin(), message.end()));
                // Rank 0 hosts the store: it stays up until the others have read the report.
                if (rank_ == 0) std::this_thread::sleep_for(kWatchdogPoll * kReportLinger);
              }
              on_failure(message);
              return;
            }
          }
          if (reporting_ || !store->check({kFailureKey})) continue;
          const auto bytes = store->get(kFailureKey);
          // Written by another rank of this job, but shown escaped all the same.
          message = fmt::format(
              "rank {}: stopping, as {}", rank_,
              printable_excerpt(std::string(bytes.begin(), bytes.end()), kMaxReportChars));
        } catch (const std::exception&) {
          if (!watching_ || reporting_) break;
          message = fmt::format(
              "rank {}: lost the rendezvous store that rank 0 hosts (did rank 0 die?)", rank_);
        }
        on_failure(message);
        return;
      }
    });
  }

  // A peer whose heartbeat has not moved for the timeout (and that has not left the run
  // after its last step): the message that names it, or empty. Busy is not dead: a peer
  // deep in a long step still beats, from this same watchdog thread of its own.
  std::string silent_peer(c10d::Store& store, std::vector<int64_t>& last_beat,
                          std::vector<std::chrono::steady_clock::time_point>& last_change) {
    const auto now = std::chrono::steady_clock::now();
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const int64_t beat = store.add(fmt::format("heartbeat/{}", r), 0);
      if (beat != last_beat[r]) {
        last_beat[r] = beat;
        last_change[r] = now;
        continue;
      }
      if (now - last_change[r] <= timeout_ || store.check({fmt::format("left/{}", r)})) continue;
      return fmt::format(
          "rank {}: no heartbeat from rank {} for {:.0f} s (did rank {} die or hang?)", rank_, r,
          std::chrono::duration<double>(now - last_change[r]).count(), r);
    }
    return "";
  }

  // Each rank's heartbeat count (0 for one that never beat).
  std::vector<int64_t> heartbeats() {
    std::vector<int64_t> beats(world_, 0);
    for (int r = 0; r < world_; ++r) beats[r] = store_->add(fmt::format("heartbeat/{}", r), 0);
    return beats;
  }

  void stop_watchdog() override {
    if (watching_ && !reporting_) {
      // Leaving after the last step: the others' watchdogs must not count this one dead.
      try {
        store_set(fmt::format("left/{}", rank_), "1");
      } catch (const std::exception& error) {
        log().debug("rank {}: could not say it leaves: {}", rank_, error.what());
      }
    }
    watching_ = false;
    if (watchdog_.joinable()) watchdog_.join();
  }

  void store_set(const std::string& key, const std::string& value) override {
    in_store(fmt::format("setting '{}' in the rendezvous store", key),
             [&] { store_->set(key, std::vector<uint8_t>(value.begin(), value.end())); });
  }

  std::string store_get(const std::string& key) override {
    return in_store(fmt::format("waiting for '{}' in the rendezvous store", key), [&] {
      const auto bytes = store_->get(key);
      return std::string(bytes.begin(), bytes.end());
    });
  }

 private:
  // A store operation whose failure (c10's, or its socket's std::system_error) becomes a
  // CommunicationError naming this rank and what it was doing.
  template <typename Operation>
  auto in_store(const std::string& what, const Operation& operation) -> decltype(operation()) {
    try {
      return operation();
    } catch (const c10::Error& error) {
      throw CommunicationError(
          fmt::format("rank {}: {}: {}", rank_, what, error.what_without_backtrace()));
    } catch (const std::runtime_error& error) {
      if (dynamic_cast<const CommunicationError*>(&error)) throw;
      throw CommunicationError(fmt::format("rank {}: {}: {}", rank_, what, error.what()));
    }
  }

  template <typename Start>
  std::unique_ptr<Pending> start(const std::string& description, torch::Tensor tensor,
                                 const Start& launch) {
    try {
      return std::make_unique<C10dPending>(launch(), std::move(tensor), wait_limit(), description);
    } catch (const c10::Error& error) {
      throw CommunicationError(fmt::format("{}: {}", description, error.what_without_backtrace()));
    } catch (const std::runtime_error& error) {
      // Gloo's own I/O errors (a peer that is gone resets the connection) surface here
      // when the op is issued, before any wait.
      if (dynamic_cast<const CommunicationError*>(&error)) throw;
      throw CommunicationError(fmt::format("{}: {}", description, error.what()));
    }
  }

  c10::intrusive_ptr<Group> make_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size) const {
#ifdef HYPERPIPE_WITH_CUDA
    if (device_.is_cuda()) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = wait_limit();
      return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
    }
#endif
    auto options = c10d::ProcessGroupGloo::Options::create(wait_limit());
    // GLOO_SOCKET_IFNAME picks an interface, as with torchrun. Without it, the address
    // this host reaches the store's host from (127.0.0.1 on one machine): the others
    // reach it back the same way, where the host name's address (Gloo's default) may be
    // on another network or loopback.
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    if (interface) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else if (const auto local = source_address_toward(address_)) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(*local));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  }

  // The process group of `ranks`, created on first use by every member.
  c10::intrusive_ptr<Group> group(const std::vector<int>& ranks) {
    if (static_cast<int>(ranks.size()) == world_) return world_group_;
    auto& found = groups_[ranks];
    if (!found) {
      const int position =
          static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
      if (position == static_cast<int>(ranks.size())) {
        throw CommunicationError(fmt::format(
            "rank {} is not among ranks {} it was asked to sum over", rank_, join(ranks)));
      }
      found = make_group(c10::make_intrusive<c10d::PrefixStore>("group " + join(ranks), store_),
                         position, static_cast<int>(ranks.size()));
      log().debug("rank {}: process group {} ready", rank_, join(ranks));
    }
    return found;
  }

  int rank_;
  int world_;
  std::string address_;
  int port_;
  std::string token_;
  std::atomic<bool> watching_{false};
  std::atomic<bool> reporting_{false};
  std::thread watchdog_;
  torch::Device device_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Group> world_group_;
  std::map<std::vector<int>, c10::intrusive_ptr<Group>> groups_;
};

}  // namespace

std::unique_ptr<Communicator> connect(const Rendezvous& rendezvous, const torch::Device& device,
                                      std::chrono::milliseconds timeout) {
  return std::make_unique<C10dCommunicator>(rendezvous, device, timeout);
}

}  // namespace hyperpipe::runtime
