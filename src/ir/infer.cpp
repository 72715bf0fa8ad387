// Shape and dtype inference: a dispatch on the op kind's category (op_kind.h) to its rule
// (infer_<category>.cpp).
#include <algorithm>

#include "ir/infer_rules.h"

namespace tempo::ir {

namespace detail {

std::string shapes_str(const Types& in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) s += (i ? " and " : "") + in[i].str();
  return s;
}

Shape broadcast(const InferCtx& c, const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->rank());
  std::vector<Expr> out(rank, Expr(1));
  for (const Shape* s : shapes) {
    size_t off = rank - s->rank();
    for (size_t i = 0; i < s->rank(); ++i) {
      const Expr& d = (*s)[i];
      Expr& o = out[off + i];
      if (d.is_const(1)) continue;
      if (o.is_const(1)) {
        o = c.simp(d);
        continue;
      }
      if (!c.same_size(o, d))
        c.fail(cat("cannot broadcast shapes ", shapes_str(c.in), ": size ", o.str(), " vs ",
                   d.str(), " in dimension ", off + i));
    }
  }
  return Shape(std::move(out));
}

}  // namespace detail

namespace {

using detail::InferCtx;

std::vector<TensorType> infer(const InferCtx& c) {
  int nin = op_kind_inputs(c.kind);
  if (nin >= 0 && static_cast<int>(c.in.size()) != nin)
    c.fail(cat("takes ", nin, " inputs, got ", c.in.size()));
  switch (op_kind_category(c.kind)) {
    case OpCategory::Source:
      return detail::infer_source(c);
    case OpCategory::Flow:
      return detail::infer_flow(c);
    case OpCategory::Unary:
      return detail::infer_unary(c);
    case OpCategory::Binary:
      return detail::infer_binary(c);
    case OpCategory::Reduction:
      return detail::infer_reduction(c);
    case OpCategory::Movement:
      return detail::infer_movement(c);
    case OpCategory::Indexing:
      return detail::infer_indexing(c);
    case OpCategory::LinearAlgebra:
      return detail::infer_linalg(c);
    case OpCategory::Region:
      return detail::infer_region(c);
    case OpCategory::Collective:
      return detail::infer_collective(c);
  }
  c.fail("unknown op kind");
}

}  // namespace

std::vector<TensorType> infer_types(OpKind kind, const Attrs& attrs,
                                    const std::vector<TensorType>& inputs, const Dims& domain,
                                    const std::string& who) {
  return infer(InferCtx{kind, attrs, inputs, domain, who});
}

}  // namespace tempo::ir
