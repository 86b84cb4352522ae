#include "hyperpipe/common/rendezvous.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>

#include "hyperpipe/common/error.h"

namespace hyperpipe {
namespace {

// The highest TCP port number.
constexpr long kMaxPort = 65535;

int read_int(const Environment& environment, const std::string& name, long low, long high) {
  const auto text = environment(name);
  if (!text) throw InputError("environment", name, "set (it comes with the launcher's others)");
  char* end = nullptr;
  const long value = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || value < low || value > high) {
    throw InputError("environment", name,
                     fmt::format("an integer from {} to {}, got '{}'", low, high, *text));
  }
  return static_cast<int>(value);
}

struct Names {
  const char* launcher;
  const char* rank;
  const char* world_size;
  const char* local_rank;
};

constexpr Names kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    // MPICH's and Intel MPI's Hydra process manager (mpiexec): the PMI rank and size, and
    // the rank on its node (Intel MPI's documented MPI_LOCALRANKID, which Hydra sets).
    {"mpiexec", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
};

}  // namespace

std::optional<std::string> process_environment(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

Rendezvous rendezvous_from(const Environment& environment) {
  Rendezvous result;
  result.launcher = "none";
  constexpr long kMaxRanks = std::numeric_limits<int>::max();
  for (const Names& names : kLaunchers) {
    if (!environment(names.rank)) continue;
    result.launcher = names.launcher;
    result.world_size = read_int(environment, names.world_size, 1, kMaxRanks);
    result.rank = read_int(environment, names.rank, 0, kMaxRanks);
    if (result.rank >= result.world_size) {
      throw InputError("environment", names.rank,
                       fmt::format("a rank below {} = {}, got {}", names.world_size,
                                   result.world_size, result.rank));
    }
    if (environment(names.local_rank)) {
      result.local_rank = read_int(environment, names.local_rank, 0, kMaxRanks);
    }
    break;
  }
  if (const auto address = environment("MASTER_ADDR")) {
    if (address->empty()) throw InputError("environment", "MASTER_ADDR", "a host name or address");
    result.address = *address;
  }
  if (environment("MASTER_PORT")) result.port = read_int(environment, "MASTER_PORT", 1, kMaxPort);
  if (const auto token = environment(kJobTokenVariable)) {
    // Guessing it must cost more than trying ports: 16 characters of a random token.
    if (token->size() < kMinJobTokenChars) {
      throw InputError("environment", kJobTokenVariable,
                       fmt::format("a secret of at least {} characters (e.g. `openssl rand "
                                   "-hex 16`), got {}",
                                   kMinJobTokenChars, token->size()));
    }
    result.token = *token;
  }
  return result;
}

std::optional<std::string> source_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return std::nullopt;
  std::optional<std::string> result;
  for (const addrinfo* entry = found; entry && !result; entry = entry->ai_next) {
    const int fd = socket(entry->ai_family, entry->ai_socktype, entry->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    char text[INET6_ADDRSTRLEN] = {};
    if (connect(fd, entry->ai_addr, entry->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
      const void* address =
          local.ss_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      if (inet_ntop(local.ss_family, address, text, sizeof text)) result = text;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return result;
}

Rendezvous local_rendezvous(int rank, int world, int port) {
  Rendezvous rendezvous;
  rendezvous.rank = rank;
  rendezvous.world_size = world;
  rendezvous.local_rank = rank;
  rendezvous.port = port;
  rendezvous.launcher = "none";
  return rendezvous;
}

}  // namespace hyperpipe
