#include "hyperpipe/runtime/link_profiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <thread>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/rendezvous.h"
#include "hyperpipe/runtime/communicator.h"
#include "hyperpipe/runtime/timing.h"

namespace hyperpipe::runtime {
namespace {

constexpr int kRanks = 2;

// A tag of the pair's own (Gloo matches sends and receives by tag; NCCL by order).
constexpr int kCountTag = 1 << 20;

// How many timed repeats of a size fit `settings.seconds_per_size`, given one warm-up
// round's time: at least `min_repeats`, at most `repeats`.
int repeats_within_budget(const LinkProfileSettings& settings, double round_seconds) {
  const double fit = settings.seconds_per_size / std::max(round_seconds, 1e-9);
  return static_cast<int>(
      std::clamp(std::floor(fit), static_cast<double>(settings.min_repeats),
                 static_cast<double>(std::max(settings.min_repeats, settings.repeats))));
}

// Ranks `first` and `second` of `communicator` measure the link between them (`first`
// fills `samples`); every other rank only keeps step with them. Round trips and sums run
// back to back with no barrier between them, as training's transfers follow each other:
// a barrier before each one would time its own wake-up skew into every message (on a busy
// 2-core host, ~1 ms on top of a 0.2 ms message). The ladder stops after the first size
// whose one-way time passes `settings.longest_message` (the rate is known by then).
void measure_pair(Communicator& communicator, int rank, int first, int second,
                  const LinkProfileSettings& settings, torch::Device device,
                  std::vector<LinkSample>& samples) {
  const bool measuring = rank == first || rank == second;
  const int peer = rank == first ? second : first;
  const std::vector<int> both{std::min(first, second), std::max(first, second)};
  std::vector<int> everyone(static_cast<size_t>(communicator.world_size()));
  for (size_t r = 0; r < everyone.size(); ++r) everyone[r] = static_cast<int>(r);
  const auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  };
  const auto on_device = torch::TensorOptions().device(device);
  communicator.barrier();
  for (const int64_t bytes : settings.sizes) {
    bool climb = false;
    if (measuring) {
      auto tensor = torch::ones({bytes / static_cast<int64_t>(sizeof(float))}, on_device);
      const auto round_trip = [&](int tag) {
        const auto start = std::chrono::steady_clock::now();
        if (rank == first) {
          communicator.send(tensor, peer, tag, "the link probe")->wait();
          communicator.recv(tensor, peer, tag, "the link probe")->wait();
        } else {
          communicator.recv(tensor, peer, tag, "the link probe")->wait();
          communicator.send(tensor, peer, tag, "the link probe")->wait();
        }
        sync();
        return seconds_since(start);
      };
      const auto summed = [&] {
        std::vector<torch::Tensor> buffer{tensor};
        const auto start = std::chrono::steady_clock::now();
        communicator.all_reduce_sum(buffer, both);
        sync();
        return seconds_since(start);
      };
      double warm_round = 0;
      for (int run = 0; run < settings.warmup; ++run) warm_round = round_trip(run) + summed();
      // `first` decides how many rounds fit the budget and tells `second`.
      auto count = torch::full({1}, repeats_within_budget(settings, warm_round),
                               on_device.dtype(torch::kLong));
      if (rank == first) {
        communicator.send(count, peer, kCountTag, "the link probe's repeat count")->wait();
      } else {
        communicator.recv(count, peer, kCountTag, "the link probe's repeat count")->wait();
      }
      const int repeats = static_cast<int>(count.cpu().item<int64_t>());
      std::vector<double> one_way;
      for (int run = 0; run < repeats; ++run) one_way.push_back(round_trip(run) / 2);
      std::vector<double> sums;
      for (int run = 0; run < repeats; ++run) sums.push_back(summed());
      if (rank == first) {
        samples.push_back({bytes, mean(one_way), mean(sums)});
        climb = samples.back().point_to_point <= settings.longest_message;
        if (settings.progress) {
          settings.progress(static_cast<int>(samples.size()),
                            static_cast<int>(settings.sizes.size()), bytes);
        }
      }
    }
    // Every rank learns from `first` whether the ladder goes on (and waits for the pair).
    std::vector<torch::Tensor> flag{torch::full({1}, climb ? 1.0f : 0.0f, on_device)};
    communicator.all_reduce_sum(flag, everyone);
    if (flag[0].cpu().item<float>() == 0.0f) break;
  }
}

// One rank's part of the two-thread measurement; rank 0 fills `samples`.
void run_rank(int rank, const LinkProfileSettings& settings, std::vector<LinkSample>& samples) {
  const Rendezvous rendezvous = local_rendezvous(rank, kRanks, settings.port);
  const torch::Device device = settings.device.is_cuda()
                                   ? torch::Device(torch::kCUDA, settings.device.index() + rank)
                                   : settings.device;
  const auto communicator = connect(rendezvous, device, kProbeMeetTimeout);
  measure_pair(*communicator, rank, 0, 1, settings, device, samples);
}

// The profile of measured samples: the table and its fits.
LinkProfile profile_of(const std::vector<LinkSample>& samples, torch::Device device) {
  LinkProfile profile;
  profile.backend = device.is_cuda() ? "nccl" : "gloo";
  profile.samples = samples;
  std::vector<std::pair<double, double>> one_way, summed;
  for (const auto& s : samples) {
    one_way.emplace_back(static_cast<double>(s.bytes), s.point_to_point);
    summed.emplace_back(static_cast<double>(s.bytes), s.all_reduce);
  }
  profile.point_to_point = fit_link(one_way);
  profile.all_reduce = fit_link(summed);
  profile.all_reduce.latency /= 2;  // a two-rank ring: two steps, each one latency
  return profile;
}

}  // namespace

