#include "ir/types.h"

#include <bit>
#include <cmath>

#include "util/error.h"
#include "util/huge_pages.h"

namespace tempo::ir {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::Int32: return "i32";
    case DType::Int64: return "i64";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
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
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
    case DType::Float32: return 4;
    case DType::Float64: return 8;
  }
  return 0;
}

bool is_floating(DType d) { return d == DType::Float32 || d == DType::Float64 || is_half(d); }

bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

DType promote(DType a, DType b) {
  // Neither half type holds the other's values.
  if (is_half(a) && is_half(b) && a != b) return DType::Float32;
  // The enum is declared in promotion order.
  return static_cast<uint8_t>(a) >= static_cast<uint8_t>(b) ? a : b;
}

// bfloat16 is the top half of a float32.
float bf16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // nan
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// IEEE half precision: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000 | (mant << 13);  // inf, nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: mant * 2^-24, exact in float32
    bits = sign | std::bit_cast<uint32_t>(std::ldexp(static_cast<float>(mant), -24));
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_f16(float f) {
  const uint16_t sign = static_cast<uint16_t>((std::bit_cast<uint32_t>(f) >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (a != a) return static_cast<uint16_t>(sign | 0x7E00);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to inf
  if (a < 6.103515625e-05f) {
    // Subnormal: a multiple of 2^-24 (a * 2^24 is exact), rounded to nearest even.
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t m = std::bit_cast<uint32_t>(a);
  m += 0xFFF + ((m >> 13) & 1);  // round the 13 dropped mantissa bits to nearest even
  return static_cast<uint16_t>(sign | (((m >> 23) - 112) << 10) | ((m >> 13) & 0x3FF));
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

// Room for n bytes, allocated but not yet written, so that large tensors (weights streamed by the
// matmuls) get huge pages.
std::vector<uint8_t> room_for(size_t n) {
  std::vector<uint8_t> v;
  v.reserve(n);
  advise_huge_pages(v.data(), n);
  return v;
}

}  // namespace

HostTensor::HostTensor(DType dt, std::vector<int64_t> shp) : dtype(dt), shape(std::move(shp)) {
  const size_t bytes = static_cast<size_t>(numel_of(shape)) * dtype_size(dtype);
  data = room_for(bytes);
  data.resize(bytes);
}

HostTensor::HostTensor(const HostTensor& o)
    : dtype(o.dtype), shape(o.shape), data(room_for(o.data.size())) {
  data.assign(o.data.begin(), o.data.end());
}

HostTensor& HostTensor::operator=(const HostTensor& o) {
  if (this != &o) *this = HostTensor(o);
  return *this;
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
    case DType::Float16: return f16_to_float(ptr<uint16_t>()[i]);
    case DType::BFloat16: return bf16_to_float(ptr<uint16_t>()[i]);
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
    case DType::Float16: ptr<uint16_t>()[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::BFloat16: ptr<uint16_t>()[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::Float32: ptr<float>()[i] = static_cast<float>(v); break;
    case DType::Float64: ptr<double>()[i] = v; break;
  }
}

HostTensor HostTensor::to(DType dt) const {
  if (dt == dtype) return *this;
  HostTensor out(dt, shape);
  const int64_t n = numel();
  // The common cases, without going through double.
  if (dtype == DType::Float32 && is_half(dt)) {
    const float* src = ptr<float>();
    uint16_t* dst = out.ptr<uint16_t>();
    for (int64_t k = 0; k < n; ++k)
      dst[k] = dt == DType::Float16 ? float_to_f16(src[k]) : float_to_bf16(src[k]);
    return out;
  }
  if (is_half(dtype) && dt == DType::Float32) {
    const uint16_t* src = ptr<uint16_t>();
    float* dst = out.ptr<float>();
    for (int64_t k = 0; k < n; ++k)
      dst[k] = dtype == DType::Float16 ? f16_to_float(src[k]) : bf16_to_float(src[k]);
    return out;
  }
  for (int64_t k = 0; k < n; ++k) out.set(k, at(k));
  return out;
}

std::vector<double> HostTensor::to_vector() const {
  int64_t n = numel();
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = at(i);
  return out;
}

}  // namespace tempo::ir
