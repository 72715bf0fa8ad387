#include "symbolic/invert.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "symbolic/isl_bridge.h"
#include "util/error.h"

namespace tempo::sym {

namespace {

// The relation source[q] -> sink[k-th coordinate of p] of the readers of q.
isl::map project_to_sink_dim(const isl::map& readers, int k, int n) {
  isl_map* m = readers.copy();
  m = isl_map_project_out(m, isl_dim_out, k + 1, n - k - 1);
  m = isl_map_project_out(m, isl_dim_out, 0, k);
  if (!m) throw InternalError("isl: projecting the inverse relation failed");
  return isl::manage(m);
}

Inversion invert_impl(const Expr& phi, const Dims& sink, const Dims& source) {
  IslContext ictx;
  isl::ctx ctx = ictx.ctx();
  // readers: source[q] -> sink[p] for every sink point p that reads q.
  isl::map readers = edge_to_isl(ctx, "sink", sink, "source", source, phi).reverse();
  if (readers.is_empty())
    throw UserError("it reads no point of the source domain, so there is nothing to invert");
  isl::set image = readers.domain();

  std::vector<Expr> entries;
  int n = static_cast<int>(sink.size());
  for (int k = 0; k < n; ++k) {
    isl::map rk = project_to_sink_dim(readers, k, n);
    isl::pw_aff lo = rk.lexmin_pw_multi_aff().at(0);
    isl::pw_aff hi = rk.lexmax_pw_multi_aff().at(0);
    Expr lo_e = pw_aff_to_expr(lo, source);
    if (image.is_subset(lo.eq_set(hi))) {
      entries.push_back(lo_e);
    } else {
      Expr hi_e = pw_aff_to_expr(hi.add_constant(isl::val(ctx, 1)), source);
      entries.push_back(slice(lo_e, hi_e));
    }
  }
  Expr inverse = (n == 1 && !phi.is_seq()) ? entries[0] : seq(entries);

  // Exactness: the box the inverse describes must hold exactly the readers of each read point.
  isl::map box = edge_to_isl(ctx, "source", source, "sink", sink, inverse);
  if (!box.intersect_domain(image).is_equal(readers))
    throw UserError(cat("the sink points that read one source point do not form a box of slices (a strided "
                        "or diagonal access?); the closest box, `",
                        inverse.str(), "`, would be inexact"));
  Expr when = box.is_equal(readers) ? Expr::boolean(true) : set_to_condition(image, source);
  return {inverse, when};
}

}  // namespace

Inversion invert_when(const Expr& phi, const Dims& sink, const Dims& source) {
  if (!phi.defined()) throw UserError("cannot invert an undefined dependence expression");
  // Differentiation inverts the same few expressions over the same domains again and again
  // (t over [i, t], a window over it, ...), each an isl context and a few lexmins: remembered by
  // their printed forms, which name every symbol.
  static std::mutex mutex;
  static std::unordered_map<std::string, Inversion> known;
  const std::string key = cat(phi.str(), "|", dims_str(sink), "|", dims_str(source));
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  try {
    Inversion inv = invert_impl(phi, sink, source);
    std::lock_guard lock(mutex);
    if (known.size() >= 4096) known.clear();  // a bound for long-lived processes
    known.emplace(key, inv);
    return inv;
  } catch (const UserError& e) {
    throw UserError(cat("cannot invert `", phi.str(), "` (sink [", dims_str(sink), "], source [", dims_str(source),
                        "]): ", e.what()));
  } catch (const isl::exception& e) {
    throw InternalError(cat("isl failed while inverting `", phi.str(), "`: ", e.what()));
  }
}

Expr invert(const Expr& phi, const Dims& sink, const Dims& source) { return invert_when(phi, sink, source).inverse; }

}  // namespace tempo::sym
