// Recurrent tensors (TEMPO §3): the user-facing programming model.
//
//   tempo::Context ctx;
//   auto [t, T] = ctx.dim("t", "T");
//   RT x = ctx.placeholder(ir::TensorType{ir::DType::Float32, {4}}, {t_dim});
//   x[0] = ctx.zeros({4});               // branch at t == 0
//   x[t + 1] = x[t] * 0.9 + obs;          // branch for t >= 1
//   RT g = r[slice(t, T)].sum(0);         // all future rewards: a dynamic (T - t) dimension
//
// Every operation records the user's source line (SourceLoc, util/error.h) so that errors name the
// RT and where it was created.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/sdg.h"
#include "symbolic/expr.h"

namespace tempo {

using ir::DType;
using ir::HostTensor;
using ir::Shape;
using ir::TensorType;
using Loc = SourceLoc;

class Context;
class RT;

// The spatial dimensions a reduction runs over: one (x.sum(0)), several (x.sum({0, 2})), or all
// (x.sum(), x.sum({})).
struct Axes {
  Axes() = default;
  Axes(int64_t dim) : dims{dim} {}                            // NOLINT
  Axes(std::initializer_list<int64_t> list) : dims(list) {}   // NOLINT
  Axes(std::vector<int64_t> list) : dims(std::move(list)) {}  // NOLINT
  std::vector<int64_t> dims;                                  // empty: all
};

// An operand of an arithmetic operator: an RT or a scalar. Converting to it records the user's
// line, which is how `a + b` knows where it was written.
struct Operand {
  Operand(const RT& rt, Loc loc = Loc::current());  // NOLINT
  Operand(double v, Loc loc = Loc::current());      // NOLINT
  const RT* rt = nullptr;
  double scalar = 0.0;
  Loc loc;
};

// A recurrent tensor: output `output` of SDG op `op`, read through an optional pending temporal
// index `phi` (one entry per dimension of the op's domain, in this RT's domain variables) and an
// optional condition. Cheap to copy; refers to its Context.
class RT {
 public:
  RT() = default;

  Context& ctx() const;
  bool defined() const { return ctx_ != nullptr; }
  DType dtype() const;
  const Shape& shape() const;  // spatial shape (slice indexing prepends dims)
  size_t rank() const { return shape().rank(); }
  const Dims& domain() const;  // temporal domain
  const std::string& name() const;
  // Sets the name used in errors and dumps. An indexed RT is first materialized as its own op, so
  // the name (and the line) belong to the indexing, not to the tensor it reads.
  RT& named(const std::string& name, Loc loc = Loc::current());

  // ---- temporal indexing ----
  // One entry per temporal dimension of this RT's domain: points (t - 1, 0), slices
  // (slice(t, T)); or a single boolean expression: the RT exists only where it holds.
  // `x[t - 1]`, `x[0]`, `x[{b, i, t + 1}]` (Index captures the user's line on conversion).
  struct Index {
    Index(const Expr& e, Loc loc = Loc::current());                        // NOLINT
    Index(int v, Loc loc = Loc::current());                                // NOLINT
    Index(int64_t v, Loc loc = Loc::current());                            // NOLINT
    Index(std::initializer_list<Expr> entries, Loc loc = Loc::current());  // NOLINT
    std::vector<Expr> entries;  // one per dimension, or a single condition / sequence
    Loc loc;
  };
  class Indexed;
  Indexed operator[](const Index& index) const;

  // ---- elementwise ----
  RT exp(Loc loc = Loc::current()) const;
  RT log(Loc loc = Loc::current()) const;
  RT sqrt(Loc loc = Loc::current()) const;
  RT sin(Loc loc = Loc::current()) const;
  RT cos(Loc loc = Loc::current()) const;
  RT tanh(Loc loc = Loc::current()) const;
  RT sigmoid(Loc loc = Loc::current()) const;
  RT relu(Loc loc = Loc::current()) const;
  RT abs(Loc loc = Loc::current()) const;
  RT sign(Loc loc = Loc::current()) const;
  RT floor(Loc loc = Loc::current()) const;
  RT ceil(Loc loc = Loc::current()) const;
  RT logical_not(Loc loc = Loc::current()) const;
  RT square(Loc loc = Loc::current()) const;
  RT pow(const Operand& e, Loc loc = Loc::current()) const;
  RT cast(DType dtype, Loc loc = Loc::current()) const;
  RT maximum(const Operand& o, Loc loc = Loc::current()) const;
  RT minimum(const Operand& o, Loc loc = Loc::current()) const;
  RT clamp(double lo, double hi, Loc loc = Loc::current()) const;

