// Data-parallel training over c10d/Gloo on loopback: this binary runs its own ranks (it re-executes
// itself with TEMPO_DIST_WORKER set and torchrun's variables), then compares what they wrote.
// Every wait is bounded; ranks bind 127.0.0.1 only.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "rl/algorithms/algorithms.h"
#include "util/error.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace tempo {
namespace {

std::string env_str(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string dump(const std::vector<HostTensor>& ts) {
  std::ostringstream o;
  o << std::setprecision(9);
  for (const HostTensor& t : ts) {
    for (int64_t k = 0; k < t.numel(); ++k) o << t.at(k) << ' ';
    o << '\n';
  }
  return o.str();
}

std::vector<double> numbers(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> v;
  double x;
  while (in >> x) v.push_back(x);
  return v;
}

// ---- workers (one process per rank) --------------------------------------------------------

// Linear regression over 8 fixed rows split evenly across ranks; each rank starts from its own
// weights, so the result also checks the broadcast of rank 0's.
std::string supervised_worker(const std::shared_ptr<Communicator>& comm) {
  const int64_t rows = 8, features = 3, per = rows / comm->world_size();
  std::vector<float> x(rows * features), y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f = 0; f < features; ++f) x[r * features + f] = std::sin(1.0f + r * 3 + f);
    y[r] = std::cos(0.5f * r);
  }
  std::vector<float> mine_x(x.begin() + comm->rank() * per * features,
                            x.begin() + (comm->rank() + 1) * per * features);
  std::vector<float> mine_y(y.begin() + comm->rank() * per, y.begin() + (comm->rank() + 1) * per);
  Context ctx;
  ctx.set_data_parallel(true);
  Dim i = ctx.dim("i", "I");
  std::vector<float> w0(features, 0.1f * static_cast<float>(comm->rank() + 1));
  nn::Parameter w(ctx.tensor(HostTensor::from(w0, {features, 1})), nn::Steps{i}, "w");
  RT X = ctx.tensor(HostTensor::from(mine_x, {per, features}));
  RT Y = ctx.tensor(HostTensor::from(mine_y, {per, 1}));
  RT loss = (X.matmul(w) - Y).square().mean();
  optim::SGD opt({w}, 0.1);
  optim::minimize(loss, opt);
  RT trained = w.update().retain();
  CompileOptions o;
  o.communicator = comm;
  Executable exe = compile(ctx, {{i.bound, 20}}, o);
  exe.run();
  comm->barrier();
  return dump({exe.get(trained, {19})});
}

// An RL algorithm on CartPole: each rank's loss is a mean over its own envs, normalizations use
// the whole job's statistics, so the ranks' average gradient is the whole batch's (README:
// data-parallel training). TEMPO_DIST_RAW=1: REINFORCE without return normalization.
std::string rl_worker(const std::shared_ptr<Communicator>& comm) {
  rl::TrainConfig cfg = rl::TrainConfig::defaults(env_str("TEMPO_DIST_ALGO", "reinforce"));
  if (env_str("TEMPO_DIST_RAW") == "1") {
    cfg.per_step = false;
    cfg.normalize_returns = false;
  }
  cfg.num_envs = std::stoll(env_str("TEMPO_DIST_ENVS", "4"));
  cfg.steps = 16;
  cfg.iterations = 6;
  cfg.set_hidden_width(16);
  cfg.keep_parameters = true;
  cfg.compile.communicator = comm;
  rl::TrainResult r = rl::train(cfg, nullptr);
  return dump(r.parameters);
}

// Rank 1 leaves after compiling, before running; rank 0's all-reduce must fail, not hang.
std::string dying_worker(const std::shared_ptr<Communicator>& comm) {
  Context ctx;
  RT x = all_reduce(ctx.ones({4}), true).retain();
  CompileOptions o;
  o.communicator = comm;
  Executable exe = compile(ctx, {}, o);
  if (comm->rank() == 1) _exit(3);
  exe.run();
  return "finished";
}

