// Test helper: runs a schedule AST with concrete bounds and checks that it is a correct execution
// of the SDG: every op point runs exactly once, every point read was produced and not yet freed,
// every produced output (not retained) is freed exactly once after its last reader.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ir/sdg.h"
#include "schedule/schedule.h"

namespace tempo::schedule::testing {

using Env = std::map<std::string, int64_t>;
using Point = std::vector<int64_t>;

inline int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Evaluates an integer or boolean expression (booleans as 0/1).
inline int64_t eval(const Expr& e, const Env& env) {
  using sym::Op;
  auto a = [&](size_t k) { return eval(e.arg(k), env); };
  switch (e.op()) {
    case Op::Const:
    case Op::Bool:
      return e.value();
    case Op::Symbol: {
      auto it = env.find(e.name());
      if (it == env.end()) throw std::runtime_error("unbound symbol " + e.name());
      return it->second;
    }
    case Op::Add: {
      int64_t s = 0;
      for (size_t k = 0; k < e.size(); ++k) s += a(k);
      return s;
    }
    case Op::Mul: {
      int64_t s = 1;
      for (size_t k = 0; k < e.size(); ++k) s *= a(k);
      return s;
    }
    case Op::FloorDiv:
      return floordiv_i(a(0), a(1));
    case Op::Mod:
      return a(0) - a(1) * floordiv_i(a(0), a(1));
    case Op::Min: {
      int64_t s = a(0);
      for (size_t k = 1; k < e.size(); ++k) s = std::min(s, a(k));
      return s;
    }
    case Op::Max: {
      int64_t s = a(0);
      for (size_t k = 1; k < e.size(); ++k) s = std::max(s, a(k));
      return s;
    }
    case Op::Eq:
      return a(0) == a(1);
    case Op::Ne:
      return a(0) != a(1);
    case Op::Lt:
      return a(0) < a(1);
    case Op::Le:
      return a(0) <= a(1);
    case Op::And: {
      for (size_t k = 0; k < e.size(); ++k)
        if (!a(k)) return 0;
      return 1;
    }
    case Op::Or: {
      for (size_t k = 0; k < e.size(); ++k)
        if (a(k)) return 1;
      return 0;
    }
    case Op::Not:
      return !a(0);
    default:
      throw std::runtime_error("cannot evaluate " + e.str());
  }
}

struct Event {
  bool dealloc = false;
  ir::OpId op = -1;
  int output = 0;
  Point point;
};

struct Trace {
  std::vector<Event> events;
  std::vector<std::string> errors;  // empty: a correct execution
  size_t max_live = 0;              // most op-output points alive at once
  std::map<ir::OpId, size_t> max_live_of;  // per op: most of its points alive at once
  std::map<std::pair<ir::OpId, Point>, size_t> exec_index;  // position in `events`

  // Position of op's exec at point (or -1).
  long when(ir::OpId op, const Point& p) const {
    auto it = exec_index.find({op, p});
    return it == exec_index.end() ? -1 : static_cast<long>(it->second);
  }
  std::string error_text() const {
    std::string s;
    for (size_t k = 0; k < errors.size() && k < 10; ++k) s += errors[k] + "\n";
    return s;
  }
};

class Simulator {
 public:
  Simulator(const ir::Graph& g, const Schedule& s, const Env& bounds,
            const ScheduleOptions& opt = {})
      : g_(g), s_(s), env_(bounds), opt_(opt) {}

  Trace run() {
    walk(s_.root);
    finish();
    return std::move(trace_);
  }

 private:
  std::string pstr(const Point& p) {
    std::string s = "[";
    for (size_t k = 0; k < p.size(); ++k) s += (k ? "," : "") + std::to_string(p[k]);
    return s + "]";
  }
  void err(const std::string& m) { trace_.errors.push_back(m); }

  Env op_env(const ir::OpNode& op, const Point& p) {
    Env e = env_;
    for (size_t k = 0; k < op.domain.size(); ++k) e[op.domain[k].name()] = p[k];
    return e;
  }

  bool in_domain(const ir::OpNode& op, const Point& p) {
    Env e = op_env(op, p);
    for (size_t k = 0; k < op.domain.size(); ++k)
      if (p[k] < 0 || p[k] >= env_.at(op.domain[k].bound.name())) return false;
    if (op.cond.defined() && !eval(op.cond, e)) return false;
    if (op.kind == ir::OpKind::Merge && !op.inputs.empty()) {
      bool any = false;
      for (ir::EdgeId id : op.inputs) {
        const auto& edge = g_.edge(id);
        if (!edge.cond.defined() || eval(edge.cond, e)) any = true;
      }
      if (!any) return false;
    }
    return true;
  }

  // The source points an edge reads at sink point p (empty if inactive).
  std::vector<Point> reads(const ir::Edge& edge, const Env& e) {
    std::vector<Expr> entries = edge.phi.is_seq() ? edge.phi.args() : std::vector<Expr>{edge.phi};
    std::vector<Point> pts{{}};
    for (const Expr& x : entries) {
      std::vector<int64_t> vals;
      if (x.is_slice()) {
        int64_t a = eval(x.arg(0), e), b = eval(x.arg(1), e), st = eval(x.arg(2), e);
        for (int64_t v = a; v < b; v += st) vals.push_back(v);
      } else {
        vals.push_back(eval(x, e));
      }
      std::vector<Point> next;
      for (const auto& p : pts)
        for (int64_t v : vals) {
          Point q = p;
          q.push_back(v);
          next.push_back(q);
        }
      pts = next;
    }
    return pts;
  }

