// The symbolic dependence graph (TEMPO §4.1): operators with temporal domains, and edges that say
// at which points of its source a sink reads (dependence expression phi, condition psi).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/op_kind.h"
#include "ir/types.h"
#include "util/error.h"
#include "symbolic/expr.h"

namespace tempo::ir {

// A user-defined function on host tensors (environments, loggers, checkpoints, ...). It may hold
// external state. `point` is the op's temporal point (values of its domain variables, in order).
struct Udf {
  using fn_type = std::function<std::vector<HostTensor>(const std::vector<HostTensor>& inputs,
                                                        const std::vector<int64_t>& point)>;
  std::string name;
  fn_type fn;
  // Output types (the op's output types are these).
  std::vector<TensorType> outputs;
  // Set where the function returns this tensor at every call (Context::tensor: weights, tables):
  // a backend may then make it on its device once and keep it across runs.
  std::shared_ptr<const HostTensor> constant;
};

struct Region;

// Attributes of an op; each kind uses the fields its entry in op_kind.h documents.
struct Attrs {
  std::vector<int64_t> ints;
  std::vector<Expr> exprs;
  double scalar = 0.0;
  DType dtype = DType::Float32;
  bool keepdim = false;
  std::shared_ptr<const Udf> udf;
  std::shared_ptr<const Region> region;  // Fused
};

using OpId = int;
using EdgeId = int;

struct OpNode {
  OpId id = -1;
  OpKind kind = OpKind::Identity;
  Dims domain;  // temporal dimensions, in context order
  Expr cond;    // executes only where cond holds (undefined: everywhere in the domain)
  Attrs attrs;
  std::vector<TensorType> outputs;
  std::vector<EdgeId> inputs;  // in input order (Merge: branches in priority order)
  std::string name;            // user-visible name of the RT that created it
  SourceLoc loc;               // the user's line that created it

  // "RT 'x' (Add) created at prog.cpp:42"
  std::string describe() const;
};

// The sink reads output `source_output` of `source` at points phi(p) for each of its points p
// where `cond` holds. phi is a sequence with one entry per source domain dimension, written in the
// sink's domain variables; a slice entry stacks the points it covers into a new leading spatial
// dimension of the input (slices in entry order become leading dims in order).
struct Edge {
  EdgeId id = -1;
  OpId sink = -1;
  OpId source = -1;
  int source_output = 0;
  Expr phi;
  Expr cond;  // undefined: always active
};

class Graph {
 public:
  OpId add_op(OpNode op);  // assigns op.id (op.inputs must be empty; use add_edge)
  EdgeId add_edge(OpId sink, OpId source, int source_output, Expr phi, Expr cond = Expr());

  const OpNode& op(OpId id) const { return ops_[id]; }
  OpNode& op(OpId id) { return ops_[id]; }
  const Edge& edge(EdgeId id) const { return edges_[id]; }
  Edge& edge(EdgeId id) { return edges_[id]; }
  size_t num_ops() const { return ops_.size(); }
  size_t num_edges() const { return edges_.size(); }
  const std::vector<OpNode>& ops() const { return ops_; }
  const std::vector<Edge>& edges() const { return edges_; }

  // Edges whose source is `id` (its consumers).
  std::vector<EdgeId> out_edges(OpId id) const;
  // The type of the tensor the sink receives through an edge: the source's output type with one
  // leading dimension per slice entry of phi (size stop - start, simplified).
  TensorType input_type(EdgeId e) const;

  // Text dump, one op per line: `%3 = Add(%1[t], %2[t - 1]) : f32(4) over (i, t)  # x @ prog.cpp:7`
  std::string str() const;
  // Graphviz DOT, edges labelled with phi (and psi).
  std::string dot() const;

 private:
  std::vector<OpNode> ops_;
  std::vector<Edge> edges_;
};

// A dataflow region (TEMPO §4.4): the ops a Fused op runs at each point of its domain. The body
// is a graph over the Fused op's domain whose ops read each other at the current point; Param
// ops stand for the Fused op's inputs. Output j of the Fused op is output `outputs[j].second`
// of body op `outputs[j].first`. Body ops are in execution order (each reads only earlier ops).
struct Region {
  Graph body;
  std::vector<std::pair<OpId, int>> outputs;
};

// The point a random draw (RandUniform, RandNormal) is keyed by: a draw is a function of (seed,
// stream, point) over the dims of the op as the program made it (backend/kernels.cpp). Where
// vectorization has since moved some of those dims into leading axes of the output, each key dim
// says where its coordinate comes from. Stored in attrs.ints: {stream}, {stream, offsets...}
// (api/random_offset.h), or {stream, offsets..., sources...} once vectorized.
struct DrawKey {
  int64_t stream = 0;
  std::vector<int64_t> offsets;  // added to each key dim's coordinate
  // Per key dim: an output axis (>= 0) or the op's domain position k, written -1 - k.
  std::vector<int64_t> sources;
  size_t leading_axes() const;  // the output axes that are key dims
};
DrawKey draw_key(const OpNode& draw);
void set_draw_key(Attrs& attrs, const DrawKey& key);

// Shape and dtype inference: the output types of an op of `kind` with `attrs`, reading inputs of
// the given types. Throws UserError (naming `who`, e.g. OpNode::describe()) for invalid input.
std::vector<TensorType> infer_types(OpKind kind, const Attrs& attrs,
                                    const std::vector<TensorType>& inputs, const Dims& domain,
                                    const std::string& who);

// Whether two types are equal (shapes compared after simplification over `dims`).
bool same_type(const TensorType& a, const TensorType& b, const Dims& dims);

// Structural validation: arities, edge phi arity equal to the source domain, phi mentioning only
// the sink's domain variables, input types consistent with the recorded output types, merge
// branches agreeing in type. Throws UserError naming the op and its source line.
void validate(const Graph& g);

}  // namespace tempo::ir
