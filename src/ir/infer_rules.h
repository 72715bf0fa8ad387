// Shape and dtype inference, internal to ir/: the checked view of one op (InferCtx), the shape
// helpers the rules share, and one rule per op category (infer_<category>.cpp), which
// infer_types (infer.cpp) dispatches to.
#pragma once

#include <string>
#include <vector>

#include "ir/sdg.h"
#include "symbolic/simplify.h"
#include "util/error.h"

namespace tempo::ir::detail {

// An op being inferred: its kind, attributes and input types, with the checks the rules share.
struct InferCtx {
  OpKind kind;
  const Attrs& attrs;
  const std::vector<TensorType>& in;
  const Dims& domain;
  const std::string& who;

  [[noreturn]] void fail(const std::string& msg) const {
    throw UserError(cat(who, ": ", op_kind_name(kind), ": ", msg));
  }
  Expr simp(const Expr& e) const { return sym::simplify(e, domain); }
  bool same_size(const Expr& a, const Expr& b) const { return a.same(b) || simp(a).same(simp(b)); }
  // A dim attribute checked against a rank (ints[i], already normalized by the api).
  int64_t dim(size_t i, size_t rank, bool allow_end = false) const {
    if (attrs.ints.size() <= i) fail(cat("missing dimension attribute ", i));
    int64_t d = attrs.ints[i];
    int64_t hi = static_cast<int64_t>(rank) + (allow_end ? 1 : 0);
    if (d < 0 || d >= hi) fail(cat("dimension ", d, " out of range for a tensor of rank ", rank));
    return d;
  }
  const Expr& expr(size_t i) const {
    if (attrs.exprs.size() <= i) fail(cat("missing expression attribute ", i));
    return attrs.exprs[i];
  }
  void need_int(const TensorType& t, const char* what) const {
    if (t.dtype != DType::Int64 && t.dtype != DType::Int32)
      fail(cat(what, " must be an integer tensor, not ", t.str()));
  }
  // A category's rule reached with a kind it lacks (the table and the rules disagree).
  [[noreturn]] void unknown_kind() const { fail("unknown op kind"); }
};

using Types = std::vector<TensorType>;

// "f32[2, 3] and f32[3]": the inputs, for messages.
std::string shapes_str(const Types& in);
// numpy broadcasting; sizes are compared structurally after simplification.
Shape broadcast(const InferCtx& c, const std::vector<const Shape*>& shapes);

Types infer_source(const InferCtx& c);      // infer_sources.cpp
Types infer_flow(const InferCtx& c);        // infer_sources.cpp
Types infer_region(const InferCtx& c);      // infer_sources.cpp
Types infer_collective(const InferCtx& c);  // infer_sources.cpp
Types infer_unary(const InferCtx& c);       // infer_elementwise.cpp
Types infer_binary(const InferCtx& c);      // infer_elementwise.cpp
Types infer_reduction(const InferCtx& c);   // infer_reduction.cpp
Types infer_movement(const InferCtx& c);    // infer_movement.cpp
Types infer_indexing(const InferCtx& c);    // infer_indexing.cpp
Types infer_linalg(const InferCtx& c);      // infer_indexing.cpp

}  // namespace tempo::ir::detail