cluster::Link fit_link(const std::vector<std::pair<double, double>>& bytes_and_seconds) {
  const double n = static_cast<double>(bytes_and_seconds.size());
  double mean_bytes = 0, mean_seconds = 0;
  for (const auto& [bytes, seconds] : bytes_and_seconds) {
    mean_bytes += bytes / n;
    mean_seconds += seconds / n;
  }
  double covariance = 0, variance = 0;
  for (const auto& [bytes, seconds] : bytes_and_seconds) {
    covariance += (bytes - mean_bytes) * (seconds - mean_seconds);
    variance += (bytes - mean_bytes) * (bytes - mean_bytes);
  }
  const double per_byte = variance > 0 ? covariance / variance : 0.0;
  cluster::Link link;
  link.bandwidth = per_byte > 0 ? 1.0 / per_byte : std::numeric_limits<double>::infinity();
  link.latency = std::max(0.0, mean_seconds - per_byte * mean_bytes);
  return link;
}

LinkProfile profile_links(const LinkProfileSettings& settings) {
  std::vector<LinkSample> samples;
  std::vector<LinkSample> unused;
  std::exception_ptr failures[kRanks];
  // Rank 1 in a thread of its own, rank 0 (which hosts the store) here.
  std::thread second([&] {
    try {
      run_rank(1, settings, unused);
    } catch (...) {
      failures[1] = std::current_exception();
    }
  });
  try {
    run_rank(0, settings, samples);
  } catch (...) {
    failures[0] = std::current_exception();
  }
  second.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  return profile_of(samples, settings.device);
}

std::map<cluster::LinkLevel, LinkProfile> profile_links_across(
    const Rendezvous& rendezvous, const cluster::Cluster& cluster,
    const LinkProfileSettings& settings) {
  const int devices = static_cast<int>(cluster.devices().size());
  if (rendezvous.world_size != devices) {
    throw InputError("--cluster", cluster.name(),
                     fmt::format("one process per device ({}), as a run of it starts them; the "
                                 "launcher started {}",
                                 devices, rendezvous.world_size));
  }
  const torch::Device device = settings.device.is_cuda()
                                   ? torch::Device(torch::kCUDA, rendezvous.local_rank)
                                   : settings.device;
  const auto communicator = connect(rendezvous, device, kProbeMeetTimeout);
  std::map<cluster::LinkLevel, LinkProfile> result;
  for (const auto level : {cluster::LinkLevel::intra_node, cluster::LinkLevel::intra_island,
                           cluster::LinkLevel::inter_island}) {
    // Device 0 and the first device at this distance from it, every rank in step.
    int partner = -1;
    for (int d = 1; d < devices && partner < 0; ++d) {
      if (cluster.level_between(0, d) == level) partner = d;
    }
    if (partner < 0) continue;
    std::vector<LinkSample> samples;
    measure_pair(*communicator, rendezvous.rank, 0, partner, settings, device, samples);
    if (rendezvous.rank == 0) result[level] = profile_of(samples, device);
  }
  return result;
}

cluster::Link tabled_link(const LinkProfile& links) {
  cluster::Link link = links.point_to_point;
  for (const auto& sample : links.samples) {
    link.table.push_back(
        {static_cast<double>(sample.bytes), sample.point_to_point, sample.all_reduce});
  }
  return link;
}

}  // namespace hyperpipe::runtime