  // ---- reductions and scans (negative dims count from the end) ----
  RT sum(Axes dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  RT mean(Axes dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  RT var(Axes dims = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  RT max(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  RT argmax(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  std::pair<RT, RT> max_with_indices(int64_t dim, bool keepdim = false,
                                     Loc loc = Loc::current()) const;
  // The k largest entries along dim, in descending order, and their int64 indices (dim's size
  // becomes k). No gradient flows through it (e.g. for top-k sampling).
  std::pair<RT, RT> topk(int64_t k, int64_t dim = -1, Loc loc = Loc::current()) const;
  RT cumsum(int64_t dim, Loc loc = Loc::current()) const;
  RT softmax(int64_t dim, Loc loc = Loc::current()) const;
  RT log_softmax(int64_t dim, Loc loc = Loc::current()) const;
  RT logsumexp(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  // sum_k gamma^k x[k] along dim (a dynamic length is fine: r[slice(t, T)].discounted_sum(0.99)).
  RT discounted_sum(double gamma, int64_t dim = 0, Loc loc = Loc::current()) const;
  // The same within an episode: sum_k gamma^k x[k] over the k before the first done[j] >= 0.5
  // (j < k; done has x's shape). r[t:T].discounted_sum(0.99, d[t:T]) is the return at t.
  RT discounted_sum(double gamma, const RT& done, int64_t dim = 0, Loc loc = Loc::current()) const;
  // Discounted sums from every position in one pass along dim: with `reverse`, the sum to the
  // end, y[k] = sum_{j >= k} gamma^(j - k) x[j] (the return of every step); otherwise from the
  // start, y[k] = sum_{j <= k} gamma^(k - j) x[j].
  RT discounted_cumsum(double gamma, int64_t dim = 0, bool reverse = true,
                       Loc loc = Loc::current()) const;
  // The same within episodes: nothing flows between positions k and k + 1 where done[k] >= 0.5
  // (done has x's shape). r[0:T].discounted_cumsum(0.99, d[0:T])[t] ==
  // r[t:T].discounted_sum(0.99, d[t:T]).
  RT discounted_cumsum(double gamma, const RT& done, int64_t dim = 0, bool reverse = true,
                       Loc loc = Loc::current()) const;

  // ---- movement and views ----
  RT reshape(Shape shape, Loc loc = Loc::current()) const;
  RT permute(std::vector<int64_t> dims, Loc loc = Loc::current()) const;
  RT transpose(int64_t a, int64_t b, Loc loc = Loc::current()) const;
  RT expand(Shape shape, Loc loc = Loc::current()) const;
  RT squeeze(int64_t dim, Loc loc = Loc::current()) const;
  RT unsqueeze(int64_t dim, Loc loc = Loc::current()) const;
  RT slice(int64_t dim, const Expr& start, const Expr& stop, Loc loc = Loc::current()) const;
  RT pad(int64_t dim, const Expr& before, const Expr& after, double value = 0.0,
         Loc loc = Loc::current()) const;
  RT flip(int64_t dim, Loc loc = Loc::current()) const;
  std::vector<RT> split(int64_t dim, int64_t size, Loc loc = Loc::current()) const;
  RT flatten(Loc loc = Loc::current()) const;

  // ---- spatial indexing ----
  // Position `index` of dim (removes it). A symbolic index such as t adds t to the domain.
  RT index(int64_t dim, const Expr& index, Loc loc = Loc::current()) const;
  RT index_select(int64_t dim, const RT& index, Loc loc = Loc::current()) const;
  RT gather(int64_t dim, const RT& index, Loc loc = Loc::current()) const;
  RT scatter_add(int64_t dim, const RT& index, const RT& src, Loc loc = Loc::current()) const;
  RT index_add(int64_t dim, const RT& index, const RT& src, Loc loc = Loc::current()) const;

  // ---- linear algebra ----
  RT matmul(const RT& o, Loc loc = Loc::current()) const;
  RT conv2d(const RT& weight, int64_t stride = 1, int64_t padding = 0,
            Loc loc = Loc::current()) const;

  // The same values with no gradient flowing back through them.
  RT detach(Loc loc = Loc::current()) const;

  // Materializes this (possibly indexed) RT as its own op and keeps it after the run so that
  // Executable::get can read it.
  RT retain(Loc loc = Loc::current()) const;

  // ---- internals, for the api layer and the compiler driver ----
  RT(Context* ctx, ir::OpId op, int output, Dims domain, Expr phi = Expr(), Expr cond = Expr());
  ir::OpId op() const { return op_; }
  int output() const { return output_; }
  const Expr& phi() const { return phi_; }    // undefined: identity
  const Expr& cond() const { return cond_; }  // undefined: always
  // The index sequence with which a consumer reads the op (identity if none is pending).
  Expr read_phi() const;
  // Whether this RT reads its op through an index or condition of its own.
  bool has_pending_index() const;

 private:
  Context* ctx_ = nullptr;
  ir::OpId op_ = -1;
  int output_ = 0;
  Dims domain_;
  Expr phi_;
  Expr cond_;
  TensorType type_;  // the op's output type with a leading dim per slice entry of phi
};

// The result of temporal indexing: usable as an RT; on a placeholder, assigning to it defines a
// branch (`o[0] = reset;  o[t + 1] = step(o[t])`).
class RT::Indexed : public RT {
 public:
  Indexed(RT view, RT base, Expr index, Loc loc);
  Indexed& operator=(const RT& value);
  Indexed& operator=(const Indexed& value) { return *this = static_cast<const RT&>(value); }

 private:
  RT base_;
  Expr index_;
  Loc loc_;
};

// Arithmetic and comparison (broadcasting; domains union, TEMPO Fig. 6).
RT operator+(const Operand& a, const Operand& b);
RT operator-(const Operand& a, const Operand& b);
RT operator*(const Operand& a, const Operand& b);
RT operator/(const Operand& a, const Operand& b);
RT operator-(const Operand& a);
RT operator==(const Operand& a, const Operand& b);
RT operator!=(const Operand& a, const Operand& b);
RT operator<(const Operand& a, const Operand& b);
RT operator<=(const Operand& a, const Operand& b);
RT operator>(const Operand& a, const Operand& b);
RT operator>=(const Operand& a, const Operand& b);
RT operator&&(const Operand& a, const Operand& b);
RT operator||(const Operand& a, const Operand& b);
RT where(const RT& cond, const Operand& a, const Operand& b, Loc loc = Loc::current());
RT cat(const std::vector<RT>& parts, int64_t dim, Loc loc = Loc::current());
// An exact match for a literal dim, so that `cat(parts, 0)` is not taken by the message
// helper tempo::cat(...) of util/error.h.
RT cat(const std::vector<RT>& parts, int dim, Loc loc = Loc::current());
RT stack(const std::vector<RT>& parts, int64_t dim = 0, Loc loc = Loc::current());

}  // namespace tempo
