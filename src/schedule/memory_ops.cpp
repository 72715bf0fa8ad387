// Scheduler step 4 (TEMPO §5.2): deallocation, eviction and load statements, bounded lifetimes.
#include "schedule/scheduler.h"

namespace tempo::schedule::detail {

namespace {

// X[x0, ...] -> Y[y0, ...] to X[x0, ...] -> [y0..yk]: the first `depth` coordinates of the range.
isl::map prefix(isl::map m, size_t depth) {
  isl_size n = isl_map_dim(m.get(), isl_dim_out);
  isl_map* r = isl_map_project_out(m.release(), isl_dim_out, static_cast<unsigned>(depth),
                                   static_cast<unsigned>(n) - static_cast<unsigned>(depth));
  return isl::manage(isl_map_reset_tuple_id(r, isl_dim_out));
}

}  // namespace

// Outputs read only at the same point inside their own group are freed as the group's last
// steps. Others get a Dealloc statement, after the producer and after every reader of the point
// through the reversed dependence; outputs of a group whose readers are the same share one.
void Scheduler::build_deallocations() {
  std::set<std::pair<OpId, int>> retained(opt_.retained.begin(), opt_.retained.end());
  std::map<std::pair<OpId, int>, const Swap*> swapped;
  for (const Swap& sw : opt_.swaps) swapped[{sw.op, sw.output}] = &sw;
  struct Bundle {
    std::vector<std::pair<OpId, int>> outputs;
    isl::union_map readers;  // group of the reader -> "R" point of the producer's group
    std::vector<isl::map> pieces;
    isl::set carried;  // "R" points read at a later point of the outermost dimension
  };
  for (int k = 0; k < static_cast<int>(groups_.size()); ++k) {
    Group& grp = groups_[k];
    std::vector<Bundle> bundles;
    for (OpId id : grp.members) {
      const OpNode& op = g_.op(id);
      if (op.kind == OpKind::Udf && op.outputs.empty()) continue;
      for (int out = 0; out < static_cast<int>(op.outputs.size()); ++out) {
        if (retained.count({id, out})) continue;
        std::vector<isl::map> pieces;
        bool local = opt_.fuse;
        isl::set carried = with_name(isl::set::empty(grp.domain.space()), "R");
        for (ir::EdgeId eid : g_.out_edges(id)) {
          const Edge& e = g_.edge(eid);
          if (e.source_output != out) continue;
          local = local && group_of_[e.sink] == k && is_identity(e);
          pieces.push_back(with_range_name(to_groups(deps_[eid], e.sink, id), "R"));
          const Dims& reader = g_.op(e.sink).domain;
          if (!op.domain.empty() && !reader.empty() && reader[0].var.same(op.domain[0].var))
            carried = carried.unite(
                isl::manage(isl_map_order_gt(pieces.back().copy(), isl_dim_in, 0, isl_dim_out, 0))
                    .range());
        }
        const bool swap = swapped.count({id, out}) > 0;
        if (local && !swap) {
          grp.local_frees.emplace_back(id, out);
          continue;
        }
        isl::union_map readers = isl::manage(isl_union_map_empty_ctx(ctx_.get()));
        for (const auto& p : pieces) readers = readers.unite(to_union(p));
        Bundle* same = nullptr;
        if (opt_.fuse && !swap)
          for (Bundle& b : bundles)
            if (b.readers.is_equal(readers)) same = &b;
        if (same) {
          same->outputs.emplace_back(id, out);
        } else {
          bundles.push_back(Bundle{{{id, out}}, readers, pieces, carried});
        }
      }
    }
    for (size_t b = 0; b < bundles.size(); ++b) {
      const Bundle& bundle = bundles[b];
      const auto& [first_op, first_out] = bundle.outputs[0];
      const std::string base = opt_.fuse ? cat("E", k, "_", b) : dealloc_name(first_op, first_out);
      // The points read again in a later step of the outermost dimension (a rollout's last
      // observation, read by the next iteration) are freed by a statement of their own: one
      // affine schedule for all points would delay every point's free by that distance.
      std::vector<std::pair<std::string, isl::set>> parts;
      isl::set all = with_name(grp.domain, "R");
      if (bundle.carried.is_empty() || bundle.carried.is_equal(all)) {
        parts.emplace_back(base, all);
      } else {
        parts.emplace_back(base, all.subtract(bundle.carried));
        parts.emplace_back(base + "c", bundle.carried);
      }
      std::vector<isl::map> lasts;
      const bool once_made = g_.op(grp.members[0]).domain.empty();
      if (bound_depth_ > 0 && !once_made) {
        const size_t shared = shared_depth(grp, bundle.outputs);
        const size_t full =
            std::min(g_.op(grp.members[0]).domain.size(), bound_depth(bundle.outputs));
        if (shared > 0) lasts.push_back(last_readers(grp, bundle.pieces, shared));
        if (full > shared && shared > 0) lasts.push_back(last_readers(grp, bundle.pieces, full));
      }
      for (const auto& [name, points] : parts) {
        dealloc_stmts_[name] = bundle.outputs;
        isl::set dom = with_name(points, name);
        add_domain(dom);
        ++num_statements_;
        // After the producer...
        add_dealloc_dep(with_range_name(grp.domain.identity(), name).intersect_range(dom));
        // ...and after every reader of that point.
        for (const isl::map& m : bundle.pieces)
          add_dealloc_dep(with_range_name(m, name).intersect_range(dom));
        for (const isl::map& last : lasts) bound_lifetime(grp, name, last.intersect_domain(points));
        if (bound_depth_ > 0 && once_made) bound_once_made(dom, bundle.pieces);
      }
      if (auto sw = swapped.find(bundle.outputs[0]); sw != swapped.end())
        build_swap(grp, *sw->second);
    }
  }
}

// Swapping (TEMPO §5.2, Fig. 15b). Each late reader's group statement loads the points it reads
// just before its ops run (so the device holds one reader's points at a time, e.g. one tile of
// a rollout). Where every other reader runs at the same point inside the producer's group (an
// acting step), the producer's group statement evicts each point as its last step; otherwise an
// Evict statement of its own is ordered after the producer and those readers. The
// deallocations already follow every reader, loads included.
void Scheduler::build_swap(Group& grp, const Swap& sw) {
  bool in_group = opt_.fuse;
  std::vector<isl::map> early;
  for (ir::EdgeId eid : g_.out_edges(sw.op)) {
    const Edge& e = g_.edge(eid);
    if (e.source_output != sw.output) continue;
    if (std::find(sw.late.begin(), sw.late.end(), eid) != sw.late.end()) {
      if (std::find(sw.host_reads.begin(), sw.host_reads.end(), eid) == sw.host_reads.end())
        groups_[group_of_[e.sink]].loads.push_back({sw.op, sw.output, e.phi, e.sink});
      continue;
    }
    in_group = in_group && &groups_[group_of_[e.sink]] == &grp && is_identity(e);
    early.push_back(to_groups(deps_[eid], e.sink, sw.op));  // reader point -> produced point
  }
  if (in_group) {
    grp.evicts.emplace_back(sw.op, sw.output);
    return;
  }
  const std::string evict = cat("V", sw.op, "_", sw.output);
  swap_stmts_[evict] = {sw.op, sw.output};
  add_domain(with_name(grp.domain, evict));
  ++num_statements_;
  add_dealloc_dep(with_range_name(grp.domain.identity(), evict));
  for (const isl::map& m : early) add_dealloc_dep(with_range_name(m, evict));
  // A late reader's load comes after the eviction of what it reads.
  for (ir::EdgeId eid : sw.late) {
    const Edge& e = g_.edge(eid);
    isl::map m = with_range_name(to_groups(deps_[eid], e.sink, sw.op), evict).reverse();
    isl::union_map u = to_union(m);
    unite_into(validity_, u);
  }
}

// Without proximity constraints nothing keeps isl from freeing in a separate loop after the
// whole run (memory growing with the outer dimension). So where every reader of the outputs
// runs in the same leading dimensions d0..dk as their producer (k as deep as they all share),
// the point p is freed before the producer runs at p with dk = (the last reader's dk) + 1: a
// rollout step before the same step of the next iteration, PPO's parameters of update u before
// update u + 2, a window's K/V step right after the last query that reads it. Where that makes
// the program unschedulable, it is scheduled again without these constraints.
//
// shared_depth: the leading dimensions every reader shares with the producer; last_readers:
// R[p] -> [d0..dk] of the last reader of p at a depth.
size_t Scheduler::shared_depth(const Group& grp,
                               const std::vector<std::pair<OpId, int>>& outputs) const {
  const Dims& dims = g_.op(grp.members[0]).domain;
  size_t depth = dims.size();
  for (const auto& [id, out] : outputs)
    for (ir::EdgeId eid : g_.out_edges(id)) {
      const Edge& e = g_.edge(eid);
      if (e.source_output != out) continue;
      const Dims& reader = g_.op(e.sink).domain;
      size_t shared = 0;
      while (shared < std::min(depth, reader.size()) && reader[shared].var.same(dims[shared].var))
        ++shared;
      depth = shared;
    }
  return std::min(depth, bound_depth(outputs));
}

size_t Scheduler::bound_depth(const std::vector<std::pair<OpId, int>>& outputs) const {
  if (!windows_outermost_) return bound_depth_;
  for (const auto& [id, out] : outputs)
    for (ir::EdgeId eid : g_.out_edges(id)) {
      const Edge& e = g_.edge(eid);
      if (e.source_output == out && sym::has_slice(e.phi)) return std::min<size_t>(bound_depth_, 1);
    }
  return bound_depth_;
}

isl::map Scheduler::last_readers(const Group& grp, const std::vector<isl::map>& pieces,
                                 size_t depth) {
  isl::map self = with_range_name(grp.domain.identity(), "R");
  self = isl::manage(isl_map_set_tuple_name(self.release(), isl_dim_in, "R"));
  isl::map last = prefix(self, depth);
  const Dims& dims = g_.op(grp.members[0]).domain;
  for (const isl::map& m : pieces) {  // reader X[x] -> R[p]
    auto it = exec_stmts_.find(isl_map_get_tuple_name(m.get(), isl_dim_in));
    bool shares = it != exec_stmts_.end();
    if (shares) {
      const Dims& reader = g_.op(groups_[it->second].members[0]).domain;
      for (size_t k = 0; k < depth && shares; ++k)
        shares = k < reader.size() && reader[k].var.same(dims[k].var);
    }
    // A reader that does not share them is timed by the points it reads: right after the one
    // point it reads (the parameters of (i, 0)), or after the last of several.
    if (shares)
      last = last.unite(prefix(m.reverse(), depth));
    else if (!m.is_single_valued())
      last = last.unite(m.reverse().apply_range(prefix(m, depth).lexmax()));
  }
  if (opt_.proximity || opt_.memory_proximity) {
    const int producer = group_of_[grp.members[0]];
    auto& memo = latest_memo_[{producer, depth}];  // shared by the group's bundles
    std::vector<char> visiting(groups_.size(), 0);
    for (const isl::map& m : pieces) {  // reader X[x] -> R[p]
      auto it = exec_stmts_.find(isl_map_get_tuple_name(m.get(), isl_dim_in));
      if (it == exec_stmts_.end() || it->second == producer) continue;
      if (auto later = latest_dependence(it->second, producer, depth, memo, visiting))
        last = last.unite(m.reverse().apply_range(*later));
    }
  }
  return last.lexmax();
}

std::optional<isl::map> Scheduler::latest_dependence(int x, int producer, size_t depth,
                                                     std::map<int, std::optional<isl::map>>& memo,
                                                     std::vector<char>& visiting) {
  if (auto it = memo.find(x); it != memo.end()) return it->second;
  if (group_reads_.empty()) {
    group_reads_.resize(groups_.size());
    for (const Edge& e : g_.edges()) {
      const int sink = group_of_[e.sink], source = group_of_[e.source];
      if (sink == source) continue;
      isl::map m = to_groups(deps_[e.id], e.sink, e.source);
      auto [it, fresh] = group_reads_[sink].emplace(source, m);
      if (!fresh) it->second = it->second.unite(m);
    }
  }
  visiting[x] = 1;
  std::optional<isl::map> out;
  for (const auto& [y, reads] : group_reads_[x]) {
    std::optional<isl::map> reach;
    if (y == producer) {
      reach = prefix(groups_[y].domain.identity(), depth);
    } else if (!visiting[y]) {
      reach = latest_dependence(y, producer, depth, memo, visiting);
    }
    if (!reach) continue;
    isl::map via = reads.apply_range(*reach);
    out = out ? out->unite(via) : via;
  }
  visiting[x] = 0;
  if (out) out = out->lexmax();
  memo.emplace(x, out);
  return out;
}

void Scheduler::bound_lifetime(const Group& grp, const std::string& dealloc, const isl::map& last) {
  const size_t depth = static_cast<size_t>(isl_map_dim(last.get(), isl_dim_out));
  std::string vars, bumped;
  for (size_t k = 0; k < depth; ++k) {
    vars += cat(k ? ", " : "", "d", k);
    bumped += cat(k ? ", " : "", "d", k, k + 1 == depth ? " + 1" : "");
  }
  isl::map next(ctx_, cat("{ [", vars, "] -> [", bumped, "] }"));
  isl::map self = with_range_name(grp.domain.identity(), "R");
  self = isl::manage(isl_map_set_tuple_name(self.release(), isl_dim_in, "R"));
  isl_size n = isl_map_dim(self.get(), isl_dim_out);
  isl::map rest =
      isl::manage(isl_map_project_out(self.copy(), isl_dim_out, 0, static_cast<unsigned>(depth)));
  isl::map before =
      isl::manage(isl_map_flat_range_product(last.apply_range(next).release(), rest.release()));
  if (isl_map_dim(before.get(), isl_dim_out) != n) return;
  before = isl::manage(isl_map_set_tuple_name(before.release(), isl_dim_in, dealloc.c_str()));
  before = isl::manage(isl_map_set_tuple_name(before.release(), isl_dim_out, grp.name.c_str()));
  before = before.intersect_range(grp.domain);
  isl::union_map u = to_union(before);
  unite_into(validity_, u);
}

void Scheduler::bound_once_made(const isl::set& dealloc, const std::vector<isl::map>& pieces) {
  std::optional<int64_t> last;  // the last iteration of the outermost loop that reads it
  Expr loop;
  for (const isl::map& m : pieces) {  // reader X[x] -> R[]
    auto it = exec_stmts_.find(isl_map_get_tuple_name(m.get(), isl_dim_in));
    if (it == exec_stmts_.end()) return;
    const Dims& dims = g_.op(groups_[it->second].members[0]).domain;
    if (dims.empty() || (loop.defined() && !dims[0].var.same(loop))) return;
    loop = dims[0].var;
    isl::set read = m.domain();
    read = isl::manage(isl_set_project_out(read.release(), isl_dim_set, 1,
                                           static_cast<unsigned>(dims.size() - 1)));
    isl_val* v = isl_set_plain_get_val_if_fixed(read.lexmax().get(), isl_dim_set, 0);
    const bool fixed = v && isl_val_is_int(v);
    const int64_t at = fixed ? isl_val_get_num_si(v) : 0;
    isl_val_free(v);
    if (!fixed) return;
    last = std::max(last.value_or(at), at);
  }
  if (!last) return;
  for (const isl::map& m : pieces) {  // the deallocation before the readers' later iterations
    const Group& reader = groups_[exec_stmts_.at(isl_map_get_tuple_name(m.get(), isl_dim_in))];
    isl_map* before = isl_map_from_domain_and_range(dealloc.copy(), reader.domain.copy());
    before = isl_map_lower_bound_si(before, isl_dim_out, 0, static_cast<int>(*last + 1));
    isl::union_map u = to_union(isl::manage(before));
    unite_into(validity_, u);
  }
}

void Scheduler::add_dealloc_dep(const isl::map& before_after) {
  isl::union_map u = to_union(before_after);
  unite_into(validity_, u);
  if (opt_.proximity || opt_.memory_proximity)
    unite_into(proximity_, u);
}

}  // namespace tempo::schedule::detail
