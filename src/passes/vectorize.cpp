#include "passes/vectorize.h"

#include <algorithm>
#include <optional>

#include "passes/graph_edit.h"
#include "passes/lookahead.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::passes {

namespace {

using ir::EdgeId;
using ir::Graph;
using ir::OpId;
using ir::OpKind;
using ir::OpNode;
using ir::VecRule;

int position(const Dims& domain, const Dim& d) {
  for (size_t k = 0; k < domain.size(); ++k)
    if (domain[k] == d) return static_cast<int>(k);
  return -1;
}

// The constant c if e is d + c.
std::optional<int64_t> offset_from(const Expr& e, const Dim& d, const Dims& dims) {
  if (e.is_slice() || !mentions(e, d)) return std::nullopt;
  Expr c = sym::simplify(e - d.var, dims);
  if (!c.is_const()) return std::nullopt;
  return c.value();
}

int slice_entries(const Expr& phi) {
  int n = 0;
  for (const Expr& a : phi.args()) n += a.is_slice();
  return n;
}

// How a vectorized op receives one of its inputs.
enum class Input {
  Batched,    // with the new leading dimension: the source is vectorized, or stacked over d
  Broadcast,  // the same value at every point of d
  Invalid,    // neither: the sink cannot be vectorized
};

class Vectorizer {
 public:
  Vectorizer(Program& p, const Dim& d, Dims outer)
      : p_(p), g_(p.graph), d_(d), outer_(std::move(outer)) {}

  bool run() {
    select();
    if (std::none_of(in_.begin(), in_.end(), [](bool b) { return b; })) return false;
    apply();
    return true;
  }

 private:
  // ---- which ops ----

  // index(x, 0, d + c) of an x that does not vary along d: vectorized, slice(x, 0, c:D + c).
  bool is_point_index(const OpNode& op) const {
    return op.kind == OpKind::Index && op.attrs.ints[0] == 0 &&
           offset_from(op.attrs.exprs[0], d_, op.domain).has_value();
  }

  // A random draw is a function of its point (ir::DrawKey), so the points of d can be drawn at
  // once, each as it would have been alone. Not over the outermost dimension (a training run's
  // iterations): that batch would be drawn at the start and held for the whole run.
  static bool is_draw(const OpNode& op) {
    return op.kind == OpKind::RandUniform || op.kind == OpKind::RandNormal;
  }

  bool local_ok(const OpNode& op) const {
    const bool rule = is_draw(op) ? !outer_.empty()
                                  : ir::vec_rule(op.kind) != VecRule::None && !op.inputs.empty();
    if (position(op.domain, d_) < 0 || !rule || p_.is_retained(op.id) || mentions(op.cond, d_))
      return false;
    for (const Expr& e : op.attrs.exprs)
      if (mentions(e, d_) && !is_point_index(op)) return false;
    for (const ir::TensorType& t : op.outputs)
      for (const Expr& e : t.shape.dims)
        if (mentions(e, d_)) return false;
    return true;
  }

  Input classify(const ir::Edge& e) const {
    const OpNode& k = g_.op(e.sink);
    int sp = position(g_.op(e.source).domain, d_);
    if (in_[e.source]) {
      // Only the same point, so that the batch lines up with the sink's own.
      bool ok = e.phi.arg(sp).same(d_.var) && slice_entries(e.phi) == 0;
      for (size_t k2 = 0; ok && k2 < e.phi.size(); ++k2)
        if (static_cast<int>(k2) != sp && mentions(e.phi.arg(k2), d_)) ok = false;
      return ok ? Input::Batched : Input::Invalid;
    }
    const OpNode& src = g_.op(e.source);
    int mentioned = 0;
    bool shifted = false;
    for (size_t k2 = 0; k2 < e.phi.size(); ++k2)
      if (mentions(e.phi.arg(k2), d_)) {
        ++mentioned;
        // Stacking the source's points needs them to have one shape.
        bool same_shape = true;
        for (const Expr& s : src.outputs[e.source_output].shape.dims)
          same_shape &= !mentions(s, src.domain[k2]);
        shifted = same_shape && offset_from(e.phi.arg(k2), d_, k.domain).has_value();
      }
    if (mentioned == 0) return Input::Broadcast;
    if (mentioned == 1 && shifted && slice_entries(e.phi) == 0) return Input::Batched;
    return Input::Invalid;
  }