// Rank 1 builds another program than rank 0: it must refuse to run it.
std::string mismatched_worker(const std::shared_ptr<Communicator>& comm) {
  Context ctx;
  RT x = all_reduce(ctx.ones({4}), true);
  if (comm->rank() == 1) x = x + all_reduce(ctx.ones({2}).sum(), false);
  x.retain();
  CompileOptions o;
  o.communicator = comm;
  Executable exe = compile(ctx, {}, o);
  exe.run();
  return "finished";
}

int worker_main(const std::string& mode) {
  const std::string out = env_str("TEMPO_DIST_OUT");
  try {
    std::shared_ptr<Communicator> comm = connect(DistributedConfig::from_env());
    std::string result = mode == "supervised" ? supervised_worker(comm)
                         : mode == "rl"       ? rl_worker(comm)
                         : mode == "die"      ? dying_worker(comm)
                         : mode == "mismatch" ? mismatched_worker(comm)
                                              : "unknown mode " + mode;
    write_file(cat(out, "/rank", comm->rank(), ".txt"), result);
    return 0;
  } catch (const std::exception& e) {
    write_file(cat(out, "/error", env_str("RANK"), ".txt"), e.what());
    return 1;
  }
}

// ---- the test side -------------------------------------------------------------------------

struct Job {
  std::string dir;
  std::vector<int> status;  // per rank: exit code, or -1 when killed at the deadline
  double seconds = 0;
};

