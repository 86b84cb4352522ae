// Measures links through the runtime's own c10d backend (Gloo on CPU, NCCL between two
// GPUs): point-to-point one way (half a ping-pong) and a sum over two ranks, each at
// several sizes, kept as a table and fitted to latency + bytes / bandwidth. Between two
// processes of this host (two threads of this process, as two training processes would
// meet), or across the hosts of a launcher's run, one pair per link level.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/common/rendezvous.h"

namespace hyperpipe::runtime {

// From latency-bound messages (activations of small models are tens of KiB) to
// bandwidth-bound ones (gradients of a stage, tens of MiB), 4× apart.
inline const std::vector<int64_t> kLinkProbeBytes{4 << 10, 16 << 10, 64 << 10, 256 << 10,
                                                  1 << 20, 4 << 20,  16 << 20, 64 << 20};

struct LinkProfileSettings {
  int port = 0;  // a free port of 127.0.0.1 for the two ranks' rendezvous
  // CPU (Gloo), or a CUDA device: the second rank then uses the next device (NCCL needs two).
  torch::Device device = torch::kCPU;
  std::vector<int64_t> sizes = kLinkProbeBytes;  // ascending
  int warmup = 2;
  // Timed round trips (and as many sums) per size: as many as `seconds_per_size` holds,
  // up to `repeats` (enough for the mean of a long-tailed distribution), at least
  // `min_repeats` (a 64 MiB message over 100 Mbit/s takes 5 s each way).
  int repeats = 30;
  int min_repeats = 3;
  double seconds_per_size = 1.0;
  // The ladder stops after the first size whose one-way time is longer: past it, a link
  // is bandwidth-bound and its table goes on at the last sizes' rate.
  double longest_message = 0.25;  // seconds
  // Where given, hears on the measuring pair's first rank of each size measured: `done`
  // of `total` sizes (the ladder may stop before the last), the size just done.
  std::function<void(int done, int total, int64_t bytes)> progress;
};

struct LinkSample {
  int64_t bytes = 0;
  // Means, not medians: a run pays the sum of many transfers, and on a shared host a
  // quarter or so of them wait a scheduler tick (some 4 ms) for a thread to wake, which
  // a median hides (all-reduces of 1 KiB: median 0.25 ms, mean 1.1-1.6 ms on 2 vCPUs).
  double point_to_point = 0;  // seconds, one way
  double all_reduce = 0;      // seconds
};

struct LinkProfile {
  std::string backend;  // "gloo" or "nccl"
  std::vector<LinkSample> samples;
  cluster::Link point_to_point;  // fitted: latency + bytes / bandwidth
  // The link a two-rank ring all-reduce (2 · latency + bytes / bandwidth, as the cost
  // model counts it) would need to take the measured times.
  cluster::Link all_reduce;
};

// Throws CommunicationError if the two ranks cannot meet.
LinkProfile profile_links(const LinkProfileSettings& settings);

// Across the hosts of a run (one process per device of `cluster`, rank r on device r, as
// `rendezvous` says): device 0 against the first device at each distance (inside its
// node, its island, across islands), one pair at a time while the others wait. Rank 0
// gets each level's profile, the other ranks nothing. `settings.port` is unused (the
// rendezvous's). Throws InputError when the run's size is not the cluster's.
std::map<cluster::LinkLevel, LinkProfile> profile_links_across(const Rendezvous& rendezvous,
                                                               const cluster::Cluster& cluster,
                                                               const LinkProfileSettings& settings);

// The point-to-point fit with the measured table itself, for the cost model to interpolate.
cluster::Link tabled_link(const LinkProfile& links);

// Least squares of seconds = latency + bytes / bandwidth (latency at least 0).
cluster::Link fit_link(const std::vector<std::pair<double, double>>& bytes_and_seconds);

}  // namespace hyperpipe::runtime