  // Whether the op's kind can be vectorized with its inputs received this way.
  bool rule_ok(const OpNode& op, const std::vector<Input>& in) const {
    if (is_draw(op)) return true;
    auto batched = [&](size_t i) { return in[i] == Input::Batched; };
    auto rank = [&](size_t i) { return g_.input_type(op.inputs[i]).shape.rank(); };
    switch (ir::vec_rule(op.kind)) {
      case VecRule::Elementwise:
        return std::any_of(in.begin(), in.end(), [](Input i) { return i == Input::Batched; });
      case VecRule::DimAttrs:
        if (is_point_index(op)) return !batched(0);
        if (op.kind == OpKind::IndexSelect) return batched(0) && !batched(1);
        return std::all_of(in.begin(), in.end(), [](Input i) { return i == Input::Batched; });
      case VecRule::Permute:
      case VecRule::ShapeAttr:
        return batched(0);
      case VecRule::MatMul: {
        // Batched matmul broadcasting lines the new dimension up only in these cases.
        size_t ra = rank(0), rb = rank(1);
        if (batched(0) && batched(1)) return ra == rb && ra >= 2;
        if (batched(0)) return rb <= 2;
        if (batched(1)) return rb == 2 && ra <= 2;
        return false;
      }
      case VecRule::None:
        return false;
    }
    return false;
  }

  // A read of a vectorized source by an op that stays per point: the batch must be indexable
  // (the entry of d may be a point or a unit-step slice, and no other entry stacks).
  bool readable_per_point(const ir::Edge& e) const {
    int sp = position(g_.op(e.source).domain, d_);
    const Expr& a = e.phi.arg(sp);
    if (a.is_slice() && !a.arg(2).is_const(1)) return false;
    return slice_entries(e.phi) == (a.is_slice() ? 1 : 0);
  }

  // Whether a read takes every point of d at once (the entry of d is 0:D).
  bool reads_whole_batch(const ir::Edge& e) const {
    const Expr& a = e.phi.arg(position(g_.op(e.source).domain, d_));
    return a.is_slice() && a.arg(0).is_const(0) && a.arg(1).same(d_.bound) && a.arg(2).is_const(1);
  }

  void select() {
    const size_t n = g_.num_ops();
    in_.assign(n, false);
    for (const OpNode& op : g_.ops()) in_[op.id] = local_ok(op);
    // Ops on a cycle along d (not ordered by an outer dimension) stay per point.
    const std::vector<bool> cyclic = recurrent_along(g_, outer_);
    std::vector<OpId> recurrent;
    for (const OpNode& op : g_.ops())
      if (cyclic[op.id]) {
        in_[op.id] = false;
        recurrent.push_back(op.id);
      }
    // With interleaving, what reads a recurrence a bounded number of steps ahead stays per
    // point too, so that it runs as the recurrence goes (passes/lookahead.h).
    if (p_.options.interleave) {
      for (const OpNode& op : g_.ops())
        if (streams(ahead()[op.id])) in_[op.id] = false;
    }
    keep_large_points_streaming();
    keep_sinks_timely(recurrent);
    // Then drop ops whose inputs or readers do not fit, until the set is stable.
    for (bool again = true; again;) {
      again = false;
      for (const OpNode& op : g_.ops()) {
        if (in_[op.id]) {
          std::vector<Input> ins;
          for (EdgeId id : op.inputs) ins.push_back(classify(g_.edge(id)));
          bool ok =
              std::none_of(ins.begin(), ins.end(), [](Input i) { return i == Input::Invalid; });
          if (!ok || !rule_ok(op, ins) || stacks_whole_run(op)) {
            in_[op.id] = false;
            again = true;
            continue;
          }
        }
        for (EdgeId id : op.inputs) {
          const ir::Edge& e = g_.edge(id);
          // A draw read point by point stays a draw per point: its batch would only add an
          // index per point, and hold every point's values from the first read to the last; so
          // does a large batch (large_batch). A reader of the whole batch (the sum over t of
          // per-step weight gradients) holds every point either way, so there both are batched.
          if (in_[e.source] && !in_[op.id] &&
              (!readable_per_point(e) ||
               ((large_batch(g_.op(e.source)) || is_draw(g_.op(e.source))) &&
                !reads_whole_batch(e)))) {
            in_[e.source] = false;
            again = true;
          }
        }
      }
    }
  }

