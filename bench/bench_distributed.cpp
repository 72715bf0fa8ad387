// Data-parallel scaling: env steps per second of REINFORCE on the synthetic 3x64x64 environment
// with 1, 2 and 4 ranks on this machine (loopback Gloo), and the time spent in collectives.
//
//   bench_distributed [--ranks 1,2,4] [--envs 16] [--steps 32] [--iterations 12]
//
// The binary runs its own ranks: it re-executes itself with torchrun's variables set and each
// rank writes one line of figures; rank 0's are reported (every rank runs the same schedule).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"
#include "rl/algorithms/algorithms.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace {

struct Setup {
  std::vector<int> ranks{1, 2, 4};
  int64_t envs = 16, steps = 32, iterations = 12;
};

tempo::rl::TrainConfig config(const Setup& s) {
  tempo::rl::TrainConfig cfg = tempo::rl::TrainConfig::defaults("reinforce");
  cfg.env = "synthetic";
  cfg.env_options.obs_shape = {3, 64, 64};
  cfg.normalize_returns = false;
  cfg.num_envs = s.envs;
  cfg.steps = s.steps;
  cfg.iterations = s.iterations;
  return cfg;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One rank: trains and writes "run_seconds iteration_seconds collectives collective_seconds".
int worker(const Setup& s, const std::string& out) {
  tempo::rl::TrainConfig cfg = config(s);
  cfg.compile.communicator = tempo::connect(tempo::DistributedConfig::from_env());
  tempo::rl::TrainResult r = tempo::rl::train(cfg, nullptr);
  std::ofstream(tempo::cat(out, "/rank", cfg.compile.communicator->rank(), ".txt"))
      << r.run_seconds << ' ' << median(r.iteration_seconds) << ' ' << r.collectives << ' '
      << r.collective_seconds << '\n';
  return 0;
}

// One rank of the all-reduce alone: the mean of a tensor the size of that gradient (0.8M floats)
// at each of `iterations` steps, nothing else; writes "collectives collective_seconds".
int allreduce_worker(const Setup& s, const std::string& out) {
  std::shared_ptr<tempo::Communicator> comm = tempo::connect(tempo::DistributedConfig::from_env());
  tempo::Context ctx;
  tempo::Dim i = ctx.dim("i", "I");
  // The policy network's parameters: 12288 -> 64 -> 64 -> 4 with biases.
  const int64_t n = 12288 * 64 + 64 + 64 * 64 + 64 + 64 * 4 + 4;
  tempo::RT x = ctx.ones({n}) * ctx.symbol(i.var).cast(tempo::DType::Float32);
  tempo::RT total = tempo::all_reduce(x, true).sum().retain();
  tempo::CompileOptions o;
  o.communicator = comm;
  tempo::Executable exe = compile(ctx, {{i.bound, s.iterations}}, o);
  exe.run();
  std::ofstream(tempo::cat(out, "/rank", comm->rank(), ".txt"))
      << comm->collectives() << ' ' << comm->collective_seconds() << '\n';
  comm->barrier();
  return 0;
}

struct Figures {
  double run = 0, iteration = 0, collective = 0;
  int64_t collectives = 0;
  double cpu = 0, wall = 0;  // CPU seconds of all ranks and the job's wall time (with compiles)
};

Figures run_ranks(int world, const std::string& dir, const std::string& mode) {
  fs::create_directories(dir);
  const int port = tempo::pick_free_port();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("TEMPO_BENCH_DIST_OUT", dir.c_str(), 1);
      setenv("TEMPO_BENCH_DIST_MODE", mode.c_str(), 1);
      setenv("OMP_NUM_THREADS", "1", 1);
      char name[] = "bench_distributed";
      char* args[] = {name, nullptr};
      execv("/proc/self/exe", args);
      _exit(127);
    }
    pids.push_back(pid);
  }
  Figures f;
  for (pid_t p : pids) {
    int st = 0;
    rusage ru{};
    wait4(p, &st, 0, &ru);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      throw tempo::UserError(tempo::cat("a rank of the ", world, "-rank run failed"));
    f.cpu += static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  }
  f.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream in(dir + "/rank0.txt");
  if (mode == "allreduce" ? !(in >> f.collectives >> f.collective)
                          : !(in >> f.run >> f.iteration >> f.collectives >> f.collective))
    throw tempo::UserError(tempo::cat("rank 0 of the ", world, "-rank run wrote no figures"));
  return f;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stoi(item));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  // The ranks inherit the setup through the environment.
  auto from_env = [](const char* name, int64_t& v) {
    if (const char* e = std::getenv(name)) v = std::stoll(e);
  };
  for (int k = 1; k + 1 < argc; k += 2) {
    std::string a = argv[k], v = argv[k + 1];
    if (a == "--ranks")
      s.ranks = parse_list(v);
    else if (a == "--envs")
      setenv("TEMPO_BENCH_DIST_ENVS", v.c_str(), 1);
    else if (a == "--steps")
      setenv("TEMPO_BENCH_DIST_STEPS", v.c_str(), 1);
    else if (a == "--iterations")
      setenv("TEMPO_BENCH_DIST_ITERATIONS", v.c_str(), 1);
  }
  from_env("TEMPO_BENCH_DIST_ENVS", s.envs);
  from_env("TEMPO_BENCH_DIST_STEPS", s.steps);
  from_env("TEMPO_BENCH_DIST_ITERATIONS", s.iterations);
  try {
    if (const char* out = std::getenv("TEMPO_BENCH_DIST_OUT")) {
      const char* mode = std::getenv("TEMPO_BENCH_DIST_MODE");
      return mode && std::string(mode) == "allreduce" ? allreduce_worker(s, out) : worker(s, out);
    }
    const std::string dir =
        (fs::temp_directory_path() / tempo::cat("tempo_bench_dist_", getpid())).string();
    std::printf(
        "REINFORCE on synthetic 3x64x64, %lld envs per rank x %lld steps, %lld iterations, "
        "1 LibTorch thread per rank, %u cores\n\n",
        static_cast<long long>(s.envs), static_cast<long long>(s.steps),
        static_cast<long long>(s.iterations), std::thread::hardware_concurrency());
    std::printf(
        "| ranks | env steps/s (all ranks) | per rank | speed-up | collectives/iter "
        "| ms in collectives/iter | share of the iteration | cores busy |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    double base = 0;
    for (int w : s.ranks) {
      Figures f = run_ranks(w, tempo::cat(dir, "/", w), "train");
      // Steady state: the median iteration (the first pays for warm-up).
      const double sps = static_cast<double>(w * s.envs * s.steps) / f.iteration;
      if (base == 0) base = sps;  // the speed-up is against the first row
      const double per_iter = f.collective / static_cast<double>(s.iterations);
      // Cores busy: the ranks' CPU time over the job's wall time (compiles included); below
      // the ranks' count, ranks waited for a core or for each other.
      std::printf("| %d | %.0f | %.0f | %.2fx | %.1f | %.2f | %.0f%% | %.2f |\n", w, sps, sps / w,
                  sps / base, static_cast<double>(f.collectives) / s.iterations, per_iter * 1e3,
                  100.0 * per_iter / f.iteration, f.cpu / f.wall);
      std::fflush(stdout);
    }
    // The transport alone: the same gradient's all-reduce with nothing else to wait for.
    std::printf("\nThe gradient's all-reduce alone (790916 float32, 3.2 MB, %lld times):\n\n",
                static_cast<long long>(s.iterations));
    std::printf("| ranks | ms per all-reduce | GB/s (bytes / time) |\n| ---: | ---: | ---: |\n");
    for (int w : s.ranks) {
      if (w < 2) continue;
      Figures f = run_ranks(w, tempo::cat(dir, "/allreduce", w), "allreduce");
      const double ms = 1e3 * f.collective / static_cast<double>(f.collectives);
      std::printf("| %d | %.2f | %.2f |\n", w, ms, 790916 * 4 / (ms * 1e6));
      std::fflush(stdout);
    }
    fs::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_distributed: %s\n", e.what());
    return 1;
  }
  return 0;
}
