#include "passes/tiling.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "passes/graph_edit.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::Graph;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;

// The range of the tiled dimension a window covers, in the reading op's variables.
struct Window {
  Expr lo, hi;
  bool same(const Window& o) const { return lo.same(o.lo) && hi.same(o.hi); }
};

// Where an op's output carries the window: its axis, whose size is (window size) x factor (a
// reshape that merges the window axis with later axes multiplies the factor).
struct Tiled {
  int axis = 0;
  Expr factor = Expr(1);
};

// How the tiles of a reduction of the window axis are combined.
enum class Agg { None, Sum, Max };

// What an op's tiling rule says about it, given which inputs carry the window.
struct Rule {
  std::string refusal;  // non-empty: the op cannot be tiled, and why
  Agg agg = Agg::None;  // a reduction of the window axis: the op becomes a partial over one tile
  Tiled out;            // otherwise: where its outputs carry the window
  // Inputs that do not carry the window but span it along an axis: (input, axis), sliced to the
  // tile (a broadcast input of size 1 there needs nothing).
  std::vector<std::pair<int, int>> spans;
  Expr factor = Expr(1);     // the factor of the tiled inputs (of the spans too)
  std::vector<int> in_axes;  // per input: the axis that carries the window, or -1
};

Rule refuse(const OpNode& op, const std::string& why) {
  Rule r;
  r.refusal = cat(op.describe(), ": ", why);
  return r;
}

// A read that makes the window axis: an edge's slice entry, or a Slice op (then `edge` is -1).
struct Origin {
  EdgeId edge;
  OpId slice;
  Window window;
  OpId reader;  // the op that reads the edge, or the Slice op
};

// An op the group cannot tile, and why.
struct Refusal {
  OpId op;
  std::string why;
};

// A read of one unit-step slice along one dimension of its source, `x[..., a:b, ...]`: the
// position of that dimension in the source's domain, and the window.
std::optional<std::pair<size_t, Window>> window_read(const Graph& g, const ir::Edge& e) {
  if (!e.phi.defined() || !e.phi.is_seq()) return std::nullopt;
  std::optional<std::pair<size_t, Window>> w;
  for (size_t k = 0; k < e.phi.size(); ++k) {
    const Expr& entry = e.phi.arg(k);
    if (!entry.is_slice()) continue;
    if (w || !entry.arg(2).is_const(1)) return std::nullopt;
    w = std::make_pair(k, Window{entry.arg(0), entry.arg(1)});
  }
  return w;
}

int shifted(int axis, int removed_at) { return axis - (removed_at < axis ? 1 : 0); }

class Tiler {
 public:
  Tiler(Program& p, const Dim& d, int64_t size)
      : p_(p), g_(p.graph), d_(d), z_(size), verbose_(p.options.verbose),
        static_tiles_(p.options.static_tiles), interleave_(p.options.interleave),
        consumers_(consumers(p.graph)) {}

  // Tiles the windows along d, each set of equal windows read over one domain as one group;
  // returns whether anything changed.
  bool run() {
    bool changed = false;
    std::vector<Origin> origins;
    for (EdgeId e = 0; e < static_cast<EdgeId>(g_.num_edges()); ++e)
      if (auto w = window_of_edge(e)) origins.push_back({e, -1, *w, g_.edge(e).sink});
    for (OpId s = 0; s < static_cast<OpId>(g_.num_ops()); ++s)
      if (auto w = window_of_slice(s)) origins.push_back({-1, s, *w, s});
    std::vector<bool> done(origins.size(), false);
    for (size_t k = 0; k < origins.size(); ++k) {
      if (done[k]) continue;
      std::vector<Origin> seeds;
      const Dims domain = g_.op(origins[k].reader).domain;
      for (size_t j = k; j < origins.size(); ++j) {
        const Dims& other = g_.op(origins[j].reader).domain;
        if (done[j] || !origins[j].window.same(origins[k].window) || other.size() != domain.size() ||
            !std::equal(domain.begin(), domain.end(), other.begin()))
          continue;
        done[j] = true;
        seeds.push_back(origins[j]);
      }
      changed |= tile_group(seeds);
    }
    return changed;
  }

 private:
  // A read `x[..., a:b, ...]` of a source over d with one slice entry, along d: its window.
  std::optional<Window> window_of_edge(EdgeId id) const {
    const ir::Edge& e = g_.edge(id);
    auto w = window_read(g_, e);
    if (!w || !(g_.op(e.source).domain[w->first] == d_)) return std::nullopt;
    return w->second;
  }

