#include "hyperpipe/common/stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace hyperpipe {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::atomic<int> first_signal{0};
std::atomic<int> signals_seen{0};
std::atomic<bool> alarm_armed{false};
struct sigaction previous[sizeof kStopSignals / sizeof kStopSignals[0]];

// Async-signal-safe: atomics, alarm(), signal(), raise().
void on_stop_signal(int signal_number) {
  int expected = 0;
  const bool first = first_signal.compare_exchange_strong(expected, signal_number);
  signals_seen.fetch_add(1);
  if (first) {
    if (alarm_armed.load()) alarm(kStopGraceSeconds);
    return;
  }
  // The second one: what the signal would have done without us.
  (void)signal(signal_number, SIG_DFL);
  (void)raise(signal_number);
}

}  // namespace

StopSignals::StopSignals(bool arm_alarm) {
  first_signal = 0;
  signals_seen = 0;
  alarm_armed = arm_alarm;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < sizeof kStopSignals / sizeof kStopSignals[0]; ++i) {
    sigaction(kStopSignals[i], &action, &previous[i]);
  }
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < sizeof kStopSignals / sizeof kStopSignals[0]; ++i) {
    sigaction(kStopSignals[i], &previous[i], nullptr);
  }
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

int StopSignals::received() {
  return first_signal.load();
}
int StopSignals::count() {
  return signals_seen.load();
}

}  // namespace hyperpipe
