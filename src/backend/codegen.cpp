#include "backend/codegen.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <limits>
#include <optional>
#include <sstream>

#include "util/error.h"

namespace tempo::backend {

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
    case DType::Float16:
    case DType::BFloat16:
      break;  // never generated (generable)
  }
  internal_error(cat("no C type for ", ir::dtype_name(d)));
}

namespace {

// A literal that reads back as exactly `v` in type d.
std::string literal(double v, DType d) {
  std::ostringstream os;
  os << std::setprecision(std::numeric_limits<double>::max_digits10);
  if (v != v) return cat("((", c_type(d), ")TEMPO_NAN)");
  if (v == std::numeric_limits<double>::infinity()) return cat("((", c_type(d), ")TEMPO_INF)");
  if (v == -std::numeric_limits<double>::infinity()) return cat("(-(", c_type(d), ")TEMPO_INF)");
  os << v;
  return cat("(", c_type(d), ")(", os.str(), ")");
}

// The C++ expression of an op on operands a, b, c (already loaded, in their own types), computed
// as the LibTorch kernel does: arithmetic in the output type, comparisons in C++'s promoted type.
std::string expression(OpKind k, DType out, const std::vector<std::string>& x) {
  const std::string T = c_type(out);
  auto v = [&](size_t i) { return cat("((", T, ")", x.at(i), ")"); };
  auto fn = [&](const char* f) { return cat("tempo_", f, "(", v(0), ")"); };
  switch (k) {
    case OpKind::Identity:
    case OpKind::Detach:
    case OpKind::Cast:
      return v(0);
    case OpKind::Neg:
      return cat("(-", v(0), ")");
    case OpKind::Exp:
      return cat("tempo_exp(", v(0), ")");
    case OpKind::Log:
      return cat("tempo_log(", v(0), ")");
    case OpKind::Sqrt:
      return fn("sqrt");
    case OpKind::Sin:
      return fn("sin");
    case OpKind::Cos:
      return fn("cos");
    case OpKind::Tanh:
      return cat("tempo_tanh(", v(0), ")");
    case OpKind::Abs:
      return fn("abs");
    case OpKind::Floor:
      return fn("floor");
    case OpKind::Ceil:
      return fn("ceil");
    case OpKind::Sigmoid:
      return cat("((", T, ")1 / ((", T, ")1 + tempo_exp(-", v(0), ")))");
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
      return cat("tempo_pow(", v(0), ", ", v(1), ")");
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
      return cat("((bool)", x[0], " & (bool)", x[1], ")");  // not && nor ||: branch-free
    case OpKind::Or:
      return cat("((bool)", x[0], " | (bool)", x[1], ")");
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

// Whether s has one value per row of S: S with its last dimension 1, or without it.
bool is_row_shape(const ir::Shape& s, const ir::Shape& S) {
  if (S.rank() == 0 || (s.rank() != S.rank() && s.rank() + 1 != S.rank())) return false;
  for (size_t k = 0; k + 1 < S.rank(); ++k)
    if (!s[k].same(S[k])) return false;
  return s.rank() + 1 == S.rank() || s[S.rank() - 1].is_const(1);
}

// What an op does in a cluster of shape S.
enum class Role { None, Element, Row, Reduce };

Role role(const ir::Graph& body, const ir::OpNode& op, const ir::Shape& S) {
  if (op.outputs.empty() || S.rank() == 0) return Role::None;
  if (op.kind == OpKind::Sum || op.kind == OpKind::ReduceMax) {
    if (op.inputs.size() != 1 || !ir::is_floating(op.outputs[0].dtype) ||
        !body.input_type(op.inputs[0]).shape.same(S))
      return Role::None;
    const int64_t last = static_cast<int64_t>(S.rank()) - 1;
    const std::vector<int64_t>& d = op.attrs.ints;
    const bool over_last = op.kind == OpKind::Sum
                               ? (d == std::vector<int64_t>{last} || (d.empty() && last == 0))
                               : (!d.empty() && d[0] == last);
    return over_last ? Role::Reduce : Role::None;
  }
  if (!generable(body, op)) return Role::None;
  if (op.outputs[0].shape.same(S)) return Role::Element;
  return is_row_shape(op.outputs[0].shape, S) ? Role::Row : Role::None;
}

// Each input's Access and the split of the cluster's shape into rows and cols.
void choose_access(const ir::Graph& body, RegionPlan::Step& step) {
  const ir::Shape& shape = step.shape;
  const size_t rank = shape.rank();
  bool per_row = false;  // rows are rows of the last dimension: split before it
  std::vector<bool> element_reads(step.inputs.size(), false);
  for (ir::OpId id : step.ops) {
    const Role r = role(body, body.op(id), shape);
    per_row |= r == Role::Row || r == Role::Reduce;
    for (ir::EdgeId e : body.op(id).inputs) {
      auto it = std::find(step.inputs.begin(), step.inputs.end(),
                          ValueRef{body.edge(e).source, body.edge(e).source_output});
      if (it != step.inputs.end() && r != Role::Row)
        element_reads[static_cast<size_t>(it - step.inputs.begin())] = true;
    }
  }
  // Per input: where its sizes (right-aligned) are not 1, [first, last), if they are the
  // cluster's there.
  struct Span {
    size_t first, last;
    bool matches;
  };
  std::vector<Span> spans;
  for (const ValueRef& v : step.inputs) {
    const ir::Shape& in = body.op(v.first).outputs[v.second].shape;
    const size_t off = rank - std::min(rank, in.rank());
    auto size = [&](size_t k) { return k < off ? Expr(1) : in[k - off]; };
    size_t first = 0, last = rank;
    while (first < rank && size(first).is_const(1)) ++first;
    while (last > first && size(last - 1).is_const(1)) --last;
    bool matches = in.rank() <= rank;
    for (size_t k = first; matches && k < last; ++k) matches = size(k).same(shape[k]);
    // Dimensions of size 1 in the cluster's shape can count on either side, except for a value
    // of size 1 everywhere: that stays a scalar, which per-row statements can read too.
    if (first < last) {
      while (first > 0 && shape[first - 1].is_const(1)) --first;
      while (last < rank && shape[last].is_const(1)) ++last;
    }
    spans.push_back({first, last, matches});
  }
  step.split = per_row ? rank - 1 : 0;
  if (!per_row)
    for (const Span& sp : spans)
      if (sp.matches && sp.first < sp.last && !(sp.first == 0 && sp.last == rank)) {
        step.split = sp.last == rank ? sp.first : sp.last;
        break;
      }
  for (size_t k = 0; k < spans.size(); ++k) {
    const Span& sp = spans[k];
    const ValueRef& v = step.inputs[k];
    Access a = Access::Expand;
    if (sp.first >= sp.last)
      a = Access::Scalar;
    else if (per_row && !element_reads[k] &&
             is_row_shape(body.op(v.first).outputs[v.second].shape, shape))
      a = Access::Column;  // read by per-row ops only
    else if (sp.matches && sp.first == 0 && sp.last == rank)
      a = Access::Full;
    else if (sp.matches && sp.last == rank && sp.first == step.split)
      a = Access::Row;
    else if (sp.matches && sp.first == 0 && sp.last == step.split)
      a = Access::Column;
    step.access.push_back(a);
  }
}

}  // namespace

bool generable(const ir::Graph& body, const ir::OpNode& op) {
  const bool copy = op.kind == OpKind::Identity || op.kind == OpKind::Detach;
  if (op.outputs.size() != 1 || !(ir::is_elementwise(op.kind) || copy)) return false;
  if (ir::is_logical(op.kind)) return true;
  // Arithmetic computes in a floating output type (integer division and overflow are not
  // LibTorch's in C++); a cast may also produce a boolean.
  const DType out = op.outputs[0].dtype;
  if (ir::is_half(out)) return false;  // C++ has no half arithmetic; LibTorch runs these
  for (ir::EdgeId e : op.inputs)
    if (ir::is_half(body.input_type(e).dtype)) return false;
  if (!ir::is_floating(out) && !(op.kind == OpKind::Cast && out == DType::Bool)) return false;
  if (op.kind == OpKind::Cast || op.kind == OpKind::Where) return true;
  for (ir::EdgeId e : op.inputs) {
    const DType in = body.input_type(e).dtype;
    if (in == DType::Int32 || in == DType::Int64) return false;
  }
  return true;
}

RegionPlan plan_region(const ir::Region& region, bool clusters) {
  const ir::Graph& body = region.body;
  const size_t n = body.num_ops();
  std::vector<std::vector<ir::EdgeId>> readers(n);
  for (const ir::Edge& e : body.edges()) readers[e.source].push_back(e.id);

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
  bool open = false;  // the last step is a cluster that ops of its shape may join
  // The shape of the cluster an op opens: its own (elementwise) or its input's (a reduction).
  auto opens = [&](const ir::OpNode& op) -> std::optional<ir::Shape> {
    if (!op.outputs.empty() && role(body, op, op.outputs[0].shape) == Role::Element)
      return op.outputs[0].shape;
    if (op.inputs.size() == 1) {
      ir::Shape in = body.input_type(op.inputs[0]).shape;
      if (role(body, op, in) == Role::Reduce) return in;
    }
    return std::nullopt;
  };
  while (!ready.empty()) {
    auto joins = [&](ir::OpId id) {
      return open && role(body, body.op(id), plan.steps.back().shape) != Role::None;
    };
    auto it = std::find_if(ready.begin(), ready.end(), joins);
    if (it == ready.end()) it = ready.begin();
    const ir::OpId id = *it;
    ready.erase(it);
    const ir::OpNode& op = body.op(id);
    if (joins(id)) {
      plan.steps.back().ops.push_back(id);
    } else {
      plan.steps.emplace_back();
      plan.steps.back().ops = {id};
      std::optional<ir::Shape> shape = clusters ? opens(op) : std::nullopt;
      open = shape.has_value();
      if (open) plan.steps.back().shape = std::move(*shape);
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
      for (size_t k = 0; k < body.op(id).outputs.size(); ++k) {
        const ValueRef v{id, static_cast<int>(k)};
        bool read_after =
            std::find(region.outputs.begin(), region.outputs.end(), v) != region.outputs.end();
        for (ir::EdgeId e : readers[id])
          read_after |= body.edge(e).source_output == v.second &&
                        step_of[body.edge(e).sink] != static_cast<int>(s);
        if (read_after) step.outputs.push_back(v);
      }
    }
    choose_access(body, step);
  }
  return plan;
}

bool row_blocks(const ir::Graph& body, const RegionPlan::Step& step) {
  return std::any_of(step.ops.begin(), step.ops.end(), [&](ir::OpId id) {
    const Role r = role(body, body.op(id), step.shape);
    return r == Role::Row || r == Role::Reduce;
  });
}

LoopSchedules parse_loop_schedules(const std::string& name, const std::string& what) {
  for (LoopSchedules s :
       {LoopSchedules::RowsOuter, LoopSchedules::Measured, LoopSchedules::ColumnsOuter})
    if (name == loop_schedules_name(s)) return s;
  throw UserError(cat(what, " '", name, "': expected rows, measured or columns"));
}

const char* loop_schedules_name(LoopSchedules s) {
  switch (s) {
    case LoopSchedules::RowsOuter: return "rows";
    case LoopSchedules::Measured: return "measured";
    case LoopSchedules::ColumnsOuter: return "columns";
    case LoopSchedules::Policy: return "policy";
  }
  return "?";
}

int64_t constant_columns(const RegionPlan::Step& step) {
  int64_t cols = 1;
  for (size_t d = step.split; d < step.shape.rank(); ++d) {
    if (!step.shape[d].is_const()) return -1;
    cols *= step.shape[d].value();
  }
  return cols;
}

std::optional<int64_t> constant_rows(const RegionPlan::Step& step) {
  int64_t rows = 1;
  for (size_t d = 0; d < step.split; ++d) {
    if (!step.shape[d].is_const()) return std::nullopt;
    rows *= step.shape[d].value();
  }
  return rows;
}

namespace {

// Whether a cluster's rows have a constant count of at most kNarrowColumns columns.
bool narrow_rows(const RegionPlan::Step& step) {
  const int64_t cols = constant_columns(step);
  return cols >= 0 && cols <= kNarrowColumns;
}

}  // namespace

bool columns_outer_applies(const ir::Graph& body, const RegionPlan::Step& step) {
  return step.cluster() && narrow_rows(step) &&
         std::any_of(step.ops.begin(), step.ops.end(), [&](ir::OpId id) {
           return role(body, body.op(id), step.shape) == Role::Reduce;
         });
}

LoopFeatures loop_features(const ir::Graph& body, const RegionPlan::Step& step) {
  enum { Sums, Maxima, ElementOps, RowOps, Transcendental, Full, Column, Other, ElementOut,
         RowOut };  // LoopFeatures::kNames' order
  LoopFeatures f;
  int* v = f.values;
  for (ir::OpId id : step.ops) {
    const ir::OpNode& op = body.op(id);
    switch (role(body, op, step.shape)) {
      case Role::Reduce: ++v[op.kind == OpKind::Sum ? Sums : Maxima]; break;
      case Role::Element: ++v[ElementOps]; break;
      case Role::Row: ++v[RowOps]; break;
      case Role::None: break;
    }
    switch (op.kind) {
      case OpKind::Exp: case OpKind::Log: case OpKind::Tanh: case OpKind::Sigmoid:
      case OpKind::Pow: case OpKind::Sqrt: case OpKind::Sin: case OpKind::Cos:
        ++v[Transcendental];
        break;
      default: break;
    }
  }
  for (Access a : step.access)
    ++v[a == Access::Full || a == Access::Expand ? Full : a == Access::Column ? Column : Other];
  for (const ValueRef& out : step.outputs)
    ++v[body.op(out.first).outputs[out.second].shape.same(step.shape) ? ElementOut : RowOut];
  return f;
}

namespace {

// The name of a value in generated code.
std::string value_name(ir::OpId id, int k) {
  return cat("x", id, "_", k);
}

// A cluster function's signature and, on the CPU, its typed views of the argument arrays.
std::string cluster_signature(const ir::Graph& body, const RegionPlan::Step& step,
                              const std::string& name, bool cuda) {
  auto type_of = [&](const ValueRef& v) {
    return c_type(body.op(v.first).outputs[v.second].dtype);
  };
  std::string params, pointers;
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const char* t = type_of(step.inputs[k]);
    const char* restrict = step.access[k] == Access::Full ? "* " : "* TEMPO_RESTRICT ";
    if (cuda)
      params += cat(", const ", t, restrict, "in", k);
    else
      pointers += cat("  const ", t, restrict, "in", k, " = (const ", t, "*)in[", k, "];\n");
  }
  // A full input may share its buffer with an element output (donation, cluster_kernel): no
  // restrict on those pointers.
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    const ValueRef& v = step.outputs[k];
    const char* t = type_of(v);
    const bool element = role(body, body.op(v.first), step.shape) == Role::Element;
    const char* restrict = element ? "* " : "* TEMPO_RESTRICT ";
    if (cuda)
      params += cat(", ", t, restrict, "out", k);
    else
      pointers += cat("  ", t, restrict, "out", k, " = (", t, "*)out[", k, "];\n");
  }
  if (cuda)
    return cat("extern \"C\" __global__ void __launch_bounds__(TEMPO_MAX_THREADS) ", name,
               "(int64_t rows, int64_t cols", params, ") {\n");
  return cat("extern \"C\" void ", name,
             "(int64_t rows, int64_t cols, const void* const* in, void* const* out) {\n", pointers);
}

// The per-row statements of a reduction `op` of operand x over a row's columns: `columns` opens
// the loop over them, whose body starts with `chain` (the element ops x needs). `index_read`:
// a max's index (its output 1) is read; `in_order`: a sum adds its terms in order.
std::string reduction(const ir::OpNode& op, const std::string& x, const std::string& chain,
                      const std::string& columns, bool cuda, bool index_read, bool in_order) {
  const std::string acc = cat("acc", op.id), arg = cat("arg", op.id);
  const char* t = c_type(op.outputs[0].dtype);
  const bool max = op.kind == OpKind::ReduceMax;
  const std::string init =
      cat("    ", t, " ", acc, " = ", max ? cat("-(", t, ")TEMPO_INF") : cat("(", t, ")0"), ";\n",
          max ? cat("    int64_t ", arg, " = 0;\n") : "");
  const std::string result =
      cat("    const ", t, " ", value_name(op.id, 0), " = ", acc, ";\n",
          max ? cat("    const int64_t ", value_name(op.id, 1), " = ", arg, ";\n") : "");
  // Unless in order, a sum may be reassociated (as LibTorch's vectorized sums are) so that it
  // vectorizes.
  if (!max)
    return cat(init, cuda || in_order ? "" : cat("#pragma omp simd reduction(+ : ", acc, ")\n"),
               columns, chain, "      ", acc, " += (", t, ")", x, ";\n", "    }\n",
               cuda ? cat("    ", acc, " = tempo_block_sum(", acc, ");\n") : "", result);
  // The first maximum (or NaN), as LibTorch's max along a dimension.
  const std::string first_max =
      cat(columns, chain, "      if (", x, " > ", acc, " || (", x, " != ", x, " && ", acc, " == ",
          acc, ")) { ", acc, " = ", x, "; ", arg, " = j; }\n", "    }\n");
  if (cuda)  // the block's threads combine their shares
    return cat(init, first_max, "    tempo_block_argmax(", acc, ", ", arg, ");\n", result);
  // On the CPU, over 16 columns or more: the maximum in vectors, NaN noted apart. Without NaN it
  // is the first maximum's value but for the sign of a zero; where that, a NaN or the index
  // matters, a search from the row's start finds the first maximum (or NaN).
  const std::string nan = cat("nan", op.id);
  const std::string vectors =
      cat("      bool ", nan, " = false;\n", "#pragma omp simd reduction(max : ", acc,
          ") reduction(| : ", nan, ")\n", columns, chain, "      ", acc, " = ", x, " > ", acc,
          " ? (", t, ")", x, " : ", acc, ";\n", "      ", nan, " |= ", x, " != ", x, ";\n",
          "    }\n", index_read ? "    {\n" : cat("    if (", nan, " || ", acc, " == 0) {\n"),
          columns, chain, "      if (", nan, " ? ", x, " != ", x, " : ", x, " == ", acc, ") { ",
          acc, " = ", x, "; ", arg, " = j; break; }\n", "    }\n    }\n");
  return cat(init, "    if (cols < 16) {\n", first_max, "    } else {\n", vectors, "    }\n",
             result);
}

// The loops of a ColumnsOuter cluster (LoopOrder), after its signature and scalar loads: in each
// block of kRowBlock rows, a pass per per-row op and per reduction, then one for the outputs,
// each an inner loop over the block's rows; a per-row value lives in an array over the block.
// `column_reads` are the Column inputs' values and their reads at row r; `statement` gives an
// op's declaration at an indent, `element_chain` the loads and element ops some values need,
// `operand` an edge's value.
template <class Statement, class Chain, class Operand>
std::string columns_outer(const ir::Graph& body, const RegionPlan::Step& step,
                          const std::vector<std::pair<std::string, std::string>>& column_reads,
                          const Statement& statement, const Chain& element_chain,
                          const Operand& operand) {
  constexpr int kRowBlock = 64;
  std::string arrays, passes;
  // Reads of the Column inputs and of the per-row values computed so far, at row q of the block;
  // a pass reads those its body names.
  std::vector<std::pair<std::string, std::string>> reads = column_reads;  // value, its read
  auto keep = [&](const std::string& value, const char* type) {
    arrays += cat("    ", type, " ", value, "_b[", kRowBlock, "];\n");
    reads.emplace_back(value, cat("      const ", type, " ", value, " = ", value, "_b[q];\n"));
  };
  // Whether `code` names `value` (not as the prefix of a longer name).
  auto names = [](const std::string& code, const std::string& value) {
    for (size_t at = code.find(value); at != std::string::npos; at = code.find(value, at + 1)) {
      const char next = at + value.size() < code.size() ? code[at + value.size()] : ' ';
      if (!std::isalnum(static_cast<unsigned char>(next)) && next != '_') return true;
    }
    return false;
  };
  // A loop over the block's rows (in a loop over columns where `columns`), around `loop_body`.
  auto rows_loop = [&](const std::string& loop_body, bool columns) {
    const std::string in = columns ? "  " : "";
    std::string loads;
    for (const auto& [value, read] : reads)
      if (names(loop_body, value)) loads += read;
    return cat(columns ? cat("    for (int64_t j = 0; j < cols; ++j) {\n") : "", in,
               "#pragma omp simd\n", in, "    for (int64_t q = 0; q < rn; ++q) {\n", in,
               "      const int64_t r = r0 + q;\n", loads, loop_body, in, "    }\n",
               columns ? "    }\n" : "");
  };
  // Consecutive per-row ops share a pass.
  std::string row_ops;
  std::vector<std::pair<std::string, const char*>> row_values;
  auto flush_row_ops = [&] {
    if (row_ops.empty()) return;
    passes += rows_loop(row_ops, false);
    for (const auto& [value, type] : row_values) keep(value, type);
    row_ops.clear();
    row_values.clear();
  };
  for (ir::OpId id : step.ops) {
    const ir::OpNode& op = body.op(id);
    const Role r = role(body, op, step.shape);
    const std::string v = value_name(id, 0);
    const char* t = c_type(op.outputs[0].dtype);
    if (r == Role::Row) {
      row_ops += cat(statement(op, "      "), "      ", v, "_b[q] = ", v, ";\n");
      row_values.emplace_back(v, t);
    } else if (r == Role::Reduce) {
      flush_row_ops();
      const ir::Edge& in = body.edge(op.inputs[0]);
      const std::string x = operand(in), arg = value_name(id, 1);
      const bool max = op.kind == OpKind::ReduceMax;
      arrays += cat("    ", t, " ", v, "_b[", kRowBlock, "];\n",
                    max ? cat("    int64_t ", arg, "_b[", kRowBlock, "];\n") : "");
      passes += cat("    for (int64_t q = 0; q < rn; ++q) ", v, "_b[q] = ",
                    max ? cat("-(", t, ")TEMPO_INF") : cat("(", t, ")0"), ";\n",
                    max ? cat("    for (int64_t q = 0; q < rn; ++q) ", arg, "_b[q] = 0;\n") : "");
      // The first maximum (or NaN) in selects, which vectorize, as RowsOuter's branch finds it.
      const std::string update =
          max ? cat("        const ", t, " acc = ", v, "_b[q];\n", "        const bool take = (",
                    x, " > acc) | ((", x, " != ", x, ") & (acc == acc));\n", "        ", v,
                    "_b[q] = take ? (", t, ")", x, " : acc;\n", "        ", arg,
                    "_b[q] = take ? j : ", arg, "_b[q];\n")
              : cat("        ", v, "_b[q] += (", t, ")", x, ";\n");
      passes += rows_loop(cat(element_chain({in.source}), update), true);
      reads.emplace_back(v, cat("      const ", t, " ", v, " = ", v, "_b[q];\n"));
      if (max) reads.emplace_back(arg, cat("      const int64_t ", arg, " = ", arg, "_b[q];\n"));
    }
  }
  flush_row_ops();
  std::string stores, row_stores;
  std::vector<ir::OpId> targets;
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    const auto& [id, o] = step.outputs[k];
    if (role(body, body.op(id), step.shape) == Role::Element) {
      stores += cat("        out", k, "[r * cols + j] = ", value_name(id, o), ";\n");
      targets.push_back(id);
    } else {
      row_stores += cat("      out", k, "[r] = ", value_name(id, o), ";\n");
    }
  }
  if (!row_stores.empty()) passes += rows_loop(row_stores, false);
  if (!targets.empty()) passes += rows_loop(cat(element_chain(targets), stores), true);
  return cat("  {\n  const int64_t cols = ", constant_columns(step),
             ";  // the parameter's value, as a constant\n",
             "  for (int64_t r0 = 0; r0 < rows; r0 += ", kRowBlock, ") {\n",
             "    const int64_t rn = rows - r0 < ", kRowBlock, " ? rows - r0 : ", kRowBlock, ";\n",
             arrays, passes, "  }\n  }\n");
}

}  // namespace

