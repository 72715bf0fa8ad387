#include "runtime/executor.h"

#include <algorithm>
#include <chrono>

#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::runtime {

// One input edge of a launcher: where to read, through which phi, and (Merge) when.
struct InputRead {
  PointStore* store = nullptr;
  sym::CompiledSeq phi;
  bool sliced = false;      // some phi entry is a slice: the covered points are stacked
  bool take = false;        // the op is the point's last reader: taken from the store (donation)
  bool block_read = false;  // one entry is a slice and the store keeps blocks along it
  size_t block_dim = 0;     // block_read: that entry
  std::vector<sym::CompiledExpr> point_phi;  // !sliced: phi's entries, evaluated inline
  bool has_cond = false;
  sym::CompiledExpr cond;
  ir::DType dtype = ir::DType::Float32;
  std::vector<sym::CompiledExpr> element_shape;  // the source output's shape (slice reads)
  std::vector<sym::IndexRange> ranges;
  std::vector<int64_t> coords;
};

// Executes one Exec statement: an op at the point the loop counters give.
struct Executor::Launcher {
  ir::OpId op = -1;
  bool merge = false;
  std::vector<sym::CompiledExpr> point;  // one per domain dim, in loop iterators
  std::vector<int32_t> var_slots;        // slot of each domain variable
  std::vector<int64_t> point_values;
  bool has_cond = false;
  sym::CompiledExpr cond;
  std::vector<InputRead> inputs;
  Kernel* kernel = nullptr;
  std::vector<ValuePtr> in_values, out_values;
  std::vector<PointStore*> outputs;
  std::vector<sym::CompiledExpr> in_parts;  // region_read_parts, for the profile's traffic
};

// Frees (Dealloc), evicts or loads (swapping) the points of one op output.
struct Executor::MemoryOp {
  schedule::StmtKind kind = schedule::StmtKind::Dealloc;
  ir::OpId op = -1;
  PointStore* store = nullptr;
  bool sliced = false;                   // a batched deallocation (slice entries)
  std::vector<sym::CompiledExpr> exprs;  // !sliced: one per coordinate
  sym::CompiledSeq point;
  std::vector<sym::IndexRange> ranges;
  std::vector<int64_t> coords;
};

struct Executor::Node {
  schedule::StmtKind kind = schedule::StmtKind::Seq;
  uint32_t body_begin = 0, body_end = 0, else_begin = 0, else_end = 0;
  int32_t slot = -1;  // For: the iterator's slot
  sym::CompiledExpr init, cond, step;
  uint32_t index = 0;  // Exec: launcher; Dealloc, Evict, Load: memory op
};

namespace {

bool has_dim(const Dims& dims, const Dim& d) {
  return std::any_of(dims.begin(), dims.end(), [&](const Dim& x) { return x.var.same(d.var); });
}

void add_bounds_of(const Expr& e, std::vector<Expr>& out) {
  if (!e.defined()) return;
  for (const Expr& s : sym::free_symbols(e)) {
    if (!s.is_bound_symbol()) continue;
    if (std::none_of(out.begin(), out.end(), [&](const Expr& b) { return b.same(s); }))
      out.push_back(s);
  }
}

std::string point_str(const std::vector<int64_t>& p) {
  std::string s = "[";
  for (size_t i = 0; i < p.size(); ++i) s += (i ? ", " : "") + std::to_string(p[i]);
  return s + "]";
}

// Calls f(coords) for every point of the cartesian product of ranges (last entry fastest).
template <typename F>
void for_each_point(const std::vector<sym::IndexRange>& ranges, std::vector<int64_t>& coords,
                    size_t k, F&& f) {
  if (k == ranges.size()) {
    f(coords.data());
    return;
  }
  const sym::IndexRange& r = ranges[k];
  if (r.point) {
    coords[k] = r.start;
    for_each_point(ranges, coords, k + 1, f);
    return;
  }
  for (int64_t i = r.start; i < r.stop; i += r.step) {
    coords[k] = i;
    for_each_point(ranges, coords, k + 1, f);
  }
}

}  // namespace

