// Computation graphs of the operators TASO rewrites (RLFlow §3.2): matmul, conv2d, pooling,
// relu/tanh/sigmoid, add/mul, concat, split, transpose, reshape, enlarge, inputs and weights.
//
// A Graph is a list of nodes in topological order; a node reads outputs of earlier nodes (Ref)
// and has one or more outputs (split has several). Shapes are inferred when a node is added, and a
// mismatch is a UserError naming the op and the shapes. Graphs are values: a rewrite builds a new
// graph (subst.h), and Graph::rebuilt() re-sorts and drops what no output reads.
//
// Inputs and weights are named; their values (random, shapes are what matter) are drawn from the
// name, so a weight keeps its values through rewrites that move it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tempo::rewrite {

using Shape = std::vector<int64_t>;

// The op kinds, listed once; the name table and shape inference switch over this enum.
#define TEMPO_REWRITE_OPS(X) \
  X(Input, "input")          \
  X(Weight, "weight")        \
  X(MatMul, "matmul")        \
  X(Conv2d, "conv2d")        \
  X(MaxPool, "maxpool")      \
  X(AvgPool, "avgpool")      \
  X(Relu, "relu")            \
  X(Tanh, "tanh")            \
  X(Sigmoid, "sigmoid")      \
  X(Add, "add")              \
  X(Mul, "mul")              \
  X(Concat, "concat")        \
  X(Split, "split")          \
  X(Transpose, "transpose")  \
  X(Reshape, "reshape")      \
  X(Enlarge, "enlarge")

enum class Op {
#define TEMPO_REWRITE_ENUM(e, s) e,
  TEMPO_REWRITE_OPS(TEMPO_REWRITE_ENUM)
#undef TEMPO_REWRITE_ENUM
};
constexpr int kNumOps = static_cast<int>(Op::Enlarge) + 1;
const char* op_name(Op op);

// An activation fused into a matmul, conv or pooling (TASO's "fused ops").
enum class Act { None, Relu, Tanh, Sigmoid };
const char* act_name(Act a);

// Same: (k - 1) / 2 on each side (odd kernels only); Valid: none.
enum class Pad { Same, Valid };

// Attributes of every kind in one struct; each kind reads its own fields (see graph.cpp).
struct Attrs {
  int64_t kh = 0, kw = 0;  // pooling window; enlarge: the target kernel size
  int64_t sh = 1, sw = 1;  // conv and pooling strides
  Pad pad = Pad::Same;
  Act act = Act::None;
  int64_t axis = 0;            // concat, split
  std::vector<int64_t> ints;   // transpose: perm; reshape: shape; split: sizes; input/weight: shape
  std::string name;            // input, weight
};

struct Ref {
  int node = -1, out = 0;
  bool operator==(const Ref&) const = default;
  auto operator<=>(const Ref&) const = default;
};

struct Node {
  Op op;
  Attrs attrs;
  std::vector<Ref> inputs;
  std::vector<Shape> outputs;  // inferred
  // The cost model's time for this op, kept with the node so that the many graphs a search
  // builds from one another look each op up once (< 0: not yet known).
  mutable double cost = -1;
};

class Graph {
 public:
  std::vector<Node> nodes;
  std::vector<Ref> outputs;  // the graph's results

  Ref input(const std::string& name, Shape shape);
  Ref weight(const std::string& name, Shape shape);
  // Adds a node after inferring its output shapes; UserError on a shape mismatch.
  std::vector<Ref> add(Op op, std::vector<Ref> inputs, Attrs attrs = {});
  Ref add1(Op op, std::vector<Ref> inputs, Attrs attrs = {}) { return add(op, inputs, attrs)[0]; }

  // Convenience builders used by the models and the tests.
  Ref matmul(Ref a, Ref b, Act act = Act::None);
  Ref conv(Ref x, Ref w, int64_t stride = 1, Pad pad = Pad::Same, Act act = Act::None);
  Ref pool(Op kind, Ref x, int64_t k, int64_t stride, Pad pad = Pad::Valid);
  Ref unary(Op kind, Ref x);
  Ref binary(Op kind, Ref a, Ref b);
  Ref concat(int64_t axis, std::vector<Ref> xs);
  std::vector<Ref> split(Ref x, int64_t axis, std::vector<int64_t> sizes);
  Ref transpose(Ref x, std::vector<int64_t> perm);
  Ref reshape(Ref x, Shape shape);
  Ref enlarge(Ref w, int64_t kh, int64_t kw);

  const Shape& shape(Ref r) const { return nodes.at(r.node).outputs.at(r.out); }
  // For each node, the (node, input slot) pairs that read each of its outputs.
  std::vector<std::vector<std::pair<int, int>>> consumers() const;
  // true for nodes computed only from weights: TASO folds them before running, so they cost 0.
  std::vector<bool> constant_nodes() const;
  // Nodes reachable from the outputs, re-sorted topologically, renumbered (refs follow).
  Graph rebuilt() const;
  // Checks the node order and every shape again (after a rewrite); UserError if broken.
  void validate() const;
  int64_t num_ops() const;
  // A structural hash (ops, attributes, names and wiring; not the node numbering) for the
  // searches' sets of seen graphs.
  uint64_t hash() const;  // nodes other than inputs and weights
  std::string to_string() const;
};

// The shapes of `op`'s outputs for inputs of `in_shapes`; UserError naming the op on a mismatch.
std::vector<Shape> infer_shapes(Op op, const Attrs& a, const std::vector<Shape>& in_shapes);
std::string shape_str(const Shape& s);

// The evaluation models, built from their published layer shapes (batch 1; BatchNorm folded into
// the convolutions, as at inference; dropout and softmax left out, as in TASO's graphs).
//   inceptionv3 resnet18 resnet50 squeezenet bert
// `bert_layers`: encoder layers of BERT-base (hidden 768, 12 heads, FFN 3072, sequence 64).
std::vector<std::string> model_names();
// UserError listing the known names for an unknown one.
Graph build_model(const std::string& name, int bert_layers = 12);

}  // namespace tempo::rewrite
