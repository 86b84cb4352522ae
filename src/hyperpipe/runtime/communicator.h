// Point-to-point transfers and collectives between the processes of a run, behind one
// interface so the executor does not care which backend carries them: torch's c10d with
// Gloo on CPU, NCCL on CUDA (when libtorch has CUDA).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hyperpipe/common/rendezvous.h"
#include "hyperpipe/runtime/communication_error.h"

namespace hyperpipe::runtime {

// A transfer in flight. Keeps its tensor alive until done.
class Pending {
 public:
  virtual ~Pending() = default;
  // Blocks until done; throws CommunicationError on failure or timeout.
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Asynchronous; the matching call on the peer uses the same tag. `what` names the
  // transfer in errors ("the activation of micro-batch 3").
  virtual std::unique_ptr<Pending> send(torch::Tensor tensor, int peer, int tag,
                                        const std::string& what) = 0;
  virtual std::unique_ptr<Pending> recv(torch::Tensor tensor, int peer, int tag,
                                        const std::string& what) = 0;
  // In-place sum over `ranks` (sorted, including this one); every member calls it with
  // the same list, in the same order as its other collectives on that list.
  virtual void all_reduce_sum(std::vector<torch::Tensor>& tensors,
                              const std::vector<int>& ranks) = 0;
  // The same, started: `buffer` is summed in place once the returned transfer is waited
  // for (it keeps the buffer alive), so the caller computes meanwhile.
  virtual std::unique_ptr<Pending> start_all_reduce_sum(torch::Tensor buffer,
                                                        const std::vector<int>& ranks) = 0;
  // parts[i] becomes the `mine` of ranks[i] (sorted, including this one; every member's
  // of the same shape); collective like all_reduce_sum.
  virtual void all_gather(const torch::Tensor& mine, std::vector<torch::Tensor>& parts,
                          const std::vector<int>& ranks) = 0;
  // This member's part of the sum over `ranks` of every member's `whole`: `whole` is cut
  // into ranks.size() equal parts along `dim`, part i summed onto ranks[i] (a ring moves
  // half an all-reduce's bytes); collective like all_reduce_sum.
  virtual torch::Tensor reduce_scatter_sum(const torch::Tensor& whole, int64_t dim,
                                           const std::vector<int>& ranks) = 0;
  virtual void barrier() = 0;
  // Small messages through the rendezvous store (timelines, checksums); get waits for
  // the key up to the timeout.
  virtual void store_set(const std::string& key, const std::string& value) = 0;
  virtual std::string store_get(const std::string& key) = 0;

  // Failure detection across the run. Every process's watchdog thread beats a heartbeat
  // in the store and watches for a failure report or for the store's host (rank 0) to
  // vanish, then calls `on_failure` with a message naming who failed: a process blocked
  // on a healthy peer learns of a death elsewhere instead of waiting for its timeout. A
  // process that loses a peer reports it (stopping its own watchdog; the first report
  // is kept), adding the ranks whose heartbeat has stopped.
  // Returns the message with the silent ranks added.
  virtual std::string report_failure(const std::string& message) = 0;
  virtual void start_watchdog(std::function<void(const std::string& message)> on_failure) = 0;
  virtual void stop_watchdog() = 0;
};

// Joins the run described by `rendezvous` (rank 0 hosts the store): Gloo for CPU
// tensors, NCCL for CUDA ones. Every wait gives up after `timeout` with an error that
// names the peer, so a dead process ends the run instead of hanging it.
std::unique_ptr<Communicator> connect(const Rendezvous& rendezvous, const torch::Device& device,
                                      std::chrono::milliseconds timeout);

// How long the two processes of a profiling probe (links, device memory) wait to meet:
// both start at once on one host, so a minute means one of them is gone.
inline constexpr std::chrono::seconds kProbeMeetTimeout{60};

}  // namespace hyperpipe::runtime
