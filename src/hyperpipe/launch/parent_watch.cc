#include "hyperpipe/launch/parent_watch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace hyperpipe::launch {

bool die_with_launcher() {
  const char* text = std::getenv(kLauncherPidVariable);
  if (!text) return true;
  char* end = nullptr;
  const long launcher = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || launcher <= 1) return true;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The launcher may have died before the line above: then the parent is already another.
  return getppid() == static_cast<pid_t>(launcher);
}

}  // namespace hyperpipe::launch