// The loops of both targets come from the same pieces: loads, the statements of element ops
// (computed in each loop that needs them), per-row statements, reductions and stores. On the CPU
// one call runs every row; on CUDA a cluster with per-row work runs a thread block per row (its
// threads stride over the row's columns and reduce together), any other a thread per element.
std::string emit_cluster(const ir::Graph& body, const RegionPlan::Step& step,
                         const std::string& name, Target target, LoopOrder order) {
  TEMPO_ASSERT(step.access.size() == step.inputs.size(), "cluster without access classes");
  const bool cuda = target == Target::Cuda;
  const bool blocks = row_blocks(body, step);
  auto type_of = [&](const ValueRef& v) {
    return c_type(body.op(v.first).outputs[v.second].dtype);
  };
  auto member = [&](ir::OpId id) {
    return std::find(step.ops.begin(), step.ops.end(), id) != step.ops.end();
  };
  auto is_element = [&](const ValueRef& v) {
    return role(body, body.op(v.first), step.shape) == Role::Element;
  };
  // Whether value v is read: by an op of the cluster, or after it.
  auto is_read = [&](const ValueRef& v) {
    if (std::find(step.outputs.begin(), step.outputs.end(), v) != step.outputs.end()) return true;
    for (ir::OpId id : step.ops)
      for (ir::EdgeId e : body.op(id).inputs)
        if (ValueRef{body.edge(e).source, body.edge(e).source_output} == v) return true;
    return false;
  };
  std::ostringstream c;
  std::string signature = cluster_signature(body, step, name, cuda);
  // A cluster that may run in either order: products stay apart from the sums they feed in
  // both (no FMA contraction), which the compiler would otherwise decide per loop and order.
  // The interchanged loops at -O2 (the `omp simd` loops still vectorize, once each): at -O3 the
  // variants of every loop doubled the library's compile time.
  if (!cuda && columns_outer_applies(body, step))
    signature.insert(signature.find("void "),
                     order == LoopOrder::ColumnsOuter
                         ? "__attribute__((optimize(\"O2\", \"fp-contract=off\"))) "
                         : "__attribute__((optimize(\"fp-contract=off\"))) ");
  c << signature;
  std::string row_loads, element_loads;
  std::vector<std::pair<std::string, std::string>> column_reads;  // value, its read at row r
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    const ValueRef& v = step.inputs[k];
    const char* t = type_of(v);
    const std::string x = value_name(v.first, v.second);
    switch (step.access[k]) {
      case Access::Scalar:
        c << "  const " << t << " " << x << " = in" << k << "[0];\n";
        break;
      case Access::Column:
        column_reads.emplace_back(x, cat("    const ", t, " ", x, " = in", k, "[r];\n"));
        row_loads += column_reads.back().second;
        break;
      case Access::Row:
        element_loads += cat("      const ", t, " ", x, " = in", k, "[j];\n");
        break;
      case Access::Full:
      case Access::Expand:
        element_loads += cat("      const ", t, " ", x, " = in", k, "[r * cols + j];\n");
        break;
    }
  }
  // An operand: a value of the cluster or of its inputs, or a uniform constant's literal.
  auto operand = [&](const ir::Edge& edge) {
    const ir::OpNode& src = body.op(edge.source);
    return uniform_const(src) ? literal(src.attrs.scalar, src.outputs[0].dtype)
                              : value_name(edge.source, edge.source_output);
  };
  auto statement = [&](const ir::OpNode& op, const char* indent) {
    std::vector<std::string> args;
    for (ir::EdgeId eid : op.inputs) args.push_back(operand(body.edge(eid)));
    const DType out = op.outputs[0].dtype;
    auto widens_bool = [&] {
      const ir::Edge& in = body.edge(op.inputs.at(0));
      const DType from = body.op(in.source).outputs[in.source_output].dtype;
      return from == DType::Bool && out != DType::Bool;
    };
    // A bool widened by a C cast keeps GCC from vectorizing the loop; a select does not.
    const std::string e = op.kind == OpKind::Cast && widens_bool()
                              ? cat("(", args[0], " ? (", c_type(out), ")1 : (", c_type(out), ")0)")
                              : expression(op.kind, out, args);
    return cat(indent, "const ", c_type(out), " ", value_name(op.id, 0), " = ", e, ";\n");
  };
  // The body of a loop over a row: loads, then the element ops `targets` need, in order.
  auto element_chain = [&](std::vector<ir::OpId> targets) {
    std::vector<bool> need(body.num_ops(), false);
    while (!targets.empty()) {
      ir::OpId id = targets.back();
      targets.pop_back();
      if (need[id] || !member(id) || role(body, body.op(id), step.shape) != Role::Element) continue;
      need[id] = true;
      for (ir::EdgeId e : body.op(id).inputs) targets.push_back(body.edge(e).source);
    }
    std::string s = element_loads;
    for (ir::OpId id : step.ops)
      if (need[id]) s += statement(body.op(id), "      ");
    return s;
  };
  if (!cuda && order == LoopOrder::ColumnsOuter)
    return c.str() + columns_outer(body, step, column_reads, statement, element_chain, operand) +
           "}\n";
  // A loop over the columns of row r: all of them on the CPU, a thread's share on CUDA.
  const std::string columns =
      cuda ? "    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {\n"
           : "    for (int64_t j = 0; j < cols; ++j) {\n";
  std::string row;  // per-row ops and reductions, in order
  for (ir::OpId id : step.ops) {
    const ir::OpNode& op = body.op(id);
    switch (role(body, op, step.shape)) {
      case Role::Row:
        row += statement(op, "    ");
        break;
      case Role::Reduce: {
        const ir::Edge& in = body.edge(op.inputs[0]);
        // Sums over narrow rows in order, as the interchanged loops add them (and as any
        // compiler does).
        row += reduction(op, operand(in), element_chain({in.source}), columns, cuda,
                         is_read({id, 1}), narrow_rows(step));
        break;
      }
      default:  // element ops are computed in the loops that need them
        break;
    }
  }
  std::string stores;  // element outputs, in the last loop
  std::vector<ir::OpId> targets;
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    const auto& [id, o] = step.outputs[k];
    if (is_element(step.outputs[k])) {
      stores += cat("      out", k, "[r * cols + j] = ", value_name(id, o), ";\n");
      targets.push_back(id);
    } else {
      row += cat(cuda ? "    if (threadIdx.x == 0) " : "    ", "out", k,
                 "[r] = ", value_name(id, o), ";\n");
    }
  }
  if (cuda && !blocks) {  // a thread per element
    c << "  const int64_t n = rows * cols;\n"
      << "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
      << "       i += (int64_t)gridDim.x * blockDim.x) {\n"
      << "    const int64_t r = i / cols, j = i - r * cols;\n"
      << row_loads << element_chain(targets) << stores << "  }\n}\n";
    return c.str();
  }
  std::string last;
  if (!targets.empty())
    // An output aliases at most a full input, element by element at the same index (read
    // before written): ivdep lets GCC vectorize regardless.
    last =
        cat(cuda ? "" : "#pragma GCC ivdep\n", columns, element_chain(targets), stores, "    }\n");
  c << (cuda ? "  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {\n"
             : "  for (int64_t r = 0; r < rows; ++r) {\n")
    << row_loads << row << last << "  }\n}\n";
  return c.str();
}

