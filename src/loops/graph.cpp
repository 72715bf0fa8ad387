#include "loops/graph.h"

#include <isl/aff.h>
#include <isl/ctx.h>
#include <isl/ilp.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/val.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "symbolic/isl_bridge.h"
#include "util/error.h"

namespace tempo::loops {

struct GraphEncoder::Impl {
  sym::IslContext isl;
};

namespace {

// Feature positions (see graph.h).
enum : int {
  kLoop = 0, kStmt = 1, kAccess = 2,
  kLevel = 3, kTrip, kParallel, kUnroll, kTile, kSkew, kReversed, kLoopFocus, kInnermost,
  kDepth = 12, kReads, kInstances, kStmtFocus, kPosition,
  kWrite = 17, kDimLevel = 18, kContiguous = 21, kStrided, kOffset,
};
static_assert(kOffset + 1 == kFeatures);

// The statement's iterators named in `expr`, in order of first appearance.
std::vector<size_t> vars_in(const std::string& expr, const std::vector<std::string>& vars) {
  std::vector<std::pair<size_t, size_t>> found;  // (position, var)
  for (size_t v = 0; v < vars.size(); ++v) {
    for (size_t at = expr.find(vars[v]); at != std::string::npos;
         at = expr.find(vars[v], at + 1)) {
      auto ident = [&](size_t k) {
        return k < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[k])) || expr[k] == '_');
      };
      if ((at == 0 || !ident(at - 1)) && !ident(at + vars[v].size())) {
        found.emplace_back(at, v);
        break;
      }
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<size_t> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

std::string tuple(const Statement& s) {
  std::string out = s.name + "[";
  for (size_t k = 0; k < s.vars.size(); ++k) out += (k ? "," : "") + s.vars[k];
  return out + "]";
}

struct ParseState {
  std::vector<std::vector<long>>* coef;
  std::vector<long>* constant;
};

isl_stat read_piece(isl_set* set, isl_multi_aff* ma, void* user) {
  auto* st = static_cast<ParseState*>(user);
  isl_size n_out = isl_multi_aff_dim(ma, isl_dim_out), n_in = isl_multi_aff_dim(ma, isl_dim_in);
  for (int d = 0; d < n_out; ++d) {
    isl_aff* a = isl_multi_aff_get_aff(ma, d);
    std::vector<long> row;
    for (int k = 0; k < n_in; ++k) {
      isl_val* v = isl_aff_get_coefficient_val(a, isl_dim_in, k);
      row.push_back(isl_val_get_num_si(v));
      isl_val_free(v);
    }
    isl_val* c = isl_aff_get_constant_val(a);
    st->constant->push_back(isl_val_get_num_si(c));
    isl_val_free(c);
    st->coef->push_back(std::move(row));
    isl_aff_free(a);
  }
  isl_set_free(set);
  isl_multi_aff_free(ma);
  return isl_stat_ok;
}

}  // namespace

GraphEncoder::GraphEncoder(const Program& p) : impl_(std::make_unique<Impl>()), p_(p) {
  for (const Statement& s : p.statements) {
    std::vector<Access> list;
    for (const std::string* str : {&s.writes, &s.reads}) {
      isl_union_map* u = isl_union_map_read_from_str(impl_->isl.get(), str->c_str());
      if (!u) throw UserError(cat("statement ", s.name, ": access `", *str, "` is not affine"));
      // Each basic map is one access (a union map merges those of one array).
      std::vector<isl_basic_map*> maps;
      isl_union_map_foreach_map(
          u,
          [](isl_map* m, void* user) -> isl_stat {
            isl_map_foreach_basic_map(
                m,
                [](isl_basic_map* b, void* user) -> isl_stat {
                  static_cast<std::vector<isl_basic_map*>*>(user)->push_back(b);
                  return isl_stat_ok;
                },
                user);
            isl_map_free(m);
            return isl_stat_ok;
          },
          &maps);
      isl_union_map_free(u);
      for (isl_basic_map* m : maps) {
        isl_pw_multi_aff* pma = isl_pw_multi_aff_from_map(isl_map_from_basic_map(m));
        Access a;
        a.write = str == &s.writes;
        ParseState st{&a.coef, &a.constant};
        bool ok = pma && isl_pw_multi_aff_n_piece(pma) == 1 &&
                  isl_pw_multi_aff_foreach_piece(pma, read_piece, &st) >= 0;
        isl_pw_multi_aff_free(pma);
        // Not a function of the iterators (isl merged accesses): left out of the graph.
        if (ok) list.push_back(std::move(a));
      }
    }
    accesses_.push_back(std::move(list));
    isl_set* d = isl_set_read_from_str(impl_->isl.get(), s.domain.c_str());
    isl_val* c = d ? isl_set_count_val(d) : nullptr;
    double n = c && isl_val_is_int(c) ? std::max(1.0, isl_val_get_d(c)) : 1.0;
    isl_val_free(c);
    isl_set_free(d);
    instances_log2_.push_back(std::log2(n));
  }
}

GraphEncoder::~GraphEncoder() = default;

double GraphEncoder::trip_log2(size_t stmt, const std::string& expr) {
  auto key = std::make_pair(stmt, expr);
  auto it = trips_.find(key);
  if (it != trips_.end()) return it->second;
  const Statement& s = p_.statements[stmt];
  isl_ctx* ctx = impl_->isl.get();
  isl_map* m = isl_map_read_from_str(ctx, cat("{ ", tuple(s), " -> [", expr, "] }").c_str());
  isl_set* d = isl_set_read_from_str(ctx, s.domain.c_str());
  double out = 0;
  if (m && d) {
    isl_set* range = isl_map_range(isl_map_intersect_domain(m, d));
    isl_val* hi = isl_set_dim_max_val(isl_set_copy(range), 0);
    isl_val* lo = isl_set_dim_min_val(range, 0);
    if (hi && lo && isl_val_is_int(hi) && isl_val_is_int(lo))
      out = std::log2(std::max(1.0, isl_val_get_d(hi) - isl_val_get_d(lo) + 1));
    isl_val_free(hi);
    isl_val_free(lo);
  } else {
    isl_map_free(m);
    isl_set_free(d);
  }
  trips_.emplace(key, out);
  return out;
}

LoopGraph GraphEncoder::encode(const Schedule& s, int branch) {
  LoopGraph g;
  g.x.assign(kMaxNodes * kFeatures, 0.f);
  g.adjacency.assign(kMaxNodes * kMaxNodes, 0.f);
  g.mask.assign(kMaxNodes, 0.f);
  auto node = [&](int type) -> int {
    if (g.nodes >= kMaxNodes) return -1;  // graphs past the cap lose their last nodes
    int n = g.nodes++;
    g.x[n * kFeatures + type] = 1.f;
    g.mask[n] = 1.f;
    return n;
  };
  auto edge = [&](int a, int b) {
    if (a < 0 || b < 0) return;
    g.adjacency[a * kMaxNodes + b] = g.adjacency[b * kMaxNodes + a] = 1.f;
  };
  auto set = [&](int n, int f, double v) {
    if (n >= 0) g.x[n * kFeatures + f] = static_cast<float>(v);
  };
  std::map<std::string, int> loops;  // tree position and level -> node
  for (size_t t = 0; t < s.rows.size(); ++t) {
    const Statement& st = p_.statements[t];
    const std::vector<Row>& rows = s.rows[t];
    const int depth = s.loops(t);
    const bool focus = static_cast<int>(t) == branch;
    std::string key;
    int parent = -1;
    std::vector<int> level_of(st.vars.size(), -1);  // innermost loop naming each iterator
    for (int l = 0; l < depth; ++l) {
      const std::string& e = rows[2 * l + 1].expr;
      key += rows[2 * l].expr + "|";
      auto [it, fresh] = loops.emplace(cat(key, l), -1);
      if (fresh) {
        int n = it->second = node(kLoop);
        std::vector<size_t> vs = vars_in(e, st.vars);
        set(n, kLevel, l / 5.0);
        set(n, kTrip, trip_log2(t, e) / 12.0);
        set(n, kParallel, rows[2 * l + 1].parallel);
        set(n, kUnroll, rows[2 * l + 1].unroll / 16.0);
        set(n, kTile, e.rfind("floor", 0) == 0);
        set(n, kSkew, vs.size() > 1);
        set(n, kReversed, e.rfind("-(", 0) == 0);
        edge(n, parent);
      }
      int n = it->second;
      if (focus) set(n, kLoopFocus, 1);
      if (l == depth - 1) set(n, kInnermost, 1);
      for (size_t v : vars_in(e, st.vars)) level_of[v] = l;
      parent = n;
    }
    int sn = node(kStmt);
    edge(sn, parent);
    size_t reads = 0;
    for (const Access& a : accesses_[t]) reads += !a.write;
    set(sn, kDepth, depth / 8.0);
    set(sn, kReads, reads / 8.0);
    set(sn, kInstances, instances_log2_[t] / 24.0);
    set(sn, kStmtFocus, focus);
    set(sn, kPosition, t / 3.0);
    std::vector<size_t> innermost =
        depth > 0 ? vars_in(rows[2 * depth - 1].expr, st.vars) : std::vector<size_t>{};
    for (const Access& a : accesses_[t]) {
      int an = node(kAccess);
      edge(an, sn);
      set(an, kWrite, a.write);
      bool offset = false, contiguous = false, strided = false;
      for (size_t d = 0; d < a.coef.size(); ++d) {
        offset |= a.constant[d] != 0;
        int level = -1;
        for (size_t v = 0; v < a.coef[d].size() && v < level_of.size(); ++v)
          if (a.coef[d][v] != 0) level = std::max(level, level_of[v]);
        if (d < 3) set(an, kDimLevel + static_cast<int>(d), (level + 1) / 8.0);
        for (size_t v : innermost)
          if (v < a.coef[d].size() && a.coef[d][v] != 0)
            (d + 1 == a.coef.size() ? contiguous : strided) = true;
      }
      set(an, kContiguous, contiguous);
      set(an, kStrided, strided);
      set(an, kOffset, offset);
    }
  }
  for (int n = 0; n < kMaxNodes; ++n) g.adjacency[n * kMaxNodes + n] = 1.f;
  return g;
}

}  // namespace tempo::loops
