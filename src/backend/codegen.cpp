#include "backend/codegen.h"

#include <algorithm>
#include <iomanip>
#include <limits>
#include <sstream>

#include "util/error.h"

namespace tempo::backend {

namespace {

using ir::DType;
using ir::OpKind;

const char* c_type(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::Int32:
      return "int32_t";
    case DType::Int64:
      return "int64_t";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  internal_error("unknown dtype");
}

// A literal that reads back as exactly `v` in type d.
std::string literal(double v, DType d) {
  std::ostringstream os;
  os << std::setprecision(std::numeric_limits<double>::max_digits10);
  if (v != v) return cat("std::numeric_limits<", c_type(d), ">::quiet_NaN()");
  if (v == std::numeric_limits<double>::infinity())
    return cat("std::numeric_limits<", c_type(d), ">::infinity()");
  if (v == -std::numeric_limits<double>::infinity())
    return cat("-std::numeric_limits<", c_type(d), ">::infinity()");
  os << v;
  return cat("(", c_type(d), ")(", os.str(), ")");
}

bool arithmetic(OpKind k) {
  switch (k) {
    case OpKind::Neg:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::Abs:
    case OpKind::Sign:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Maximum:
    case OpKind::Minimum:
    case OpKind::Where:
    case OpKind::Identity:
    case OpKind::Detach:
      return true;
    default:
      return false;
  }
}

bool logical(OpKind k) {
  switch (k) {
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Not:
      return true;
    default:
      return false;
  }
}

// The C++ expression of an op on operands a, b, c (already loaded, in their own types), computed
// as the LibTorch kernel does: arithmetic in the output type, comparisons in C++'s promoted type.
std::string expression(OpKind k, DType out, const std::vector<std::string>& x) {
  const std::string T = c_type(out);
  auto v = [&](size_t i) { return cat("((", T, ")", x.at(i), ")"); };
  auto fn = [&](const char* f) { return cat("std::", f, "(", v(0), ")"); };
  switch (k) {
    case OpKind::Identity:
    case OpKind::Detach:
    case OpKind::Cast:
      return v(0);
    case OpKind::Neg:
      return cat("(-", v(0), ")");
    case OpKind::Exp:
      return fn("exp");
    case OpKind::Log:
      return fn("log");
    case OpKind::Sqrt:
      return fn("sqrt");
    case OpKind::Sin:
      return fn("sin");
    case OpKind::Cos:
      return fn("cos");
    case OpKind::Tanh:
      return fn("tanh");
    case OpKind::Abs:
      return fn("abs");
    case OpKind::Floor:
      return fn("floor");
    case OpKind::Ceil:
      return fn("ceil");
    case OpKind::Sigmoid:
      return cat("((", T, ")1 / ((", T, ")1 + std::exp(-", v(0), ")))");
    case OpKind::Relu:
      return cat("tempo_relu(", v(0), ")");
    case OpKind::Sign:
      return cat("tempo_sign(", v(0), ")");
    case OpKind::Add:
      return cat("(", v(0), " + ", v(1), ")");
    case OpKind::Sub:
      return cat("(", v(0), " - ", v(1), ")");
    case OpKind::Mul:
      return cat("(", v(0), " * ", v(1), ")");
    case OpKind::Div:
      return cat("(", v(0), " / ", v(1), ")");
    case OpKind::Pow:
      return cat("std::pow(", v(0), ", ", v(1), ")");
    case OpKind::Maximum:
      return cat("tempo_max(", v(0), ", ", v(1), ")");
    case OpKind::Minimum:
      return cat("tempo_min(", v(0), ", ", v(1), ")");
    case OpKind::Eq:
      return cat("(", x[0], " == ", x[1], ")");
    case OpKind::Ne:
      return cat("(", x[0], " != ", x[1], ")");
    case OpKind::Lt:
      return cat("(", x[0], " < ", x[1], ")");
    case OpKind::Le:
      return cat("(", x[0], " <= ", x[1], ")");
    case OpKind::Gt:
      return cat("(", x[0], " > ", x[1], ")");
    case OpKind::Ge:
      return cat("(", x[0], " >= ", x[1], ")");
    case OpKind::And:
      return cat("((bool)", x[0], " && (bool)", x[1], ")");
    case OpKind::Or:
      return cat("((bool)", x[0], " || (bool)", x[1], ")");
    case OpKind::Not:
      return cat("(!(bool)", x[0], ")");
    case OpKind::Where:
      return cat("((bool)", x[0], " ? ", v(1), " : ", v(2), ")");
    default:
      internal_error(cat("no generated code for ", ir::op_kind_name(k)));
  }
}

bool uniform_const(const ir::OpNode& op) {
  return op.kind == OpKind::Const && op.inputs.empty();
}

}  // namespace

bool generable(const ir::Graph& body, const ir::OpNode& op) {
  if (op.outputs.size() != 1) return false;
  const DType out = op.outputs[0].dtype;
  if (arithmetic(op.kind)) {
    if (!ir::is_floating(out)) return false;
  } else if (op.kind == OpKind::Cast) {
    if (!ir::is_floating(out) && out != DType::Bool) return false;
  } else if (!logical(op.kind)) {
    return false;
  }
  // Integer and boolean operands convert exactly; they stay out of arithmetic only as results.
  for (ir::EdgeId e : op.inputs) {
    const ir::TensorType& t = body.input_type(e);
    if (t.dtype == DType::Int32 || t.dtype == DType::Int64) {
      if (arithmetic(op.kind) && op.kind != OpKind::Where) return false;
    }
  }
  return true;
}

RegionPlan plan_region(const ir::Region& region, bool clusters) {
  const ir::Graph& body = region.body;
  const size_t n = body.num_ops();
  std::vector<std::vector<ir::EdgeId>> readers(n);
  for (const ir::Edge& e : body.edges()) readers[e.source].push_back(e.id);
  std::vector<bool> region_output(n, false);
  for (const auto& [id, k] : region.outputs) region_output[id] = true;

  // Order: a ready op that continues the open cluster first, so that clusters grow long.
  std::vector<int> waiting(n, 0);
  for (const ir::OpNode& op : body.ops()) waiting[op.id] = static_cast<int>(op.inputs.size());
  std::vector<ir::OpId> ready;
  for (const ir::OpNode& op : body.ops())
    if (op.inputs.empty() && op.kind != OpKind::Param) ready.push_back(op.id);
  std::vector<bool> done(n, false);
  auto finish = [&](ir::OpId id) {
    done[id] = true;
    for (ir::EdgeId e : readers[id])
      if (--waiting[body.edge(e).sink] == 0) ready.push_back(body.edge(e).sink);
  };
  for (const ir::OpNode& op : body.ops())
    if (op.kind == ir::OpKind::Param) finish(op.id);

  RegionPlan plan;
  std::vector<int> step_of(n, -1);
  const ir::Shape* open_shape = nullptr;  // the open cluster's shape
  while (!ready.empty()) {
    auto joins = [&](ir::OpId id) {
      const ir::OpNode& op = body.op(id);
      return open_shape && generable(body, op) && op.outputs[0].shape.same(*open_shape);
    };
    auto it = std::find_if(ready.begin(), ready.end(), joins);
    if (it == ready.end()) it = ready.begin();
    const ir::OpId id = *it;
    ready.erase(it);
    const ir::OpNode& op = body.op(id);
    if (clusters && joins(id)) {
      plan.steps.back().ops.push_back(id);
    } else {
      plan.steps.push_back({{id}, {}, {}});
      open_shape = clusters && generable(body, op) ? &op.outputs[0].shape : nullptr;
    }
    step_of[id] = static_cast<int>(plan.steps.size() - 1);
    finish(id);
  }
  for (const ir::OpNode& op : body.ops())
    TEMPO_ASSERT(op.kind == OpKind::Param || done[op.id], "region body has a cycle");

  // Each cluster's inputs and outputs.
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    RegionPlan::Step& step = plan.steps[s];
    if (!step.cluster()) continue;
    for (ir::OpId id : step.ops) {
      for (ir::EdgeId e : body.op(id).inputs) {
        const ir::Edge& edge = body.edge(e);
        ValueRef v{edge.source, edge.source_output};
        // Uniform constants are literals in the cluster's code.
        if (step_of[edge.source] == static_cast<int>(s) || uniform_const(body.op(edge.source)))
          continue;
        if (std::find(step.inputs.begin(), step.inputs.end(), v) == step.inputs.end())
          step.inputs.push_back(v);
      }
      bool read_after = region_output[id];
      for (ir::EdgeId e : readers[id])
        read_after |= step_of[body.edge(e).sink] != static_cast<int>(s);
      if (read_after) step.outputs.emplace_back(id, 0);
    }
  }
  return plan;
}