// Runs `world` ranks of this binary in `mode` and waits at most `limit` seconds.
Job run_job(const std::string& mode, int world, std::map<std::string, std::string> extra,
            double limit = 45) {
  Job job;
  job.dir = (fs::temp_directory_path() /
             cat("tempo_dist_", getpid(), "_", mode, "_", world, "_", std::rand()))
                .string();
  fs::create_directories(job.dir);
  const int port = pick_free_port();
  std::vector<pid_t> pids;
  Clock::time_point t0 = Clock::now();
  for (int r = 0; r < world; ++r) {
    std::map<std::string, std::string> vars = extra;
    vars["TEMPO_DIST_WORKER"] = mode;
    vars["TEMPO_DIST_OUT"] = job.dir;
    vars["RANK"] = std::to_string(r);
    vars["LOCAL_RANK"] = std::to_string(r);
    vars["WORLD_SIZE"] = std::to_string(world);
    vars["MASTER_ADDR"] = "127.0.0.1";
    vars["MASTER_PORT"] = std::to_string(port);
    if (!vars.count("TEMPO_DIST_TIMEOUT")) vars["TEMPO_DIST_TIMEOUT"] = "30";
    pid_t pid = fork();
    if (pid == 0) {
      for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
      // One intra-op thread per rank: the ranks share this machine's cores.
      setenv("OMP_NUM_THREADS", "1", 1);
      char* argv[] = {const_cast<char*>("test_dist"), nullptr};
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    pids.push_back(pid);
  }
  job.status.assign(world, -1);
  int left = world;
  while (left > 0) {
    for (int r = 0; r < world; ++r) {
      if (job.status[r] != -1 || pids[r] == 0) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        job.status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        pids[r] = 0;
        --left;
      }
    }
    if (std::chrono::duration<double>(Clock::now() - t0).count() > limit) {
      for (int r = 0; r < world; ++r)
        if (pids[r] != 0) {
          kill(pids[r], SIGKILL);
          waitpid(pids[r], nullptr, 0);
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  job.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return job;
}

std::string rank_output(const Job& job, int r) {
  std::string path = cat(job.dir, "/rank", r, ".txt");
  if (!fs::exists(path)) {
    std::string err = read_file(cat(job.dir, "/error", r, ".txt"));
    ADD_FAILURE() << "rank " << r << " wrote no result (status " << job.status[r] << "): " << err;
    return "";
  }
  return read_file(path);
}

void expect_close(const std::string& a, const std::string& b, double tol) {
  std::vector<double> x = numbers(a), y = numbers(b);
  ASSERT_EQ(x.size(), y.size());
  ASSERT_FALSE(x.empty());
  double worst = 0;
  for (size_t k = 0; k < x.size(); ++k) worst = std::max(worst, std::abs(x[k] - y[k]));
  EXPECT_LE(worst, tol) << "largest difference over " << x.size() << " values";
}

TEST(Distributed, SupervisedRanksAgreeAndMatchOneProcess) {
  Job one = run_job("supervised", 1, {});
  Job two = run_job("supervised", 2, {});
  Job four = run_job("supervised", 4, {});
  std::string ref = rank_output(one, 0);
  std::string r0 = rank_output(two, 0);
  // Parameters identical on every rank (bit for bit: the same collective result).
  EXPECT_EQ(r0, rank_output(two, 1));
  for (int r = 1; r < 4; ++r) EXPECT_EQ(rank_output(four, 0), rank_output(four, r));
  // The batch split over 2 or 4 ranks computes what one process does with all of it.
  expect_close(ref, r0, 1e-5);
  expect_close(ref, rank_output(four, 0), 1e-5);
}

// 2 ranks x 4 envs against 1 rank x 8 envs: the same envs, the same action noise.
void expect_two_ranks_match_one(std::map<std::string, std::string> vars) {
  vars["TEMPO_DIST_ENVS"] = "8";
  Job one = run_job("rl", 1, vars);
  vars["TEMPO_DIST_ENVS"] = "4";
  Job two = run_job("rl", 2, vars);
  std::string ref = rank_output(one, 0), r0 = rank_output(two, 0);
  EXPECT_EQ(r0, rank_output(two, 1));
  expect_close(ref, r0, 1e-4);
  // Not trivially equal: 4 envs in one process train differently.
  vars["TEMPO_DIST_ENVS"] = "4";
  Job small = run_job("rl", 1, vars);
  std::vector<double> a = numbers(ref), b = numbers(rank_output(small, 0));
  double diff = 0;
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k)
    diff = std::max(diff, std::abs(a[k] - b[k]));
  EXPECT_GT(diff, 1e-3);
}

TEST(Distributed, ReinforceTwoRanksOfNEnvsMatchOneRankOf2NEnvs) {
  expect_two_ranks_match_one({{"TEMPO_DIST_RAW", "1"}});
}

TEST(Distributed, NormalizedReinforceAndA2cMatchAcrossWorldSizes) {
  expect_two_ranks_match_one({});  // per-step REINFORCE, returns normalized over the job
  expect_two_ranks_match_one({{"TEMPO_DIST_ALGO", "a2c"}});  // advantages normalized over the job
}

TEST(Distributed, PpoRanksHoldIdenticalParameters) {
  Job four = run_job("rl", 4, {{"TEMPO_DIST_ENVS", "2"}, {"TEMPO_DIST_ALGO", "ppo"}});
  std::string r0 = rank_output(four, 0);
  EXPECT_FALSE(r0.empty());
  for (int r = 1; r < 4; ++r) EXPECT_EQ(r0, rank_output(four, r)) << "rank " << r;
}

TEST(Distributed, ARankThatDiesFailsTheOthersWithinTheTimeout) {
  Job job = run_job("die", 2, {{"TEMPO_DIST_TIMEOUT", "5"}}, 30);
  EXPECT_EQ(job.status[1], 3);
  EXPECT_EQ(job.status[0], 1) << "rank 0 should fail, not finish or hang";
  std::string err = read_file(cat(job.dir, "/error0.txt"));
  EXPECT_NE(err.find("all-reduce failed: another rank died or did not answer within 5 s"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("rank 0 of 2"), std::string::npos) << err;
  EXPECT_LT(job.seconds, 20);
}

TEST(Distributed, RanksWithDifferentSchedulesFailClearly) {
  Job job = run_job("mismatch", 2, {{"TEMPO_DIST_TIMEOUT", "5"}}, 30);
  EXPECT_EQ(job.status[1], 1);
  std::string err = read_file(cat(job.dir, "/error1.txt"));
  EXPECT_NE(err.find("rank 1 of 2 compiled another schedule than rank 0"), std::string::npos)
      << err;
  EXPECT_EQ(job.status[0], 1) << "rank 0 should fail when rank 1 leaves";
}

TEST(Distributed, UnreachableRendezvousFailsClearly) {
  DistributedConfig c;
  c.rank = 1;
  c.world_size = 2;
  c.master_port = pick_free_port();  // nothing listens there
  c.timeout_seconds = 2;
  Clock::time_point t0 = Clock::now();
  try {
    connect(c);
    FAIL() << "connect returned";
  } catch (const UserError& e) {
    EXPECT_NE(
        std::string(e.what()).find(cat("cannot reach the rendezvous at 127.0.0.1:", c.master_port)),
        std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 15);
}

// Sets variables for one test and restores them after.
struct ScopedEnv {
  std::map<std::string, std::optional<std::string>> saved;
  void set(const std::string& k, const char* v) {
    if (!saved.count(k)) {
      const char* old = std::getenv(k.c_str());
      saved[k] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (v)
      setenv(k.c_str(), v, 1);
    else
      unsetenv(k.c_str());
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved)
      if (v)
        setenv(k.c_str(), v->c_str(), 1);
      else
        unsetenv(k.c_str());
  }
};

std::string from_env_error() {
  try {
    DistributedConfig::from_env();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Distributed, EnvironmentVariablesAreChecked) {
  ScopedEnv env;
  env.set("WORLD_SIZE", nullptr);
  env.set("RANK", "0");
  EXPECT_NE(from_env_error().find("WORLD_SIZE is not set"), std::string::npos);
  env.set("WORLD_SIZE", "0");
  EXPECT_NE(from_env_error().find("WORLD_SIZE=0"), std::string::npos);
  env.set("WORLD_SIZE", "two");
  EXPECT_NE(from_env_error().find("not an integer"), std::string::npos);
  env.set("WORLD_SIZE", "2");
  env.set("RANK", "2");
  EXPECT_NE(from_env_error().find("RANK=2 is outside"), std::string::npos);
  env.set("RANK", "1");
  env.set("MASTER_PORT", "70000");
  EXPECT_NE(from_env_error().find("MASTER_PORT=70000"), std::string::npos);
  env.set("MASTER_PORT", "29512");
  env.set("MASTER_ADDR", "10.1.2.3");
  env.set("LOCAL_RANK", nullptr);
  env.set("TEMPO_DIST_TIMEOUT", nullptr);
  DistributedConfig c = DistributedConfig::from_env();
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.master_addr, "10.1.2.3");
  EXPECT_EQ(c.master_port, 29512);
}

TEST(Distributed, CollectivesAreIdentitiesInOneProcess) {
  Context ctx;
  RT x = ctx.tensor(HostTensor::from(std::vector<float>{1, 2, 3}, {3}));
  RT m = all_reduce(x, true).retain(), b = broadcast(x, 0).retain();
  Executable exe = compile(ctx, {});
  exe.run();
  EXPECT_EQ(exe.get(m, {}).to_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(exe.get(b, {}).to_vector(), (std::vector<double>{1, 2, 3}));
  // The mean over ranks of an integer tensor is refused when the program is built.
  EXPECT_THROW(all_reduce(ctx.arange(3), true), UserError);
}

}  // namespace
}  // namespace tempo

int main(int argc, char** argv) {
  if (const char* mode = std::getenv("TEMPO_DIST_WORKER")) return tempo::worker_main(mode);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
