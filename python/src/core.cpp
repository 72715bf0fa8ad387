// The programming model in Python: expressions and dimensions, RTs with operators and temporal
// indexing, placeholders, UDFs taking Python callables, grad, compile and executables.
#include <Python.h>
#include <frameobject.h>

#include <cstring>
#include <mutex>
#include <set>

#include "api/autodiff.h"
#include "bindings.h"
#include "driver/compile.h"
#include "loops/schedule_model.h"
#include "rewrite/program_rewrites.h"

namespace tempo::python {

// ---- the calling Python line ------------------------------------------------------------------

namespace {
std::string& package_dir() {
  static std::string dir;
  return dir;
}

// A Python file name kept for the process's lifetime (SourceLoc holds a plain pointer).
const char* intern_file(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  return names.insert(name).first->c_str();
}

// The innermost frame outside the tempo package (its own Python helpers are not user code).
SourceLoc python_caller() {
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  SourceLoc loc;
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const int line = PyFrame_GetLineNumber(f);
    Py_DECREF(code);
    if (!file) PyErr_Clear();
    const std::string& pkg = package_dir();
    if (file && (pkg.empty() || std::strncmp(file, pkg.c_str(), pkg.size()) != 0)) {
      loc = SourceLoc{intern_file(file), static_cast<uint32_t>(line)};
      Py_DECREF(f);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference
    Py_DECREF(f);
    f = back;
  }
  return loc;
}
}  // namespace

PythonCaller::PythonCaller() : guard_(python_caller()) {}
void PythonCaller::set_package_dir(const std::string& dir) {
  package_dir() = dir;
}

PyRef::~PyRef() {
  if (!Py_IsInitialized()) {  // at interpreter exit: leak rather than touch a dead runtime
    obj_.release();
    return;
  }
  py::gil_scoped_acquire gil;
  obj_ = py::object();
}

// ---- callback errors --------------------------------------------------------------------------

namespace {
std::mutex pending_mu;
std::optional<py::error_already_set>& pending_error() {
  static std::optional<py::error_already_set> e;
  return e;
}
}  // namespace

void raise_from_callback(py::error_already_set& e, const std::string& what) {
  std::string message = e.what();
  {
    std::lock_guard<std::mutex> lock(pending_mu);
    if (!pending_error()) pending_error().emplace(std::move(e));
  }
  throw UserError(cat(what, " raised ", message.substr(0, message.find('\n'))));
}

void rethrow_pending_python_error() {
  std::optional<py::error_already_set> e;
  {
    std::lock_guard<std::mutex> lock(pending_mu);
    e.swap(pending_error());
  }
  if (e) throw std::move(*e);
}

// ---- values -----------------------------------------------------------------------------------

DType to_dtype(py::handle h) {
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  std::string name;
  if (py::isinstance<py::str>(h)) {
    name = h.cast<std::string>();
  } else {
    py::module_ np = py::module_::import("numpy");
    try {
      name = py::str(np.attr("dtype")(h).attr("name"));
    } catch (py::error_already_set&) {
      throw py::type_error(cat("not a dtype: ", std::string(py::repr(h))));
    }
  }
  // Canonical names only: "float" and "int" mean different widths in NumPy and in torch.
  if (name == "float32") return DType::Float32;
  if (name == "float64") return DType::Float64;
  if (name == "float16") return DType::Float16;
  if (name == "bfloat16") return DType::BFloat16;
  if (name == "int64") return DType::Int64;
  if (name == "int32") return DType::Int32;
  if (name == "bool") return DType::Bool;
  throw UserError(
      cat("dtype '", name,
          "' is not supported (bool, int32, int64, float16, bfloat16, float32 or float64)"));
}

py::dtype numpy_dtype(DType d) {
  switch (d) {
    case DType::Bool:
      return py::dtype("bool");
    case DType::Int32:
      return py::dtype("int32");
    case DType::Int64:
      return py::dtype("int64");
    case DType::Float16:
      return py::dtype("float16");
    case DType::BFloat16:
      internal_error("bfloat16 has no NumPy dtype (to_host and to_numpy go through float32)");
    case DType::Float32:
      return py::dtype("float32");
    case DType::Float64:
      return py::dtype("float64");
  }
  internal_error("unknown dtype");
}

HostTensor to_host(py::handle h, std::optional<DType> want) {
  // NumPy has no bfloat16: the values go through float32.
  if (want == DType::BFloat16) return to_host(h, DType::Float32).to(DType::BFloat16);
  py::module_ np = py::module_::import("numpy");
  py::object arr;
  if (want) {
    arr = np.attr("ascontiguousarray")(h, numpy_dtype(*want));
  } else {
    const bool was_array = py::isinstance<py::array>(h);
    arr = np.attr("ascontiguousarray")(h);
    std::string kind = py::str(arr.attr("dtype").attr("kind"));
    if (!was_array && kind == "f") arr = np.attr("ascontiguousarray")(arr, "float32");
    if (!was_array && (kind == "i" || kind == "u"))
      arr = np.attr("ascontiguousarray")(arr, "int64");
  }
  py::array a = arr.cast<py::array>();
  HostTensor t;
  t.dtype = want ? *want : to_dtype(a.dtype());
  for (py::ssize_t k = 0; k < a.ndim(); ++k) t.shape.push_back(a.shape(k));
  t.data.resize(static_cast<size_t>(a.nbytes()));
  if (a.nbytes()) std::memcpy(t.data.data(), a.data(), static_cast<size_t>(a.nbytes()));
  return t;
}

py::array to_numpy(const HostTensor& t) {
  if (t.dtype == DType::BFloat16) return to_numpy(t.to(DType::Float32));  // exact; NumPy has none
  py::array a(numpy_dtype(t.dtype), std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
  if (!t.data.empty()) std::memcpy(a.mutable_data(), t.data.data(), t.data.size());
  return a;
}

bool is_expr_like(py::handle h) {
  return py::isinstance<Expr>(h) || py::isinstance<Dim>(h) ||
         (py::isinstance<py::int_>(h) && !py::isinstance<py::bool_>(h));
}

Expr to_expr(py::handle h) {
  if (py::isinstance<Expr>(h)) return h.cast<Expr>();
  if (py::isinstance<Dim>(h)) return h.cast<Dim>().var;
  if (py::isinstance<py::bool_>(h)) return Expr::boolean(h.cast<bool>());
  if (py::isinstance<py::int_>(h)) return Expr(h.cast<int64_t>());
  if (py::hasattr(h, "__index__"))
    return Expr(py::int_(py::reinterpret_borrow<py::object>(h)).cast<int64_t>());
  throw py::type_error(cat("expected an int or a symbolic expression (tempo.Expr, tempo.Dim), got ",
                           std::string(py::str(py::type::of(h).attr("__name__")))));
}

Shape to_shape(py::handle h) {
  if (is_expr_like(h)) return Shape(std::vector<Expr>{to_expr(h)});
  std::vector<Expr> dims;
  for (py::handle d : h) dims.push_back(to_expr(d));
  return Shape(std::move(dims));
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple out(s.rank());
  for (size_t k = 0; k < s.rank(); ++k)
    out[k] = s[k].is_const() ? py::cast(s[k].value()) : py::cast(s[k]);
  return out;
}

Dim to_dim(const Context& ctx, py::handle h) {
  if (py::isinstance<Dim>(h)) return h.cast<Dim>();
  if (py::isinstance<Expr>(h)) {
    Expr e = h.cast<Expr>();
    for (const Dim& d : ctx.dims())
      if (d.var.same(e)) return d;
    throw UserError(cat("`", e.str(), "` is not a temporal dimension of this Context"));
  }
  throw py::type_error(cat("expected a temporal dimension (tempo.Dim or its variable), got ",
                           std::string(py::str(py::type::of(h).attr("__name__")))));
}

Dims to_dims(const Context& ctx, py::handle h) {
  if (h.is_none()) return {};
  if (py::isinstance<Dim>(h) || py::isinstance<Expr>(h)) return {to_dim(ctx, h)};
  Dims out;
  for (py::handle d : h) out.push_back(to_dim(ctx, d));
  return out;
}

py::object keeping(py::object result, py::handle owner) {
  if (py::isinstance<RT>(result)) {
    py::detail::keep_alive_impl(result, owner);
  } else {
    for (py::handle h : result)
      if (py::isinstance<RT>(h)) py::detail::keep_alive_impl(h, owner);
  }
  return result;
}

RT to_rt(Context& ctx, py::handle h, const RT* like) {
  if (py::isinstance<RT>(h)) return h.cast<RT>();
  if (py::isinstance<Expr>(h) || py::isinstance<Dim>(h)) return ctx.symbol(to_expr(h));
  if (py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h)) {
    if (like) return ctx.constant(h.cast<double>(), like->shape(), like->dtype());
    return ctx.constant(h.cast<double>());
  }
  return ctx.tensor(to_host(h));
}

namespace {

// ---- RT operators -----------------------------------------------------------------------------

// An operand of an RT operator: another RT, a number, or an expression (as an int64 RT).
struct PyOperand {
  RT rt;
  double value = 0.0;
  PyOperand(const RT& self, py::handle h) {
    if (py::isinstance<RT>(h)) {
      rt = h.cast<RT>();
    } else if (py::isinstance<Expr>(h) || py::isinstance<Dim>(h)) {
      rt = self.ctx().symbol(to_expr(h));
    } else if (py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h) ||
               py::hasattr(h, "__float__")) {
      value = py::float_(py::reinterpret_borrow<py::object>(h)).cast<double>();
    } else {
      throw py::type_error(
          cat("unsupported operand: ", std::string(py::str(py::type::of(h).attr("__name__")))));
    }
  }
  Operand get() const { return rt.defined() ? Operand(rt) : Operand(value); }
};

template <RT (*Fn)(const Operand&, const Operand&)>
RT apply(const RT& a, py::handle b, bool reflected) {
  PyOperand o(a, b);
  return reflected ? Fn(o.get(), Operand(a)) : Fn(Operand(a), o.get());
}

std::vector<int64_t> axes(py::handle h) {
  if (h.is_none()) return {};
  if (py::isinstance<py::int_>(h)) return {h.cast<int64_t>()};
  return h.cast<std::vector<int64_t>>();
}

// x[key]: one entry per temporal dimension (ints, expressions, slices such as t:T, where a
// missing start is 0 and a missing stop the dimension's bound), or one condition.
RT::Indexed index_rt(const RT& x, py::handle key) {
  std::vector<py::handle> items;
  if (py::isinstance<py::tuple>(key)) {
    for (py::handle k : key.cast<py::tuple>()) items.push_back(k);
  } else {
    items.push_back(key);
  }
  std::vector<Expr> entries;
  for (size_t k = 0; k < items.size(); ++k) {
    py::handle item = items[k];
    if (!py::isinstance<py::slice>(item)) {
      entries.push_back(to_expr(item));
      continue;
    }
    py::object start = item.attr("start"), stop = item.attr("stop"), step = item.attr("step");
    if (!step.is_none() && !(py::isinstance<py::int_>(step) && step.cast<int64_t>() == 1))
      throw UserError("temporal slices take no step (x[a:b], not x[a:b:s])");
    Expr hi;
    if (!stop.is_none()) {
      hi = to_expr(stop);
    } else if (k < x.domain().size()) {
      hi = x.domain()[k].bound;
    } else {
      throw UserError(cat("the slice in position ", k, " has no stop and the RT has only ",
                          x.domain().size(), " temporal dimensions"));
    }
    entries.push_back(sym::slice(start.is_none() ? Expr(0) : to_expr(start), hi));
  }
  if (entries.empty()) throw UserError("an empty temporal index");
  RT::Index ix(entries[0]);
  ix.entries = std::move(entries);
  return x[ix];
}

py::object dims_tuple(const Dims& dims) {
  py::tuple out(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) out[k] = py::cast(dims[k]);
  return out;
}

// A UDF's Python callable as a C++ function: inputs as NumPy arrays and the point as a tuple;
// it returns an array (one output), a sequence of arrays, or None (no outputs).
ir::Udf::fn_type udf_function(const std::string& name, py::function fn,
                              std::vector<TensorType> outputs) {
  auto ref = std::make_shared<PyRef>(std::move(fn));
  return [ref, name, outputs](const std::vector<HostTensor>& in,
                              const std::vector<int64_t>& point) {
    py::gil_scoped_acquire gil;
    try {
      py::list args;
      for (const HostTensor& t : in) args.append(to_numpy(t));
      py::object r = ref->get()(args, py::tuple(py::cast(point)));
      std::vector<py::object> items;
      if (outputs.size() == 1 && !py::isinstance<py::tuple>(r) && !py::isinstance<py::list>(r)) {
        items.push_back(r);
      } else if (!r.is_none()) {
        for (py::handle h : r) items.push_back(py::reinterpret_borrow<py::object>(h));
      }
      if (items.size() != outputs.size())
        throw UserError(cat("udf '", name, "' returned ", items.size(), " values but declares ",
                            outputs.size(), " outputs"));
      std::vector<HostTensor> out;
      for (size_t k = 0; k < items.size(); ++k) {
        HostTensor t = to_host(items[k], outputs[k].dtype);
        const Shape& want = outputs[k].shape;
        if (want.is_static() && want.static_dims() != t.shape) {
          Shape got;
          for (int64_t d : t.shape) got.dims.emplace_back(d);
          throw UserError(cat("udf '", name, "' output ", k, " has shape ", got.str(),
                              " but its declared type is ", outputs[k].str()));
        }
        out.push_back(std::move(t));
      }
      return out;
    } catch (py::error_already_set& e) {
      raise_from_callback(e, cat("udf '", name, "'"));
    }
  };
}

std::vector<TensorType> tensor_types(py::handle h) {
  std::vector<TensorType> out;
  if (h.is_none()) return out;
  for (py::handle item : h) {
    if (py::isinstance<TensorType>(item)) {
      out.push_back(item.cast<TensorType>());
      continue;
    }
    py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
    if (t.size() < 1 || t.size() > 2)
      throw py::type_error("an output type is (shape,) or (shape, dtype)");
    out.push_back(TensorType{t.size() == 2 ? to_dtype(t[1]) : DType::Float32, to_shape(t[0])});
  }
  return out;
}

// compile(bounds, **options): bounds keyed by bound name ("T"), tempo.Dim or bound expression.
Bounds to_bounds(const Context& ctx, const py::dict& d) {
  Bounds out;
  for (auto [k, v] : d) {
    Expr b;
    if (py::isinstance<py::str>(k)) {
      std::string name = k.cast<std::string>();
      for (const Dim& dim : ctx.dims())
        if (dim.bound.name() == name) b = dim.bound;
      if (!b.defined()) {
        std::string names;
        for (const Dim& dim : ctx.dims()) names += (names.empty() ? "" : ", ") + dim.bound.name();
        throw UserError(cat("bound '", name, "' is not a bound of this Context (its bounds: ",
                            names.empty() ? std::string("none") : names, ")"));
      }
    } else if (py::isinstance<Dim>(k)) {
      b = k.cast<Dim>().bound;
    } else {
      b = to_expr(k);
    }
    out.emplace_back(b, v.cast<int64_t>());
  }
  return out;
}

// A Python swap policy, policy(candidates, excess) -> indices, as CompileOptions::swap_policy:
// each candidate a dict {"rt": name and line, "bytes": device bytes at the peak}.
SwapPolicy python_swap_policy(py::function fn) {
  auto ref = std::make_shared<PyRef>(std::move(fn));
  return [ref](const std::vector<SwapCandidate>& candidates, int64_t excess) {
    py::gil_scoped_acquire gil;
    try {
      py::list c;
      for (const SwapCandidate& s : candidates) {
        py::dict d;
        d["rt"] = s.rt;
        d["bytes"] = s.bytes;
        c.append(d);
      }
      std::vector<size_t> picked;
      for (py::handle h : ref->get()(c, excess)) {
        const int64_t k = h.cast<int64_t>();
        if (k < 0 || k >= static_cast<int64_t>(candidates.size()))
          throw UserError(cat("swap_policy returned ", k, ", not the index of one of the ",
                              candidates.size(), " candidates"));
        picked.push_back(static_cast<size_t>(k));
      }
      return picked;
    } catch (py::error_already_set& e) {
      raise_from_callback(e, "swap_policy");
    } catch (const py::cast_error&) {
      throw UserError("swap_policy must return a list of candidate indices (ints)");
    }
  };
}

std::vector<int64_t> to_point(py::handle h) {
  if (h.is_none()) return {};
  if (py::isinstance<py::int_>(h)) return {h.cast<int64_t>()};
  return h.cast<std::vector<int64_t>>();
}

}  // namespace