  // A large point of a per-point source (an environment's observation) that only ops running as
  // the recurrence goes read dies at its own step. Batching those readers over d would stack
  // every point and keep them all alive until the batch runs (PPO's bootstrap values of 16
  // final 3x64x64 observations a step: 100 MiB per rollout), so they stay per point; at this
  // size an op's own work dwarfs the launch that batching would save. A reader whose own point
  // is at least as large (an n-step learner's per-step weight gradient, 3 MiB from a 0.75 MiB
  // observation) is batched all the same: per point, its outputs would be held instead.
  void keep_large_points_streaming() {
    constexpr int64_t kLargePoint = 256 << 10;  // bytes
    for (const OpNode& src : g_.ops()) {
      if (in_[src.id] || position(src.domain, d_) < 0) continue;
      for (int out = 0; out < static_cast<int>(src.outputs.size()); ++out) {
        const std::optional<int64_t> point = bytes_of(src.outputs[out], 0, p_);
        if (!point || *point < kLargePoint) continue;
        std::vector<OpId> readers;
        bool dies_at_its_step = true;
        for (EdgeId id : g_.out_edges(src.id)) {
          const ir::Edge& e = g_.edge(id);
          if (e.source_output != out) continue;
          dies_at_its_step &= streams(ahead()[e.sink]) && slice_entries(e.phi) == 0;
          readers.push_back(e.sink);
        }
        if (dies_at_its_step)
          for (OpId r : readers)
            if (bytes(g_.op(r)) < *point) in_[r] = false;
      }
    }
  }

  // A batch that an op staying per point reads is computed before the op's first point and
  // stays whole until its last, with every point of the per-point sources it stacks: all of d at
  // once, for each point of the op's dimensions inside d. Over a long d (a training run's
  // iterations: TD3's target noise and replay samples, 5 KiB a step, 600 MiB over 120k steps;
  // PPO's action uniforms, 4 KiB a step) that is memory growing with the run, computed ahead of
  // it, while the launches batching saves (one per point) are a small part of each point's
  // work; such ops stay per point.
  bool large_batch(const OpNode& op) const {
    return batch_points(op) * (bytes(op) + stacked_bytes(op, 0)) > kLargeBatch;
  }

  // A batch over the outermost dimension (a training run's iterations) stacks every point of
  // the per-point sources it reads, each a tensor of its own from its making until the batch
  // runs, which is at the run's start where they are sources: TD3's and DQN's update counters
  // and noise, a few scalars a step whose tensors' bookkeeping (~0.5 KiB each) far outweighs
  // their data, held from the start for the whole run. Such ops stay per point.
  bool stacks_whole_run(const OpNode& op) const {
    constexpr int64_t kPointOverhead = 512;  // bytes of a stored point beyond its data
    if (!outer_.empty()) return false;
    const int64_t held = stacked_bytes(op, kPointOverhead);
    return held && batch_points(op) * held > kLargeBatch;
  }

