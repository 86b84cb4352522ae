#include "hyperpipe/launch/process_launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/launch/parent_watch.h"

extern char** environ;

namespace hyperpipe::launch {
namespace {

// How often the launcher looks for exited processes while their pipes are quiet.
constexpr int kPollMilliseconds = 50;

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  std::string out_line;
  std::string err_line;
  bool exited = false;
  int code = 0;
  bool killed = false;  // ended by a signal, not by exiting
};

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The global rank of the process started `index`-th.
int rank_of(const LaunchSpec& spec, int index) {
  return spec.ranks.empty() ? index : spec.ranks.at(static_cast<size_t>(index));
}

// Where one stream of a rank goes: the stream, and what each line gets in front.
struct Sink {
  std::ostream& to;
  std::string prefix;  // "[rank 3] ", or nothing for the rank whose stdout passes as is
};

Sink sink_of(const LaunchSpec& spec, int index, bool is_err, std::ostream& out, std::ostream& err) {
  if (spec.bare) return {is_err ? err : out, ""};
  const int rank = rank_of(spec, index);
  if (!is_err && spec.raw_stdout_rank >= 0) {
    if (rank == spec.raw_stdout_rank) return {out, ""};
    return {err, fmt::format("[rank {}] ", rank)};
  }
  return {is_err ? err : out, fmt::format("[rank {}] ", rank)};
}

// What a line says when it reports an error, without the marker; nullopt otherwise.
std::optional<std::string_view> error_text(std::string_view line) {
  for (const std::string_view marker : {"error: ", "[error] "}) {
    if (line.starts_with(marker)) return line.substr(marker.size());
  }
  return std::nullopt;
}

// Where whole lines go: the sink, and (for stderr) whoever looks for the first error.
using LineSeen = std::function<void(std::string_view)>;

// Forwards whole lines from `fd` (partial ones wait in `line`); false at end of file.
bool forward(int fd, std::string& line, const Sink& sink, const LineSeen& seen = {}) {
  char buffer[4096];
  errno = 0;
  const ssize_t got = read(fd, buffer, sizeof buffer);
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  if (got == 0) {
    if (!line.empty()) {
      sink.to << sink.prefix << line << '\n' << std::flush;
      if (seen) seen(line);
    }
    line.clear();
    return false;
  }
  line.append(buffer, static_cast<size_t>(got));
  size_t newline;
  while ((newline = line.find('\n')) != std::string::npos) {
    const std::string_view whole = std::string_view(line).substr(0, newline);
    sink.to << sink.prefix << whole << '\n';
    if (seen) seen(whole);
    line.erase(0, newline + 1);
  }
  sink.to << std::flush;
  return true;
}

std::vector<std::string> environment_for(const LaunchSpec& spec, int rank, int port,
                                         const std::string& token) {
  std::map<std::string, std::string> variables;
  for (char** entry = environ; *entry; ++entry) {
    const std::string text(*entry);
    const auto equals = text.find('=');
    if (equals != std::string::npos) variables[text.substr(0, equals)] = text.substr(equals + 1);
  }
  for (const auto& [name, value] : spec.environment) variables[name] = value;
  variables["RANK"] = std::to_string(rank_of(spec, rank));
  variables["LOCAL_RANK"] = std::to_string(
      spec.local_ranks.empty() ? rank : spec.local_ranks.at(static_cast<size_t>(rank)));
  variables["WORLD_SIZE"] = std::to_string(spec.world_size > 0 ? spec.world_size : spec.processes);
  variables["LOCAL_WORLD_SIZE"] = std::to_string(spec.processes);
  variables["MASTER_ADDR"] = spec.address;
  variables["MASTER_PORT"] = std::to_string(port);
  variables[kLauncherPidVariable] = std::to_string(getpid());
  // A job token of the launcher's own environment (a multi-host start) is kept.
  if (!variables.count(kJobTokenVariable)) variables[kJobTokenVariable] = token;
  std::vector<std::string> result;
  result.reserve(variables.size());
  for (const auto& [name, value] : variables) result.push_back(fmt::format("{}={}", name, value));
  return result;
}

Child spawn(const LaunchSpec& spec, int rank, int port, const std::string& token) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
    posix_spawn_file_actions_addclose(&actions, fd);
  }
  std::vector<char*> argv;
  argv.reserve(spec.command.size() + 1);
  for (const auto& arg : spec.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const auto environment = environment_for(spec, rank, port, token);
  std::vector<char*> envp;
  envp.reserve(environment.size() + 1);
  for (const auto& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  // Each rank leads a process group of its own, so stopping it stops whatever it started.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  Child child;
  const int failed =
      posix_spawnp(&child.pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (failed != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error(
        fmt::format("cannot start {}: {}", spec.command.front(), std::strerror(failed)));
  }
  child.out_fd = out_pipe[0];
  child.err_fd = err_pipe[0];
  for (int fd : {child.out_fd, child.err_fd}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return child;
}

// 128 bits from the kernel's random source, as hex.
std::string new_job_token() {
  std::random_device random("/dev/urandom");
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", random());
  return token;
}

}  // namespace

std::string failure_summary(const LaunchResult& result, int world_size) {
  return fmt::format("rank {} of {} failed (exit code {}){}", result.blamed_rank, world_size,
                     result.blamed_code,
                     result.blamed_message.empty() ? "" : ": " + result.blamed_message);
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot open a socket to find a free port");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  close(fd);
  return ntohs(address.sin_port);
}

bool port_is_free(int port) {
  // Rank 0's store listens on every interface (libtorch's TCPStore), so that is what must
  // be free.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // as TCPStore's server sets
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool free =
      bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && listen(fd, 1) == 0;
  close(fd);
  return free;
}

LaunchResult launch_processes(const LaunchSpec& spec, std::ostream& out, std::ostream& err) {
  if (spec.command.empty()) throw std::runtime_error("nothing to launch");
  // Ctrl-C, SIGTERM or SIGHUP to the launcher reach every worker (each leads a process
  // group of its own, so a terminal's Ctrl-C would not), and the launcher waits for them.
  const StopSignals signals(/*arm_alarm=*/false);
  int forwarded = 0;  // the signal passed on to the workers, 0 before
  int forced = 0;     // stop signals seen when the workers were last killed outright
  const int port = spec.port > 0 ? spec.port : free_port();
  std::vector<Child> children;
  LaunchResult result;
  try {
    const std::string token = new_job_token();
    for (int rank = 0; rank < spec.processes; ++rank) {
      children.push_back(spawn(spec, rank, port, token));
    }
  } catch (...) {
    for (auto& child : children) kill(-child.pid, SIGKILL);
    for (auto& child : children) waitpid(child.pid, nullptr, 0);
    throw;
  }

  // Records the first error line of any rank's stderr.
  const auto errors_of = [&](int index) -> LineSeen {
    return [&result, rank = rank_of(spec, index)](std::string_view line) {
      if (result.first_error_rank >= 0) return;
      if (const auto text = error_text(line)) {
        result.first_error_rank = rank;
        result.first_error = std::string(*text);
      }
    };
  };

  bool stopping = false;
  auto stop_deadline = std::chrono::steady_clock::now();
  int running = spec.processes;
  while (running > 0) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> owners;  // (rank, is stderr)
    for (int rank = 0; rank < spec.processes; ++rank) {
      if (children[rank].out_fd >= 0) {
        fds.push_back({children[rank].out_fd, POLLIN, 0});
        owners.emplace_back(rank, false);
      }
      if (children[rank].err_fd >= 0) {
        fds.push_back({children[rank].err_fd, POLLIN, 0});
        owners.emplace_back(rank, true);
      }
    }
    if (!fds.empty()) poll(fds.data(), fds.size(), kPollMilliseconds);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto& [rank, is_err] = owners[i];
      Child& child = children[rank];
      int& fd = is_err ? child.err_fd : child.out_fd;
      if (!forward(fd, is_err ? child.err_line : child.out_line,
                   sink_of(spec, rank, is_err, out, err), is_err ? errors_of(rank) : LineSeen{})) {
        close(fd);
        fd = -1;
      }
    }
    if (fds.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(kPollMilliseconds));
    if (spec.tick) spec.tick();
    if (!result.stopped && spec.stop_when && spec.stop_when()) {
      result.stopped = true;
      err << fmt::format("[launch] asked to stop: stopping the {} workers\n", running)
          << std::flush;
      for (auto& other : children) {
        if (!other.exited) kill(-other.pid, SIGTERM);
      }
      if (!stopping) {
        stopping = true;
        stop_deadline = std::chrono::steady_clock::now() + spec.grace;
      }
    }
    // Who exited since the last look; of several, one a signal ended is the first failure.
    std::vector<int> exited_now;
    for (int rank = 0; rank < spec.processes; ++rank) {
      Child& child = children[rank];
      if (child.exited) continue;
      int status = 0;
      if (waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
      child.exited = true;
      child.code = exit_code_of(status);
      child.killed = WIFSIGNALED(status);
      --running;
      exited_now.push_back(rank);
    }
    std::stable_partition(exited_now.begin(), exited_now.end(),
                          [&](int rank) { return children[rank].killed; });
    for (const int rank : exited_now) {
      const Child& child = children[rank];
      // A worker that stopped on the signal passed on to it, or that the launcher killed
      // after it, has not failed.
      const bool stopped_as_asked = (forwarded || result.stopped) &&
                                    (child.code == 128 + SIGINT || child.code == 128 + SIGTERM ||
                                     child.code == 128 + SIGHUP || child.code == 128 + SIGKILL);
      const bool handed_over = child.code == spec.handover_exit_code;
      if (child.code != 0 && !stopped_as_asked && !handed_over && result.failed_rank < 0) {
        result.failed_rank = rank_of(spec, rank);
        result.exit_code = child.code;
        result.failure_seen = std::chrono::system_clock::now();
        if (!spec.bare) {
          err << fmt::format("[launch] rank {} exited with code {}; stopping the others\n",
                             result.failed_rank, child.code)
              << std::flush;
        }
        stopping = true;
        stop_deadline = std::chrono::steady_clock::now() + spec.grace;
        for (auto& other : children) {
          if (!other.exited) kill(-other.pid, SIGTERM);
        }
      }
    }
    if (const int signal_number = StopSignals::received(); signal_number && !forwarded) {
      forwarded = signal_number;
      err << fmt::format(
                 "[launch] {}: asking the {} workers to stop after their current step "
                 "(killed after {:.0f} s; again to kill them now)\n",
                 signal_name(signal_number), running,
                 std::chrono::duration<double>(spec.grace).count())
          << std::flush;
      for (auto& other : children) {
        if (!other.exited) kill(-other.pid, signal_number);
      }
      if (!stopping) {
        stopping = true;
        stop_deadline = std::chrono::steady_clock::now() + spec.grace;
      }
    }
    // A second stop signal, or the grace run out: kill what is left.
    const bool again = forwarded && StopSignals::count() > 1 && forced < StopSignals::count();
    if (again || (stopping && std::chrono::steady_clock::now() > stop_deadline)) {
      forced = StopSignals::count();
      for (auto& other : children) {
        if (!other.exited) kill(-other.pid, SIGKILL);
      }
    }
  }
  result.all_exited = std::chrono::system_clock::now();
  // What a rank's own children (if any outlived it) still hold: its process group goes.
  for (auto& child : children) kill(-child.pid, SIGKILL);
  for (size_t rank = 0; rank < children.size(); ++rank) {
    Child& child = children[rank];
    for (const bool is_err : {false, true}) {
      int& fd = is_err ? child.err_fd : child.out_fd;
      if (fd < 0) continue;
      // The rank has exited: take what is buffered (non-blocking) and close.
      const Sink sink = sink_of(spec, static_cast<int>(rank), is_err, out, err);
      const LineSeen seen = is_err ? errors_of(static_cast<int>(rank)) : LineSeen{};
      while (forward(fd, is_err ? child.err_line : child.out_line, sink, seen) && errno != EAGAIN) {
      }
      auto& line = is_err ? child.err_line : child.out_line;
      if (!line.empty()) {
        sink.to << sink.prefix << line << '\n';
        if (seen) seen(line);
      }
      close(fd);
      fd = -1;
    }
    result.codes.push_back(child.code);
  }
  if (result.failed_rank >= 0) {
    result.blamed_rank = result.failed_rank;
    result.blamed_code = result.exit_code;
    const auto index_of = [&](int rank) {
      if (spec.ranks.empty()) return rank;
      return static_cast<int>(std::find(spec.ranks.begin(), spec.ranks.end(), rank) -
                              spec.ranks.begin());
    };
    const bool killed = children[static_cast<size_t>(index_of(result.failed_rank))].killed;
    if (result.first_error_rank >= 0 && !killed) {
      const Child& first = children[static_cast<size_t>(index_of(result.first_error_rank))];
      if (first.code != 0) {
        result.blamed_rank = result.first_error_rank;
        result.blamed_code = first.code;
        result.blamed_message = result.first_error;
      }
    }
  }
  // Stopped by a signal: the launcher's exit says so (130 for Ctrl-C), as a shell's would.
  if (forwarded && result.failed_rank < 0) result.exit_code = 128 + forwarded;
  result.signal = forwarded;
  return result;
}

}  // namespace hyperpipe::launch
