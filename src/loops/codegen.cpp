#include "loops/codegen.h"

#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/ctx.h>
#include <isl/id.h>
#include <isl/printer.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "symbolic/isl_bridge.h"
#include "util/error.h"
#include "util/hash.h"

namespace tempo::loops {
namespace {

struct PrintState {
  const MarkFn* marks;
  int in_parallel = 0;
};

isl_bool collect_user(isl_ast_node* node, void* user) {
  if (isl_ast_node_get_type(node) != isl_ast_node_user) return isl_bool_true;
  isl_ast_expr* call = isl_ast_node_user_get_expr(node);
  isl_ast_expr* fn = isl_ast_expr_get_op_arg(call, 0);
  isl_id* id = isl_ast_expr_get_id(fn);
  static_cast<std::set<std::string>*>(user)->insert(isl_id_get_name(id));
  isl_id_free(id);
  isl_ast_expr_free(fn);
  isl_ast_expr_free(call);
  return isl_bool_true;
}

isl_printer* print_for(isl_printer* p, isl_ast_print_options* options, isl_ast_node* node,
                       void* user) {
  auto* st = static_cast<PrintState*>(user);
  isl_ast_expr* it = isl_ast_node_for_get_iterator(node);
  isl_id* id = isl_ast_expr_get_id(it);
  int dim = std::atoi(isl_id_get_name(id) + 1);  // isl names the loop at dimension k "ck"
  isl_id_free(id);
  isl_ast_expr_free(it);
  std::set<std::string> stmts;
  isl_ast_node_foreach_descendant_top_down(node, collect_user, &stmts);
  LoopMark m = (*st->marks)(dim, stmts);
  bool par = m.parallel && st->in_parallel == 0;
  // Braces keep the pragmas legal where the loop is the body of an unbraced loop.
  bool braces = par || m.unroll > 0;
  auto line = [&](const std::string& text) {
    p = isl_printer_start_line(p);
    p = isl_printer_print_str(p, text.c_str());
    p = isl_printer_end_line(p);
  };
  if (braces) line("{");
  if (par) line("#pragma omp parallel for");
  // An OpenMP loop must follow its pragma directly: a parallel loop is not unrolled.
  if (m.unroll > 0 && !par) line(cat("#pragma GCC unroll ", m.unroll));
  st->in_parallel += par;
  p = isl_ast_node_for_print(node, p, options);
  st->in_parallel -= par;
  if (braces) line("}");
  return p;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.find("error") != std::string::npos) return line;
  return "(no message)";
}

}  // namespace

std::string kernel_code(const Program& p, const std::string& schedule_isl, const MarkFn& marks) {
  const sym::IslContext isl;
  isl_ctx* ctx = isl.get();
  isl_union_set* dom = isl_union_set_read_from_str(ctx, p.domains().c_str());
  isl_union_map* sched = isl_union_map_read_from_str(ctx, schedule_isl.c_str());
  if (!dom || !sched) {
    isl_union_set_free(dom);
    isl_union_map_free(sched);
    internal_error(cat("isl could not parse the schedule `", schedule_isl, "`"));
  }
  sched = isl_union_map_intersect_domain(sched, dom);
  isl_ast_build* build = isl_ast_build_from_context(isl_set_read_from_str(ctx, "{ : }"));
  isl_ast_node* tree = isl_ast_build_node_from_schedule_map(build, sched);
  isl_ast_build_free(build);
  std::string code;
  if (tree) {
    PrintState st{&marks};
    isl_printer* pr = isl_printer_to_str(ctx);
    pr = isl_printer_set_output_format(pr, ISL_FORMAT_C);
    pr = isl_printer_set_indent(pr, 2);
    isl_ast_print_options* opts = isl_ast_print_options_alloc(ctx);
    opts = isl_ast_print_options_set_print_for(opts, print_for, &st);
    pr = isl_ast_node_print(tree, pr, opts);
    char* s = isl_printer_get_str(pr);
    if (s) code = s;
    free(s);
    isl_printer_free(pr);
    isl_ast_node_free(tree);
  }
  if (code.empty()) internal_error(cat("isl could not generate code for ", p.name));
  return code;
}

std::string kernel_code(const Program& p, const Schedule& s) {
  std::map<std::string, size_t> index;
  for (size_t t = 0; t < p.statements.size(); ++t) index[p.statements[t].name] = t;
  MarkFn marks = [&](int dim, const std::set<std::string>& stmts) {
    LoopMark m;
    for (const std::string& n : stmts) {
      const auto& rows = s.rows[index.at(n)];
      if (dim >= static_cast<int>(rows.size())) continue;
      m.parallel = m.parallel || rows[dim].parallel;
      m.unroll = std::max(m.unroll, rows[dim].unroll);
    }
    return m;
  };
  return kernel_code(p, s.to_isl(p), marks);
}