  // A Slice op over an axis of d's size (d vectorized into a spatial axis): its window.
  std::optional<Window> window_of_slice(OpId id) const {
    const OpNode& op = g_.op(id);
    if (op.kind != OpKind::Slice || op.inputs.size() != 1) return std::nullopt;
    ir::TensorType in = g_.input_type(op.inputs[0]);
    int64_t axis = op.attrs.ints[0];
    if (axis < 0 || axis >= static_cast<int64_t>(in.shape.rank()) ||
        !in.shape[axis].same(d_.bound))
      return std::nullopt;
    return Window{op.attrs.exprs[0], op.attrs.exprs[1]};
  }

  Expr input_size(const OpNode& op, int input, int axis) const {
    return g_.input_type(op.inputs[input]).shape[axis];
  }
  int rank(const OpNode& op, int input) const {
    return static_cast<int>(g_.input_type(op.inputs[input]).shape.rank());
  }

  // ---- per-kind tiling rules (the reverse of the vectorization rules) --------------------------

  Rule rule(const OpNode& op, const std::vector<std::optional<Tiled>>& in) const {
    Rule r;
    for (const auto& t : in) r.in_axes.push_back(t ? t->axis : -1);
    bool first = true;
    for (const auto& t : in) {
      if (!t) continue;
      if (!first && !sym::simplify(t->factor - r.factor, op.domain).is_const(0))
        return refuse(op, "its inputs carry the window in differently merged axes");
      r.factor = t->factor;
      first = false;
    }
    const int out_rank = op.outputs.empty() ? 0 : static_cast<int>(op.outputs[0].shape.rank());
    const auto& ints = op.attrs.ints;
    auto keep = [&](int axis) {
      r.out = Tiled{axis, r.factor};
      return r;
    };
    auto reduce = [&](Agg a) {
      r.agg = a;
      return r;
    };
    // Inputs aligned to the output from the right (broadcasting): the tiled ones must agree;
    // the others either broadcast along the window axis or span it.
    auto aligned = [&]() -> Rule {
      int axis = -1;
      for (size_t j = 0; j < in.size(); ++j) {
        if (!in[j]) continue;
        int a = in[j]->axis + out_rank - rank(op, static_cast<int>(j));
        if (axis >= 0 && a != axis) return refuse(op, "its inputs carry the window in different axes");
        axis = a;
      }
      for (size_t j = 0; j < in.size(); ++j) {
        int a = axis - (out_rank - rank(op, static_cast<int>(j)));
        if (in[j] || a < 0 || input_size(op, static_cast<int>(j), a).is_const(1)) continue;
        r.spans.emplace_back(static_cast<int>(j), a);
      }
      return keep(axis);
    };
    const int a = r.in_axes[0];
    switch (op.kind) {
      case OpKind::Sum: {
        if (a < 0) break;
        if (ints.empty() || std::count(ints.begin(), ints.end(), a)) return reduce(Agg::Sum);
        int out = a;
        if (!op.attrs.keepdim)
          for (int64_t x : ints) out -= x < a;
        return keep(out);
      }
      case OpKind::ReduceMax:
        if (a < 0) break;
        if (ints[0] == a) return reduce(Agg::Max);
        return keep(op.attrs.keepdim ? a : shifted(a, static_cast<int>(ints[0])));
      case OpKind::CumSum:
      case OpKind::Flip:
      case OpKind::Pad:
      case OpKind::Slice:
        if (a < 0 || ints[0] == a) break;
        return keep(a);
      case OpKind::Index:
      case OpKind::Squeeze:
        if (a < 0 || ints[0] == a) break;
        return keep(shifted(a, static_cast<int>(ints[0])));
      case OpKind::Unsqueeze:
        if (a < 0) break;
        return keep(a + (ints[0] <= a ? 1 : 0));
      case OpKind::Permute:
        if (a < 0) break;
        return keep(static_cast<int>(std::find(ints.begin(), ints.end(), a) - ints.begin()));
      case OpKind::Expand:
        if (a < 0) break;
        return keep(a + out_rank - rank(op, 0));
      case OpKind::Gather: {
        int axis = a >= 0 ? a : r.in_axes[1];
        if (axis < 0 || ints[0] == axis) break;
        return aligned();
      }
      case OpKind::IndexSelect:
        if (a < 0 || in[1] || ints[0] == a) break;
        return keep(a);
      case OpKind::Reshape:
        if (a < 0) break;
        return reshape_rule(op, *in[0], r);
      case OpKind::MatMul:
        return matmul_rule(op, in, r);
      default:
        if (ir::vec_rule(op.kind) == ir::VecRule::Elementwise) return aligned();
        break;
    }
    return refuse(op, cat(ir::op_kind_name(op.kind), " has no tiling rule for the window axis"));
  }

