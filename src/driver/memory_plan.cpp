// Memory planning: estimates from a measuring run, swapping under a budget, the timeline files.
#include "driver/memory_plan.h"
#include "driver/compile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "backend/measure_backend.h"
#include "driver/executable_impl.h"
#include "util/error.h"

namespace tempo::driver {

MemoryEstimate estimate_memory(const ir::Graph& g, const schedule::Schedule& schedule,
                               const Dims& dims, const Bounds& bounds, runtime::Blocks blocks) {
  auto backend = backend::make_measure_backend();
  runtime::Executor ex(g, schedule, *backend, dims, blocks);
  ex.snapshot_peak(true);
  ex.run(bounds);
  MemoryEstimate e;
  e.peak = ex.memory().peak_bytes;
  e.host_peak = ex.host_memory().peak_bytes;
  e.at_peak = ex.snapshot();
  std::sort(e.at_peak.begin(), e.at_peak.end(),
            [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return e;
}

namespace {

using Loops = std::vector<const schedule::Stmt*>;

void enclosing_loops(const schedule::StmtPtr& s, Loops& stack, OpLoops& out) {
  if (!s) return;
  if (s->kind == schedule::StmtKind::Exec) {
    out[s->op].push_back(stack);
    return;
  }
  const bool loop = s->kind == schedule::StmtKind::For;
  if (loop) stack.push_back(s.get());
  for (const auto& b : s->body) enclosing_loops(b, stack, out);
  for (const auto& b : s->else_body) enclosing_loops(b, stack, out);
  if (loop) stack.pop_back();
}

}  // namespace

OpLoops op_loops(const schedule::Schedule& schedule) {
  OpLoops loops;
  Loops stack;
  enclosing_loops(schedule.root, stack, loops);
  return loops;
}

std::vector<ir::EdgeId> late_edges(const ir::Graph& g, const OpLoops& loops, ir::OpId op,
                                   int output) {
  // Late: some run of the reader is outside a loop around each run of the producer.
  auto outside = [](const Loops& p, const Loops& r) {
    for (const schedule::Stmt* l : p)
      if (std::find(r.begin(), r.end(), l) == r.end()) return true;
    return false;
  };
  auto late = [&](const std::vector<Loops>& producer, const std::vector<Loops>& reader) {
    return std::any_of(reader.begin(), reader.end(), [&](const Loops& r) {
      return std::all_of(producer.begin(), producer.end(),
                         [&](const Loops& p) { return outside(p, r); });
    });
  };
  std::vector<ir::EdgeId> out;
  auto producer = loops.find(op);
  if (producer == loops.end()) return out;
  for (ir::EdgeId eid : g.out_edges(op)) {
    const ir::Edge& e = g.edge(eid);
    auto reader = loops.find(e.sink);
    if (e.source_output == output && reader != loops.end() &&
        late(producer->second, reader->second))
      out.push_back(eid);
  }
  return out;
}

std::vector<size_t> pick_until_covered(const std::vector<SwapCandidate>& candidates,
                                       const std::vector<size_t>& order, int64_t excess) {
  const int64_t smallest = std::max<int64_t>(int64_t{64} << 10, excess / 100);
  std::vector<size_t> picked;
  int64_t freed = 0;
  for (size_t k : order) {
    if (freed >= excess) break;
    if (candidates[k].bytes < smallest) continue;
    picked.push_back(k);
    freed += candidates[k].bytes;
  }
  return picked;
}

std::vector<size_t> largest_first(const std::vector<SwapCandidate>& candidates, int64_t excess) {
  std::vector<size_t> order(candidates.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return candidates[a].bytes > candidates[b].bytes; });
  return pick_until_covered(candidates, order, excess);
}

namespace {

// Whether edge `eid` is only the source (input 0) of gathers: of a gather op, or of gathers
// alone inside a fused region.
bool gathers(const ir::Graph& g, ir::EdgeId eid) {
  const ir::OpNode& r = g.op(g.edge(eid).sink);
  if (r.kind == ir::OpKind::IndexSelect || r.kind == ir::OpKind::Gather)
    return r.inputs.front() == eid;
  if (r.kind != ir::OpKind::Fused) return false;
  const auto input = std::find(r.inputs.begin(), r.inputs.end(), eid) - r.inputs.begin();
  const ir::Graph& body = r.attrs.region->body;
  bool read = false;
  for (const ir::OpNode& p : body.ops()) {
    if (p.kind != ir::OpKind::Param || p.attrs.ints.at(0) != input) continue;
    for (const auto& [op, out] : r.attrs.region->outputs)
      if (op == p.id) return false;  // passed through as an output of the region
    for (ir::EdgeId use : body.out_edges(p.id)) {
      if (!gathers(body, use)) return false;
      read = true;
    }
  }
  return read;
}

// The late reads of a swapped output that can read its host copies where they are: gathers
// (only what they select moves to the device: PPO's minibatch rows of a rollout that does not
// fit) and views read by gathers alone (a flattened rollout), whose outputs then stay in host
// memory too.
void plan_host_reads(const ir::Graph& g, schedule::Swap& sw) {
  for (ir::EdgeId eid : sw.late) {
    const ir::OpNode& r = g.op(g.edge(eid).sink);
    const std::vector<ir::EdgeId> outs = g.out_edges(r.id);
    const bool view =
        backend::is_view(r.kind) && r.inputs.size() == 1 && !outs.empty() &&
        std::all_of(outs.begin(), outs.end(), [&](ir::EdgeId out) { return gathers(g, out); });
    if (!view && !gathers(g, eid)) continue;
    sw.host_reads.push_back(eid);
    if (view) sw.on_host.push_back(r.id);
  }
}

}  // namespace

schedule::Schedule schedule_within_budget(const ir::Graph& g, schedule::ScheduleOptions& so,
                                          const Dims& dims, const Bounds& bounds,
                                          const CompileOptions& options,
                                          const std::function<void(const std::string&)>& log) {
  const int64_t budget = options.memory_budget;
  so.memory_proximity = true;  // free and evict each point as soon as its readers allow
  schedule::Schedule sched = schedule::compute_schedule(g, so);
  std::set<std::pair<ir::OpId, int>> fixed(so.retained.begin(), so.retained.end());
  for (const schedule::Swap& s : so.swaps) fixed.emplace(s.op, s.output);
  const SwapPolicy policy = options.swap_policy ? options.swap_policy : largest_first;
  MemoryEstimate est;
  std::string why;
  for (int round = 0;; ++round) {
    est = estimate_memory(g, sched, dims, bounds, budget_blocks(options));
    log(cat("memory: estimated peak ", bytes_str(est.peak), " on the device, ",
            bytes_str(est.host_peak), " swapped to host (budget ", bytes_str(budget), ", ",
            so.swaps.size(), " outputs swapped)"));
    std::string top;
    for (size_t k = 0; k < std::min<size_t>(4, est.at_peak.size()); ++k)
      top += cat(k ? "; " : "", bytes_str(est.at_peak[k].bytes), " in ",
                 g.op(est.at_peak[k].op).describe());
    log(cat("memory: at the peak: ", top));
    if (est.peak <= budget) return sched;
    if (!so.deallocate) {
      why = "deallocation is off (CompileOptions::deallocate), so nothing can be swapped";
      break;
    }
    if (round == 4) {
      why = "swapping more did not bring it under the budget";
      break;
    }
    std::vector<SwapCandidate> candidates;
    std::vector<std::vector<ir::EdgeId>> late;
    const OpLoops loops = op_loops(sched);
    for (const auto& s : est.at_peak) {
      if (fixed.count({s.op, s.output})) continue;
      std::vector<ir::EdgeId> edges = late_edges(g, loops, s.op, s.output);
      if (edges.empty()) continue;
      candidates.push_back({g.op(s.op).describe(), s.bytes, s.op, s.output});
      late.push_back(std::move(edges));
    }
    std::vector<size_t> picked = policy(candidates, est.peak - budget);
    if (picked.empty()) {
      why = candidates.empty() ? "what it holds at the peak is all read in the loop that makes it, "
                                 "so none of it can wait in host memory"
                               : "the swap policy chose nothing";
      break;
    }
    for (size_t k : picked) {
      if (k >= candidates.size())
        throw UserError(
            cat("swap policy: index ", k, " is not one of the ", candidates.size(), " candidates"));
      if (!fixed.emplace(candidates[k].op, candidates[k].output).second) continue;
      schedule::Swap sw{candidates[k].op, candidates[k].output, late[k], {}, {}};
      plan_host_reads(g, sw);
      log(cat("memory: swapping ", candidates[k].rt, " (", bytes_str(candidates[k].bytes),
              " at the peak) to host between its producer and its late readers",
              sw.host_reads.empty() ? std::string()
                                    : cat(" (", sw.host_reads.size(), " of ", sw.late.size(),
                                          " read in host memory by gathers)")));
      so.swaps.push_back(std::move(sw));
    }
    sched = schedule::compute_schedule(g, so);
  }
  std::string largest;
  for (size_t k = 0; k < std::min<size_t>(5, est.at_peak.size()); ++k) {
    const auto& s = est.at_peak[k];
    const bool swapped = std::any_of(so.swaps.begin(), so.swaps.end(), [&](const auto& w) {
      return w.op == s.op && w.output == s.output;
    });
    largest += cat(k ? "; " : "", bytes_str(s.bytes), " in ", g.op(s.op).describe(),
                   swapped ? " (swapped, loaded back together for a reader)" : "");
  }
  throw UserError(
      cat("memory budget ", bytes_str(budget), ": the program needs about ", bytes_str(est.peak),
          " of device memory at its peak, and ", why, ". The largest stores at the peak: ", largest,
          ". Raise the budget, tile the dimension those reads cover (PassOptions::tiles,"
          " `--tile`), or make the batch smaller"));
}

}  // namespace tempo::driver

namespace tempo {

int64_t parse_bytes(const std::string& text, const std::string& what) {
  auto bad = [&]() -> UserError {
    return UserError(cat(what, ": expected a size such as 512MiB, 1.5GiB, 800MB or a number of ",
                         "bytes, got '", text, "'"));
  };
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::logic_error&) {
    throw bad();
  }
  std::string unit;
  for (size_t k = used; k < text.size(); ++k)
    if (!std::isspace(static_cast<unsigned char>(text[k])))
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[k])));
  static const std::pair<const char*, double> units[] = {
      {"", 1},       {"b", 1},         {"kb", 1e3},        {"mb", 1e6},
      {"gb", 1e9},   {"kib", 1024.0},  {"mib", 1048576.0}, {"gib", 1073741824.0},
      {"k", 1024.0}, {"m", 1048576.0}, {"g", 1073741824.0}};
  for (const auto& [name, scale] : units)
    if (unit == name) {
      const double bytes = value * scale;
      if (!std::isfinite(bytes) || bytes < 1 || bytes > 9.0e18) throw bad();
      return static_cast<int64_t>(bytes);
    }
  throw bad();
}

}  // namespace tempo