namespace {

// For each input of a fused region: how many parts of it the region reads one of (its traffic is
// the input's bytes over this). A stacked weight read by the region as w[l] is one of L parts;
// everything else is read whole (1).
std::vector<Expr> region_read_parts(const ir::OpNode& op) {
  std::vector<Expr> parts(op.inputs.size(), Expr(1));
  if (op.kind != ir::OpKind::Fused) return parts;
  const ir::Graph& body = op.attrs.region->body;
  for (const ir::OpNode& param : body.ops()) {
    if (param.kind != ir::OpKind::Param || param.outputs[0].shape.rank() == 0) continue;
    const auto input = static_cast<size_t>(param.attrs.ints[0]);
    const std::vector<ir::EdgeId> reads = body.out_edges(param.id);
    if (input < parts.size() && !reads.empty() &&
        std::all_of(reads.begin(), reads.end(), [&](ir::EdgeId e) {
          const ir::OpNode& r = body.op(body.edge(e).sink);
          return r.kind == ir::OpKind::Index && r.attrs.ints == std::vector<int64_t>{0};
        }))
      parts[input] = param.outputs[0].shape[0];
  }
  return parts;
}

// Points of at least this size go into blocks where they are only read whole.
constexpr int64_t kWholeReadBlockBytes = 16 << 10;

// The dimension of the one slice entry of e's phi (with step 1), where its other entries are
// points; -1 otherwise.
int slice_dim(const ir::Graph& g, const ir::Edge& e) {
  const ir::OpNode& src = g.op(e.source);
  if (src.domain.empty() || e.phi.size() != src.domain.size()) return -1;
  int d = -1;
  for (size_t k = 0; k < e.phi.size(); ++k)
    if (e.phi.arg(k).is_slice()) {
      if (d >= 0 || !e.phi.arg(k).arg(2).is_const(1)) return -1;
      d = static_cast<int>(k);
    }
  return d;
}

// Whether edge e reads a prefix, suffix or the whole of one dimension of its source at one point
// of the others (x[i, 0:T], x[i, t:T], x[0:t+1, l]): a read a block store serves as a view.
bool reads_block(const ir::Graph& g, const ir::Edge& e) {
  const int d = slice_dim(g, e);
  if (d < 0) return false;
  const Expr x = e.phi.arg(d);
  return x.arg(0).is_const(0) || x.arg(1).same(g.op(e.source).domain[d].bound);
}

// The most points a read along one dimension that neither starts at 0 nor ends at its bound can
// span, where that is a constant below the bound (x[max(0, t - w):t + 1]: w + 1): a read a
// window store serves as a view; 0 otherwise.
int64_t window_rows(const ir::Graph& g, const ir::Edge& e) {
  const int d = slice_dim(g, e);
  if (d < 0 || reads_block(g, e)) return 0;
  const Expr x = e.phi.arg(d);
  Dims dims = g.op(e.sink).domain;
  dims.push_back(g.op(e.source).domain[d]);
  const Expr n = x.arg(1) - x.arg(0);
  // The least provable upper bound, searched by halving (the prover is monotone in it).
  int64_t hi = int64_t{1} << 16;
  if (!sym::prove_nonneg(Expr(hi) - n, dims)) return 0;
  int64_t lo = 0;  // lo fails (a read spans at least one point), hi holds
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    (sym::prove_nonneg(Expr(mid) - n, dims) ? hi : lo) = mid;
  }
  return hi;
}

// Whether that read moves with the reader's point (x[0:t+1], x[t:T]): stacked, each of T reads
// copies O(T) points; from a block, each is a view.
bool moves(const ir::Graph& g, const ir::Edge& e) {
  const Expr x = e.phi.arg(slice_dim(g, e));
  for (const Dim& d : g.op(e.sink).domain)
    if (sym::depends_on(x, d.var)) return true;
  return false;
}

// The dim of its points that a block puts its rows before (PointStore::use_blocks' row_axis), as
// slice read e would have it. Where only permutes read e, each moving the stacked steps inward
// and keeping the other dims in order: the dim they move the steps to, at most the last (a row is
// then written in runs of the last dim). The permuted views walk each outer index's steps in one
// run: a K/V cache of points (B, heads, head_dim), read as (B, heads, head_dim, n) and as
// (B, heads, n, head_dim), lies (B, heads, steps, head_dim). Otherwise 0: the steps lead.
int64_t preferred_row_axis(const ir::Graph& g, const ir::Edge& e) {
  const ir::OpNode& sink = g.op(e.sink);
  const auto input = std::find(sink.inputs.begin(), sink.inputs.end(), e.id) - sink.inputs.begin();
  std::vector<const ir::OpNode*> readers;
  if (sink.kind == ir::OpKind::Fused) {
    const ir::Graph& body = sink.attrs.region->body;
    for (const ir::OpNode& param : body.ops())
      if (param.kind == ir::OpKind::Param && param.attrs.ints[0] == input)
        for (ir::EdgeId r : body.out_edges(param.id)) readers.push_back(&body.op(body.edge(r).sink));
  } else {
    readers.push_back(&sink);
  }
  const int64_t point_rank = static_cast<int64_t>(g.input_type(e.id).shape.dims.size()) - 1;
  int64_t axis = point_rank - 1;
  for (const ir::OpNode* r : readers) {
    if (r->kind != ir::OpKind::Permute) return 0;
    const std::vector<int64_t>& order = r->attrs.ints;
    const auto to = std::find(order.begin(), order.end(), 0) - order.begin();
    std::vector<int64_t> others;
    for (int64_t d : order)
      if (d != 0) others.push_back(d);
    if (!std::is_sorted(others.begin(), others.end())) return 0;
    axis = std::min<int64_t>(axis, to);
  }
  return readers.empty() ? 0 : std::max<int64_t>(axis, 0);
}