  // A reshape keeps the axes before the window axis and merges the window axis with the axes
  // after it into one (rows of a flattened rollout): the tile's rows stay contiguous.
  Rule reshape_rule(const OpNode& op, const Tiled& t, Rule r) const {
    const ir::Shape& from = g_.input_type(op.inputs[0]).shape;
    const ir::Shape& to = op.outputs[0].shape;
    const int a = t.axis;
    if (static_cast<int>(to.rank()) <= a) return refuse(op, "the reshape drops the window axis");
    for (int k = 0; k < a; ++k)
      if (!sym::simplify(from[k] - to[k], op.domain).is_const(0))
        return refuse(op, "the reshape changes the axes before the window axis");
    Expr merged = from[a];
    for (int k = a;; ++k) {
      if (sym::simplify(merged - to[a], op.domain).is_const(0)) {
        Expr factor = r.factor;
        for (int j = a + 1; j <= k; ++j) factor = factor * from[j];
        r.out = Tiled{a, sym::simplify(factor, op.domain)};
        return r;
      }
      if (k + 1 >= static_cast<int>(from.rank())) break;
      merged = merged * from[k + 1];
    }
    return refuse(op, "the reshape splits the window axis");
  }

  // Batched matmul (..., M, K) @ (..., K, N): a contracted window is a reduction; a window in M,
  // N or a batch axis moves to the output's axis.
  Rule matmul_rule(const OpNode& op, const std::vector<std::optional<Tiled>>& in, Rule r) const {
    const int ra = rank(op, 0), rb = rank(op, 1);
    const int ro = static_cast<int>(op.outputs[0].shape.rank());
    const int ka = ra - 1, kb = rb == 1 ? 0 : rb - 2;
    bool contracts = (in[0] && in[0]->axis == ka) || (in[1] && in[1]->axis == kb);
    if (contracts) {
      for (int j = 0; j < 2; ++j) {
        int k = j == 0 ? ka : kb;
        if (in[j] && in[j]->axis != k)
          return refuse(op, "one operand carries the window in its contracted axis, the other not");
        if (!in[j]) r.spans.emplace_back(j, k);
      }
      r.agg = Agg::Sum;
      return r;
    }
    int axis = -1;
    for (int j = 0; j < 2; ++j) {
      if (!in[j]) continue;
      const int rj = j == 0 ? ra : rb, x = in[j]->axis;
      int o;
      if (j == 0 && ra >= 2 && x == ra - 2)
        o = ro - (rb == 1 ? 1 : 2);
      else if (j == 1 && rb >= 2 && x == rb - 1)
        o = ro - 1;
      else
        o = x + ro - rj;  // a batch axis
      if (axis >= 0 && o != axis) return refuse(op, "its operands carry the window in different axes");
      axis = o;
    }
    // The other operand spans a batch window axis unless it broadcasts there.
    for (int j = 0; j < 2; ++j) {
      const int rj = j == 0 ? ra : rb;
      int x = axis - (ro - rj);
      if (in[j] || rj <= 2 || x < 0 || x >= rj - 2 || input_size(op, j, x).is_const(1)) continue;
      r.spans.emplace_back(j, x);
    }
    r.out = Tiled{axis, r.factor};
    return r;
  }

  // ---- the group of ops one window reaches ----------------------------------------------------

  struct Group {
    Window window;
    std::set<EdgeId> edges;        // window reads
    std::set<OpId> slices;         // window Slice ops
    std::map<OpId, Tiled> tiled;   // ops whose outputs carry the window
    std::map<OpId, Rule> rules;    // every op of the group (tiled ones and partials)
    std::vector<OpId> order;       // first reached first
  };

  // The inputs of `op` that carry the window; a refusal if it reads two windows. A windowed
  // value read at another point is read whole (from the untiled op, which then stays).
  std::optional<std::string> inputs_of(const OpNode& op, Group& grp,
                                       std::vector<std::optional<Tiled>>& in) const {
    in.assign(op.inputs.size(), std::nullopt);
    for (size_t j = 0; j < op.inputs.size(); ++j) {
      EdgeId id = op.inputs[j];
      if (auto w = window_of_edge(id)) {
        if (!w->same(grp.window)) return cat(op.describe(), " reads two different windows");
        grp.edges.insert(id);
        in[j] = Tiled{};
      } else if (auto it = grp.tiled.find(g_.edge(id).source);
                 it != grp.tiled.end() && reads_same_point(g_, id)) {
        in[j] = it->second;
      }
    }
    return std::nullopt;
  }