namespace tempo::driver {

std::string bytes_str(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

void write_memory_timeline(const std::string& path, const ir::Graph& g,
                           const std::vector<runtime::Executor::MemoryEvent>& events) {
  std::ofstream csv(path);
  if (!csv) throw UserError(cat("memory timeline: cannot write '", path, "'"));
  // Long runs keep each bucket's largest device figure (the peaks are what matters).
  const size_t bucket = std::max<size_t>(1, (events.size() + 19999) / 20000);
  std::vector<size_t> kept;
  for (size_t b = 0; b < events.size(); b += bucket) {
    size_t best = b;
    for (size_t k = b; k < std::min(events.size(), b + bucket); ++k)
      if (events[k].device > events[best].device) best = k;
    kept.push_back(best);
  }
  auto kind = [](schedule::StmtKind k) {
    switch (k) {
      case schedule::StmtKind::Dealloc:
        return "dealloc";
      case schedule::StmtKind::Evict:
        return "evict";
      case schedule::StmtKind::Load:
        return "load";
      default:
        return "exec";
    }
  };
  csv << "step,statement,op,device_bytes,host_bytes\n";
  int64_t top = 1;
  for (size_t k : kept) {
    const auto& e = events[k];
    std::string name = e.op >= 0 ? g.op(e.op).name : "";
    std::replace(name.begin(), name.end(), ',', ';');
    csv << k << "," << kind(e.kind) << "," << name << "," << e.device << "," << e.host << "\n";
    top = std::max({top, e.device, e.host});
  }
  std::string svg_path = path;
  if (auto dot = svg_path.rfind('.');
      dot != std::string::npos && svg_path.find('/', dot) == std::string::npos)
    svg_path.resize(dot);
  svg_path += ".svg";
  std::ofstream svg(svg_path);
  if (!svg) throw UserError(cat("memory timeline: cannot write '", svg_path, "'"));
  const double W = 800, H = 300, L = 70, B = 30;
  const double n = static_cast<double>(std::max<size_t>(1, events.size() - 1));
  auto line = [&](bool device) {
    std::string pts;
    for (size_t k : kept) {
      const double v = static_cast<double>(device ? events[k].device : events[k].host);
      pts += cat(L + (W - L - 10) * static_cast<double>(k) / n, ",",
                 H - B - (H - B - 10) * v / static_cast<double>(top), " ");
    }
    return pts;
  };
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
      << "' font-family='sans-serif' font-size='11'>\n"
      << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - 10 << "' y2='" << H - B
      << "' stroke='black'/><line x1='" << L << "' y1='10' x2='" << L << "' y2='" << H - B
      << "' stroke='black'/>\n"
      << "<text x='4' y='16'>" << bytes_str(top) << "</text><text x='4' y='" << H - B
      << "'>0</text>\n"
      << "<text x='" << L << "' y='" << H - 8 << "'>statements executed (" << events.size()
      << ")</text>\n"
      << "<polyline fill='none' stroke='#1f77b4' points='" << line(true) << "'/>\n"
      << "<polyline fill='none' stroke='#ff7f0e' points='" << line(false) << "'/>\n"
      << "<text x='" << W - 220 << "' y='20' fill='#1f77b4'>device (tracked stores)</text>\n"
      << "<text x='" << W - 220 << "' y='34' fill='#ff7f0e'>host (swapped out)</text>\n</svg>\n";
}

}  // namespace tempo::driver