// Whether an output's points all have one shape (rows of a block).
bool fixed_shape(const ir::OpNode& op, int output) {
  for (const Expr& d : op.outputs[output].shape.dims)
    for (const Dim& x : op.domain)
      if (sym::depends_on(d, x.var)) return false;
  return true;
}

// One input edge of an Exec statement compiled into a read (`take`: the op is its point's last
// reader, so it takes the point over; `block_dim`: the dimension a blocked store's slice reads
// slice).
InputRead compile_read(const ir::Graph& graph, const ir::Edge& e, PointStore* store, bool take,
                       int block_dim, const sym::SymbolLayout& layout) {
  const ir::OpNode& src = graph.op(e.source);
  InputRead in;
  in.take = take;
  in.store = store;
  in.phi = sym::CompiledSeq(e.phi, layout);
  TEMPO_ASSERT(in.phi.size() == src.domain.size(), "edge ", e.id, " into ",
               graph.op(e.sink).describe(), " has phi ", e.phi.str(), " for a source domain of ",
               src.domain.size());
  if (e.phi.is_seq())
    for (const Expr& x : e.phi.args()) in.sliced |= x.is_slice();
  else
    in.sliced = e.phi.is_slice();
  if (!in.sliced) {
    if (e.phi.is_seq())
      for (const Expr& x : e.phi.args()) in.point_phi.emplace_back(x, layout);
    else
      in.point_phi.emplace_back(e.phi, layout);
  }
  if (e.cond.defined()) {
    in.has_cond = true;
    in.cond = sym::CompiledExpr(e.cond, layout);
  }
  const ir::TensorType& t = src.outputs[e.source_output];
  in.dtype = t.dtype;
  if (in.sliced)
    for (const Expr& d : t.shape.dims) in.element_shape.emplace_back(d, layout);
  // A blocked store's slice reads are all prefixes, suffixes or windows of its last dimension
  // (any other read keeps it a point store).
  in.block_read = in.store->blocked() && in.sliced;
  if (in.block_read) in.block_dim = static_cast<size_t>(block_dim);
  in.ranges.resize(in.phi.size());
  in.coords.resize(in.phi.size());
  return in;
}

}  // namespace

Executor::Executor(const ir::Graph& graph, const schedule::Schedule& schedule, Backend& backend,
                   const Dims& dims, Blocks blocks)
    : graph_(graph), backend_(backend) {
  lay_out_symbols(dims, schedule);
  make_stores(schedule, blocks);
  prepare_report_ = backend.prepare(graph, layout_);
  kernels_.resize(graph.num_ops());
  if (schedule.root) {
    compile(schedule.root);
  } else {
    nodes_.push_back(Node{});  // an empty program
  }
}

void Executor::lay_out_symbols(const Dims& dims, const schedule::Schedule& schedule) {
  // Symbol layout: the given dims, then those of op domains, then the schedule's iterators.
  Dims all = dims;
  for (const ir::OpNode& op : graph_.ops())
    for (const Dim& d : op.domain)
      if (!has_dim(all, d)) all.push_back(d);
  size_t num_program_dims = all.size();
  for (const Dim& d : schedule.iterators)
    if (!has_dim(all, d)) all.push_back(d);
  layout_ = sym::SymbolLayout(all);
  env_.assign(layout_.num_slots(), 0);

  // Bounds the program needs: those of op domains and those its expressions mention.
  for (const ir::OpNode& op : graph_.ops()) {
    for (const Dim& d : op.domain) add_bounds_of(d.bound, required_bounds_);
    add_bounds_of(op.cond, required_bounds_);
    for (const Expr& e : op.attrs.exprs) add_bounds_of(e, required_bounds_);
    for (const ir::TensorType& t : op.outputs)
      for (const Expr& e : t.shape.dims) add_bounds_of(e, required_bounds_);
  }
  for (const ir::Edge& e : graph_.edges()) {
    add_bounds_of(e.phi, required_bounds_);
    add_bounds_of(e.cond, required_bounds_);
  }
  // Iterator bounds are placeholders that the schedule never reads.
  std::erase_if(required_bounds_, [&](const Expr& b) {
    int s = layout_.slot(b);
    return s >= 0 && static_cast<size_t>(s) >= layout_.dims().size() + num_program_dims;
  });
}