  // Grows the group from its seeds; an op that cannot be tiled is left out (it reads the whole
  // values) and the group grown again without it, until every op in it can be tiled.
  bool tile_group(const std::vector<Origin>& seeds) {
    Group grp;
    std::set<OpId> excluded;
    std::vector<Refusal> refused;
    for (;;) {
      std::optional<Refusal> r = grow(grp, seeds, excluded);
      if (!r) r = check(grp);
      if (!r) break;
      excluded.insert(r->op);
      refused.push_back(*r);
    }
    std::string whole;
    for (const Refusal& r : refused) whole += cat("\n[tempo]   not tiled: ", r.why);
    if (std::none_of(grp.rules.begin(), grp.rules.end(),
                     [](const auto& r) { return r.second.agg != Agg::None; })) {
      if (verbose_)
        std::cerr << "[tempo] tiling: a window along " << d_.name()
                  << " stays whole: nothing tiled reduces its axis" << whole << "\n";
      return false;
    }
    const OpId first_added = static_cast<OpId>(g_.num_ops());
    apply(grp);
    consumers_ = consumers(g_);
    if (verbose_) {
      // Originals still read from outside the group keep their whole values (and inputs) alive.
      for (OpId id : grp.order)
        for (EdgeId c : consumers_[id])
          if (!grp.rules.count(g_.edge(c).sink) && g_.edge(c).sink < first_added)
            whole += cat("\n[tempo]   kept whole: ", g_.op(id).describe(), ", read by ",
                         g_.op(g_.edge(c).sink).describe());
      std::cerr << "[tempo] tiling: " << grp.order.size() << " ops along " << d_.name()
                << " run in tiles of " << z_ << whole << "\n";
    }
    return true;
  }

  // Follows the windows forward to the reductions of their axis, leaving out `excluded` ops;
  // the first op that cannot be tiled, if any.
  std::optional<Refusal> grow(Group& grp, const std::vector<Origin>& seeds,
                              const std::set<OpId>& excluded) {
    grp = Group{};
    grp.window = seeds.front().window;
    std::vector<OpId> work;
    for (const Origin& o : seeds) {
      if (excluded.count(o.reader)) continue;
      if (o.edge >= 0) {
        work.push_back(o.reader);
        continue;
      }
      grp.slices.insert(o.slice);
      grp.tiled[o.slice].axis = static_cast<int>(g_.op(o.slice).attrs.ints[0]);
      grp.rules[o.slice] = Rule{};
      grp.order.push_back(o.slice);
      for (EdgeId c : consumers_[o.slice]) work.push_back(g_.edge(c).sink);
    }
    while (!work.empty()) {
      OpId id = work.back();
      work.pop_back();
      const OpNode& op = g_.op(id);
      if (grp.slices.count(id) || excluded.count(id)) continue;
      std::vector<std::optional<Tiled>> in;
      if (auto why = inputs_of(op, grp, in)) return Refusal{id, *why};
      if (std::none_of(in.begin(), in.end(), [](const auto& t) { return t.has_value(); }))
        continue;  // reads the window's values at other points: whole
      Rule r = rule(op, in);
      if (!r.refusal.empty()) return Refusal{id, r.refusal};
      if (!grp.rules.count(id)) grp.order.push_back(id);
      grp.rules[id] = r;
      if (r.agg != Agg::None) continue;
      auto [it, added] = grp.tiled.try_emplace(id, r.out);
      if (!added && it->second.axis != r.out.axis)
        return Refusal{id, cat(op.describe(), ": its window axis is ambiguous")};
      if (added)
        for (EdgeId c : consumers_[id]) work.push_back(g_.edge(c).sink);
    }
    return std::nullopt;
  }