MarkFn auto_parallel(const Dependences& deps, const std::string& schedule_isl) {
  auto cache = std::make_shared<std::map<int, bool>>();
  return [&deps, schedule_isl, cache](int dim, const std::set<std::string>&) {
    auto it = cache->find(dim);
    if (it == cache->end()) it = cache->emplace(dim, deps.parallel_ok(schedule_isl, dim)).first;
    return LoopMark{it->second, 0};
  };
}

std::string c_file(const Program& p, const std::string& kernel) {
  std::string out =
      "#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n\n"
      "#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))\n"
      "#define min(x, y) ((x) < (y) ? (x) : (y))\n"
      "#define max(x, y) ((x) > (y) ? (x) : (y))\n\n";
  for (const Array& a : p.arrays) {
    out += "static double " + a.name;
    for (int64_t n : a.sizes) out += cat("[", n, "]");
    out += ";\n";
  }
  out += "\n";
  for (const Statement& s : p.statements) {
    std::string params, binds;
    for (size_t k = 0; k < s.vars.size(); ++k) {
      params += cat(k ? ", " : "", s.vars[k], "_");
      binds += cat("const long ", s.vars[k], " = (", s.vars[k], "_); (void)", s.vars[k], "; ");
    }
    out += cat("#define ", s.name, "(", params, ") do { ", binds, s.body, "; } while (0)\n");
  }
  // Not inlined into the timing loop: the kernel is timed (and optimized, by Polly) alone.
  out += "\n__attribute__((noinline)) static void kernel(void) {\n" + kernel +
         "}\n\nstatic void init(void) {\n";
  out += "  unsigned long long seed_ = 20240601ull;\n";
  for (const Array& a : p.arrays) {
    int64_t n = 1;
    for (int64_t d : a.sizes) n *= d;
    out += cat("  for (long k_ = 0; k_ < ", n, "; ++k_) {\n",
               "    seed_ = seed_ * 6364136223846793005ull + 1442695040888963407ull;\n",
               "    ((double*)", a.name, ")[k_] = (double)(seed_ >> 40) / 16777216.0;\n  }\n");
  }
  out +=
      "}\n\nint main(int argc, char** argv) {\n"
      "  int reps_ = argc > 1 ? atoi(argv[1]) : 5;\n"
      "  double best_ = 1e300;\n"
      "  for (int r_ = 0; r_ < reps_; ++r_) {\n"
      "    struct timespec t0_, t1_;\n"
      "    init();\n"
      "    clock_gettime(CLOCK_MONOTONIC, &t0_);\n"
      "    kernel();\n"
      "    clock_gettime(CLOCK_MONOTONIC, &t1_);\n"
      "    double ms_ = (t1_.tv_sec - t0_.tv_sec) * 1e3 + (t1_.tv_nsec - t0_.tv_nsec) * 1e-6;\n"
      "    if (ms_ < best_) best_ = ms_;\n"
      "  }\n"
      "  double sum_ = 0.0;\n";
  for (const std::string& name : p.written_arrays()) {
    const Array* a = nullptr;
    for (const Array& x : p.arrays)
      if (x.name == name) a = &x;
    int64_t n = 1;
    for (int64_t d : a->sizes) n *= d;
    out += cat("  for (long k_ = 0; k_ < ", n, "; ++k_) sum_ += ((double*)", name, ")[k_];\n");
  }
  out +=
      "  printf(\"time_ms %.6f\\nchecksum %.17g\\n\", best_, sum_);\n"
      "  return 0;\n}\n";
  return out;
}

namespace {
// A run killed at the time limit: its share of the limit per repetition, no checksum.
Measurement timed_out(const RunOptions& o) {
  Measurement m;
  m.ms = 1e3 * o.time_limit_s / std::max(o.reps, 1);
  m.checksum = std::nan("");
  m.timed_out = true;
  return m;
}
}  // namespace

namespace {

// The cache path of a source's binary without its extension (the hash of source and command).
std::string cache_base(const std::string& source, const RunOptions& o) {
  std::string dir = o.cache_dir;
  if (dir.empty()) {
    const char* env = std::getenv("TEMPO_LOOPS_CACHE");
    dir = env && *env ? env : "/tmp/tempo-loops-cache";
  }
  std::filesystem::create_directories(dir);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a(o.compiler + " " + o.flags + "\n" + source)));
  return dir + "/" + hex;
}

// Compiles `source` to `bin`; `tag` keeps the files of concurrent compilations apart until done.
void compile_to(const std::string& source, const RunOptions& o, const std::string& base,
                const std::string& bin, const std::string& tag) {
  namespace fs = std::filesystem;
  std::string src = base + tag + ".c", log = base + tag + ".log";
  {
    std::ofstream f(src);
    f << source;
  }
  std::string cmd = cat(o.compiler, " ", o.flags, " -o ", bin, tag, " ", src, " -lm > ", log,
                        " 2>&1");
  bool ok = std::system(cmd.c_str()) == 0;
  fs::rename(src, base + ".c");
  fs::rename(log, base + ".log");
  if (!ok) throw Error(cat("compiling ", base, ".c failed: ", first_line(base + ".log")));
  fs::rename(bin + tag, bin);
}

}  // namespace

