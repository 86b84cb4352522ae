#include "hyperpipe/runtime/store_listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "hyperpipe/runtime/communication_error.h"

namespace hyperpipe::runtime {
namespace {

// A port nothing listens on now (the kernel's pick for port 0, released again).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// 0 when a TCP connection to host:port is accepted, else the connect's errno.
int connect_error(const char* host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host, &address.sin_addr);
  const int result = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  const int error = result == 0 ? 0 : errno;
  close(fd);
  return error;
}

// Every 127/8 address is this host's: 127.0.0.2 reaches a listener on every interface
// (INADDR_ANY) but not one bound to 127.0.0.1 alone.
TEST(StoreListener, ListensOnTheMasterAddressAlone) {
  const int port = free_port();
  const auto listener = listen_for_store("127.0.0.1", port);
  ASSERT_TRUE(listener.fd.has_value()) << listener.where;
  EXPECT_EQ(listener.where, "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(connect_error("127.0.0.1", port), 0);
  EXPECT_EQ(connect_error("127.0.0.2", port), ECONNREFUSED);
  close(*listener.fd);
}

TEST(StoreListener, AHostNameIsResolved) {
  const int port = free_port();
  const auto listener = listen_for_store("localhost", port);
  ASSERT_TRUE(listener.fd.has_value()) << listener.where;
  EXPECT_NE(listener.where.find(std::to_string(port)), std::string::npos);
  close(*listener.fd);
}

// 192.0.2.1 (TEST-NET-1, RFC 5737) is no host's: the store falls back to every interface,
// and says why.
TEST(StoreListener, AnAddressOfAnotherHostFallsBackToEveryInterfaceSayingWhy) {
  const auto listener = listen_for_store("192.0.2.1", free_port());
  EXPECT_FALSE(listener.fd.has_value());
  EXPECT_NE(listener.where.find("'192.0.2.1' is not an address of this host"), std::string::npos)
      << listener.where;
  const auto unresolved = listen_for_store("no-such-host.invalid", free_port());
  EXPECT_FALSE(unresolved.fd.has_value());
  EXPECT_NE(unresolved.where.find("does not resolve"), std::string::npos) << unresolved.where;
}

TEST(StoreListener, APortInUseThereIsNamed) {
  const int port = free_port();
  const auto first = listen_for_store("127.0.0.1", port);
  ASSERT_TRUE(first.fd.has_value());
  try {
    listen_for_store("127.0.0.1", port);
    ADD_FAILURE() << "a second listener on the same port";
  } catch (const CommunicationError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("127.0.0.1:" + std::to_string(port) +
                        ": the port "
                        "is in use"),
              std::string::npos)
        << error.what();
  }
  close(*first.fd);
}

// libtorch's TCPStore takes the socket over (TCPStoreOptions::masterListenFd): its clients
// reach it at the master address, and nothing answers at the host's other addresses.
TEST(StoreListener, TheStoreServesOnTheSocketItIsGiven) {
  const int port = free_port();
  const auto listener = listen_for_store("127.0.0.1", port);
  ASSERT_TRUE(listener.fd.has_value());
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(10);
  options.masterListenFd = *listener.fd;
  c10d::TCPStore server("127.0.0.1", options);
  c10d::TCPStoreOptions client_options = options;
  client_options.isServer = false;
  client_options.masterListenFd.reset();
  c10d::TCPStore client("127.0.0.1", client_options);
  client.set("key", std::vector<uint8_t>{4, 2});
  EXPECT_EQ(server.get("key"), (std::vector<uint8_t>{4, 2}));
  EXPECT_EQ(connect_error("127.0.0.2", port), ECONNREFUSED);
}

}  // namespace
}  // namespace hyperpipe::runtime