void Executor::make_stores(const schedule::Schedule& schedule, Blocks blocks) {
  // One point store per op output.
  store_index_.resize(graph_.num_ops());
  for (const ir::OpNode& op : graph_.ops()) {
    store_index_[op.id] = stores_.size();
    std::vector<int32_t> slots;
    for (const Dim& d : op.domain) slots.push_back(layout_.slot(d.bound));
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      std::string who = op.describe();
      if (op.outputs.size() > 1) who += cat(" output ", k);
      stores_.push_back(std::make_unique<PointStore>(who, op.domain.size(), &memory_));
      store_bound_slots_.push_back(slots);
    }
  }
  if (blocks != Blocks::None) use_block_stores(schedule, blocks);

  // Swapped outputs keep their evicted points in host memory (point stores only).
  for (const auto& [op, out] : schedule.swapped)
    stores_[store_index_[op] + out]->use_host(&host_memory_);
  for (ir::OpId op : schedule.on_host)
    for (size_t k = 0; k < graph_.op(op).outputs.size(); ++k)
      stores_[store_index_[op] + k]->keep_on_host(&host_memory_);
}

// Block stores for the outputs that some edge reads as a prefix or suffix moving with its point,
// where no edge reads a window of another kind (a point store frees those rows as they leave
// it). Outputs only read whole (a rollout read by its learner) use blocks where their points are
// large: each read is then a view instead of a stack that holds a second copy of the points
// (PPO's value batch and flattened minibatch source); small points stay in a point store, where
// one stack call costs less than a block write per point.
void Executor::use_block_stores(const schedule::Schedule& schedule, Blocks blocks) {
  // Per store: 0 no slice reads yet, 1 moving prefix/suffix reads (a block), 2 only whole reads
  // (a block for large points), -1 other reads (point store); windows[s] > 0: sliding windows of
  // at most that many points (a window store, where they are its only slice reads).
  std::vector<int> blocked(stores_.size(), 0);
  std::vector<int64_t> windows(stores_.size(), 0);
  block_dims_.assign(stores_.size(), -1);  // the one dimension every slice read slices
  std::vector<int64_t> row_axes(stores_.size(), INT64_MAX);
  for (const ir::Edge& e : graph_.edges()) {
    const size_t s = store_index_[e.source] + e.source_output;
    bool slices = false;
    for (const Expr& x : e.phi.args()) slices |= x.is_slice();
    if (!slices) continue;
    const int d = slice_dim(graph_, e);
    if (d < 0 || (block_dims_[s] >= 0 && block_dims_[s] != d)) {
      blocked[s] = -1;
      windows[s] = 0;
      continue;
    }
    block_dims_[s] = d;
    row_axes[s] = std::min(row_axes[s], preferred_row_axis(graph_, e));
    const bool fixed = fixed_shape(graph_.op(e.source), e.source_output);
    if (const int64_t w = window_rows(graph_, e); w > 0 && fixed && blocked[s] == 0)
      windows[s] = std::max(windows[s], w);
    else if (!reads_block(graph_, e) || !fixed || windows[s] > 0)
      blocked[s] = -1;
    else if (blocked[s] != -1)
      blocked[s] = moves(graph_, e) ? 1 : std::max(blocked[s], 2);
  }
  for (const auto& [op, out] : schedule.swapped) blocked[store_index_[op] + out] = -1;
  for (ir::OpId op : schedule.on_host)
    for (size_t k = 0; k < graph_.op(op).outputs.size(); ++k) blocked[store_index_[op] + k] = -1;
  for (size_t s = 0; s < stores_.size(); ++s) {
    const size_t dim = static_cast<size_t>(block_dims_[s]);
    const int64_t axis = row_axes[s] == INT64_MAX ? 0 : row_axes[s];
    if (blocked[s] == 1) stores_[s]->use_blocks(&backend_, 0, dim, 0, axis);
    if (blocked[s] == 2 && blocks == Blocks::All)
      stores_[s]->use_blocks(&backend_, 0, dim, kWholeReadBlockBytes, axis);
    if (blocked[s] == 0 && windows[s] > 0)
      stores_[s]->use_blocks(&backend_, windows[s], dim, 0, axis);
  }
}