  static constexpr int64_t kLargeBatch = 1 << 20;  // bytes

  // Per point of `op`, the bytes of the points it stacks from per-point sources, each counted
  // with `overhead` more.
  int64_t stacked_bytes(const OpNode& op, int64_t overhead) const {
    int64_t n = 0;
    for (EdgeId id : op.inputs) {
      const ir::Edge& e = g_.edge(id);
      if (!in_[e.source] && classify(e) == Input::Batched) n += bytes(g_.op(e.source)) + overhead;
    }
    return n;
  }

  // The points of `op` along d and the dimensions inside it (an outer one's points come and go
  // one by one); 0 where d's bound is not known.
  int64_t batch_points(const OpNode& op) const {
    int64_t points = 1;
    bool known = false;
    for (const Dim& dim : op.domain) {
      if (position(outer_, dim) >= 0) continue;
      for (const auto& [name, value] : p_.bound_values)
        if (dim.bound.name() == name) {
          points *= value;
          known |= dim == d_;
        }
    }
    return known ? points : 0;
  }

  int64_t bytes(const OpNode& o) const {  // of one point of o's outputs
    int64_t n = 0;
    for (const ir::TensorType& t : o.outputs) n += bytes_of(t, 0, p_).value_or(0);
    return n;
  }

  // A user function without outputs (a progress line, a checkpoint) that runs at each point of
  // d is there for its side effect at that point. Where what it reads depends on a recurrence
  // along d (the parameters over training iterations), a batch over all of d would wait for
  // the whole recurrence and the sink with it (every progress line at the end of training), so
  // those reads stay per point. Reads of values that exist early (sources) are still batched.
  void keep_sinks_timely(const std::vector<OpId>& recurrent) {
    const size_t n = g_.num_ops();
    auto along_d = [&](OpId id) { return position(g_.op(id).domain, d_) >= 0; };
    // What depends on a recurrence along d, through ops over d.
    std::vector<bool> late(n, false);
    std::vector<OpId> work;
    for (OpId id : recurrent) late[id] = true;
    work = recurrent;
    while (!work.empty()) {
      OpId v = work.back();
      work.pop_back();
      for (EdgeId id : g_.out_edges(v)) {
        OpId k = g_.edge(id).sink;
        if (late[k] || !along_d(k)) continue;
        late[k] = true;
        work.push_back(k);
      }
    }
    // The sinks' inputs (and theirs) among those stay per point.
    std::vector<bool> seen(n, false);
    for (const OpNode& op : g_.ops())
      if (op.kind == OpKind::Udf && op.outputs.empty() && along_d(op.id)) work.push_back(op.id);
    while (!work.empty()) {
      const OpNode& op = g_.op(work.back());
      work.pop_back();
      for (EdgeId id : op.inputs) {
        OpId src = g_.edge(id).source;
        if (seen[src] || !late[src]) continue;
        seen[src] = true;
        in_[src] = false;
        work.push_back(src);
      }
    }
  }

  // ---- rewriting ----

  OpId add_adapter(OpNode adapter, const ir::Edge& read, Expr phi) {
    OpId id = g_.add_op(std::move(adapter));
    g_.add_edge(id, read.source, read.source_output, std::move(phi));
    return id;
  }

  // Entries of phi without the one at position `sp`.
  static Expr without(const Expr& phi, int sp) {
    std::vector<Expr> entries = phi.args();
    entries.erase(entries.begin() + sp);
    return seq(entries);
  }