  // Every op's rule again with what the whole group knows; one domain; maxima whose positions
  // are read stay whole.
  std::optional<Refusal> check(Group& grp) {
    for (OpId id : grp.order) {
      const OpNode& op = g_.op(id);
      auto refuse_op = [&](const std::string& why) { return Refusal{id, cat(op.describe(), why)}; };
      if (std::any_of(op.domain.begin(), op.domain.end(), [&](const Dim& x) { return x == n_dim(); }))
        return refuse_op(cat(" is already tiled along ", d_.name()));
      if (grp.slices.count(id)) continue;
      std::vector<std::optional<Tiled>> in;
      if (auto why = inputs_of(op, grp, in)) return Refusal{id, *why};
      Rule r = rule(op, in);
      const Rule& had = grp.rules[id];
      if (!r.refusal.empty()) return Refusal{id, r.refusal};
      if (r.agg != had.agg || (r.agg == Agg::None && r.out.axis != had.out.axis) ||
          r.spans.size() != had.spans.size())
        return refuse_op(": its window axis changes as more of its inputs are tiled");
      grp.rules[id] = r;
      if (r.agg == Agg::None) continue;
      for (EdgeId c : consumers_[id])
        if (g_.edge(c).source_output != 0) return refuse_op(": the position of its maximum is read");
      for (const auto& [ret, output] : p_.retained)
        if (ret == id && output != 0) return refuse_op(": the position of its maximum is retained");
    }
    return std::nullopt;
  }

  Dim n_dim() const { return Dim(cat("n_", d_.name()), d_.bound.name()); }

  // ---- the rewrite ------------------------------------------------------------------------------