uint32_t Executor::compile(const schedule::StmtPtr& s) {
  TEMPO_ASSERT(s != nullptr, "null schedule statement");
  Node n;
  n.kind = s->kind;
  switch (s->kind) {
    case schedule::StmtKind::Seq:
      compile_list(s->body, n.body_begin, n.body_end);
      break;
    case schedule::StmtKind::For:
      n.slot = layout_.slot(s->iterator);
      TEMPO_ASSERT(n.slot >= 0 && static_cast<size_t>(n.slot) < layout_.dims().size(),
                   "loop iterator ", s->iterator.str(), " is not a laid-out variable");
      n.init = sym::CompiledExpr(s->init, layout_);
      n.cond = sym::CompiledExpr(s->cond, layout_);
      n.step = sym::CompiledExpr(s->step, layout_);
      compile_list(s->body, n.body_begin, n.body_end);
      break;
    case schedule::StmtKind::If:
      n.cond = sym::CompiledExpr(s->cond, layout_);
      compile_list(s->body, n.body_begin, n.body_end);
      compile_list(s->else_body, n.else_begin, n.else_end);
      break;
    case schedule::StmtKind::Exec:
      n.index = compile_exec(*s);
      break;
    case schedule::StmtKind::Dealloc:
    case schedule::StmtKind::Evict:
    case schedule::StmtKind::Load:
      n.index = compile_memory_op(*s);
      break;
  }
  nodes_.push_back(std::move(n));
  return static_cast<uint32_t>(nodes_.size() - 1);
}

// A node's children are contiguous in children_, so they are compiled before it takes its range.
void Executor::compile_list(const std::vector<schedule::StmtPtr>& list, uint32_t& begin,
                            uint32_t& end) {
  std::vector<uint32_t> ids;
  for (const auto& c : list) ids.push_back(compile(c));
  begin = static_cast<uint32_t>(children_.size());
  children_.insert(children_.end(), ids.begin(), ids.end());
  end = static_cast<uint32_t>(children_.size());
}

uint32_t Executor::compile_exec(const schedule::Stmt& s) {
  TEMPO_ASSERT(s.op >= 0 && static_cast<size_t>(s.op) < graph_.num_ops());
  const ir::OpNode& op = graph_.op(s.op);
  TEMPO_ASSERT(s.point.size() == op.domain.size(), "Exec of ", op.describe(), " has ",
               s.point.size(), " point coordinates for a domain of ", op.domain.size());
  auto l = std::make_unique<Launcher>();
  l->op = op.id;
  l->merge = op.kind == ir::OpKind::Merge;
  for (size_t k = 0; k < op.domain.size(); ++k) {
    l->point.emplace_back(s.point[k], layout_);
    l->var_slots.push_back(layout_.slot(op.domain[k].var));
  }
  l->point_values.assign(op.domain.size(), 0);
  if (op.cond.defined()) {
    l->has_cond = true;
    l->cond = sym::CompiledExpr(op.cond, layout_);
  }
  for (ir::EdgeId eid : op.inputs) {
    const ir::Edge& e = graph_.edge(eid);
    const size_t store = store_index_[e.source] + e.source_output;
    const bool take =
        std::count(s.donated.begin(), s.donated.end(), static_cast<int>(l->inputs.size())) > 0;
    const int block_dim = block_dims_.empty() ? -1 : block_dims_[store];
    l->inputs.push_back(compile_read(graph_, e, stores_[store].get(), take, block_dim, layout_));
  }
  if (!l->merge) {
    if (!kernels_[op.id]) kernels_[op.id] = backend_.make_kernel(graph_, op.id, layout_);
    l->kernel = kernels_[op.id].get();
  } else {
    TEMPO_ASSERT(op.outputs.size() == 1, op.describe(), ": Merge with ", op.outputs.size(),
                 " outputs");
  }
  l->in_values.resize(op.inputs.size());
  for (const Expr& parts : region_read_parts(op)) l->in_parts.emplace_back(parts, layout_);
  l->out_values.resize(op.outputs.size());
  for (size_t k = 0; k < op.outputs.size(); ++k)
    l->outputs.push_back(stores_[store_index_[op.id] + k].get());
  launchers_.push_back(std::move(l));
  return static_cast<uint32_t>(launchers_.size() - 1);
}

