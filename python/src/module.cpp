// The extension module tempo._tempo; the package tempo (python/tempo/) re-exports it.
#include "bindings.h"

PYBIND11_MODULE(_tempo, m) {
  namespace py = pybind11;
  using namespace tempo::python;
  m.doc() = "Tempo: recurrent-tensor programs, compiled and run by a C++ system.";
  py::register_exception<tempo::UserError>(m, "UserError", PyExc_ValueError);
  py::register_exception<tempo::InternalError>(m, "InternalError", PyExc_RuntimeError);
  // Frames in the package's own Python files are not the user's line.
  m.def("_set_package_dir", &PythonCaller::set_package_dir);
  bind_core(m);
  bind_libs(m);
}