  // A vectorized sink reads its input with the new leading dimension; an elementwise or expand
  // sink needs the input's rank to match its output's (unit dims after the leading one).
  void rewrite_batched_input(const OpNode& sink, EdgeId id, size_t out_rank) {
    ir::Edge& e = g_.edge(id);
    const OpNode& src = g_.op(e.source);
    if (in_[e.source]) {
      e.phi = without(e.phi, position(src.domain, d_));
    } else {
      for (size_t k = 0; k < e.phi.size(); ++k) {
        auto c = offset_from(e.phi.arg(k), d_, sink.domain);
        if (!c) continue;
        std::vector<Expr> entries = e.phi.args();
        entries[k] = slice(Expr(*c), d_.bound + *c);
        e.phi = seq(entries);
      }
    }
    if (ir::vec_rule(sink.kind) != VecRule::Elementwise && sink.kind != OpKind::Expand) return;
    // With the leading dimension (a vectorized source's type is updated after the edges).
    ir::TensorType t = g_.input_type(id);
    if (in_[e.source]) t.shape.dims.insert(t.shape.dims.begin(), d_.bound);
    if (t.shape.rank() >= out_rank) return;
    ir::Attrs a;
    a.exprs = t.shape.dims;
    a.exprs.insert(a.exprs.begin() + 1, out_rank - t.shape.rank(), Expr(1));
    OpNode r;
    r.kind = OpKind::Reshape;
    r.domain = new_domain(sink);
    r.outputs = {ir::TensorType{t.dtype, ir::Shape(a.exprs)}};
    r.attrs = std::move(a);
    r.name = sink.name;
    r.loc = sink.loc;
    const ir::Edge read = g_.edge(id);
    OpId rid = add_adapter(std::move(r), read, read.phi);
    ir::Edge& back = g_.edge(id);
    back.source = rid;
    back.source_output = 0;
    back.phi = identity_phi(new_domain(sink));
  }

  // A per-point sink reads a vectorized source: index (or slice) the batch at the entry of d.
  void rewrite_per_point_read(const OpNode& sink, EdgeId id) {
    const ir::Edge read = g_.edge(id);
    const OpNode& src = g_.op(read.source);
    int sp = position(src.domain, d_);
    const Expr a = read.phi.arg(sp);
    Expr phi = without(read.phi, sp);
    if (reads_whole_batch(read)) {  // (per-point slices have unit step: readable_per_point)
      g_.edge(id).phi = phi;  // the whole batch is the stack the sink read
      return;
    }
    // The source's type per point (types are updated after the edges): what an index gives.
    ir::TensorType t = src.outputs[read.source_output];
    OpNode x;
    x.attrs.ints = {0};
    if (a.is_slice()) {
      x.kind = OpKind::Slice;
      x.attrs.exprs = {a.arg(0), a.arg(1)};
      t.shape.dims.insert(t.shape.dims.begin(), sym::simplify(a.arg(1) - a.arg(0), sink.domain));
    } else {
      x.kind = OpKind::Index;
      x.attrs.exprs = {a};
    }
    x.domain = sink.domain;
    x.cond = read.cond;  // a merge branch reads only where its condition holds
    x.outputs = {t};
    x.name = src.name;
    x.loc = src.loc;
    OpId xid = add_adapter(std::move(x), read, phi);
    ir::Edge& e = g_.edge(id);
    e.source = xid;
    e.source_output = 0;
    e.phi = identity_phi(sink.domain);
  }

  Dims new_domain(const OpNode& op) const {
    Dims dims = op.domain;
    if (in_[op.id]) dims.erase(dims.begin() + position(dims, d_));
    return dims;
  }