const std::vector<Keyword<CompileOptions>>& compile_keywords() {
  using O = CompileOptions;
  static const std::vector<Keyword<O>> table = {
      keyword("deallocate", &O::deallocate),
      keyword("proximity", &O::proximity),
      keyword("whole_component", &O::whole_component),
      keyword("fuse", &O::fuse),
      keyword("codegen", &O::codegen),
      {"loop_schedules",
       [](O& o, py::handle value) {
         loops::set_loop_schedules(o, value.cast<std::string>(), "loop_schedules");
       }},
      {"rewrites",
       [](O& o, py::handle value) {
         rewrite::set_rewrites(o, value.cast<std::string>(), "rewrites");
       }},
      keyword("block_stores", &O::block_stores),
      keyword("donation", &O::donation),
      keyword("verbose", &O::verbose),
      keyword("profile", &O::profile),
      keyword("device", &O::device),
      {"memory_budget",
       [](O& o, py::handle value) {
         o.memory_budget = py::isinstance<py::str>(value)
                               ? parse_bytes(value.cast<std::string>(), "memory_budget")
                               : value.cast<int64_t>();
       }},
      keyword("memory_timeline", &O::memory_timeline),
      {"schedule_memory_limit",
       [](O& o, py::handle value) {
         o.schedule_memory_limit =
             py::isinstance<py::str>(value)
                 ? parse_bytes(value.cast<std::string>(), "schedule_memory_limit")
                 : value.cast<int64_t>();
       }},
      keyword("schedule_time_limit", &O::schedule_time_limit),
      keyword("schedule_cache", &O::schedule_cache),
      keyword("dump", &O::dump),
      keyword("dump_dir", &O::dump_dir),
      {"swap_policy",
       [](O& o, py::handle value) {
         if (!PyCallable_Check(value.ptr()))
           throw py::type_error(
               "swap_policy must be callable: policy(candidates, excess) -> indices");
         o.swap_policy = python_swap_policy(py::reinterpret_borrow<py::function>(value));
       }},
      keyword("seed", &O::seed),
      {"no_pass",  // a pass name, "all", or a list of them
       [](O& o, py::handle value) {
         if (py::isinstance<py::str>(value)) {
           o.passes.set(value.cast<std::string>(), false);
         } else {
           for (py::handle p : value) o.passes.set(p.cast<std::string>(), false);
         }
       }},
      {"tiles",  // {"t": 64}
       [](O& o, py::handle value) {
         for (auto [dim, size] : value.cast<py::dict>())
           o.passes.tiles.emplace_back(dim.cast<std::string>(), size.cast<int64_t>());
       }},
      {"tile_above_bytes",
       [](O& o, py::handle value) { o.passes.tile_above_bytes = value.cast<int64_t>(); }},
      {"static_tiles", [](O& o, py::handle value) { o.passes.static_tiles = value.cast<bool>(); }},
  };
  return table;
}

