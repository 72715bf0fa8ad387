// safetensors files with BF16 and F16 tensors (bytes written by hand): they decode to float32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "nn/safetensors.h"
#include "util/error.h"

namespace tempo {
namespace {

// A safetensors file with this header and data.
std::string file_bytes(std::string header, const std::vector<uint16_t>& halves) {
  while (header.size() % 8 != 0) header += ' ';
  std::string out;
  for (int b = 0; b < 8; ++b) out += static_cast<char>((header.size() >> (8 * b)) & 0xFF);
  out += header;
  for (uint16_t h : halves) {
    out += static_cast<char>(h & 0xFF);
    out += static_cast<char>(h >> 8);
  }
  return out;
}

TEST(SafetensorsHalf, Bf16AndF16DecodeToFloat32) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F16","shape":[2,3],"data_offsets":[8,20]}})";
  // BF16: 1, -2.5, 0.15625, 3.0e38 (0x7F62); F16: 1, -2, 65504, 2^-24 (subnormal), -0, inf.
  const std::string bytes = file_bytes(
      header, {0x3F80, 0xC020, 0x3E20, 0x7F62, 0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00});
  auto m = nn::safetensors_decode(bytes, "'half.safetensors'");
  ASSERT_EQ(m.size(), 2u);
  const HostTensor& a = m.at("a");
  EXPECT_EQ(a.dtype, DType::Float32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(a.ptr<float>()[0], 1.0f);
  EXPECT_EQ(a.ptr<float>()[1], -2.5f);
  EXPECT_EQ(a.ptr<float>()[2], 0.15625f);
  EXPECT_FLOAT_EQ(a.ptr<float>()[3], 0x1.C4p+127f);
  const HostTensor& b = m.at("b");
  EXPECT_EQ(b.dtype, DType::Float32);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.ptr<float>()[0], 1.0f);
  EXPECT_EQ(b.ptr<float>()[1], -2.0f);
  EXPECT_EQ(b.ptr<float>()[2], 65504.0f);
  EXPECT_EQ(b.ptr<float>()[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(b.ptr<float>()[4], 0.0f);
  EXPECT_TRUE(std::signbit(b.ptr<float>()[4]));
  EXPECT_EQ(b.ptr<float>()[5], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(nn::safetensors_decode(
      file_bytes(R"({"n":{"dtype":"F16","shape":[],"data_offsets":[0,2]}})", {0x7E00}),
      "n").at("n").ptr<float>()[0]));
}

TEST(SafetensorsHalf, SizesAreCheckedInFileBytes) {
  // 3 BF16 values need 6 bytes; 12 is the float32 size and is wrong.
  const std::string bytes = file_bytes(R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,12]}})",
                                       {1, 2, 3, 4, 5, 6});
  try {
    nn::safetensors_decode(bytes, "'h.safetensors'");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cover 12 bytes but the shape needs 6"), std::string::npos)
        << e.what();
  }
  try {
    nn::safetensors_decode(file_bytes(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", {0}),
                           "'h.safetensors'");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported dtype F8_E4M3"), std::string::npos) << e.what();
  }
  try {
    nn::safetensors_decode(file_bytes(R"({"a":)", {}), "'h.safetensors'");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed safetensors header in 'h.safetensors'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tempo
