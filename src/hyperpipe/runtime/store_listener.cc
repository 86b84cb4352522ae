#include "hyperpipe/runtime/store_listener.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hyperpipe/runtime/communication_error.h"

namespace hyperpipe::runtime {
namespace {

// "10.0.0.1:29500", "[fd00::1]:29500".
std::string endpoint(const sockaddr* address, int port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text,
              sizeof text);
    return fmt::format("[{}]:{}", text, port);
  }
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  return fmt::format("{}:{}", text, port);
}

}  // namespace

StoreListener listen_for_store(const std::string& master_address, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int error = getaddrinfo(master_address.c_str(), service.c_str(), &hints, &found)) {
    return {std::nullopt, fmt::format("MASTER_ADDR '{}' does not resolve here ({})", master_address,
                                      gai_strerror(error))};
  }
  StoreListener result{std::nullopt, fmt::format("MASTER_ADDR '{}' is not an address of this "
                                                 "host (a NAT'd or forwarded address?)",
                                                 master_address)};
  std::string taken;
  for (const addrinfo* entry = found; entry && !result.fd; entry = entry->ai_next) {
    const int fd = socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, entry->ai_protocol);
    if (fd < 0) continue;
    // As TCPStore's own listener: a port a previous run left in TIME_WAIT binds again.
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (entry->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    if (bind(fd, entry->ai_addr, entry->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      result = {fd, endpoint(entry->ai_addr, port)};
      break;
    }
    if (errno == EADDRINUSE) taken = endpoint(entry->ai_addr, port);
    close(fd);
  }
  freeaddrinfo(found);
  if (!result.fd && !taken.empty()) {
    throw CommunicationError(fmt::format(
        "rank 0: the rendezvous store cannot listen on {}: the port is in use there (another "
        "run, or another program; pick another MASTER_PORT)",
        taken));
  }
  return result;
}

}  // namespace hyperpipe::runtime
