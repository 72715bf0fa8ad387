// The Context owns a program: its temporal dimensions and its SDG (no global state).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/rt.h"
#include "ir/sdg.h"

namespace tempo {

class Context;

// While alive, ops built in the context read `to` wherever they would read `from` at the current
// point (no pending index of its own). This runs a forward pass with its parameters read at
// another point, e.g. an acting policy with the parameters of the start of the iteration
// (nn::Module::forward_at). Guards nest; the innermost wins.
class ReadSubstitution {
 public:
  ReadSubstitution(Context& ctx, std::vector<std::pair<RT, RT>> pairs);
  ~ReadSubstitution();
  ReadSubstitution(const ReadSubstitution&) = delete;
  ReadSubstitution& operator=(const ReadSubstitution&) = delete;

 private:
  Context* ctx_;
  size_t count_;
};

class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Creates a temporal dimension (variable, bound), e.g. auto [t, T] = ctx.dim("t", "T").
  Dim dim(const std::string& var, const std::string& bound, Loc loc = Loc::current());
  const Dims& dims() const { return dims_; }
  // Orders a set of dimensions as the context declared them (the canonical domain order).
  Dims ordered(const Dims& dims) const;
  Dims domain_union(const Dims& a, const Dims& b) const;

  // A data-parallel program (api/distributed.h): parameters made from now on (nn::Parameter)
  // start from rank 0's initial value (a Broadcast) and optim::minimize averages gradients
  // across ranks (an AllReduce) before the optimizer. The program is the same for every world
  // size, so one process and several compute the same thing.
  void set_data_parallel(bool on) { data_parallel_ = on; }
  bool data_parallel() const { return data_parallel_; }

  ir::Graph& graph() { return graph_; }
  const ir::Graph& graph() const { return graph_; }

  // ---- sources ----
  RT constant(double value, Shape shape = {}, DType dtype = DType::Float32, Dims domain = {},
              Loc loc = Loc::current());
  RT zeros(Shape shape, DType dtype = DType::Float32, Loc loc = Loc::current());
  RT ones(Shape shape, DType dtype = DType::Float32, Loc loc = Loc::current());
  // Random draws, uniform in [0, 1) or standard normal: each a function of the seed
  // (CompileOptions::seed), the op and the point of `domain`, the same whatever the schedule, the
  // device or the LibTorch version.
  RT rand_uniform(Shape shape, Dims domain = {}, DType dtype = DType::Float32,
                  Loc loc = Loc::current());
  RT rand_normal(Shape shape, Dims domain = {}, DType dtype = DType::Float32,
                 Loc loc = Loc::current());
  RT arange(const Expr& n, DType dtype = DType::Int64, Loc loc = Loc::current());
  // The value of a symbolic expression (e.g. t, or T - t) as an int64 scalar RT.
  RT symbol(const Expr& e, Loc loc = Loc::current());
  // A constant tensor with the given contents, held by the program (moved in, or copied from an
  // lvalue: pass std::move(weights) to keep one copy of large weights).
  RT tensor(HostTensor value, Loc loc = Loc::current());
  // A branching RT over `domain`, defined by assigning to its indexed forms (TEMPO Alg. 1).
  RT placeholder(TensorType type, Dims domain, const std::string& name = "",
                 Loc loc = Loc::current());

  // ---- user-defined functions (external state) ----
  // Runs fn at every point of `domain` (where all inputs exist); outputs have `outputs` types.
  // A UDF with no outputs is a sink (logging, checkpoints); with no inputs, a source.
  std::vector<RT> udf(const std::string& name, ir::Udf::fn_type fn, const std::vector<RT>& inputs,
                      std::vector<TensorType> outputs, Dims domain, Loc loc = Loc::current());

  // Internal: adds an op reading `inputs` (each through its pending index) over the union of
  // their domains (plus `extra_domain`), inferring output types. Used by every RT operation.
  std::vector<RT> add_op(ir::OpKind kind, ir::Attrs attrs, const std::vector<RT>& inputs, Loc loc,
                         Dims extra_domain = {});
  RT add_op1(ir::OpKind kind, ir::Attrs attrs, const std::vector<RT>& inputs, Loc loc,
             Dims extra_domain = {}) {
    return add_op(kind, std::move(attrs), inputs, loc, std::move(extra_domain))[0];
  }
  const std::vector<std::pair<ir::OpId, int>>& retained() const { return retained_; }
  void mark_retained(ir::OpId op, int output) { retained_.emplace_back(op, output); }

 private:
  friend class ReadSubstitution;
  // The reads an op input is replaced by (see ReadSubstitution), innermost last.
  const RT& substituted(const RT& in) const;

  Dims dims_;
  ir::Graph graph_;
  std::vector<std::pair<RT, RT>> substitutions_;
  std::vector<std::pair<ir::OpId, int>> retained_;
  bool data_parallel_ = false;
  // Random draws made so far: each draw's stream is its number, so that other ops (e.g. those
  // only a resumed run has) do not change which values a draw gives.
  int64_t random_streams_ = 0;
};

}  // namespace tempo
