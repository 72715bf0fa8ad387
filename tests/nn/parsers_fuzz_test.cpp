// Inputs that the fuzz targets of fuzz/ (json, safetensors) found troublesome: each parses or is
// a UserError naming the problem.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "expect_error.h"
#include "nn/json.h"
#include "nn/safetensors.h"
#include "util/error.h"

namespace tempo {
namespace {

// A safetensors file with this header and `data_bytes` zero bytes of data.
std::string safetensors_file(std::string header, size_t data_bytes) {
  while (header.size() % 8 != 0) header += ' ';
  std::string out;
  for (int b = 0; b < 8; ++b) out += static_cast<char>((header.size() >> (8 * b)) & 0xFF);
  return out + header + std::string(data_bytes, '\0');
}

// A shape whose element count wraps around 2^64 to a small number must not pass for that number.
TEST(SafetensorsFuzz, ShapeProductOverflowIsAnError) {
  // (2^62 + 1) * 4 wraps to 4: four floats of data would have matched the wrapped count.
  const std::string wraps = safetensors_file(
      R"({"x":{"dtype":"F32","shape":[4611686018427387905,4],"data_offsets":[0,16]}})", 16);
  testing::expect_user_error([&] { nn::safetensors_decode(wraps, "'wraps.safetensors'"); },
                             {"'wraps.safetensors'", "tensor 'x'",
                              "shape [4611686018427387905, 4] has too many elements"});
  // 2^62 elements fit in int64, but not their bytes in BF16 (2^63).
  const std::string bytes = safetensors_file(
      R"({"h":{"dtype":"BF16","shape":[4611686018427387904,2],"data_offsets":[0,0]}})", 0);
  testing::expect_user_error([&] { nn::safetensors_decode(bytes, "'h.safetensors'"); },
                             {"tensor 'h'", "too many elements"});
  // A zero dimension anywhere: no data, whatever the other dimensions.
  const std::string empty = safetensors_file(
      R"({"e":{"dtype":"F32","shape":[0,4611686018427387904],"data_offsets":[0,0]}})", 0);
  EXPECT_EQ(nn::safetensors_decode(empty, "'e.safetensors'").at("e").numel(), 0);
}

}  // namespace
}  // namespace tempo