namespace {

// Helpers of the generated code for the CPU. The float math functions are Cephes' polynomials
// (range reduction, then a minimax polynomial; about 1 ulp from the correctly rounded result),
// written branch-free so that loops calling them vectorize; libm's are scalar calls. Double
// precision calls libm.
const char* kCpuPrelude = R"(// Generated by Tempo: the clusters of fused regions.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#define TEMPO_DEV static inline
#define TEMPO_RESTRICT __restrict
// Inlined also into the loops compiled at another optimization level (LoopOrder::ColumnsOuter).
#define TEMPO_INLINE static inline __attribute__((always_inline))
#define TEMPO_INF (std::numeric_limits<double>::infinity())
#define TEMPO_NAN (std::numeric_limits<double>::quiet_NaN())
#define TEMPO_MATH(name, f32, f64) \
  TEMPO_INLINE float name(float x) { return f32(x); } \
  static inline double name(double x) { return f64(x); }
TEMPO_MATH(tempo_sqrt, std::sqrt, std::sqrt)
TEMPO_MATH(tempo_sin, std::sin, std::sin)
TEMPO_MATH(tempo_cos, std::cos, std::cos)
TEMPO_MATH(tempo_abs, std::abs, std::abs)
TEMPO_MATH(tempo_floor, std::floor, std::floor)
TEMPO_MATH(tempo_ceil, std::ceil, std::ceil)
template <class T> static inline T tempo_pow(T a, T b) { return std::pow(a, b); }

TEMPO_INLINE float tempo_from_bits(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
TEMPO_INLINE uint32_t tempo_to_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

// exp(x) = 2^k exp(r), x = k ln2 + r, |r| <= ln2/2; 2^k in two factors so that gradual underflow
// and overflow to inf come out as in libm.
TEMPO_INLINE float tempo_exp(float x) {
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float k = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const int32_t ki = (int32_t)k;
  const int32_t k1 = ki / 2, k2 = ki - k1;
  const float out = y * tempo_from_bits((uint32_t)(k1 + 127) << 23) *
                    tempo_from_bits((uint32_t)(k2 + 127) << 23);
  return x != x ? x : out;
}

// log(x) = e ln2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)).
TEMPO_INLINE float tempo_log(float x) {
  const bool tiny = x < 1.17549435e-38f;  // subnormal: scale into the normal range first
  const float xs = tiny ? x * 8388608.0f : x;
  const uint32_t b = tempo_to_bits(xs);
  int32_t e = (int32_t)((b >> 23) & 0xff) - 126 - (tiny ? 23 : 0);
  float m = tempo_from_bits((b & 0x007fffffu) | 0x3f000000u);
  const bool low = m < 0.707106781186547524f;
  e = low ? e - 1 : e;
  m = low ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  const float fe = (float)e;
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float out = (m + y) + fe * 0.693359375f;
  out = x == 0.0f ? -std::numeric_limits<float>::infinity() : out;
  out = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : out;
  out = x == std::numeric_limits<float>::infinity() ? x : out;
  return x != x ? x : out;
}

// tanh: an odd polynomial near 0, else 1 - 2 / (exp(2|x|) + 1) with x's sign.
TEMPO_INLINE float tempo_tanh(float x) {
  const float a = x < 0.0f ? -x : x;
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = x + x * z * p;
  float big = 1.0f - 2.0f / (tempo_exp(a + a) + 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 0.625f ? small : big;
}

static inline double tempo_exp(double x) { return std::exp(x); }
static inline double tempo_log(double x) { return std::log(x); }
static inline double tempo_tanh(double x) { return std::tanh(x); }
)";

// Helpers of the generated code for CUDA (NVRTC: no host headers). Math is CUDA's, as in
// LibTorch's CUDA kernels (no fast-math intrinsics). Blocks have a multiple of 32 threads, at
// most TEMPO_MAX_THREADS; a block reduction leaves its result in every thread.
const char* kCudaPrelude = R"(// Generated by Tempo: the clusters of fused regions, for CUDA.
typedef long long int64_t;
typedef int int32_t;

#define TEMPO_MAX_THREADS 256
#define TEMPO_DEV __device__ __forceinline__
#define TEMPO_RESTRICT __restrict__
#define TEMPO_INF __longlong_as_double(0x7ff0000000000000LL)
#define TEMPO_NAN __longlong_as_double(0x7ff8000000000000LL)
#define TEMPO_MATH(name, f32, f64) \
  TEMPO_DEV float name(float x) { return f32(x); } \
  TEMPO_DEV double name(double x) { return f64(x); }
TEMPO_MATH(tempo_sqrt, sqrtf, sqrt)
TEMPO_MATH(tempo_sin, sinf, sin)
TEMPO_MATH(tempo_cos, cosf, cos)
TEMPO_MATH(tempo_abs, fabsf, fabs)
TEMPO_MATH(tempo_floor, floorf, floor)
TEMPO_MATH(tempo_ceil, ceilf, ceil)
TEMPO_MATH(tempo_exp, expf, exp)
TEMPO_MATH(tempo_log, logf, log)
TEMPO_MATH(tempo_tanh, tanhf, tanh)
TEMPO_DEV float tempo_pow(float a, float b) { return powf(a, b); }
TEMPO_DEV double tempo_pow(double a, double b) { return pow(a, b); }

template <class T> TEMPO_DEV T tempo_block_sum(T v) {
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // the previous reduction has read `part`
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? part[lane] : (T)0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return __shfl_sync(0xffffffffu, v, 0);
}

// (b, j) comes before (a, i) as LibTorch's max along a dimension picks: the larger value, NaN
// first, then the first index.
template <class T> TEMPO_DEV bool tempo_before(T b, int64_t j, T a, int64_t i) {
  return b > a || (b != b && a == a) || ((b == a || (b != b && a != a)) && j < i);
}
template <class T> TEMPO_DEV void tempo_warp_argmax(T& v, int64_t& i) {
  for (int o = 16; o > 0; o >>= 1) {
    const T w = __shfl_down_sync(0xffffffffu, v, o);
    const int64_t j = __shfl_down_sync(0xffffffffu, i, o);
    if (tempo_before(w, j, v, i)) { v = w; i = j; }
  }
}
template <class T> TEMPO_DEV void tempo_block_argmax(T& v, int64_t& i) {
  __shared__ T part[32];
  __shared__ int64_t index[32];
  tempo_warp_argmax(v, i);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) { part[warp] = v; index[warp] = i; }
  __syncthreads();
  const bool has = lane < (int)(blockDim.x >> 5);
  v = has ? part[lane] : -(T)TEMPO_INF;
  i = has ? index[lane] : 0;
  tempo_warp_argmax(v, i);
  v = __shfl_sync(0xffffffffu, v, 0);
  i = __shfl_sync(0xffffffffu, i, 0);
}
)";

