// Shared pieces of the Python module: conversions between Python values and Tempo's, the
// location of the calling Python line, and Python objects held by C++ callbacks.
#pragma once

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"
#include "util/error.h"

namespace tempo::python {

namespace py = pybind11;

// A call guard (py::call_guard<PythonCaller>) on every binding that creates RTs: ops created
// during the call record the innermost Python line outside the tempo package, so errors name
// the user's line.
class PythonCaller {
 public:
  PythonCaller();
  static void set_package_dir(const std::string& dir);

 private:
  FrontendLocation guard_;
};

using guard = py::call_guard<PythonCaller>;
// A result keeps self (a Context, or an RT of one) alive, so that its Context outlives it.
inline constexpr py::keep_alive<0, 1> keep_ctx{};
inline constexpr py::keep_alive<1, 2> self_keeps_arg{};  // a new object keeps its first argument

// A Python object kept by C++ (a UDF's callable, an environment) that may be released from a
// thread without the GIL: the release takes it.
class PyRef {
 public:
  explicit PyRef(py::object obj) : obj_(std::move(obj)) {}
  ~PyRef();
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  const py::object& get() const { return obj_; }

 private:
  py::object obj_;
};

// A Python exception raised inside a callback while Tempo ran without the GIL: it is kept here,
// C++ unwinds with a UserError, and the binding that released the GIL re-raises the original
// exception (rethrow_pending_python_error) so that the caller sees its type and traceback.
// Called in a catch of py::error_already_set: keeps the exception and throws a UserError saying
// that `what` (e.g. "udf 'step'") raised it.
[[noreturn]] void raise_from_callback(py::error_already_set& e, const std::string& what);
void rethrow_pending_python_error();  // does nothing if none is pending
// Runs fn without the GIL; a callback's Python exception reaches the caller unchanged.
template <typename F>
auto without_gil(F&& fn) {
  try {
    py::gil_scoped_release release;
    return fn();
  } catch (...) {
    rethrow_pending_python_error();
    throw;
  }
}

// ---- values ----
DType to_dtype(py::handle h);  // tempo.float32, "float32", numpy.float32, numpy.dtype(...)
py::dtype numpy_dtype(DType d);
// A NumPy array (or anything numpy.asarray takes) as a host tensor; without `want`, Python
// floats become float32 and ints int64 (arrays keep their dtype).
HostTensor to_host(py::handle h, std::optional<DType> want = std::nullopt);
py::array to_numpy(const HostTensor& t);

// An int, a tempo.Expr or a tempo.Dim (its variable) as a symbolic expression.
Expr to_expr(py::handle h);
bool is_expr_like(py::handle h);
// A tuple/list of ints and expressions, or a single int, as a shape.
Shape to_shape(py::handle h);
py::tuple shape_tuple(const Shape& s);
// A temporal dimension of ctx: a tempo.Dim or its variable (t of `t, T = ctx.dim("t", "T")`).
Dim to_dim(const Context& ctx, py::handle h);
Dims to_dims(const Context& ctx, py::handle h);  // a sequence of dims (or one)

// `result` (an RT or a sequence of RTs) with each RT keeping `owner` (e.g. its Context) alive.
py::object keeping(py::object result, py::handle owner);

// An RT, or a scalar / expression made into one in ctx (like `x * 2` or `x * t`).
RT to_rt(Context& ctx, py::handle h, const RT* like = nullptr);

// ---- keyword arguments ----
// A keyword argument of a binding that takes **kwargs: its name and how it sets the options.
template <typename Options>
struct Keyword {
  const char* name;
  std::function<void(Options&, py::handle value)> set;
};

// The keyword `name` setting `member` to the value cast to its type.
template <typename Options, typename T>
Keyword<Options> keyword(const char* name, T Options::*member) {
  return {name, [member](Options& o, py::handle value) { o.*member = value.cast<T>(); }};
}

// Sets `options` from `kw` through `table`; an unknown keyword is a TypeError naming `function`
// and listing the table's keywords.
template <typename Options>
void set_keywords(const std::vector<Keyword<Options>>& table, const py::kwargs& kw,
                  Options& options, const char* function) {
  for (auto [key, value] : kw) {
    const std::string k = py::cast<std::string>(key);
    const Keyword<Options>* found = nullptr;
    for (const Keyword<Options>& w : table)
      if (k == w.name) found = &w;
    if (!found) {
      std::string names;
      for (const Keyword<Options>& w : table)
        names += (names.empty() ? "" : ", ") + std::string(w.name);
      throw py::type_error(
          cat(function, "() got an unknown option '", k, "' (options: ", names, ")"));
    }
    found->set(options, value);
  }
}

// The keyword arguments of Context.compile (core.cpp), in the order its errors list them.
const std::vector<Keyword<CompileOptions>>& compile_keywords();

void bind_core(py::module_& m);
void bind_libs(py::module_& m);

}  // namespace tempo::python