  // The group's ops get tiled copies over (domain, n); each reduction's readers (and the user)
  // read its aggregation over the tiles. The originals stay for readers outside the tiles (a
  // value read whole or at other points) and are otherwise left to dead-code elimination.
  void apply(const Group& grp) {
    const Dim n = n_dim();
    const Window& w = grp.window;
    const Expr z(z_);
    const Dims old_domain = g_.op(grp.order.front()).domain;
    Dims domain = old_domain;
    domain.push_back(n);
    const Expr lo = sym::simplify(max(w.lo, z * n.var), domain);
    const Expr hi = sym::simplify(min(w.hi, z * n.var + z), domain);
    const Expr overlaps = sym::simplify((z * n.var < w.hi) && (w.lo < z * n.var + z), domain);
    const Expr tile = sym::simplify(hi - lo, domain);
    // The tiles the window overlaps: [first, end).
    const Expr first = sym::simplify(floordiv(w.lo, z), old_domain);
    const Expr end = sym::simplify(floordiv(w.hi + z - 1, z), old_domain);
    const Expr tiles = sym::simplify(slice(first, end), old_domain);

    // Interleaved (tiling for memory): a sum over the tiles accumulates as they run, so each
    // tile's partial (a learner's weight gradient over its steps) is freed once added instead of
    // every tile's being held until one sum. Only where every point has a tile to start from,
    // and for partials of at least 64 KiB: smaller ones cost more in adds than they hold.
    Dims along = old_domain;  // d's bound is known to be positive here
    along.push_back(d_);
    const bool nonempty = sym::prove_positive(w.hi - w.lo, along);
    auto accumulate = [&](const OpNode& root) {
      const ir::TensorType& t = root.outputs[0];
      return interleave_ && nonempty && t.shape.is_static() &&
             bytes_of(t, 0, p_).value_or(0) >= (int64_t{64} << 10);
    };
    std::map<OpId, OpId> copy, aggregate;
    for (OpId id : grp.order) {
      OpNode c = g_.op(id);
      c.inputs.clear();
      c.domain = domain;
      c.cond = c.cond.defined() ? sym::simplify(c.cond && overlaps, domain) : overlaps;
      if (grp.slices.count(id)) c.attrs.exprs = {lo, hi};
      copy[id] = g_.add_op(std::move(c));
    }
    for (OpId id : grp.order) {
      const Rule& r = grp.rules.at(id);
      if (r.agg == Agg::None) continue;
      const OpNode& root = g_.op(id);
      OpNode agg;
      agg.kind = r.agg == Agg::Max ? OpKind::ReduceMax
                 : accumulate(root) ? OpKind::Identity  // of the running sum's last tile
                                    : OpKind::Sum;
      if (agg.kind != OpKind::Identity) agg.attrs.ints = {0};
      agg.domain = old_domain;
      agg.cond = root.cond;
      agg.name = root.name;
      agg.loc = root.loc;
      agg.outputs = root.outputs;  // a reduction's type does not change with tiling
      OpId a = aggregate[id] = g_.add_op(std::move(agg));
      redirect_reads(g_, id, 0, a, 0);
      for (auto& [op, output] : p_.retained)
        if (op == id) op = a;
      std::replace(p_.op_map.begin(), p_.op_map.end(), id, a);
    }
    // The copies' reads: tiles of the window, same-point reads of copies (gaining n), the
    // aggregations of reductions, and everything else as the original read it.
    // Static tiles (all factors 1): the first and last tile are padded to z rows, and each
    // reduction of the window axis masks the padding out.
    const bool pad = static_tiles_ && std::all_of(grp.tiled.begin(), grp.tiled.end(), [](const auto& t) {
      return t.second.factor.is_const(1);
    });
    const Expr before = sym::simplify(lo - z * n.var, domain);
    const Expr after = sym::simplify(z * n.var + z - hi, domain);
    std::set<OpId> added;
    for (OpId id : grp.order) {
      const OpId c = copy.at(id);
      const std::vector<EdgeId> inputs = g_.op(id).inputs;
      for (EdgeId eid : inputs) {
        const ir::Edge e = g_.edge(eid);
        std::vector<Expr> entries = e.phi.args();
        OpId source = e.source;
        if (grp.edges.count(eid)) {
          for (Expr& x : entries)
            if (x.is_slice()) x = slice(lo, hi);
        } else if (grp.tiled.count(source) && reads_same_point(g_, eid)) {
          source = copy.at(source);
          entries.push_back(n.var);
        } else if (aggregate.count(source) && e.source_output == 0) {
          source = aggregate.at(source);
        }
        g_.add_edge(c, source, e.source_output, seq(entries), e.cond);
      }
      const Rule& r = grp.rules.at(id);
      for (size_t j = 0; j < inputs.size(); ++j) {
        const ir::Edge& e = g_.edge(inputs[j]);
        // Static tiles: a tile of the window is padded to z rows.
        if (pad && (grp.edges.count(inputs[j]) || grp.slices.count(e.source)))
          added.insert(interpose(c, static_cast<int>(j),
                                 dim_op(OpKind::Pad, grp.slices.count(e.source)
                                                         ? static_cast<int>(g_.op(e.source).attrs.ints[0])
                                                         : 0,
                                        before, after)));
      }
      for (auto [input, axis] : r.spans) {
        added.insert(interpose(c, input,
                               dim_op(OpKind::Slice, axis, sym::simplify((lo - w.lo) * r.factor, domain),
                                      sym::simplify((hi - w.lo) * r.factor, domain))));
        if (pad) added.insert(interpose(c, input, dim_op(OpKind::Pad, axis, before, after)));
      }
      if (pad && r.agg != Agg::None)
        mask_padding(id, c, r, added, before, sym::simplify(hi - z * n.var, domain));
    }
    // Types, in dataflow order (a reshape or expand that makes the window axis gets the tile's).
    std::set<OpId> ours = added;
    std::map<OpId, OpId> original;  // copy -> the op it copies
    for (const auto& [id, c] : copy) {
      ours.insert(c);
      original[c] = id;
    }
    for (OpId id : dataflow_order(ours)) {
      OpNode& op = g_.op(id);
      auto orig = original.find(id);
      if (orig != original.end() && (op.kind == OpKind::Expand || op.kind == OpKind::Reshape))
        if (auto t = grp.tiled.find(orig->second); t != grp.tiled.end())
          op.attrs.exprs[t->second.axis] =
              pad ? z : sym::simplify(tile * t->second.factor, domain);
      retype(id);
    }
    for (const auto& [root, a] : aggregate) {
      std::vector<Expr> at = identity_phi(old_domain).args();
      if (g_.op(a).kind == OpKind::Identity) {
        at.push_back(sym::simplify(end - 1, old_domain));
        g_.add_edge(a, running_sum(copy.at(root), first), 0, seq(at));
      } else {
        at.push_back(tiles);
        g_.add_edge(a, copy.at(root), 0, seq(at));
      }
    }
  }