uint32_t Executor::compile_memory_op(const schedule::Stmt& s) {
  TEMPO_ASSERT(s.op >= 0 && static_cast<size_t>(s.op) < graph_.num_ops());
  const ir::OpNode& op = graph_.op(s.op);
  TEMPO_ASSERT(s.output >= 0 && static_cast<size_t>(s.output) < op.outputs.size(),
               "memory statement for output ", s.output, " of ", op.describe());
  TEMPO_ASSERT(s.point.size() == op.domain.size(), "memory statement of ", op.describe(), " has ",
               s.point.size(), " point coordinates for a domain of ", op.domain.size());
  auto d = std::make_unique<MemoryOp>();
  d->kind = s.kind;
  d->op = op.id;
  d->store = stores_[store_index_[op.id] + s.output].get();
  d->point = sym::CompiledSeq(sym::seq(s.point), layout_);
  for (const Expr& x : s.point) d->sliced |= x.is_slice();
  if (!d->sliced)
    for (const Expr& x : s.point) d->exprs.emplace_back(x, layout_);
  d->ranges.resize(s.point.size());
  d->coords.resize(s.point.size());
  memory_ops_.push_back(std::move(d));
  return static_cast<uint32_t>(memory_ops_.size() - 1);
}

Executor::~Executor() = default;

void Executor::run(const std::vector<std::pair<Expr, int64_t>>& bounds) {
  std::fill(env_.begin(), env_.end(), 0);
  const size_t n = layout_.dims().size();
  std::vector<bool> given(env_.size(), false);
  for (const auto& [b, v] : bounds) {
    int s = layout_.slot(b);
    if (s < 0) continue;  // a bound this program does not use
    if (static_cast<size_t>(s) < n)
      throw UserError(cat("`", b.str(),
                          "` is a temporal variable, not a bound; pass bounds such "
                          "as {{T, 100}}"));
    if (v < 1) throw UserError(cat("bound ", b.str(), " must be at least 1, got ", v));
    env_[s] = v;
    given[s] = true;
  }
  for (const Expr& b : required_bounds_) {
    int s = layout_.slot(b);
    if (s < 0 || !given[s])
      throw UserError(
          cat("bound ", b.str(), " has no value; pass it to compile({{", b.str(), ", ...}})"));
  }
  std::vector<int64_t> bvals;
  for (size_t i = 0; i < stores_.size(); ++i) {
    bvals.clear();
    for (int32_t s : store_bound_slots_[i]) bvals.push_back(env_[s]);
    stores_[i]->reset(bvals.data());
  }
  memory_.reset_peak();
  host_memory_.reset_peak();
  memory_events_.clear();
  if (trace_) {
    trace_->clear();
    trace_clock_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  }
  snapshot_.clear();
  snapshot_bytes_ = -1;
  ops_executed_ = 0;
  has_run_ = true;
  const std::unique_ptr<Backend::RunScope> scope = backend_.run_scope();
  const auto t0 = std::chrono::steady_clock::now();
  exec(static_cast<uint32_t>(nodes_.size() - 1));  // the root is compiled last
  if (!op_timings_.empty())
    profiled_run_ns_ +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count();
}

void Executor::record_memory(bool on) {
  record_memory_ = on;
  update_observing();
}

void Executor::snapshot_peak(bool on) {
  snapshot_peak_ = on;
  update_observing();
}

void Executor::trace_buffers(BufferTrace* sink) {
  trace_ = sink;
  memory_.trace = sink;
  update_observing();
}

void Executor::update_observing() {
  observing_ = record_memory_ || snapshot_peak_ || trace_ != nullptr;
}

void Executor::observe(schedule::StmtKind kind, ir::OpId op) {
  if (trace_) {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    trace_->ends.push_back(trace_->events.size());
    trace_->ns.push_back(now - trace_clock_ns_);
    trace_->ops.push_back(op);
    trace_->device_bytes.push_back(memory_.live_bytes);
    trace_clock_ns_ = now;
  }
  if (record_memory_)
    memory_events_.push_back({memory_.live_bytes, host_memory_.live_bytes, op, kind});
  if (snapshot_peak_ && memory_.live_bytes > snapshot_bytes_) {
    snapshot_bytes_ = memory_.live_bytes;
    snapshot_.clear();
    for (const ir::OpNode& node : graph_.ops())
      for (size_t k = 0; k < node.outputs.size(); ++k)
        if (int64_t b = stores_[store_index_[node.id] + k]->bytes(); b > 0)
          snapshot_.push_back({node.id, static_cast<int>(k), b});
  }
}

void Executor::set_profiling(bool on) {
  op_timings_.assign(on ? graph_.num_ops() : 0, OpTiming{});
  profiled_run_ns_ = 0;
}