void precompile(const std::vector<std::string>& sources, const RunOptions& o, int jobs) {
  if (!o.reuse_binaries) return;  // every run compiles its own binary
  std::vector<std::string> todo;
  std::set<std::string> bases;
  for (const std::string& s : sources) {
    const std::string base = cache_base(s, o);
    if (!std::filesystem::exists(base + ".bin") && bases.insert(base).second) todo.push_back(s);
  }
  std::atomic<size_t> next{0};
  auto work = [&](int worker) {
    for (size_t k; (k = next++) < todo.size();) {
      const std::string base = cache_base(todo[k], o);
      try {
        compile_to(todo[k], o, base, base + ".bin", cat(".tmp", ::getpid(), "w", worker));
      } catch (const Error&) {
        // compile_and_run compiles it again and reports the compiler's message
      }
    }
  };
  std::vector<std::thread> workers;
  for (int w = 1; w < std::min<int>(jobs, static_cast<int>(todo.size())); ++w)
    workers.emplace_back(work, w);
  work(0);
  for (std::thread& t : workers) t.join();
}

Measurement compile_and_run(const std::string& source, const RunOptions& o) {
  namespace fs = std::filesystem;
  std::string base = cache_base(source, o), bin = base + ".bin";
  if (!o.reuse_binaries) bin = cat(base, ".once", ::getpid(), ".bin");
  const std::string timing = cat(base, ".t", o.threads, "r", o.reps, ".time");
  const bool reuse = o.reuse_timings && o.reuse_binaries;
  if (reuse) {
    // "ms checksum limit": limit > 0 for a run killed at that limit, which is reused under a
    // limit no longer than it.
    std::ifstream f(timing);
    Measurement m;
    double limit = 0;
    if (f >> m.ms >> m.checksum >> limit) {
      if (limit <= 0) return m;
      if (o.time_limit_s > 0 && o.time_limit_s <= limit) return timed_out(o);
    }
  }
  // Private names until done: another process may be building the same binary.
  if (!o.reuse_binaries || !fs::exists(bin))
    compile_to(source, o, base, bin, cat(".tmp", ::getpid()));
  // A binary compiled for one run is removed after it.
  struct Remove {
    std::string path;
    bool on;
    ~Remove() {
      std::error_code ec;
      if (on) std::filesystem::remove(path, ec);
    }
  } remove{bin, !o.reuse_binaries};
  // Sleeping (not spinning) at barriers: on a shared machine a spinning thread can hold up the
  // whole team for a time slice per parallel loop.
  // `exec`: no shell waits for a run killed past its time limit, so none prints "Killed".
  std::string run = "export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}; ";
  if (o.threads > 0) run += cat("export OMP_NUM_THREADS=", o.threads, "; ");
  run += "exec ";
  if (o.time_limit_s > 0) run += cat("timeout -s KILL ", o.time_limit_s, " ");
  run += cat(bin, " ", o.reps);
  FILE* f = popen(run.c_str(), "r");
  if (!f) throw Error(cat("could not run ", bin));
  Measurement m;
  int found = 0;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    found += std::sscanf(line, "time_ms %lf", &m.ms);
    found += std::sscanf(line, "checksum %lf", &m.checksum);
  }
  int status = pclose(f);
  // timeout ends by the signal that killed the run (or exits with 128 + it).
  const bool killed =
      o.time_limit_s > 0 && ((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                             (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL));
  if (killed)
    m = timed_out(o);
  else if (status != 0 || found != 2)
    throw Error(cat("running ", bin, " failed (status ", status, ")"));
  if (reuse) {
    const std::string tmp = cat(timing, ".tmp", ::getpid());
    {
      std::ofstream f(tmp);
      f.precision(17);
      if (killed)
        f << "0 0 " << o.time_limit_s << "\n";
      else
        f << m.ms << " " << m.checksum << " 0\n";
    }
    fs::rename(tmp, timing);
  }
  return m;
}

bool same_checksum(double a, double b) {
  double scale = std::max(std::abs(a), std::abs(b));
  return std::abs(a - b) <= 1e-9 * std::max(scale, 1e-300);
}

Measurement Evaluator::measure(const std::string& key, const std::function<std::string()>& source,
                               double time_limit_s) {
  auto it = memoize_ ? memo_.find(key) : memo_.end();
  if (it != memo_.end()) {
    ++stats_.time_hits;
    return it->second;
  }
  ++stats_.time_misses;
  RunOptions o = o_;
  if (time_limit_s > 0) o.time_limit_s = time_limit_s;
  Measurement m = compile_and_run(source(), o);
  if (memoize_) memo_.emplace(key, m);
  return m;
}

Measurement Evaluator::measure(const Program& p, const Schedule& s, double time_limit_s) {
  return measure(
      s.key(p), [&] { return c_file(p, kernel_code(p, s)); }, time_limit_s);
}

}  // namespace tempo::loops