std::string emit_cluster(const ir::Graph& body, const RegionPlan::Step& step,
                         const std::string& name) {
  std::ostringstream c;
  c << "extern \"C\" void " << name
    << "(int64_t n, const void* const* in, const int64_t* index, void* const* out) {\n";
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const auto& [id, o] = step.inputs[k];
    c << "  const " << c_type(body.op(id).outputs[o].dtype) << "* in" << k << " = (const "
      << c_type(body.op(id).outputs[o].dtype) << "*)in[" << k << "];\n";
  }
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    const char* t = c_type(body.op(step.outputs[k].first).outputs[0].dtype);
    c << "  " << t << "* out" << k << " = (" << t << "*)out[" << k << "];\n";
  }
  // The body of one element, given how input k is indexed (IDX(k)).
  std::ostringstream e;
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const auto& [id, o] = step.inputs[k];
    e << "    const " << c_type(body.op(id).outputs[o].dtype) << " x" << id << "_" << o << " = in"
      << k << "[IDX(" << k << ")];\n";
  }
  for (ir::OpId id : step.ops) {
    const ir::OpNode& op = body.op(id);
    std::vector<std::string> args;
    for (ir::EdgeId eid : op.inputs) {
      const ir::Edge& edge = body.edge(eid);
      const ir::OpNode& src = body.op(edge.source);
      if (uniform_const(src))
        args.push_back(literal(src.attrs.scalar, src.outputs[0].dtype));
      else
        args.push_back(cat("x", edge.source, "_", edge.source_output));
    }
    e << "    const " << c_type(op.outputs[0].dtype) << " x" << id << "_0 = "
      << expression(op.kind, op.outputs[0].dtype, args) << ";\n";
  }
  for (size_t k = 0; k < step.outputs.size(); ++k)
    e << "    out" << k << "[i] = x" << step.outputs[k].first << "_0;\n";
  // Full or scalar inputs (the common case) get a loop the compiler can vectorize.
  c << "  bool simple = true;\n";
  for (size_t k = 0; k < step.inputs.size(); ++k)
    c << "  const int64_t s" << k << " = index[" << 2 * k + 1 << "] == 1 ? 0 : 1;\n"
      << "  simple = simple && index[" << 2 * k << "] == 1 && (index[" << 2 * k + 1
      << "] == 1 || index[" << 2 * k + 1 << "] == n);\n";
  c << "  if (simple) {\n#define IDX(k) (i * s##k)\n"
    << "    for (int64_t i = 0; i < n; ++i) {\n"
    << e.str() << "    }\n#undef IDX\n  } else {\n"
    << "#define IDX(k) ((i / index[2 * k]) % index[2 * k + 1])\n"
    << "    for (int64_t i = 0; i < n; ++i) {\n"
    << e.str() << "    }\n#undef IDX\n  }\n}\n";
  return c.str();
}

