// Executor overhead per launched op on tiny scalar programs, next to the same computation as a
// plain C++ loop of LibTorch eager calls. Three figures per program:
//   tempo     : Executable::run on the LibTorch backend (ns per launch, kernel included)
//   executor  : the same schedule on a backend whose kernels do nothing (pure runtime cost:
//               AST walk, index evaluation, store reads and writes, launch bookkeeping)
//   eager     : the LibTorch calls alone, per call
// Usage: bench_executor [T]   (default T = 100000)
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>

#include "api/tempo.h"
#include "driver/compile.h"
#include "driver/executable_impl.h"

namespace {

using namespace tempo;

// CPU time of this thread: unlike wall time, not inflated by other processes sharing the cores
// (LibTorch runs single-threaded here).
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Best of `reps` timings of f, in CPU seconds.
double best_of(int reps, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    double t0 = cpu_seconds();
    f();
    best = std::min(best, cpu_seconds() - t0);
  }
  return best;
}

// A backend whose kernels output one shared value: measures the executor alone.
class NullValue : public runtime::Value {
 public:
  int64_t nbytes() const override { return 4; }
};
class NullKernel : public runtime::Kernel {
 public:
  NullKernel(size_t outputs, runtime::ValuePtr v) : outputs_(outputs), v_(std::move(v)) {}
  void run(runtime::ValuePtr*, size_t, const int64_t*, runtime::ValuePtr* out) override {
    for (size_t k = 0; k < outputs_; ++k) out[k] = v_;
  }

 private:
  size_t outputs_;
  runtime::ValuePtr v_;
};
class NullBackend : public runtime::Backend {
 public:
  std::string device() const override { return "null"; }
  std::unique_ptr<runtime::Kernel> make_kernel(const ir::Graph& g, ir::OpId op,
                                               const sym::SymbolLayout&) override {
    return std::make_unique<NullKernel>(g.op(op).outputs.size(), v_);
  }
  runtime::ValuePtr stack(const runtime::ValuePtr*, size_t, ir::DType,
                          const std::vector<int64_t>&) override {
    return v_;
  }
  runtime::ValuePtr new_block(const runtime::Value&, int64_t, int64_t) override { return v_; }
  runtime::ValuePtr rolled_block(const runtime::Value&, int64_t, int64_t, int64_t) override {
    return v_;
  }
  runtime::ValuePtr write_row(const runtime::Value&, int64_t, int64_t,
                              const runtime::Value&) override {
    return v_;
  }
  runtime::ValuePtr block_row(const runtime::Value&, int64_t, int64_t) override { return v_; }
  runtime::ValuePtr block_rows(const runtime::Value&, int64_t, int64_t, int64_t,
                               int64_t) override {
    return v_;
  }
  runtime::ValuePtr evict(const runtime::Value&) override { return v_; }
  runtime::ValuePtr load(const runtime::Value&) override { return v_; }
  runtime::ValuePtr from_host(const HostTensor&) override { return v_; }
  HostTensor to_host(const runtime::ValuePtr&) override { return HostTensor(); }
  void seed(uint64_t) override {}

 private:
  runtime::ValuePtr v_ = std::make_shared<NullValue>();
};

struct Row {
  const char* name;
  int64_t launches;
  double tempo_s, executor_s, eager_s;
  int64_t eager_calls;
};

Row measure(const char* name, Context& ctx, const Bounds& bounds,
            const std::function<void()>& eager, int64_t eager_calls) {
  Executable exe = compile(ctx, bounds);
  exe.run();  // warm up
  Row r{name, exe.ops_executed(), 0, 0, 0, eager_calls};
  r.tempo_s = best_of(5, [&] { exe.run(); });
  Executable::Impl& impl = exe.impl();
  NullBackend null;
  runtime::Executor ex(impl.graph, impl.schedule, null, impl.dims);
  ex.run(bounds);
  r.executor_s = best_of(5, [&] { ex.run(bounds); });
  eager();
  r.eager_s = best_of(5, eager);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t T = argc > 1 ? std::atoll(argv[1]) : 100000;
  torch::set_num_threads(1);
  std::vector<Row> rows;

  {  // counter: s[0] = 0; s[t + 1] = s[t] + 1   (a Merge and an Add per step)
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT s = ctx.placeholder({DType::Float32, {}}, {t}, "s");
    s[0] = ctx.zeros({});
    s[t.var + 1] = s[t.var] + 1.0;
    ctx.udf("keep", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {s[t.bound - 1]}, {},
            {});
    auto eager = [T] {
      torch::Tensor one = torch::ones({});
      torch::Tensor s = torch::zeros({});
      for (int64_t i = 1; i < T; ++i) s = s + one;
    };
    rows.push_back(measure("counter (merge + add)", ctx, {{t.bound, T}}, eager, T - 1));
  }
  {  // map: y[t] = float(t) * 2 + 1   (EvalSymbol, Cast, Mul, Add per step)
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT y = ctx.symbol(t.var).cast(DType::Float32) * 2.0 + 1.0;
    ctx.udf("keep", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {y[t.bound - 1]}, {},
            {});
    auto eager = [T] {
      torch::Tensor two = torch::full({}, 2.0), one = torch::ones({});
      auto o = torch::TensorOptions().dtype(torch::kInt64);
      for (int64_t i = 0; i < T; ++i) {
        torch::Tensor y = torch::scalar_tensor(i, o).to(torch::kFloat32) * two + one;
      }
    };
    rows.push_back(measure("map (symbol, cast, mul, add)", ctx, {{t.bound, T}}, eager, 4 * T));
  }

  std::printf("T = %lld, LibTorch CPU, 1 thread; thread CPU time, best of 5 runs\n",
              static_cast<long long>(T));
  std::printf("%-30s %10s %14s %14s %14s %14s\n", "program", "launches", "tempo ns/op",
              "executor ns/op", "eager ns/call", "overhead ns/op");
  for (const Row& r : rows) {
    double tempo = 1e9 * r.tempo_s / r.launches;
    double exec = 1e9 * r.executor_s / r.launches;
    double eager = 1e9 * r.eager_s / r.eager_calls;
    // Overhead: Tempo's time beyond the eager calls it makes, per launch.
    double overhead = 1e9 * (r.tempo_s - r.eager_s) / r.launches;
    std::printf("%-30s %10lld %14.1f %14.1f %14.1f %14.1f\n", r.name,
                static_cast<long long>(r.launches), tempo, exec, eager, overhead);
  }
  return 0;
}
