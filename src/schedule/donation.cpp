#include "schedule/donation.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "symbolic/simplify.h"

namespace tempo::schedule {

namespace {

// A statement made of deallocations only (a Dealloc, or a loop or condition around them): it
// changes nothing but which points are held, so it may move.
bool only_frees(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Dealloc:
      return true;
    case StmtKind::Seq:
    case StmtKind::For:
    case StmtKind::If:
      for (const auto* list : {&s.body, &s.else_body})
        for (const StmtPtr& c : *list)
          if (!only_frees(*c)) return false;
      return true;
    default:
      return false;
  }
}

void collect_frees(const Stmt& s, std::vector<const Stmt*>& out) {
  if (s.kind == StmtKind::Dealloc) out.push_back(&s);
  for (const auto* list : {&s.body, &s.else_body})
    for (const StmtPtr& c : *list) collect_frees(*c, out);
}

std::vector<Expr> entries(const Expr& phi) {
  return phi.is_seq() ? phi.args() : std::vector<Expr>{phi};
}

bool any_slice(const std::vector<Expr>& point) {
  return std::any_of(point.begin(), point.end(), [](const Expr& x) { return x.is_slice(); });
}

// a - b as far as the simplifier folds it; a constant where the two always differ by it.
Expr difference(const Expr& a, const Expr& b) {
  return sym::simplify(a - b, {});
}

// Whether two points of one op are provably different (some coordinate differs by a nonzero
// constant, e.g. [c0 - 1] and [c0]).
bool distinct(const std::vector<Expr>& p, const std::vector<Expr>& q) {
  if (p.size() != q.size() || any_slice(p) || any_slice(q)) return false;
  for (size_t k = 0; k < p.size(); ++k) {
    const Expr d = difference(p[k], q[k]);
    if (d.is_const() && d.value() != 0) return true;
  }
  return false;
}

// Whether a deallocation of `frees` may not move above statement `s`: s reads or moves an output
// they free, or produces a point that one of them may free.
bool blocks(const ir::Graph& g, const Stmt& s, const std::vector<const Stmt*>& frees) {
  switch (s.kind) {
    case StmtKind::Dealloc:
      return false;
    case StmtKind::Evict:
    case StmtKind::Load:
      return std::any_of(frees.begin(), frees.end(),
                         [&](const Stmt* f) { return f->op == s.op && f->output == s.output; });
    case StmtKind::Exec:
      for (const Stmt* f : frees) {
        if (f->op == s.op && !distinct(f->point, s.point)) return true;
        for (ir::EdgeId e : g.op(s.op).inputs)
          if (g.edge(e).source == f->op && g.edge(e).source_output == f->output) return true;
      }
      return false;
    default:
      for (const auto* list : {&s.body, &s.else_body})
        for (const StmtPtr& c : *list)
          if (blocks(g, *c, frees)) return true;
      return false;
  }
}

// The inputs of Exec `e` read at exactly the point deallocation `d` frees.
void donated_by(const ir::Graph& g, const Stmt& e, const Stmt& d, std::vector<int>& out) {
  if (any_slice(d.point)) return;
  const ir::OpNode& op = g.op(e.op);
  std::vector<std::pair<Expr, Expr>> at;
  for (size_t k = 0; k < op.domain.size(); ++k) at.emplace_back(op.domain[k].var, e.point[k]);
  for (size_t q = 0; q < op.inputs.size(); ++q) {
    const ir::Edge& in = g.edge(op.inputs[q]);
    if (in.source != d.op || in.source_output != d.output || in.cond.defined()) continue;
    const std::vector<Expr> read = entries(in.phi);
    if (read.size() != d.point.size() || any_slice(read)) continue;
    bool same = true;
    for (size_t k = 0; same && k < read.size(); ++k)
      same = difference(sym::substitute(read[k], at), d.point[k]).is_const(0);
    if (same && std::find(out.begin(), out.end(), static_cast<int>(q)) == out.end())
      out.push_back(static_cast<int>(q));
  }
}

std::vector<StmtPtr> transform(const ir::Graph& g, const std::vector<StmtPtr>& list);

StmtPtr transform(const ir::Graph& g, const StmtPtr& s) {
  if (s->body.empty() && s->else_body.empty()) return s;
  auto out = std::make_shared<Stmt>(*s);
  out->body = transform(g, s->body);
  out->else_body = transform(g, s->else_body);
  return out;
}

std::vector<StmtPtr> transform(const ir::Graph& g, const std::vector<StmtPtr>& in) {
  std::vector<StmtPtr> list;
  for (const StmtPtr& s : in) list.push_back(transform(g, s));
  // Deallocations up, in order, each as far as nothing above needs what it frees.
  for (size_t j = 0; j < list.size(); ++j) {
    if (!only_frees(*list[j])) continue;
    std::vector<const Stmt*> frees;
    collect_frees(*list[j], frees);
    size_t k = j;
    while (k > 0 && !blocks(g, *list[k - 1], frees)) --k;
    std::rotate(list.begin() + static_cast<std::ptrdiff_t>(k),
                list.begin() + static_cast<std::ptrdiff_t>(j),
                list.begin() + static_cast<std::ptrdiff_t>(j + 1));
  }
  // An op followed by the deallocation of a point it reads is that point's last reader. Merges
  // only move values between stores: nothing to write in place.
  for (size_t j = 0; j < list.size(); ++j) {
    const Stmt& s = *list[j];
    if (s.kind != StmtKind::Exec || g.op(s.op).kind == ir::OpKind::Merge) continue;
    std::vector<int> donated;
    for (size_t m = j + 1; m < list.size() && only_frees(*list[m]); ++m)
      if (list[m]->kind == StmtKind::Dealloc) donated_by(g, s, *list[m], donated);
    if (donated.empty()) continue;
    auto marked = std::make_shared<Stmt>(s);
    std::sort(donated.begin(), donated.end());
    marked->donated = std::move(donated);
    list[j] = std::move(marked);
  }
  return list;
}

}  // namespace

Schedule donate_buffers(const ir::Graph& g, const Schedule& s) {
  Schedule out = s;
  if (s.root) out.root = transform(g, s.root);
  return out;
}

}  // namespace tempo::schedule