  // The running sum over the tiles of `partial` (over (domain, n)), from tile `first` on:
  // acc[n] = before[n] + partial[n], before[n] being zeros at the first tile and acc[n - 1]
  // after it. The add runs where the partial does, so fusion puts it in the partial's region.
  OpId running_sum(OpId partial, const Expr& first) {
    const OpNode p = g_.op(partial);  // a copy: adding ops moves the graph's ops
    const Expr n = p.domain.back().var, here = identity_phi(p.domain);
    auto beside = [&](OpKind kind, ir::Attrs attrs, const Dims& domain, const Expr& cond) {
      OpNode op;
      op.kind = kind;
      op.attrs = std::move(attrs);
      op.domain = domain;
      op.cond = cond;
      op.name = p.name;
      op.loc = p.loc;
      op.outputs = p.outputs;
      return g_.add_op(std::move(op));
    };
    ir::Attrs zeros;
    zeros.exprs = p.outputs[0].shape.dims;
    zeros.scalar = 0;
    zeros.dtype = p.outputs[0].dtype;
    // Zeros at the first tile only: a constant without a domain would be held all run.
    const Expr at_first = sym::simplify(n == first, p.domain);
    const OpId zero = beside(OpKind::Const, zeros, p.domain,
                             p.cond.defined() ? sym::simplify(p.cond && at_first, p.domain)
                                              : at_first);
    const OpId before = beside(OpKind::Merge, {}, p.domain, p.cond);
    const OpId acc = beside(OpKind::Add, {}, p.domain, p.cond);
    std::vector<Expr> last = here.args();
    last.back() = n - 1;
    g_.add_edge(before, zero, 0, here, at_first);
    g_.add_edge(before, acc, 0, seq(last), sym::simplify(n >= first + 1, p.domain));
    g_.add_edge(acc, before, 0, here);
    g_.add_edge(acc, partial, 0, here);
    return acc;
  }

  void retype(OpId id) {
    OpNode& op = g_.op(id);
    std::vector<ir::TensorType> types;
    for (EdgeId e : op.inputs) types.push_back(g_.input_type(e));
    op.outputs = ir::infer_types(op.kind, op.attrs, types, op.domain, op.describe());
  }

  // The reduction `c` (a copy of `original`) reads its tiled inputs with the padding rows
  // (outside [from, to) of the z rows) replaced by the reduction's identity: 0 for sums and
  // contractions, -inf for maxima.
  void mask_padding(OpId original, OpId c, const Rule& r, std::set<OpId>& added, const Expr& from,
                    const Expr& to) {
    // A new op beside c, reading `reads` at c's point; constants hold everywhere (no domain).
    auto beside = [&](OpKind kind, ir::Attrs attrs, const std::vector<OpId>& reads,
                      bool constant = false) {
      OpNode op;
      op.kind = kind;
      op.attrs = std::move(attrs);
      if (!constant) {
        op.domain = g_.op(c).domain;
        op.cond = g_.op(c).cond;  // only where the tile is
      }
      op.name = g_.op(c).name;
      op.loc = g_.op(c).loc;
      OpId id = g_.add_op(std::move(op));
      for (OpId s : reads) g_.add_edge(id, s, 0, identity_phi(g_.op(s).domain));
      added.insert(id);
      return id;
    };
    auto point = [](const Expr& e) {
      ir::Attrs a;
      a.exprs = {e};
      return a;
    };
    ir::Attrs rows = point(Expr(z_));
    rows.dtype = ir::DType::Int64;
    OpId k = beside(OpKind::Arange, rows, {}, true);
    OpId valid = beside(OpKind::And, {},
                        {beside(OpKind::Ge, {}, {k, beside(OpKind::EvalSymbol, point(from), {})}),
                         beside(OpKind::Lt, {}, {k, beside(OpKind::EvalSymbol, point(to), {})})});
    for (size_t j = 0; j < r.in_axes.size(); ++j) {
      if (r.in_axes[j] < 0) continue;
      // Tiling keeps ranks and dtypes: the original's input types say them.
      const ir::TensorType in = g_.input_type(g_.op(original).inputs[j]);
      ir::Attrs shape;
      for (int a = 0; a < static_cast<int>(in.shape.rank()); ++a)
        shape.exprs.push_back(a == r.in_axes[j] ? Expr(z_) : Expr(1));
      ir::Attrs fill;
      fill.scalar = r.agg == Agg::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      fill.dtype = in.dtype;
      OpNode where;
      where.kind = OpKind::Where;
      added.insert(interpose(c, static_cast<int>(j), where,
                             {beside(OpKind::Reshape, shape, {valid})},
                             {beside(OpKind::Const, fill, {}, true)}));
    }
  }

  // Places `op` (over the reader's domain) on input `input` of `id`: it reads `pre`, then what the
  // input read, then `post` (each at the reader's point); `id` reads it instead.
  OpId interpose(OpId id, int input, OpNode op, const std::vector<OpId>& pre = {},
                 const std::vector<OpId>& post = {}) {
    const ir::Edge old = g_.edge(g_.op(id).inputs[input]);
    op.domain = g_.op(id).domain;
    op.cond = g_.op(id).cond;
    op.name = g_.op(id).name;
    op.loc = g_.op(id).loc;
    OpId x = g_.add_op(std::move(op));
    for (OpId s : pre) g_.add_edge(x, s, 0, identity_phi(g_.op(s).domain));
    g_.add_edge(x, old.source, old.source_output, old.phi, old.cond);
    for (OpId s : post) g_.add_edge(x, s, 0, identity_phi(g_.op(s).domain));
    ir::Edge& e = g_.edge(g_.op(id).inputs[input]);
    e.source = x;
    e.source_output = 0;
    e.phi = identity_phi(g_.op(x).domain);
    e.cond = Expr();
    return x;
  }

