// tempo launch: starts the ranks of a data-parallel job on this machine, the way torchrun does
// (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and stops them all when one fails.
// The ranks join through tempo::connect (api/distributed.h).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/distributed.h"
#include "commands.h"
#include "parse_args.h"
#include "util/error.h"

namespace {

using tempo::cat;
using tempo::UserError;

const char* kUsage =
    "usage: tempo launch -n N [--master-addr A] [--master-port P] [--timeout S] -- COMMAND...\n"
    "\n"
    "Runs COMMAND as N ranks of a data-parallel job on this machine, e.g.\n"
    "  tempo launch -n 2 -- tempo train ppo --env CartPole-v1 --out run/\n"
    "Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun's\n"
    "variables); `tempo` as COMMAND is this tool. Rank 0 prints progress and writes results.\n"
    "When a rank exits with an error the others are stopped and launch exits non-zero.\n"
    "\n"
    "  -n N             ranks to start (1..64)\n"
    "  --master-addr A  rendezvous address (default 127.0.0.1)\n"
    "  --master-port P  rendezvous port (default $MASTER_PORT, else a free port)\n"
    "  --timeout S      seconds the ranks wait for each other at the rendezvous and in each\n"
    "                   collective before failing (TEMPO_DIST_TIMEOUT; default 60)\n";

volatile sig_atomic_t g_interrupted = 0;  // SIGINT or SIGTERM reached the launcher
void on_signal(int sig) {
  g_interrupted = sig;
}

// Stops the ranks still running, each with the processes it started (its process group):
// SIGTERM, then SIGKILL after a grace period.
void stop_all(std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (p > 0) kill(-p, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t& p : pids) {
    if (p <= 0) continue;
    while (waitpid(p, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(-p, SIGKILL);
        waitpid(p, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    p = 0;
  }
}

}  // namespace

int run_launch_command(int argc, char** argv) {
  int n = 0;
  std::string addr = "127.0.0.1", port, timeout;
  int k = 1;
  for (; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    auto value = [&]() -> std::string {
      if (k + 1 >= argc || !std::strcmp(argv[k + 1], "--"))
        throw UserError(cat(a, " expects a value (see `tempo launch --help`)"));
      return argv[++k];
    };
    if (a == "-n" || a == "--nproc") {
      int64_t v = tempo::cli::parse_int(a, value());
      if (v < 1 || v > 64) throw UserError(cat("-n ", v, ": the number of ranks must be 1..64"));
      n = static_cast<int>(v);
    } else if (a == "--master-addr") {
      addr = value();
    } else if (a == "--master-port") {
      port = value();
      int64_t v = tempo::cli::parse_int(a, port);
      if (v < 1 || v > 65535) throw UserError(cat("--master-port ", v, " is not a TCP port"));
    } else if (a == "--timeout") {
      timeout = value();
      if (!(tempo::cli::parse_double(a, timeout) > 0))
        throw UserError(cat("--timeout ", timeout, " must be a positive number of seconds"));
    } else {
      throw UserError(cat("unknown option ", a, " (try `tempo launch --help`)"));
    }
  }
  if (n == 0) throw UserError("missing -n N, the number of ranks (try `tempo launch --help`)");
  if (k >= argc || k + 1 >= argc)
    throw UserError("missing the command to run after `--` (try `tempo launch --help`)");
  std::vector<std::string> command(argv + k + 1, argv + argc);
  // `tempo` is this very tool, whether or not it is on PATH.
  const bool self = command[0] == "tempo";
  if (port.empty()) {
    const char* env = std::getenv("MASTER_PORT");
    port = env && *env ? env
                       : std::to_string(tempo::pick_free_port(
                             addr == "localhost" ? std::string("127.0.0.1") : addr));
  }

  // The ranks run in their own process groups, so a terminal's Ctrl-C reaches the launcher
  // alone: it stops them (no SA_RESTART: waitpid returns EINTR).
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::vector<pid_t> pids(n, 0);
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      stop_all(pids);
      throw UserError(cat("tempo launch: cannot start rank ", r, ": ", std::strerror(errno)));
    }
    if (pid == 0) {
      setpgid(0, 0);  // a group per rank, so that stopping it stops what it started
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("MASTER_ADDR", addr.c_str(), 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      if (!timeout.empty()) setenv("TEMPO_DIST_TIMEOUT", timeout.c_str(), 1);
      // The ranks share this machine's cores: one intra-op thread each unless asked otherwise
      // (torchrun's default too).
      if (n > 1) setenv("OMP_NUM_THREADS", "1", 0);
      std::vector<char*> args;
      for (std::string& s : command) args.push_back(s.data());
      args.push_back(nullptr);
      if (self)
        execv("/proc/self/exe", args.data());
      else
        execvp(args[0], args.data());
      std::fprintf(stderr, "tempo launch: rank %d: cannot run %s: %s\n", r, command[0].c_str(),
                   std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);  // also here: the group exists before any kill, whoever runs first
    pids[r] = pid;
  }

  int running = n;
  while (running > 0) {
    int st = 0;
    pid_t done = waitpid(-1, &st, 0);
    if (done < 0) {
      if (errno == EINTR && g_interrupted) {
        std::fprintf(stderr, "tempo launch: interrupted (%s); stopping the ranks\n",
                     strsignal(g_interrupted));
        stop_all(pids);
        return 128 + g_interrupted;
      }
      if (errno == EINTR) continue;
      break;
    }
    int r = -1;
    for (int q = 0; q < n; ++q)
      if (pids[q] == done) r = q;
    if (r < 0) continue;
    pids[r] = 0;
    --running;
    const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
      std::string how = WIFEXITED(st) ? cat("exited with status ", WEXITSTATUS(st))
                                      : cat("was killed by signal ", WTERMSIG(st), " (",
                                            strsignal(WTERMSIG(st)), ")");
      std::fprintf(stderr, "tempo launch: rank %d of %d %s; stopping the other ranks\n", r, n,
                   how.c_str());
      stop_all(pids);
      return 1;
    }
  }
  return 0;
}