bool calls_libm(const ir::Graph& body, const RegionPlan::Step& step) {
  for (ir::OpId id : step.ops) switch (body.op(id).kind) {
      case OpKind::Exp:
      case OpKind::Log:
      case OpKind::Sin:
      case OpKind::Cos:
      case OpKind::Tanh:
      case OpKind::Sigmoid:
      case OpKind::Pow:
        return true;
      default:
        break;
    }
  return false;
}

std::string library_source(const std::vector<std::string>& functions) {
  std::string s =
      "// Generated by Tempo: elementwise clusters of fused regions.\n"
      "#include <cmath>\n#include <cstdint>\n#include <limits>\n\n"
      "// NaN-propagating like LibTorch's maximum, minimum, relu and sign.\n"
      "template <class T> static inline T tempo_max(T a, T b) { return (a > b || a != a) ? a : b; "
      "}\n"
      "template <class T> static inline T tempo_min(T a, T b) { return (a < b || a != a) ? a : b; "
      "}\n"
      "template <class T> static inline T tempo_relu(T x) { return x > T(0) || x != x ? x : T(0); "
      "}\n"
      "template <class T> static inline T tempo_sign(T x) { return x != x ? x : T((x > T(0)) - "
      "(x < T(0))); }\n\n";
  for (const std::string& f : functions) s += f + "\n";
  return s;
}

}  // namespace tempo::backend
