#include "hyperpipe/runtime/communicator.h"

#include <fmt/format.h>

#include <map>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#ifdef HYPERPIPE_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "hyperpipe/common/log.h"

namespace hyperpipe::runtime {
namespace {

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
        device_(device),
        timeout_(timeout) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(rendezvous.port);
    options.isServer = rank_ == 0;
    options.numWorkers = world_;
    options.timeout = timeout;
    try {
      store_ = c10::make_intrusive<c10d::TCPStore>(rendezvous.address, options);
      world_group_ =
          make_group(c10::make_intrusive<c10d::PrefixStore>("world", store_), rank_, world_);
    } catch (const c10::Error& error) {
      throw CommunicationError(
          fmt::format("rank {}: joining the run at {}:{} ({} processes) failed: {}", rank_,
                      rendezvous.address, rendezvous.port, world_, error.what_without_backtrace()));
    }
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
    auto pending = start(description, {}, [&] {
      c10d::AllreduceOptions options;
      options.reduceOp = c10d::ReduceOp::SUM;
      return group(ranks)->allreduce(tensors, options);
    });
    pending->wait();
  }

  void barrier() override {
    const auto description = fmt::format("rank {}: waiting for every rank (did one die?)", rank_);
    start(description, {}, [&] { return world_group_->barrier(); })->wait();
  }

  void store_set(const std::string& key, const std::string& value) override {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  }

  std::string store_get(const std::string& key) override {
    try {
      const auto bytes = store_->get(key);
      return std::string(bytes.begin(), bytes.end());
    } catch (const c10::Error& error) {
      throw CommunicationError(fmt::format("rank {}: waiting for '{}' in the rendezvous store: {}",
                                           rank_, key, error.what_without_backtrace()));
    }
  }

 private:
  template <typename Start>
  std::unique_ptr<Pending> start(const std::string& description, torch::Tensor tensor,
                                 const Start& launch) {
    try {
      return std::make_unique<C10dPending>(launch(), std::move(tensor), timeout_, description);
    } catch (const c10::Error& error) {
      throw CommunicationError(fmt::format("{}: {}", description, error.what_without_backtrace()));
    }
  }

  c10::intrusive_ptr<c10d::ProcessGroup> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int size) const {
#ifdef HYPERPIPE_WITH_CUDA
    if (device_.is_cuda()) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout_;
      return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
    }
#endif
    auto options = c10d::ProcessGroupGloo::Options::create(timeout_);
    // Loopback runs (one machine) stay on 127.0.0.1; others use the host's address
    // (GLOO_SOCKET_IFNAME picks an interface, as with torchrun).
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    if (interface) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else if (address_ == "127.0.0.1" || address_ == "localhost") {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  }

  // The process group of `ranks`, created on first use by every member.
  c10::intrusive_ptr<c10d::ProcessGroup> group(const std::vector<int>& ranks) {
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
  torch::Device device_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroup> world_group_;
  std::map<std::vector<int>, c10::intrusive_ptr<c10d::ProcessGroup>> groups_;
};

}  // namespace

std::unique_ptr<Communicator> connect(const Rendezvous& rendezvous, const torch::Device& device,
                                      std::chrono::milliseconds timeout) {
  return std::make_unique<C10dCommunicator>(rendezvous, device, timeout);
}

}  // namespace hyperpipe::runtime
