// Random affine dependence expressions and their brute-force meaning on small domains, for the
// property tests of the isl bridge and of inversion. Header-only.
#pragma once

#include <isl/cpp.h>

#include <functional>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "symbolic/random_expr.h"

namespace tempo::sym::testing {

using Point = std::vector<int64_t>;

// Dims of `a` followed by those of `b` that `a` lacks (same variable name = same dimension).
inline Dims union_dims(const Dims& a, const Dims& b) {
  Dims all = a;
  for (const Dim& d : b)
    if (std::find(all.begin(), all.end(), d) == all.end()) all.push_back(d);
  return all;
}

// An affine expression over the variables of `vars` and the bounds of `bounds`: a small linear
// combination, sometimes wrapped in min/max with another one, floor-divided or reduced modulo a
// small constant.
inline Expr random_affine(std::mt19937& rng, const Dims& vars, const Dims& bounds, int depth = 1) {
  auto linear = [&] {
    Expr e = Expr(rand_int(rng, -3, 3));
    for (const Dim& d : vars) {
      int64_t k = rand_int(rng, 0, 5);
      if (k >= 3) e = e + d.var;                 // the common case: coefficient 1
      else if (k == 2) e = e + Expr(rand_int(rng, -2, 2)) * d.var;
    }
    for (const Dim& d : bounds)
      if (rand_int(rng, 0, 4) == 0) e = e + Expr(rand_int(rng, -1, 1)) * d.bound;
    return e;
  };
  if (depth <= 0) return linear();
  switch (rand_int(rng, 0, 9)) {
    case 0: return min(random_affine(rng, vars, bounds, depth - 1), random_affine(rng, vars, bounds, depth - 1));
    case 1: return max(random_affine(rng, vars, bounds, depth - 1), random_affine(rng, vars, bounds, depth - 1));
    case 2: return floordiv(linear(), Expr(rand_int(rng, 2, 3)));
    case 3: return linear() % Expr(rand_int(rng, 2, 3));
    default: return linear();
  }
}

// One entry reading source dimension `d` from a sink with dimensions `sink`: the shapes Tempo
// programs use (shifts, windows, prefixes, suffixes, constants, whole ranges) and random affine
// points and slices.
inline Expr random_entry(std::mt19937& rng, const Dims& sink, const Dims& bounds, const Dim& d) {
  bool shared = std::find(sink.begin(), sink.end(), d) != sink.end();
  Expr v = shared ? d.var : (sink.empty() ? Expr(0) : sink[rand_int(rng, 0, sink.size() - 1)].var);
  int64_t k = rand_int(rng, 1, 3);
  switch (rand_int(rng, 0, 13)) {
    case 0: return v + Expr(rand_int(rng, -3, 3));                       // shift
    case 1: return slice(max(Expr(0), v - Expr(k)), v + Expr(1));         // window behind
    case 2: return slice(v, min(v + Expr(k + 1), d.bound));               // window ahead
    case 3: return slice(Expr(0), v + Expr(1));                           // prefix
    case 4: return slice(v, d.bound);                                     // suffix
    case 5: return Expr(rand_int(rng, 0, 2));                             // constant index
    case 6: return d.bound - Expr(1);                                     // last
    case 7: return slice(Expr(0), d.bound);                               // everything
    case 8: return d.bound - Expr(1) - v;                                 // reversed
    case 9: return floordiv(v, Expr(k + 1));                              // coarser
    case 10: return slice(random_affine(rng, sink, bounds), random_affine(rng, sink, bounds));
    default: return random_affine(rng, sink, bounds);
  }
}

// A dependence expression with one entry per source dimension, as a sequence.
inline Expr random_dependence(std::mt19937& rng, const Dims& sink, const Dims& source) {
  Dims bounds = union_dims(sink, source);
  std::vector<Expr> entries;
  for (const Dim& d : source) entries.push_back(random_entry(rng, sink, bounds, d));
  return seq(entries);
}

// Calls f(env) for every assignment of the bounds of dims in [1, max_bound].
inline void for_each_bounds(const Dims& dims, int64_t max_bound, const std::function<void(const Env&)>& f) {
  std::vector<Expr> bounds;
  for (const Dim& d : dims)
    if (std::none_of(bounds.begin(), bounds.end(), [&](const Expr& b) { return b.same(d.bound); }))
      bounds.push_back(d.bound);
  Env env;
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == bounds.size()) return f(env);
    for (int64_t v = 1; v <= max_bound; ++v) {
      env[bounds[i].name()] = v;
      rec(i + 1);
    }
  };
  rec(0);
}

// Calls f(env', point) for every point of dims' domain; env' is env with the variables set.
inline void for_each_point(const Dims& dims, const Env& env, const std::function<void(const Env&, const Point&)>& f) {
  Env e = env;
  Point p(dims.size());
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == dims.size()) return f(e, p);
    for (int64_t v = 0; v < env.at(dims[i].bound.name()); ++v) {
      e[dims[i].var.name()] = p[i] = v;
      rec(i + 1);
    }
  };
  rec(0);
}

// The points of the source domain that the index sequence `idx` selects when evaluated in env.
inline std::set<Point> expand(const Expr& idx, const Env& env, const Dims& source) {
  std::vector<RefRange> r = ref_eval_seq(idx, env);
  std::set<Point> out;
  Point p(r.size());
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == r.size()) {
      out.insert(p);
      return;
    }
    int64_t hi = std::min(r[i].stop, env.at(source[i].bound.name()));
    for (int64_t v = std::max<int64_t>(r[i].start, 0); v < hi; ++v) {
      if (!r[i].point && (v - r[i].start) % r[i].step != 0) continue;
      if (r[i].point && v != r[i].start) continue;
      p[i] = v;
      rec(i + 1);
    }
  };
  rec(0);
  return out;
}

// The (in, out) point pairs of an isl map, with its parameters fixed to the values in env.
inline std::set<std::pair<Point, Point>> map_points(const isl::map& m, const Env& env) {
  isl_map* x = m.copy();
  int np = isl_map_dim(x, isl_dim_param);
  for (int k = np - 1; k >= 0; --k) {
    std::string name = isl_map_get_dim_name(x, isl_dim_param, k);
    x = isl_map_fix_si(x, isl_dim_param, k, env.at(name));
  }
  int n_in = isl_map_dim(x, isl_dim_in);
  isl::set w = isl::manage(isl_map_wrap(x));
  std::set<std::pair<Point, Point>> out;
  w.foreach_point([&](isl::point pt) {
    Point all;
    int n = isl_set_dim(w.get(), isl_dim_set);
    for (int i = 0; i < n; ++i) {
      isl_val* v = isl_point_get_coordinate_val(pt.get(), isl_dim_set, i);
      all.push_back(isl_val_get_num_si(v));
      isl_val_free(v);
    }
    out.emplace(Point(all.begin(), all.begin() + n_in), Point(all.begin() + n_in, all.end()));
  });
  return out;
}

}  // namespace tempo::sym::testing
