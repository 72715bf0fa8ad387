#include "backend/loop_choice.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "util/error.h"

namespace tempo::backend {

namespace {

// The last decided size and its choice in one word, so that the calls after a decision (nearly
// all of them: a loop runs at few sizes) read it without a lock. 0: none yet.
class LastChoice {
 public:
  // 1 + which implementation, or 0 where the last decision was for another size.
  int find(int64_t rows, int64_t cols) const {
    const uint64_t w = word_.load(std::memory_order_acquire);
    return w != 0 && w >> 1 == key(rows, cols) ? 1 + static_cast<int>(w & 1) : 0;
  }
  void set(int64_t rows, int64_t cols, int which) {
    if (packs(rows, cols))
      word_.store(key(rows, cols) << 1 | static_cast<uint64_t>(which), std::memory_order_release);
  }

 private:
  static bool packs(int64_t rows, int64_t cols) {
    return rows >= 0 && rows < (int64_t{1} << 50) && cols >= 0 && cols < (1 << 12);
  }
  // Never 0 (the +1), and unique for the sizes that pack; other sizes never match.
  static uint64_t key(int64_t rows, int64_t cols) {
    return packs(rows, cols) ? (static_cast<uint64_t>(rows) << 12 | static_cast<uint64_t>(cols)) + 1
                             : 0;
  }
  std::atomic<uint64_t> word_{0};
};

struct Size {
  int64_t rows, cols;
  int calls = 0;  // trials so far, both implementations
  double best[2] = {1e300, 1e300};
  int chosen = -1;  // -1 while trials remain
};

struct Measured {
  LoopFn fn[2];
  ChoiceReport report;
  SizeDecision decide;
  LastChoice last;
  std::mutex mutex;
  std::vector<Size> sizes;  // a cluster runs at few sizes; past kMaxSizes, the first
  static constexpr size_t kMaxSizes = 16;
};

}  // namespace

LoopCall measured_choice(LoopFn first, LoopFn second, ChoiceReport report, SizeDecision decide) {
  auto c = std::make_shared<Measured>();
  c->fn[0] = first;
  c->fn[1] = second;
  c->report = std::move(report);
  c->decide = std::move(decide);
  c->sizes.reserve(Measured::kMaxSizes);  // the calls keep pointers into it
  return [c](int64_t rows, int64_t cols, const void* const* in, void* const* out) {
    if (int last = c->last.find(rows, cols)) return c->fn[last - 1](rows, cols, in, out);
    Size* s = nullptr;
    int which = 0;
    {
      std::lock_guard<std::mutex> lock(c->mutex);
      for (Size& z : c->sizes)
        if (z.rows == rows && z.cols == cols) s = &z;
      if (!s && c->sizes.size() < Measured::kMaxSizes) {
        s = &c->sizes.emplace_back(Size{rows, cols});
        if (c->decide)
          if (std::optional<bool> second = c->decide(rows, cols)) s->chosen = *second ? 1 : 0;
      }
      if (s && s->chosen >= 0) {
        which = s->chosen;
        c->last.set(rows, cols, which);
        s = nullptr;  // decided: no timing
      } else if (s) {
        which = s->calls % 2;
      }
    }
    if (!s) return c->fn[which](rows, cols, in, out);
    const auto t0 = std::chrono::steady_clock::now();
    c->fn[which](rows, cols, in, out);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(c->mutex);
    if (s->chosen >= 0) return;
    s->best[which] = std::min(s->best[which], t);
    if (++s->calls < 2 * kTrials) return;
    s->chosen = s->best[1] < kSecondBelow * s->best[0] ? 1 : 0;
    c->last.set(rows, cols, s->chosen);
    if (c->report) c->report(rows, cols, s->best[0], s->best[1], s->chosen == 1);
  };
}

void append_loop_timing(const std::string& path, const LoopFeatures& cluster, int64_t rows,
                        int64_t cols, double rows_outer_s, double columns_outer_s) {
  static std::mutex mutex;  // one writer at a time in this process
  std::lock_guard<std::mutex> lock(mutex);
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw UserError(cat("cannot append loop timings to ", path));
  std::fseek(f, 0, SEEK_END);
  if (std::ftell(f) == 0) {
    for (const char* name : LoopFeatures::kNames) std::fprintf(f, "%s,", name);
    std::fprintf(f, "rows,cols,rows_outer_s,columns_outer_s\n");
  }
  for (int v : cluster.values) std::fprintf(f, "%d,", v);
  std::fprintf(f, "%lld,%lld,%.9g,%.9g\n", static_cast<long long>(rows),
               static_cast<long long>(cols), rows_outer_s, columns_outer_s);
  std::fclose(f);
}

}  // namespace tempo::backend