void Executor::exec(uint32_t i) {
  const Node& n = nodes_[i];
  switch (n.kind) {
    case schedule::StmtKind::Seq:
      for (uint32_t c = n.body_begin; c < n.body_end; ++c) exec(children_[c]);
      return;
    case schedule::StmtKind::For: {
      int64_t* it = &env_[n.slot];
      const int64_t step = n.step.eval(env_.data());
      for (*it = n.init.eval(env_.data()); n.cond.eval(env_.data()); *it += step)
        for (uint32_t c = n.body_begin; c < n.body_end; ++c) exec(children_[c]);
      return;
    }
    case schedule::StmtKind::If:
      if (n.cond.eval(env_.data())) {
        for (uint32_t c = n.body_begin; c < n.body_end; ++c) exec(children_[c]);
      } else {
        for (uint32_t c = n.else_begin; c < n.else_end; ++c) exec(children_[c]);
      }
      return;
    case schedule::StmtKind::Exec:
      launch(*launchers_[n.index]);
      if (observing_) observe(n.kind, launchers_[n.index]->op);
      return;
    case schedule::StmtKind::Dealloc:
    case schedule::StmtKind::Evict:
    case schedule::StmtKind::Load:
      free_or_move(*memory_ops_[n.index]);
      if (observing_) observe(n.kind, memory_ops_[n.index]->op);
      return;
  }
}

namespace {

// A read of `v` by the current statement, for a buffer trace.
void note_use(BufferTrace* trace, const ValuePtr& v) {
  if (trace && v) trace->events.push_back({v->storage(), 0, BufferTrace::Kind::Use});
}

// Reads an input at the current point: one stored value, or the stacked values a slice covers
// (each noted in `trace` where given).
ValuePtr gather(InputRead& in, size_t k, Backend& backend, const int64_t* env, BufferTrace* trace) {
  if (k == in.ranges.size()) {
    ValuePtr v = in.store->get(in.coords.data());
    note_use(trace, v);
    return v;
  }
  const sym::IndexRange& r = in.ranges[k];
  if (r.point) {
    in.coords[k] = r.start;
    return gather(in, k + 1, backend, env, trace);
  }
  std::vector<ValuePtr> parts;
  parts.reserve(static_cast<size_t>(r.length()));
  for (int64_t i = r.start; i < r.stop; i += r.step) {
    in.coords[k] = i;
    parts.push_back(gather(in, k + 1, backend, env, trace));
  }
  // Element shape: the lengths of the slices inside this one, then the stored value's shape.
  std::vector<int64_t> shape;
  for (size_t j = k + 1; j < in.ranges.size(); ++j)
    if (!in.ranges[j].point) shape.push_back(in.ranges[j].length());
  for (const sym::CompiledExpr& d : in.element_shape) shape.push_back(d.eval(env));
  return backend.stack(parts.data(), parts.size(), in.dtype, shape);
}

}  // namespace

void Executor::launch(Launcher& l) {
  if (op_timings_.empty())
    launch_impl<false>(l);
  else
    launch_impl<true>(l);
}

template <bool kProfile>
void Executor::launch_impl(Launcher& l) {
  using Clock = std::chrono::steady_clock;
  auto ns = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
  };
  int64_t* env = env_.data();
  for (size_t k = 0; k < l.point.size(); ++k) {
    int64_t v = l.point[k].eval(env);
    l.point_values[k] = v;
    env[l.var_slots[k]] = v;
  }
  if (l.has_cond && !l.cond.eval(env)) return;
  auto read = [&](InputRead& in) -> ValuePtr {
    if (!in.sliced) {
      for (size_t k = 0; k < in.point_phi.size(); ++k) in.coords[k] = in.point_phi[k].eval(env);
      ValuePtr v = in.store->get(in.coords.data());
      note_use(trace_, v);
      return v;
    }
    in.phi.eval(env, in.ranges.data());
    if (in.block_read) {
      for (size_t k = 0; k < in.ranges.size(); ++k) in.coords[k] = in.ranges[k].start;
      const sym::IndexRange& r = in.ranges[in.block_dim];
      if (ValuePtr v = in.store->rows(in.coords.data(), r.start, r.stop, r.step)) {
        note_use(trace_, v);  // a view: its storage is the block's
        return v;
      }
    }
    return gather(in, 0, backend_, env, trace_);
  };
  ++ops_executed_;
  Clock::time_point t0, t1, t2;
  if constexpr (kProfile) t0 = Clock::now();
  if (l.merge) {
    for (InputRead& in : l.inputs) {
      if (in.has_cond && !in.cond.eval(env)) continue;
      l.outputs[0]->put(l.point_values.data(), read(in));
      if constexpr (kProfile) {
        OpTiming& timing = op_timings_[l.op];
        ++timing.launches;
        timing.read_ns += ns(t0, Clock::now());
      }
      return;
    }
    throw UserError(cat(graph_.op(l.op).describe(), " has no branch defined at point ",
                        point_str(l.point_values)));
  }
  const size_t ni = l.inputs.size();
  for (size_t i = 0; i < ni; ++i) l.in_values[i] = read(l.inputs[i]);
  // Points this op reads last leave their stores now, so that the kernel may hold their only
  // reference and write into their buffers (donation; their deallocation then frees nothing).
  for (InputRead& in : l.inputs)
    if (in.take) in.store->erase_if_present(in.coords.data());
  int64_t in_bytes = 0;
  if constexpr (kProfile) {
    for (size_t i = 0; i < ni; ++i)
      in_bytes += l.in_values[i]->nbytes() / std::max<int64_t>(l.in_parts[i].eval(env), 1);
    t1 = Clock::now();
  }
  l.kernel->run(l.in_values.data(), ni, env, l.out_values.data());
  if constexpr (kProfile) {
    t2 = Clock::now();
    count_traffic(l, in_bytes);
  }
  for (size_t i = 0; i < ni; ++i) l.in_values[i].reset();
  for (size_t k = 0; k < l.outputs.size(); ++k) {
    if (!l.out_values[k])
      internal_error(cat("the kernel of ", graph_.op(l.op).describe(), " produced no output ", k));
    l.outputs[k]->put(l.point_values.data(), std::move(l.out_values[k]));
  }
  if constexpr (kProfile) {
    OpTiming& timing = op_timings_[l.op];
    ++timing.launches;
    timing.read_ns += ns(t0, t1);
    timing.kernel_ns += ns(t1, t2);
    timing.write_ns += ns(t2, Clock::now());
  }
}

