#include "ir/types.h"

#include <cmath>

#include "util/error.h"

namespace tempo::ir {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::Int32: return "i32";
    case DType::Int64: return "i64";
    case DType::Float32: return "f32";
    case DType::Float64: return "f64";
  }
  return "?";
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::Bool: return 1;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Float32: return 4;
    case DType::Float64: return 8;
  }
  return 0;
}

bool is_floating(DType d) { return d == DType::Float32 || d == DType::Float64; }

DType promote(DType a, DType b) {
  // The enum is declared in promotion order.
  return static_cast<uint8_t>(a) >= static_cast<uint8_t>(b) ? a : b;
}

// ---- Shape ---------------------------------------------------------------------------------

bool Shape::is_static() const {
  for (const Expr& d : dims)
    if (!d.is_const()) return false;
  return true;
}

std::vector<int64_t> Shape::static_dims() const {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Expr& d : dims) {
    TEMPO_ASSERT(d.is_const(), "shape ", str(), " is not static");
    out.push_back(d.value());
  }
  return out;
}

bool Shape::same(const Shape& o) const {
  if (dims.size() != o.dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!dims[i].same(o.dims[i])) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].str();
  }
  return s + ")";
}

std::string TensorType::str() const { return std::string(dtype_name(dtype)) + shape.str(); }

// ---- HostTensor ----------------------------------------------------------------------------

namespace {
int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw UserError(cat("negative tensor dimension ", d));
    n *= d;
  }
  return n;
}
}  // namespace

HostTensor::HostTensor(DType dt, std::vector<int64_t> shp) : dtype(dt), shape(std::move(shp)) {
  data.assign(static_cast<size_t>(numel_of(shape)) * dtype_size(dtype), 0);
}

HostTensor HostTensor::scalar(double v, DType dt) {
  HostTensor t(dt, {});
  t.set(0, v);
  return t;
}

namespace {

// Copies the values in without zero-filling first (observations can be megabytes a step).
template <typename T>
HostTensor host_from(const std::vector<T>& v, DType dt, std::vector<int64_t> shp) {
  HostTensor t;
  t.dtype = dt;
  t.shape = std::move(shp);
  if (static_cast<int64_t>(v.size()) != t.numel())
    throw UserError(cat("HostTensor::from: ", v.size(), " values for a shape of ", t.numel(),
                        " elements"));
  const auto* bytes = reinterpret_cast<const uint8_t*>(v.data());
  t.data.assign(bytes, bytes + v.size() * sizeof(T));
  return t;
}

}  // namespace

HostTensor HostTensor::from(const std::vector<float>& v, std::vector<int64_t> shp) {
  return host_from(v, DType::Float32, std::move(shp));
}

HostTensor HostTensor::from(const std::vector<int64_t>& v, std::vector<int64_t> shp) {
  return host_from(v, DType::Int64, std::move(shp));
}

int64_t HostTensor::numel() const { return numel_of(shape); }

double HostTensor::at(int64_t i) const {
  switch (dtype) {
    case DType::Bool: return ptr<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::Int32: return ptr<int32_t>()[i];
    case DType::Int64: return static_cast<double>(ptr<int64_t>()[i]);
    case DType::Float32: return ptr<float>()[i];
    case DType::Float64: return ptr<double>()[i];
  }
  return 0.0;
}

void HostTensor::set(int64_t i, double v) {
  switch (dtype) {
    case DType::Bool: ptr<uint8_t>()[i] = v != 0.0; break;
    case DType::Int32: ptr<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::Int64: ptr<int64_t>()[i] = static_cast<int64_t>(v); break;
    case DType::Float32: ptr<float>()[i] = static_cast<float>(v); break;
    case DType::Float64: ptr<double>()[i] = v; break;
  }
}

std::vector<double> HostTensor::to_vector() const {
  int64_t n = numel();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = at(i);
  return out;
}

}  // namespace tempo::ir
