// The error of a run that lost a peer, without libtorch, so the CLI can catch it.
#pragma once

#include <stdexcept>

namespace hyperpipe::runtime {

// A transfer or collective failed or timed out; the message names the peers.
class CommunicationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace hyperpipe::runtime