void Executor::count_traffic(const Launcher& l, int64_t in_bytes) {
  // An output in the storage of an input the kernel still holds is a view of it (an input the
  // kernel wrote in place was moved out); an op whose outputs are all views moves nothing.
  int64_t out_bytes = 0;
  bool moved = false;
  for (const ValuePtr& out : l.out_values) {
    if (!out) continue;
    bool view = false;
    for (const ValuePtr& in : l.in_values) view = view || (in && in->storage() == out->storage());
    if (view) continue;
    out_bytes += out->nbytes();
    moved = true;
  }
  if (!moved) return;
  OpTiming& timing = op_timings_[l.op];
  timing.in_bytes += in_bytes;
  timing.out_bytes += out_bytes;
}

void Executor::free_or_move(MemoryOp& d) {
  if (!d.sliced) {
    for (size_t k = 0; k < d.exprs.size(); ++k) d.coords[k] = d.exprs[k].eval(env_.data());
    if (d.kind == schedule::StmtKind::Dealloc)
      d.store->erase_if_present(d.coords.data());
    else
      d.store->move(d.coords.data(), d.kind == schedule::StmtKind::Evict, backend_);
    return;
  }
  d.point.eval(env_.data(), d.ranges.data());
  PointStore* store = d.store;
  const bool free = d.kind == schedule::StmtKind::Dealloc;
  const bool to_host = d.kind == schedule::StmtKind::Evict;
  for_each_point(d.ranges, d.coords, 0, [&](const int64_t* p) {
    // Points outside the domain or never produced (the op's condition) have nothing to free.
    if (free)
      store->erase_if_present(p);
    else
      store->move(p, to_host, backend_);
  });
}

const PointStore* Executor::store(ir::OpId op, int output) const {
  if (op < 0 || static_cast<size_t>(op) >= store_index_.size()) return nullptr;
  if (output < 0 || static_cast<size_t>(output) >= graph_.op(op).outputs.size()) return nullptr;
  return stores_[store_index_[op] + output].get();
}

ValuePtr Executor::read(ir::OpId op, int output, const std::vector<int64_t>& point) const {
  const PointStore* s = store(op, output);
  if (!s) internal_error(cat("no store for op ", op, " output ", output));
  const ir::OpNode& node = graph_.op(op);
  if (point.size() != node.domain.size())
    throw UserError(cat(node.describe(), " has a domain of ", node.domain.size(), " dimensions (",
                        sym::dims_str(node.domain), "); got point ", point_str(point)));
  if (!has_run_) throw UserError(cat("cannot read ", node.describe(), " before the program ran"));
  for (size_t k = 0; k < point.size(); ++k) {
    int64_t b = env_[layout_.slot(node.domain[k].bound)];
    if (point[k] < 0 || point[k] >= b)
      throw UserError(cat("point ", point_str(point), " is outside the domain of ", node.describe(),
                          ": ", node.domain[k].var.str(), " must be in [0, ", b, ")"));
  }
  if (!s->contains(point.data()))
    throw UserError(cat(node.describe(), " has no value at point ", point_str(point),
                        " (it is not defined there or was not kept; retain() it)"));
  return s->get(point.data());
}

}  // namespace tempo::runtime