// Helpers of both targets.
const char* kCommonPrelude = R"(
// NaN-propagating like LibTorch's maximum, minimum, relu and sign. Written as a select of the
// result and then one for a NaN, the form GCC vectorizes into blends (with the conditions or-ed
// into one select, PPO's clipped loss and TD3's relu layers stayed scalar loops).
template <class T> TEMPO_DEV T tempo_max(T a, T b) { T m = a > b ? a : b; return a != a ? a : m; }
template <class T> TEMPO_DEV T tempo_min(T a, T b) { T m = a < b ? a : b; return a != a ? a : m; }
template <class T> TEMPO_DEV T tempo_relu(T x) { T m = x > T(0) ? x : T(0); return x != x ? x : m; }
template <class T> TEMPO_DEV T tempo_sign(T x) {
  T s = T((x > T(0)) - (x < T(0)));
  return x != x ? x : s;
}

)";

}  // namespace

std::string library_source(const std::vector<std::string>& functions, Target target) {
  std::string s = target == Target::Cuda ? kCudaPrelude : kCpuPrelude;
  s += kCommonPrelude;
  for (const std::string& f : functions) s += f + "\n";
  return s;
}

int cuda_block_threads(bool blocks, int64_t cols) {
  if (!blocks) return 256;
  int threads = 32;  // a warp at least, up to one thread per column
  while (threads < 256 && threads < cols) threads *= 2;
  return threads;
}

}  // namespace tempo::backend
