// Who this process is in a run and where the others meet: rank, world size and the
// rendezvous address from the environment of whichever launcher started it.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace hyperpipe {

// The job's secret: every key the run keeps in rank 0's store lives under it, so a process
// that reaches the store's port without it can neither join the run nor read or set what
// the run reads (a failure report that stops every rank, Gloo's addresses). `hyperpipe
// launch` makes one per run; across hosts, export the same value on every host.
inline constexpr const char* kJobTokenVariable = "HYPERPIPE_JOB_TOKEN";

inline constexpr size_t kMinJobTokenChars = 16;

// The port torchrun uses when MASTER_PORT is not set.
inline constexpr int kDefaultRendezvousPort = 29500;

struct Rendezvous {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // among the processes of this machine (picks the CUDA device)
  std::string address = "127.0.0.1";
  int port = kDefaultRendezvousPort;
  std::string launcher;  // "torchrun", "mpirun", "srun", "mpiexec" or "none"
  std::string token;     // kJobTokenVariable's value; empty when not set
};

using Environment = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment.
std::optional<std::string> process_environment(const std::string& name);

// RANK / WORLD_SIZE / LOCAL_RANK (torchrun, `hyperpipe launch`), else
// OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK (Open MPI's mpirun), else SLURM_PROCID /
// SLURM_NTASKS / SLURM_LOCALID (srun), else PMI_RANK / PMI_SIZE / MPI_LOCALRANKID
// (MPICH's and Intel MPI's mpiexec); MASTER_ADDR and MASTER_PORT for the address in
// every case; HYPERPIPE_JOB_TOKEN for the token (at least 16 characters when set). None of them: a
// single process, rank 0 of 1. Throws InputError naming the variable when one is malformed or the
// rank is not below the world size.
Rendezvous rendezvous_from(const Environment& environment = process_environment);

// Rank `rank` of `world` processes (or threads) of this machine meeting at 127.0.0.1:`port`
// without a launcher: the profilers' and the tests' pairs.
Rendezvous local_rendezvous(int rank, int world, int port);

// This machine's address on the route to `host` (a name or IPv4/IPv6 address): what the
// other ranks can reach it at when they reach `host` the same way, the address Gloo binds
// on a multi-host run without GLOO_SOCKET_IFNAME. Nothing when `host` does not resolve or
// no route leads there. Sends no packet (a UDP socket's connect only picks the route).
std::optional<std::string> source_address_toward(const std::string& host);

}  // namespace hyperpipe
