#include "hyperpipe/common/rendezvous.h"

#include <gtest/gtest.h>

#include <map>

#include "hyperpipe/common/error.h"

namespace hyperpipe {
namespace {

Environment from(std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

TEST(Rendezvous, NoLauncherMeansOneProcess) {
  const auto r = rendezvous_from(from({}));
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.launcher, "none");
  EXPECT_EQ(r.port, kDefaultRendezvousPort);
}

TEST(Rendezvous, TorchrunMpirunAndSrun) {
  const auto torchrun = rendezvous_from(from({{"RANK", "3"},
                                              {"WORLD_SIZE", "8"},
                                              {"LOCAL_RANK", "1"},
                                              {"MASTER_ADDR", "node7"},
                                              {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(torchrun.launcher, "torchrun");
  EXPECT_EQ(torchrun.rank, 3);
  EXPECT_EQ(torchrun.world_size, 8);
  EXPECT_EQ(torchrun.local_rank, 1);
  EXPECT_EQ(torchrun.address, "node7");
  EXPECT_EQ(torchrun.port, 1234);
  const auto mpi = rendezvous_from(from({{"OMPI_COMM_WORLD_RANK", "2"},
                                         {"OMPI_COMM_WORLD_SIZE", "4"},
                                         {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                         {"MASTER_ADDR", "head"}}));
  EXPECT_EQ(mpi.launcher, "mpirun");
  EXPECT_EQ(mpi.rank, 2);
  EXPECT_EQ(mpi.world_size, 4);
  EXPECT_EQ(mpi.address, "head");
  const auto slurm =
      rendezvous_from(from({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(slurm.launcher, "srun");
  EXPECT_EQ(slurm.rank, 5);
  EXPECT_EQ(slurm.local_rank, 1);
  const auto hydra = rendezvous_from(
      from({{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"MASTER_ADDR", "h"}}));
  EXPECT_EQ(hydra.launcher, "mpiexec");
  EXPECT_EQ(hydra.rank, 3);
  EXPECT_EQ(hydra.world_size, 4);
  EXPECT_EQ(hydra.local_rank, 1);
  // Slurm's PMI sets PMI_RANK beside its own: Slurm's names come first.
  const auto slurm_pmi = rendezvous_from(
      from({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}));
  EXPECT_EQ(slurm_pmi.launcher, "srun");
}

TEST(Rendezvous, MalformedVariablesAreNamed) {
  const auto message = [](std::map<std::string, std::string> variables) {
    try {
      rendezvous_from(from(std::move(variables)));
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"RANK", "4"}, {"WORLD_SIZE", "4"}}).find("a rank below WORLD_SIZE = 4"),
            std::string::npos);
  EXPECT_NE(message({{"RANK", "x"}, {"WORLD_SIZE", "4"}}).find("RANK"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}}).find("WORLD_SIZE"), std::string::npos);
  EXPECT_NE(message({{"MASTER_PORT", "70000"}}).find("an integer from 1 to 65535"),
            std::string::npos);
}

TEST(Rendezvous, TheJobTokenIsReadAndMustBeLongEnough) {
  EXPECT_EQ(rendezvous_from(from({})).token, "");
  const std::string secret = "0123456789abcdef0123";
  EXPECT_EQ(rendezvous_from(from({{kJobTokenVariable, secret}})).token, secret);
  try {
    rendezvous_from(from({{kJobTokenVariable, "short"}}));
    FAIL() << "a 5-character token was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("at least 16 characters"), std::string::npos);
  }
}

TEST(Rendezvous, TheSourceAddressIsTheOneOnTheRouteToTheStore) {
  EXPECT_EQ(source_address_toward("127.0.0.1"), "127.0.0.1");
  const auto local = source_address_toward("localhost").value_or("none");
  EXPECT_TRUE(local.starts_with("127.") || local == "::1") << local;
  // A name that cannot resolve (RFC 6761 reserves .invalid).
  EXPECT_EQ(source_address_toward("store.invalid"), std::nullopt);
}

}  // namespace
}  // namespace hyperpipe
