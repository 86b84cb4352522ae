// Where rank 0's rendezvous store listens: only on the address the other ranks reach it at
// (MASTER_ADDR), not on every interface of the host, so a network the run does not use
// cannot reach the store (docs/design.md, "Running safely").
#pragma once

#include <optional>
#include <string>

namespace hyperpipe::runtime {

struct StoreListener {
  // A socket bound to MASTER_ADDR's address and the port, listening: for
  // c10d::TCPStoreOptions::masterListenFd, which takes it over. Nothing where the address
  // is not one of this host's (behind NAT, say): then the store listens on every interface.
  std::optional<int> fd;
  std::string where;  // "10.0.0.1:29500", or why every interface
};

// Binds and listens on `master_address` (a name or an IPv4/IPv6 address) at `port`: the
// first of its addresses this host has. Throws CommunicationError when the port is taken
// there, naming the address and port.
StoreListener listen_for_store(const std::string& master_address, int port);

}  // namespace hyperpipe::runtime
