// nn::safetensors_decode on any bytes: tensors whose data matches their shape, or a UserError.
#include "fuzz_util.h"
#include "nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  tempo::fuzz::expect_user_errors_only([&] {
    auto tensors = tempo::nn::safetensors_decode(bytes, "fuzz input");
    for (const auto& [name, t] : tensors) {
      int64_t numel = 1;
      for (int64_t d : t.shape)
        tempo::fuzz::check(!__builtin_mul_overflow(numel, d, &numel), "shape fits in int64");
      tempo::fuzz::check(numel == t.numel(), "numel of the shape");
      tempo::fuzz::check(
          t.data.size() == static_cast<size_t>(numel) * tempo::ir::dtype_size(t.dtype),
          "data size matches shape and dtype");
    }
  });
  return 0;
}
