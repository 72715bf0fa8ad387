// Data types, symbolic shapes and host tensors: the values the SDG talks about.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "symbolic/expr.h"

namespace tempo::ir {

// Float16 and BFloat16 are storage types: weights kept at half the bytes, read by matmuls that
// accumulate in float32. Arithmetic on them runs in LibTorch, never in generated loops.
enum class DType : uint8_t { Bool, Int32, Int64, Float16, BFloat16, Float32, Float64 };

const char* dtype_name(DType d);
size_t dtype_size(DType d);
bool is_floating(DType d);
bool is_half(DType d);  // Float16 or BFloat16
// Result type when two dtypes meet in an arithmetic op (bool < int32 < int64 < float16/bfloat16 <
// float32 < float64; float16 with bfloat16 gives float32).
DType promote(DType a, DType b);

// Conversions between float32 and the half types, rounding to nearest even.
float f16_to_float(uint16_t h);
float bf16_to_float(uint16_t h);
uint16_t float_to_f16(float f);
uint16_t float_to_bf16(float f);

// A shape whose sizes are symbolic integer expressions (e.g. `T - t` for a slice t:T).
struct Shape {
  std::vector<Expr> dims;
  Shape() = default;
  Shape(std::vector<Expr> d) : dims(std::move(d)) {}  // NOLINT
  Shape(std::initializer_list<int64_t> d) {
    for (int64_t x : d) dims.emplace_back(x);
  }
  // Symbolic sizes, e.g. {T - t, 3}.
  Shape(std::initializer_list<Expr> d) : dims(d) {}
  size_t rank() const { return dims.size(); }
  const Expr& operator[](size_t i) const { return dims[i]; }
  bool is_static() const;                // every size is a constant
  std::vector<int64_t> static_dims() const;  // requires is_static()
  bool same(const Shape& o) const;
  std::string str() const;  // "(3, T - t)"
};

struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  std::string str() const;  // "f32(3, T - t)"
};

// A dense, contiguous tensor in host memory: what UDFs (environments, loggers, checkpoints)
// consume and produce, and what the executor hands back to users.
struct HostTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // numel * dtype_size(dtype) bytes, row-major

  HostTensor() = default;
  HostTensor(DType dt, std::vector<int64_t> shp);  // zero-filled
  // Large tensors ask for huge pages (util/huge_pages.h), copies too; a move keeps the bytes.
  HostTensor(const HostTensor& o);
  HostTensor& operator=(const HostTensor& o);
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;
  static HostTensor scalar(double v, DType dt = DType::Float32);
  static HostTensor from(const std::vector<float>& v, std::vector<int64_t> shp);
  static HostTensor from(const std::vector<int64_t>& v, std::vector<int64_t> shp);

  int64_t numel() const;
  // The values converted to another dtype (rounded as a cast rounds).
  HostTensor to(DType dt) const;
  template <typename T>
  T* ptr() { return reinterpret_cast<T*>(data.data()); }
  template <typename T>
  const T* ptr() const { return reinterpret_cast<const T*>(data.data()); }
  double at(int64_t flat_index) const;  // any dtype, as double
  void set(int64_t flat_index, double v);
  std::vector<double> to_vector() const;
};

}  // namespace tempo::ir
