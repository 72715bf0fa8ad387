// A small sampling profiler for the benchmarks (perf is not available on the development
// machine): SIGPROF every millisecond of process CPU time records the call stack with
// backtrace(); report() symbolizes the program counters (dladdr for shared libraries, the
// executable's symbol table through `nm` otherwise) and prints the functions with the most
// samples, by self time (the interrupted function) and inclusive time (anywhere on the stack).
#pragma once

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace bench {

class SamplingProfiler {
 public:
  static constexpr int kDepth = 40;

  explicit SamplingProfiler(size_t max_samples = 100000)
      : pcs_(max_samples * kDepth), depth_(max_samples) {}
  ~SamplingProfiler() { stop(); }

  void start() {
    void* warm[4];
    backtrace(warm, 4);  // loads the unwinder outside the signal handler
    active() = this;
    struct sigaction sa = {};
    sa.sa_sigaction = &SamplingProfiler::on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, nullptr);
    itimerval tv = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &tv, nullptr);
  }

  void stop() {
    if (active() != this) return;
    itimerval tv = {};
    setitimer(ITIMER_PROF, &tv, nullptr);
    signal(SIGPROF, SIG_IGN);
    active() = nullptr;
  }

  // Prints the `top` functions by self samples and by inclusive samples.
  void report(std::ostream& os, size_t top) {
    const size_t n = std::min(count_.load(), depth_.size());
    std::unordered_map<void*, std::string> names;
    Symbols syms;
    auto name_of = [&](void* pc) -> const std::string& {
      auto it = names.find(pc);
      if (it != names.end()) return it->second;
      return names[pc] = syms.lookup(pc);
    };
    std::map<std::string, int64_t> self, incl;
    for (size_t s = 0; s < n; ++s) {
      // Frames 0-1 are this handler and the signal trampoline.
      const int d = depth_[s];
      if (d <= 2) continue;
      void** f = &pcs_[s * kDepth];
      ++self[name_of(f[2])];
      std::set<std::string> seen;
      for (int k = 2; k < d; ++k) seen.insert(name_of(f[k]));
      for (const std::string& x : seen) ++incl[x];
    }
    auto print = [&](const char* title, const std::map<std::string, int64_t>& m) {
      std::vector<std::pair<int64_t, std::string>> v;
      for (const auto& [k, c] : m) v.push_back({c, k});
      std::sort(v.rbegin(), v.rend());
      os << title << " (" << n << " samples of 1 ms CPU)\n";
      for (size_t k = 0; k < std::min(top, v.size()); ++k)
        os << std::setw(7) << std::fixed << std::setprecision(1)
           << 100.0 * static_cast<double>(v[k].first) / static_cast<double>(std::max<size_t>(n, 1))
           << "%  " << v[k].second << "\n";
    };
    print("self", self);
    print("inclusive", incl);
  }

  size_t samples() const { return std::min(count_.load(), depth_.size()); }

 private:
  // Symbolizes program counters; the executable's own (non-exported) functions via nm.
  class Symbols {
   public:
    std::string lookup(void* pc) {
      Dl_info info;
      if (!dladdr(pc, &info) || !info.dli_fname) return "??";
      const uintptr_t off =
          reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase);
      std::string name;
      if (info.dli_sname)
        name = demangle(info.dli_sname);
      else if (exe_path(info.dli_fname))
        name = exe_symbol(off);
      if (name.empty()) name = std::string(info.dli_fname) + "+?";
      if (name.size() > 110) name = name.substr(0, 107) + "...";
      return name;
    }

   private:
    static std::string demangle(const char* s) {
      int status = 0;
      char* d = abi::__cxa_demangle(s, nullptr, nullptr, &status);
      std::string r = status == 0 && d ? d : s;
      std::free(d);
      return r;
    }
    bool exe_path(const char* fname) {
      char buf[4096];
      const ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
      if (len <= 0) return false;
      buf[len] = 0;
      const std::string f = fname;
      return f == buf || f.rfind("/proc/", 0) == 0;  // also when started as /proc/PID/exe
    }
    std::string exe_symbol(uintptr_t off) {
      if (!loaded_) load_exe();
      auto it = table_.upper_bound(off);
      if (it == table_.begin()) return "";
      return std::prev(it)->second;
    }
    void load_exe() {
      loaded_ = true;
      char exe[4096];
      const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
      if (len <= 0) return;
      exe[len] = 0;  // the real path: /proc/self in the shell would be the shell's
      FILE* p =
          popen((std::string("nm -C -n --defined-only '") + exe + "' 2>/dev/null").c_str(), "r");
      if (!p) return;
      char line[8192];
      while (std::fgets(line, sizeof line, p)) {
        char* end = nullptr;
        const unsigned long long addr = std::strtoull(line, &end, 16);
        if (!end || end[0] != ' ' || !end[1] || end[2] != ' ') continue;
        const char type = end[1];
        if (type != 'T' && type != 't' && type != 'W' && type != 'w') continue;
        std::string name(end + 3);
        while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
        table_[addr] = name;
      }
      pclose(p);
    }
    bool loaded_ = false;
    std::map<uintptr_t, std::string> table_;
  };

  static SamplingProfiler*& active() {
    static SamplingProfiler* p = nullptr;  // the signal handler's target
    return p;
  }
  static void on_signal(int, siginfo_t*, void*) {
    SamplingProfiler* self = active();
    if (!self) return;
    const size_t s = self->count_.load(std::memory_order_relaxed);
    if (s >= self->depth_.size()) return;
    self->depth_[s] = backtrace(&self->pcs_[s * kDepth], kDepth);
    self->count_.store(s + 1, std::memory_order_relaxed);
  }

  std::vector<void*> pcs_;
  std::vector<int> depth_;
  std::atomic<size_t> count_{0};
};

}  // namespace bench