  void apply() {
    const size_t n = g_.num_ops();
    // The original ranks, before any type changes.
    std::vector<size_t> in_rank(n, 0);  // of input 0, for the ops vectorized
    for (size_t k = 0; k < n; ++k)
      if (in_[k] && !g_.op(static_cast<OpId>(k)).inputs.empty())
        in_rank[k] = g_.input_type(g_.op(static_cast<OpId>(k)).inputs[0]).shape.rank();
    std::vector<std::vector<Input>> ins(n);
    for (size_t k = 0; k < n; ++k)
      if (in_[k])
        for (EdgeId id : g_.op(static_cast<OpId>(k)).inputs)
          ins[k].push_back(classify(g_.edge(id)));
    // Edges first (adapters read the sources with their original types), then the ops.
    for (size_t k = 0; k < n; ++k) {
      const OpNode op = g_.op(static_cast<OpId>(k));
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        const OpId source = g_.edge(op.inputs[i]).source;
        if (in_[k] && ins[k][i] == Input::Batched)
          rewrite_batched_input(op, op.inputs[i], op.outputs[0].shape.rank() + 1);
        else if (!in_[k] && in_[source])
          rewrite_per_point_read(op, op.inputs[i]);
      }
    }
    in_.resize(g_.num_ops(), false);
    for (size_t k = 0; k < n; ++k) {
      if (!in_[k]) continue;
      OpNode& op = g_.op(static_cast<OpId>(k));
      transform_attrs(op, in_rank[k]);
      for (ir::TensorType& t : op.outputs) t.shape.dims.insert(t.shape.dims.begin(), d_.bound);
      op.domain = new_domain(op);
    }
  }

  // The kind's vectorization rule (ir::VecRule) applied to the attributes.
  void transform_attrs(OpNode& op, size_t input_rank) const {
    ir::Attrs& a = op.attrs;
    if (is_point_index(op)) {
      int64_t c = *offset_from(a.exprs[0], d_, op.domain);
      op.kind = OpKind::Slice;
      a.exprs = {Expr(c), d_.bound + c};
      return;
    }
    if (is_draw(op)) {  // d's coordinate becomes the new leading axis of the output
      ir::DrawKey key = ir::draw_key(op);
      const int64_t at = -1 - position(op.domain, d_);
      for (int64_t& s : key.sources) {
        if (s == at) s = 0;
        else if (s >= 0) ++s;
        else if (s < at) ++s;  // a domain position after d's moves one up
      }
      ir::set_draw_key(a, key);
      a.exprs.insert(a.exprs.begin(), d_.bound);
      return;
    }
    switch (ir::vec_rule(op.kind)) {
      case VecRule::DimAttrs:
        if (op.kind == OpKind::Sum && a.ints.empty())
          for (size_t k = 0; k < input_rank; ++k) a.ints.push_back(static_cast<int64_t>(k));
        for (int64_t& v : a.ints) ++v;
        return;
      case VecRule::Permute:
        for (int64_t& v : a.ints) ++v;
        a.ints.insert(a.ints.begin(), 0);
        return;
      case VecRule::ShapeAttr:
        a.exprs.insert(a.exprs.begin(), d_.bound);
        return;
      default:
        return;
    }
  }

  // Look-aheads of the graph as select() sees it (it changes no op), computed where needed: the
  // analysis is a fixed point over the graph, and most programs have no large points.
  const std::vector<int64_t>& ahead() {
    if (!ahead_) ahead_ = recurrence_lookahead(g_, d_, outer_);
    return *ahead_;
  }

  Program& p_;
  Graph& g_;
  Dim d_;
  Dims outer_;            // dimensions declared before d_
  std::vector<bool> in_;  // vectorized along d_
  std::optional<std::vector<int64_t>> ahead_;
};

}  // namespace

bool vectorize(Program& p) {
  // Every dimension any op has, in declaration order: domains list their dims in that order, so
  // a new dim goes right after the dim that precedes it in the domain where it is first seen.
  Dims dims;
  for (const OpNode& op : p.graph.ops())
    for (size_t k = 0; k < op.domain.size(); ++k)
      if (position(dims, op.domain[k]) < 0)
        dims.insert(dims.begin() + (k == 0 ? 0 : position(dims, op.domain[k - 1]) + 1),
                    op.domain[k]);
  bool changed = false;
  // Innermost first.
  for (size_t k = dims.size(); k-- > 0;)
    changed |= Vectorizer(p, dims[k], Dims(dims.begin(), dims.begin() + k)).run();
  return changed;
}

}  // namespace tempo::passes