namespace {

// Data types, also as tempo.float32 and the like.
void bind_dtypes(py::module_& m) {
  py::enum_<DType>(m, "DType")
      .value("bool", DType::Bool)
      .value("int32", DType::Int32)
      .value("int64", DType::Int64)
      .value("float16", DType::Float16)
      .value("bfloat16", DType::BFloat16)
      .value("float32", DType::Float32)
      .value("float64", DType::Float64)
      .export_values();
  m.attr("bool_") = DType::Bool;
}

// Symbolic expressions and temporal dimensions, with operators; tempo.min and tempo.max.
void bind_expr(py::module_& m) {
  py::class_<Expr> expr(m, "Expr", "A symbolic integer or boolean expression over dims.");
  expr.def(py::init([](int64_t v) { return Expr(v); }))
      .def("__str__", &Expr::str)
      .def("__repr__", [](const Expr& e) { return "Expr(" + e.str() + ")"; })
      .def("__hash__", [](const Expr& e) { return e.hash(); })
      // Python asks `a == b` for a truth value in `in`, list.index and dict lookups: there it
      // is structural equality. Any other expression has no value before the program runs.
      .def("__bool__",
           [](const Expr& e) -> bool {
             if (e.is_bool_const()) return e.value() != 0;
             if (e.op() == sym::Op::Eq) return e.arg(0).same(e.arg(1));
             if (e.op() == sym::Op::Ne) return !e.arg(0).same(e.arg(1));
             throw py::type_error(cat("the symbolic expression `", e.str(),
                                      "` has no truth value (use tempo.min/max/where)"));
           })
      .def("same", &Expr::same, "Structural equality.")
      .def_property_readonly("is_const", [](const Expr& e) { return e.is_const(); })
      .def("__int__", [](const Expr& e) {
        if (!e.is_const()) throw py::type_error(cat("`", e.str(), "` is not a constant"));
        return e.value();
      });
  py::class_<Dim> dim(m, "Dim",
                      "A temporal dimension: a variable and its bound (0 <= var < bound). "
                      "Behaves as its variable in expressions; `t, T = ctx.dim('t', 'T')` "
                      "unpacks it.");
  dim.def_readonly("var", &Dim::var)
      .def_readonly("bound", &Dim::bound)
      .def_property_readonly("name", &Dim::name)
      .def("__iter__", [](const Dim& d) { return py::iter(py::make_tuple(d.var, d.bound)); })
      .def("__hash__", [](const Dim& d) { return d.var.hash(); })
      .def("__str__", [](const Dim& d) { return d.var.str(); })
      .def("__repr__",
           [](const Dim& d) { return cat("Dim(", d.var.str(), ", bound ", d.bound.str(), ")"); });
  // Arithmetic and comparisons build expressions on Expr and Dim alike.
  auto expr_ops = [](auto& cls) {
    using E = const Expr&;
    auto def2 = [&](const char* name, const char* rname, Expr (*f)(E, E)) {
      cls.def(
          name, [f](py::handle a, py::handle b) { return f(to_expr(a), to_expr(b)); },
          py::is_operator());
      if (rname)
        cls.def(
            rname, [f](py::handle a, py::handle b) { return f(to_expr(b), to_expr(a)); },
            py::is_operator());
    };
    def2("__add__", "__radd__", [](E a, E b) { return a + b; });
    def2("__sub__", "__rsub__", [](E a, E b) { return a - b; });
    def2("__mul__", "__rmul__", [](E a, E b) { return a * b; });
    def2("__floordiv__", "__rfloordiv__", [](E a, E b) { return sym::floordiv(a, b); });
    def2("__mod__", "__rmod__", [](E a, E b) { return a % b; });
    def2("__eq__", nullptr, [](E a, E b) { return a == b; });
    def2("__ne__", nullptr, [](E a, E b) { return a != b; });
    def2("__lt__", nullptr, [](E a, E b) { return a < b; });
    def2("__le__", nullptr, [](E a, E b) { return a <= b; });
    def2("__gt__", nullptr, [](E a, E b) { return a > b; });
    def2("__ge__", nullptr, [](E a, E b) { return a >= b; });
    def2("__and__", "__rand__", [](E a, E b) { return a && b; });
    def2("__or__", "__ror__", [](E a, E b) { return a || b; });
    cls.def("__neg__", [](py::handle a) { return -to_expr(a); });
    cls.def("__invert__", [](py::handle a) { return !to_expr(a); });
  };
  expr_ops(expr);
  expr_ops(dim);
  m.def(
      "min",
      [](py::args args) {
        std::vector<Expr> es;
        for (py::handle a : args) es.push_back(to_expr(a));
        return sym::min(std::move(es));
      },
      "The minimum of symbolic expressions.");
  m.def(
      "max",
      [](py::args args) {
        std::vector<Expr> es;
        for (py::handle a : args) es.push_back(to_expr(a));
        return sym::max(std::move(es));
      },
      "The maximum of symbolic expressions.");
}

void bind_tensor_type(py::module_& m) {
  py::class_<TensorType>(m, "TensorType")
      .def(py::init([](py::handle shape, py::handle dtype) {
             return TensorType{to_dtype(dtype), to_shape(shape)};
           }),
           py::arg("shape"), py::arg("dtype") = DType::Float32)
      .def_property_readonly("shape", [](const TensorType& t) { return shape_tuple(t.shape); })
      .def_readonly("dtype", &TensorType::dtype)
      .def("__repr__", &TensorType::str);
}

// RT operators: binary ones with RTs, numbers and expressions in both orders, and unary ones.
void bind_rt_operators(py::class_<RT>& rt) {
  // Binary operators with RTs, numbers and expressions, in both orders.
#define TEMPO_BINARY(name, fn)                                                                   \
  rt.def(                                                                                        \
      name, [](const RT& a, py::handle b) { return apply<fn>(a, b, false); }, guard(), keep_ctx, \
      py::is_operator());
#define TEMPO_REFLECTED(name, fn)                                                               \
  rt.def(                                                                                       \
      name, [](const RT& a, py::handle b) { return apply<fn>(a, b, true); }, guard(), keep_ctx, \
      py::is_operator());
  TEMPO_BINARY("__add__", operator+)
  TEMPO_REFLECTED("__radd__", operator+)
  TEMPO_BINARY("__sub__", operator-)
  TEMPO_REFLECTED("__rsub__", operator-)
  TEMPO_BINARY("__mul__", operator*)
  TEMPO_REFLECTED("__rmul__", operator*)
  TEMPO_BINARY("__truediv__", operator/)
  TEMPO_REFLECTED("__rtruediv__", operator/)
  TEMPO_BINARY("__eq__", operator==)
  TEMPO_BINARY("__ne__", operator!=)
  TEMPO_BINARY("__lt__", operator<)
  TEMPO_BINARY("__le__", operator<=)
  TEMPO_BINARY("__gt__", operator>)
  TEMPO_BINARY("__ge__", operator>=)
  TEMPO_BINARY("__and__", operator&&)
  TEMPO_REFLECTED("__rand__", operator&&)
  TEMPO_BINARY("__or__", operator||)
  TEMPO_REFLECTED("__ror__", operator||)
#undef TEMPO_BINARY
#undef TEMPO_REFLECTED
  rt.def(
        "__neg__", [](const RT& a) { return -a; }, guard(), keep_ctx)
      .def(
          "__pow__", [](const RT& a, py::handle e) { return a.pow(PyOperand(a, e).get()); },
          guard(), keep_ctx)
      .def(
          "__matmul__", [](const RT& a, const RT& b) { return a.matmul(b); }, guard(), keep_ctx)
      .def(
          "__invert__", [](const RT& a) { return a.logical_not(); }, guard(), keep_ctx)
      .def(
          "__abs__", [](const RT& a) { return a.abs(); }, guard(), keep_ctx);
#define TEMPO_UNARY(name) \
  rt.def(                 \
      #name, [](const RT& x) { return x.name(); }, guard(), keep_ctx);
  TEMPO_UNARY(exp)
  TEMPO_UNARY(log)
  TEMPO_UNARY(sqrt)
  TEMPO_UNARY(sin)
  TEMPO_UNARY(cos)
  TEMPO_UNARY(tanh)
  TEMPO_UNARY(sigmoid)
  TEMPO_UNARY(relu)
  TEMPO_UNARY(abs)
  TEMPO_UNARY(sign)
  TEMPO_UNARY(floor)
  TEMPO_UNARY(ceil)
  TEMPO_UNARY(logical_not)
  TEMPO_UNARY(square)
  TEMPO_UNARY(flatten)
  TEMPO_UNARY(detach)
  TEMPO_UNARY(retain)
#undef TEMPO_UNARY
}

// Elementwise functions, reductions and scans.
void bind_rt_math(py::class_<RT>& rt) {
  rt.def(
        "cast", [](const RT& x, py::handle d) { return x.cast(to_dtype(d)); }, guard(), keep_ctx)
      .def(
          "maximum", [](const RT& x, py::handle o) { return x.maximum(PyOperand(x, o).get()); },
          guard(), keep_ctx)
      .def(
          "minimum", [](const RT& x, py::handle o) { return x.minimum(PyOperand(x, o).get()); },
          guard(), keep_ctx)
      .def(
          "clamp", [](const RT& x, double lo, double hi) { return x.clamp(lo, hi); }, guard(),
          keep_ctx)
      // Reductions: dim None (all), an int or a list of ints.
      .def(
          "sum",
          [](const RT& x, py::handle dim, bool keepdim) { return x.sum(axes(dim), keepdim); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, guard(), keep_ctx)
      .def(
          "mean",
          [](const RT& x, py::handle dim, bool keepdim) { return x.mean(axes(dim), keepdim); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, guard(), keep_ctx)
      .def(
          "var",
          [](const RT& x, py::handle dim, bool keepdim) { return x.var(axes(dim), keepdim); },
          py::arg("dim") = py::none(), py::arg("keepdim") = false, guard(), keep_ctx)
      .def(
          "max", [](const RT& x, int64_t dim, bool keepdim) { return x.max(dim, keepdim); },
          py::arg("dim"), py::arg("keepdim") = false, guard(), keep_ctx)
      .def(
          "argmax", [](const RT& x, int64_t dim, bool keepdim) { return x.argmax(dim, keepdim); },
          py::arg("dim"), py::arg("keepdim") = false, guard(), keep_ctx)
      .def(
          "topk",
          [](py::object self, int64_t k, int64_t dim) {
            return keeping(py::cast(self.cast<const RT&>().topk(k, dim)), self);
          },
          py::arg("k"), py::arg("dim") = -1, guard())
      .def(
          "cumsum", [](const RT& x, int64_t dim) { return x.cumsum(dim); }, guard(), keep_ctx)
      .def(
          "softmax", [](const RT& x, int64_t dim) { return x.softmax(dim); }, py::arg("dim") = -1,
          guard(), keep_ctx)
      .def(
          "log_softmax", [](const RT& x, int64_t dim) { return x.log_softmax(dim); },
          py::arg("dim") = -1, guard(), keep_ctx)
      .def(
          "logsumexp",
          [](const RT& x, int64_t dim, bool keepdim) { return x.logsumexp(dim, keepdim); },
          py::arg("dim") = -1, py::arg("keepdim") = false, guard(), keep_ctx)
      .def(
          "discounted_sum",
          [](const RT& x, double gamma, std::optional<RT> done, int64_t dim) {
            return done ? x.discounted_sum(gamma, *done, dim) : x.discounted_sum(gamma, dim);
          },
          py::arg("gamma"), py::arg("done") = py::none(), py::arg("dim") = 0, guard(), keep_ctx)
      .def(
          "discounted_cumsum",
          [](const RT& x, double gamma, std::optional<RT> done, int64_t dim, bool reverse) {
            return done ? x.discounted_cumsum(gamma, *done, dim, reverse)
                        : x.discounted_cumsum(gamma, dim, reverse);
          },
          py::arg("gamma"), py::arg("done") = py::none(), py::arg("dim") = 0,
          py::arg("reverse") = true, guard(), keep_ctx);
}

// Movement, views, spatial indexing (temporal indexing is x[...]) and products.
void bind_rt_views(py::class_<RT>& rt) {
  rt.def(
        "reshape",
        [](const RT& x, py::args shape) {
          return x.reshape(shape.size() == 1 && !is_expr_like(shape[0]) ? to_shape(shape[0])
                                                                        : to_shape(shape));
        },
        guard(), keep_ctx)
      .def(
          "permute",
          [](const RT& x, py::args dims) {
            return x.permute(dims.size() == 1 && !py::isinstance<py::int_>(dims[0])
                                 ? dims[0].cast<std::vector<int64_t>>()
                                 : dims.cast<std::vector<int64_t>>());
          },
          guard(), keep_ctx)
      .def(
          "transpose", [](const RT& x, int64_t a, int64_t b) { return x.transpose(a, b); }, guard(),
          keep_ctx)
      .def(
          "expand", [](const RT& x, py::handle shape) { return x.expand(to_shape(shape)); },
          guard(), keep_ctx)
      .def(
          "squeeze", [](const RT& x, int64_t d) { return x.squeeze(d); }, guard(), keep_ctx)
      .def(
          "unsqueeze", [](const RT& x, int64_t d) { return x.unsqueeze(d); }, guard(), keep_ctx)
      .def(
          "slice",
          [](const RT& x, int64_t dim, py::handle a, py::handle b) {
            return x.slice(dim, to_expr(a), to_expr(b));
          },
          guard(), keep_ctx)
      .def(
          "pad",
          [](const RT& x, int64_t dim, py::handle before, py::handle after, double value) {
            return x.pad(dim, to_expr(before), to_expr(after), value);
          },
          py::arg("dim"), py::arg("before"), py::arg("after"), py::arg("value") = 0.0, guard(),
          keep_ctx)
      .def(
          "flip", [](const RT& x, int64_t d) { return x.flip(d); }, guard(), keep_ctx)
      .def(
          "split",
          [](py::object self, int64_t dim, int64_t size) {
            return keeping(py::cast(self.cast<const RT&>().split(dim, size)), self);
          },
          guard())
      // Spatial indexing (temporal indexing is x[...]).
      .def(
          "index", [](const RT& x, int64_t dim, py::handle i) { return x.index(dim, to_expr(i)); },
          guard(), keep_ctx)
      .def(
          "index_select",
          [](const RT& x, int64_t dim, const RT& i) { return x.index_select(dim, i); }, guard(),
          keep_ctx)
      .def(
          "gather", [](const RT& x, int64_t dim, const RT& i) { return x.gather(dim, i); }, guard(),
          keep_ctx)
      .def(
          "scatter_add",
          [](const RT& x, int64_t dim, const RT& i, const RT& s) {
            return x.scatter_add(dim, i, s);
          },
          guard(), keep_ctx)
      .def(
          "index_add",
          [](const RT& x, int64_t dim, const RT& i, const RT& s) { return x.index_add(dim, i, s); },
          guard(), keep_ctx)
      .def(
          "matmul", [](const RT& a, const RT& b) { return a.matmul(b); }, guard(), keep_ctx)
      .def(
          "conv2d",
          [](const RT& x, const RT& w, int64_t stride, int64_t padding) {
            return x.conv2d(w, stride, padding);
          },
          py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0, guard(), keep_ctx);
}

// RTs: properties, temporal indexing and assignment, operators and methods.
void bind_rt(py::module_& m) {
  py::class_<RT> rt(m, "RT",
                    "A recurrent tensor: a tensor over temporal dimensions. Index it with "
                    "expressions of its dims (x[t - 1], x[0], x[t:T], x[b, i, t + 1]) and "
                    "define a placeholder's branches by assignment (x[0] = ..., "
                    "x[t + 1] = ...).");
  rt.def_property_readonly("dtype", &RT::dtype)
      .def_property_readonly("shape", [](const RT& x) { return shape_tuple(x.shape()); })
      .def_property_readonly("ndim", &RT::rank)
      .def_property_readonly("domain", [](const RT& x) { return dims_tuple(x.domain()); })
      .def_property_readonly("name", &RT::name)
      .def(
          "named", [](RT& x, const std::string& n) { return RT(x.named(n)); }, guard(), keep_ctx)
      .def("__repr__",
           [](const RT& x) {
             std::string dom;
             for (const Dim& d : x.domain()) dom += (dom.empty() ? "" : ", ") + d.name();
             return cat("RT('", x.name(), "', ", TensorType{x.dtype(), x.shape()}.str(), " over (",
                        dom, "))");
           })
      .def("__bool__",
           [](const RT& x) -> bool {
             throw py::type_error(cat("the RT '", x.name(),
                                      "' has no truth value before it runs (use tempo.where)"));
           })
      .def(
          "__getitem__", [](const RT& x, py::handle key) { return RT(index_rt(x, key)); }, guard(),
          keep_ctx)
      .def(
          "__setitem__",
          [](const RT& x, py::handle key, py::handle value) {
            RT::Indexed target = index_rt(x, key);
            target = to_rt(x.ctx(), value, &x);
          },
          guard());
  bind_rt_operators(rt);
  bind_rt_math(rt);
  bind_rt_views(rt);
}

// Functions of RTs: where, cat, stack and grad.
void bind_rt_functions(py::module_& m) {
  m.def(
      "where",
      [](const RT& c, py::handle a, py::handle b) {
        PyOperand x(c, a), y(c, b);
        return where(c, x.get(), y.get());
      },
      guard(), keep_ctx, "Elementwise cond ? a : b (a and b: RTs or numbers).");
  m.def(
      "cat", [](const std::vector<RT>& parts, int64_t dim) { return cat(parts, dim); },
      py::arg("parts"), py::arg("dim") = 0, guard(), py::keep_alive<0, 1>());
  m.def(
      "stack", [](const std::vector<RT>& parts, int64_t dim) { return stack(parts, dim); },
      py::arg("parts"), py::arg("dim") = 0, guard(), py::keep_alive<0, 1>());
  m.def(
      "grad",
      [](py::object loss, const std::vector<RT>& wrt) {
        return keeping(py::cast(grad(loss.cast<const RT&>(), wrt)), loss);
      },
      py::arg("loss"), py::arg("wrt"), guard(),
      "Gradients of `loss` (a scalar per point) with respect to each RT in `wrt`, as new "
      "RTs of the same program.");
}

void bind_executable(py::module_& m) {
  py::class_<Executable>(m, "Executable", "A compiled program (Context.compile).")
      .def(
          "run", [](Executable& e) { without_gil([&] { e.run(); }); },
          "Runs the whole schedule once (the GIL is released; Python UDFs re-take it).")
      .def(
          "get",
          [](const Executable& e, const RT& x, py::handle point) {
            return to_numpy(e.get(x, to_point(point)));
          },
          py::arg("rt"), py::arg("point") = py::none(),
          "The value of a retained RT at a point of its domain, as a NumPy array.")
      .def("memory",
           [](const Executable& e) {
             MemoryStats s = e.memory();
             py::dict d;
             d["live_bytes"] = s.live_bytes;
             d["peak_bytes"] = s.peak_bytes;
             d["host_peak_bytes"] = s.host_peak_bytes;
             return d;
           })
      .def_property_readonly("schedule", &Executable::schedule_str)
      .def_property_readonly("ops_executed", &Executable::ops_executed)
      .def("profile_report", &Executable::profile_report, py::arg("top_ops") = 12);
}

void bind_context(py::module_& m) {
  py::class_<Context>(m, "Context", "A program: its temporal dimensions and its ops.")
      .def(py::init<>())
      .def(
          "dim",
          [](Context& c, const std::string& var, const std::string& bound) {
            return c.dim(var, bound);
          },
          py::arg("var"), py::arg("bound"), guard(),
          "A temporal dimension: `t = ctx.dim('t', 'T')` or `t, T = ctx.dim('t', 'T')`.")
      .def_property_readonly("dims", [](const Context& c) { return dims_tuple(c.dims()); })
      .def(
          "constant",
          [](Context& c, double v, py::handle shape, py::handle dtype, py::handle domain) {
            return c.constant(v, shape.is_none() ? Shape() : to_shape(shape), to_dtype(dtype),
                              to_dims(c, domain));
          },
          py::arg("value"), py::arg("shape") = py::none(), py::arg("dtype") = DType::Float32,
          py::arg("domain") = py::none(), guard(), keep_ctx)
      .def(
          "zeros",
          [](Context& c, py::handle shape, py::handle dtype) {
            return c.zeros(to_shape(shape), to_dtype(dtype));
          },
          py::arg("shape"), py::arg("dtype") = DType::Float32, guard(), keep_ctx)
      .def(
          "ones",
          [](Context& c, py::handle shape, py::handle dtype) {
            return c.ones(to_shape(shape), to_dtype(dtype));
          },
          py::arg("shape"), py::arg("dtype") = DType::Float32, guard(), keep_ctx)
      .def(
          "rand_uniform",
          [](Context& c, py::handle shape, py::handle domain, py::handle dtype) {
            return c.rand_uniform(to_shape(shape), to_dims(c, domain), to_dtype(dtype));
          },
          py::arg("shape"), py::arg("domain") = py::none(), py::arg("dtype") = DType::Float32,
          guard(), keep_ctx)
      .def(
          "rand_normal",
          [](Context& c, py::handle shape, py::handle domain, py::handle dtype) {
            return c.rand_normal(to_shape(shape), to_dims(c, domain), to_dtype(dtype));
          },
          py::arg("shape"), py::arg("domain") = py::none(), py::arg("dtype") = DType::Float32,
          guard(), keep_ctx)
      .def(
          "arange",
          [](Context& c, py::handle n, py::handle dtype) {
            return c.arange(to_expr(n), to_dtype(dtype));
          },
          py::arg("n"), py::arg("dtype") = DType::Int64, guard(), keep_ctx)
      .def(
          "symbol", [](Context& c, py::handle e) { return c.symbol(to_expr(e)); }, guard(),
          keep_ctx, "The value of a symbolic expression (e.g. t, or T - t) as an int64 RT.")
      .def(
          "tensor",
          [](Context& c, py::handle value, py::handle dtype) {
            return c.tensor(dtype.is_none() ? to_host(value) : to_host(value, to_dtype(dtype)));
          },
          py::arg("value"), py::arg("dtype") = py::none(), guard(), keep_ctx,
          "A constant tensor with the contents of a NumPy array (or anything numpy.asarray "
          "takes).")
      .def(
          "placeholder",
          [](Context& c, py::handle shape, py::handle domain, const std::string& name,
             py::handle dtype) {
            return c.placeholder(TensorType{to_dtype(dtype), to_shape(shape)}, to_dims(c, domain),
                                 name);
          },
          py::arg("shape"), py::arg("domain"), py::arg("name") = "",
          py::arg("dtype") = DType::Float32, guard(), keep_ctx,
          "A branching RT over `domain`, defined by assigning to its indexed forms.")
      .def(
          "udf",
          [](py::object self, const std::string& name, py::function fn,
             const std::vector<RT>& inputs, py::handle outputs, py::handle domain) {
            Context& c = self.cast<Context&>();
            std::vector<TensorType> types = tensor_types(outputs);
            std::vector<RT> rts = c.udf(name, udf_function(name, std::move(fn), types), inputs,
                                        types, to_dims(c, domain));
            return keeping(py::tuple(py::cast(rts)), self);
          },
          py::arg("name"), py::arg("fn"), py::arg("inputs") = std::vector<RT>{},
          py::arg("outputs") = py::list(), py::arg("domain") = py::none(), guard(),
          "Runs the Python callable fn(inputs: list of arrays, point: tuple) at every point "
          "of `domain`; it returns an array per output type in `outputs` ((shape, dtype) "
          "pairs). Returns the output RTs as a tuple.")
      .def(
          "compile",
          [](Context& c, py::handle bounds, py::kwargs kw) {
            Bounds b = bounds.is_none() ? Bounds{} : to_bounds(c, bounds.cast<py::dict>());
            CompileOptions o;
            set_keywords(compile_keywords(), kw, o, "compile");
            return without_gil([&] { return compile(c, b, o); });
          },
          py::arg("bounds") = py::none(), guard(), keep_ctx,
          "Compiles the program with values for its bounds ({'T': 100} or {T: 100}) and "
          "options (deallocate, proximity, fuse, codegen, loop_schedules, rewrites, block_stores, "
          "donation, "
          "memory_budget, memory_timeline, schedule_memory_limit, schedule_time_limit, "
          "schedule_cache, swap_policy, seed, device, verbose, profile, dump, "
          "dump_dir, no_pass, tiles, tile_above_bytes, static_tiles). dump names compile "
          "stages whose result is written ('passes,schedule' or 'all'). swap_policy(candidates, excess) -> indices "
          "chooses what to swap under memory_budget: candidates are dicts {'rt', 'bytes'}. "
          "loop_schedules: 'measured' (default), 'rows', 'columns' or 'learned:FILE' (a model "
          "from `tempo loops schedules`). rewrites: 'none' (default), 'search' (TASO's search "
          "under measured op costs), 'learned' or 'world-model' (RLFlow's agents, trained as "
          "it compiles) or 'learned:FILE' (an agent saved by `tempo rewrite train`).");
}

}  // namespace

void bind_core(py::module_& m) {
  bind_dtypes(m);
  bind_expr(m);
  bind_tensor_type(m);
  bind_rt(m);
  bind_rt_functions(m);
  bind_executable(m);
  bind_context(m);
}

}  // namespace tempo::python
