#include "passes/fold_constants.h"

#include <cmath>
#include <optional>

#include "passes/graph_edit.h"

namespace tempo::passes {

namespace {

using ir::OpKind;

// The op's value on constant operands, in double; nullopt for kinds not folded.
std::optional<double> evaluate(OpKind k, const std::vector<double>& v) {
  switch (k) {
    case OpKind::Identity:
    case OpKind::Detach:
    case OpKind::Cast:
      return v[0];
    case OpKind::Neg:
      return -v[0];
    case OpKind::Exp:
      return std::exp(v[0]);
    case OpKind::Log:
      return std::log(v[0]);
    case OpKind::Sqrt:
      return std::sqrt(v[0]);
    case OpKind::Abs:
      return std::fabs(v[0]);
    case OpKind::Tanh:
      return std::tanh(v[0]);
    case OpKind::Sigmoid:
      return 1.0 / (1.0 + std::exp(-v[0]));
    case OpKind::Relu:
      return v[0] > 0 ? v[0] : 0.0;
    case OpKind::Add:
      return v[0] + v[1];
    case OpKind::Sub:
      return v[0] - v[1];
    case OpKind::Mul:
      return v[0] * v[1];
    case OpKind::Div:
      return v[0] / v[1];
    case OpKind::Pow:
      return std::pow(v[0], v[1]);
    case OpKind::Maximum:
      return std::max(v[0], v[1]);
    case OpKind::Minimum:
      return std::min(v[0], v[1]);
    default:
      return std::nullopt;
  }
}

// Rounds to what a tensor of the dtype holds, so that folding computes what the kernel would.
double as(ir::DType dt, double v) {
  switch (dt) {
    case ir::DType::Float32: return static_cast<float>(v);
    case ir::DType::Float16: return ir::f16_to_float(ir::float_to_f16(static_cast<float>(v)));
    case ir::DType::BFloat16: return ir::bf16_to_float(ir::float_to_bf16(static_cast<float>(v)));
    default: return v;
  }
}

}  // namespace

bool fold_constants(Program& p) {
  ir::Graph& g = p.graph;
  bool changed = false;
  for (size_t k = 0; k < g.num_ops(); ++k) {
    ir::OpNode& op = g.op(static_cast<ir::OpId>(k));
    // Integer and boolean results keep their kernels' exact semantics (division, overflow).
    if (op.inputs.empty() || op.outputs.size() != 1 || !ir::is_floating(op.outputs[0].dtype) ||
        op.cond.defined() || p.is_retained(op.id))
      continue;
    std::vector<double> values;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      std::optional<double> v = const_input(g, op, static_cast<int>(i));
      if (!v || !ir::is_floating(input_op(g, op, static_cast<int>(i)).outputs[0].dtype)) break;
      values.push_back(as(input_op(g, op, static_cast<int>(i)).outputs[0].dtype, *v));
    }
    if (values.size() != op.inputs.size()) continue;
    std::optional<double> result = evaluate(op.kind, values);
    if (!result) continue;
    ir::Attrs a;
    a.scalar = as(op.outputs[0].dtype, *result);
    a.dtype = op.outputs[0].dtype;
    a.exprs = op.outputs[0].shape.dims;
    op.kind = OpKind::Const;
    op.attrs = std::move(a);
    op.inputs.clear();  // the edges are left unread; run_pipeline drops them
    changed = true;
  }
  return changed;
}

}  // namespace tempo::passes