  void exec(ir::OpId id, const Point& p) {
    const ir::OpNode& op = g_.op(id);
    if (!in_domain(op, p)) err("exec " + op.name + pstr(p) + " outside its domain");
    if (trace_.exec_index.count({id, p})) err("exec " + op.name + pstr(p) + " twice");
    Env e = op_env(op, p);
    for (ir::EdgeId eid : op.inputs) {
      const ir::Edge& edge = g_.edge(eid);
      if (edge.cond.defined() && !eval(edge.cond, e)) continue;
      for (const Point& q : reads(edge, e)) {
        auto key = std::make_tuple(edge.source, edge.source_output, q);
        if (!trace_.exec_index.count({edge.source, q}))
          err(op.name + pstr(p) + " reads " + g_.op(edge.source).name + pstr(q) +
              " before it is produced");
        else if (freed_.count(key))
          err(op.name + pstr(p) + " reads " + g_.op(edge.source).name + pstr(q) +
              " after it was freed");
      }
      if (op.kind == ir::OpKind::Merge) break;  // the first active branch is the one read
    }
    trace_.exec_index[{id, p}] = trace_.events.size();
    trace_.events.push_back({false, id, 0, p});
    for (int out = 0; out < static_cast<int>(op.outputs.size()); ++out)
      live_.insert(std::make_tuple(id, out, p));
    trace_.max_live = std::max(trace_.max_live, live_.size());
    if (!op.outputs.empty()) {
      size_t& most = trace_.max_live_of[id];
      most = std::max(most, ++live_of_[id]);
    }
  }

  void dealloc(ir::OpId id, int out, const Point& p) {
    auto key = std::make_tuple(id, out, p);
    const std::string what = "dealloc " + g_.op(id).name + pstr(p);
    if (!trace_.exec_index.count({id, p})) err(what + " before it is produced");
    if (freed_.count(key)) err(what + " twice");
    freed_.insert(key);
    if (live_.erase(key) && out == 0) --live_of_[id];
    trace_.events.push_back({true, id, out, p});
  }

  void walk(const StmtPtr& s) {
    switch (s->kind) {
      case StmtKind::Seq:
        for (const auto& b : s->body) walk(b);
        break;
      case StmtKind::For: {
        const std::string it = s->iterator.name();
        for (env_[it] = eval(s->init, env_); eval(s->cond, env_); env_[it] += eval(s->step, env_)) {
          for (const auto& b : s->body) walk(b);
          if (++steps_ > 10'000'000) throw std::runtime_error("runaway loop");
        }
        env_.erase(it);
        break;
      }
      case StmtKind::If:
        for (const auto& b : eval(s->cond, env_) ? s->body : s->else_body) walk(b);
        break;
      case StmtKind::Evict:
      case StmtKind::Load: {
        Point p;
        for (const Expr& x : s->point) p.push_back(eval(x, env_));
        if (!live_.count(std::make_tuple(s->op, s->output, p)))
          err(std::string(s->kind == StmtKind::Evict ? "evict " : "load ") + g_.op(s->op).name +
              pstr(p) + " of a point not live");
        break;
      }
      case StmtKind::Exec:
      case StmtKind::Dealloc: {
        Point p;
        for (const Expr& x : s->point) p.push_back(eval(x, env_));
        if (s->kind == StmtKind::Exec)
          exec(s->op, p);
        else
          dealloc(s->op, s->output, p);
        break;
      }
    }
  }

  void enumerate(const ir::OpNode& op, size_t k, Point& p, std::vector<Point>& out) {
    if (k == op.domain.size()) {
      if (in_domain(op, p)) out.push_back(p);
      return;
    }
    int64_t n = env_.at(op.domain[k].bound.name());
    for (int64_t v = 0; v < n; ++v) {
      p.push_back(v);
      enumerate(op, k + 1, p, out);
      p.pop_back();
    }
  }

  void finish() {
    std::set<std::pair<ir::OpId, int>> retained(opt_.retained.begin(), opt_.retained.end());
    for (const ir::OpNode& op : g_.ops()) {
      std::vector<Point> pts;
      Point p;
      enumerate(op, 0, p, pts);
      for (const Point& q : pts) {
        if (!trace_.exec_index.count({op.id, q})) err(op.name + pstr(q) + " never executed");
        if (!opt_.deallocate) continue;
        for (int out = 0; out < static_cast<int>(op.outputs.size()); ++out) {
          bool freed = freed_.count(std::make_tuple(op.id, out, q));
          if (retained.count({op.id, out}) && freed) err(op.name + pstr(q) + " retained but freed");
          if (!retained.count({op.id, out}) && !freed) err(op.name + pstr(q) + " never freed");
        }
      }
    }
  }

  const ir::Graph& g_;
  const Schedule& s_;
  Env env_;
  ScheduleOptions opt_;
  Trace trace_;
  std::set<std::tuple<ir::OpId, int, Point>> live_, freed_;
  std::map<ir::OpId, size_t> live_of_;  // live points of each op's first output
  long steps_ = 0;
};

inline Trace simulate(const ir::Graph& g, const Schedule& s, const Env& bounds,
                      const ScheduleOptions& opt = {}) {
  return Simulator(g, s, bounds, opt).run();
}

}  // namespace tempo::schedule::testing