  static OpNode dim_op(OpKind kind, int axis, const Expr& a, const Expr& b) {
    OpNode op;
    op.kind = kind;
    op.attrs.ints = {axis};
    op.attrs.exprs = {a, b};
    return op;
  }

  // The new ops `ours`, each after those of them it reads.
  std::vector<OpId> dataflow_order(const std::set<OpId>& ours) const {
    std::vector<OpId> order;
    std::set<OpId> done;
    std::function<void(OpId)> visit = [&](OpId id) {
      if (!done.insert(id).second) return;
      for (EdgeId e : g_.op(id).inputs)
        if (ours.count(g_.edge(e).source)) visit(g_.edge(e).source);
      order.push_back(id);
    };
    for (OpId id : ours) visit(id);
    return order;
  }

  Program& p_;
  Graph& g_;
  Dim d_;
  int64_t z_;
  bool verbose_;
  bool static_tiles_;
  bool interleave_;
  std::vector<std::vector<EdgeId>> consumers_;
};

const Dim* find_dim(const Graph& g, const std::string& name) {
  for (const OpNode& op : g.ops())
    for (const Dim& d : op.domain)
      if (d.name() == name) return &d;
  return nullptr;
}

// Tile sizes for the dims whose stacked windows can exceed `limit` bytes: the largest power of
// two whose window stays under it (at least 1).
std::vector<std::pair<std::string, int64_t>> automatic_tiles(const Program& p, int64_t limit) {
  std::map<std::string, int64_t> size;
  const Graph& g = p.graph;
  for (const ir::Edge& e : g.edges()) {
    auto w = window_read(g, e);
    if (!w) continue;
    const Dim& d = g.op(e.source).domain[w->first];
    if (std::any_of(p.options.tiles.begin(), p.options.tiles.end(),
                    [&](const auto& t) { return t.first == d.name(); }))
      continue;
    auto row = bytes_of(g.input_type(e.id), 1, p);
    auto bound = std::find_if(p.bound_values.begin(), p.bound_values.end(),
                              [&](const auto& b) { return b.first == d.bound.name(); });
    if (!row || bound == p.bound_values.end() || bound->second * *row <= limit) continue;
    int64_t z = 1;
    while (2 * z * *row <= limit && 2 * z <= bound->second) z *= 2;
    auto [it, added] = size.try_emplace(d.name(), z);
    if (!added) it->second = std::min(it->second, z);
  }
  std::vector<std::pair<std::string, int64_t>> out(size.begin(), size.end());
  if (p.options.verbose)
    for (const auto& [name, z] : out)
      std::cerr << "[tempo] tiling: windows along " << name << " can exceed " << limit
                << " bytes: tiles of " << z << "\n";
  return out;
}

}  // namespace

bool tile_windows(Program& p) {
  bool changed = false;
  auto tiles = p.options.tiles;
  if (p.options.tile_above_bytes < 0)
    throw UserError(cat("tile_above_bytes must be 0 (off) or positive, got ",
                        p.options.tile_above_bytes));
  if (p.options.tile_above_bytes > 0)
    for (const auto& t : automatic_tiles(p, p.options.tile_above_bytes)) tiles.push_back(t);
  for (const auto& [name, size] : tiles) {
    if (size < 1) throw UserError(cat("tile size for ", name, " must be at least 1, got ", size));
    const Dim* d = find_dim(p.graph, name);
    if (!d) {
      std::set<std::string> names;
      for (const OpNode& op : p.graph.ops())
        for (const Dim& x : op.domain) names.insert(x.name());
      std::string dims;
      for (const std::string& x : names) dims += (dims.empty() ? "" : ", ") + x;
      throw UserError(cat("cannot tile '", name, "': the program has no such dimension (its dimensions: ",
                          dims.empty() ? "none" : dims, ")"));
    }
    Tiler tiler(p, Dim(*d), size);
    changed |= tiler.run();
  }
  return changed;
}

}  // namespace tempo::passes
