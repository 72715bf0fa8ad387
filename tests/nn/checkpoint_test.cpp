// safetensors encoding, atomic checkpoint sinks over iterations, and restore with init_from.
#include <filesystem>
#include <fstream>

#include "driver/compile.h"
#include "nn/module.h"
#include "nn/nn_util.h"
#include "nn/safetensors.h"
#include "optim/optim.h"
#include "util/error.h"

namespace tempo {
namespace {

namespace fs = std::filesystem;
using nntest::eager;
using nntest::expect_close;
using nntest::host;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tempo_nn_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_all(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

TEST(Safetensors, LayoutIsTheStandardOne) {
  HostTensor a = HostTensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  HostTensor b = HostTensor::from(std::vector<int64_t>{7}, {1});
  std::string bytes = nn::safetensors_encode({{"a", a}, {"b", b}});
  uint64_t len = 0;
  for (int k = 0; k < 8; ++k)
    len |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[k])) << (8 * k);
  EXPECT_EQ(len % 8, 0u);
  std::string header = bytes.substr(8, len);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
            "\"b\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[24,32]}}");
  EXPECT_EQ(bytes.size(), 8 + len + 32);
  float first;
  std::memcpy(&first, bytes.data() + 8 + len, 4);
  EXPECT_EQ(first, 1.0f);
}

TEST(Safetensors, RoundTripThroughAFile) {
  fs::path dir = temp_dir("roundtrip");
  HostTensor a = HostTensor::from(std::vector<float>{1.5f, -2, 3}, {3});
  HostTensor s = HostTensor::scalar(2.25, DType::Float64);
  nn::save((dir / "x.safetensors").string(), {{"layer.0.weight", a}, {"s", s}});
  auto m = nn::load((dir / "x.safetensors").string());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m["layer.0.weight"].shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(m["layer.0.weight"].to_vector(), (std::vector<double>{1.5, -2, 3}));
  EXPECT_EQ(m["s"].dtype, DType::Float64);
  EXPECT_TRUE(m["s"].shape.empty());
  EXPECT_EQ(m["s"].at(0), 2.25);
  // Nothing but the file itself is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

// A reader opens the header at once and reads tensors one by one: half types as they are or
// widened, and a name the file does not hold is a UserError naming the file.
TEST(Safetensors, ReaderReadsTensorsWhenAskedFor) {
  fs::path dir = temp_dir("reader");
  HostTensor a = HostTensor::from(std::vector<float>{1.5f, -2, 3, 0.25f}, {2, 2});
  HostTensor h = a.to(DType::BFloat16);
  const std::string file = (dir / "x.safetensors").string();
  const HostTensor empty(DType::Float32, {0, 3});
  nn::save(file, {{"a", a}, {"h", h}, {"e", empty}});
  nn::SafetensorsReader r(file);
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a", "e", "h"}));
  EXPECT_EQ(r.read("e").shape, empty.shape);
  EXPECT_TRUE(r.read("e").data.empty());
  EXPECT_TRUE(nn::load(file).at("e").data.empty());
  ASSERT_NE(r.shape("h"), nullptr);
  EXPECT_EQ(*r.shape("h"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r.shape("b"), nullptr);
  EXPECT_EQ(r.read("h", /*keep_half=*/true).data, h.data);
  EXPECT_EQ(r.read("h").dtype, DType::Float32);
  EXPECT_EQ(r.read("h").to_vector(), a.to_vector());  // these values are exact in bfloat16
  EXPECT_EQ(r.read("a").data, a.data);
  try {
    r.read("b");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no tensor 'b'"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Safetensors, MissingAndCorruptFilesAreUserErrors) {
  fs::path dir = temp_dir("corrupt");
  auto expect_error = [](const fs::path& p, const std::string& part) {
    try {
      nn::load(p.string());
      FAIL() << "expected a UserError for " << p;
    } catch (const UserError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
      EXPECT_NE(msg.find(part), std::string::npos) << msg;
    }
  };
  expect_error(dir / "missing.safetensors", "no such file");
  write_all(dir / "short.safetensors", "abc");
  expect_error(dir / "short.safetensors", "too short");
  std::string good =
      nn::safetensors_encode({{"w", HostTensor::from(std::vector<float>{1, 2, 3, 4}, {4})}});
  write_all(dir / "truncated.safetensors", good.substr(0, good.size() - 4));
  expect_error(dir / "truncated.safetensors", "outside the data");
  std::string bad_json = good;
  bad_json[9] = '[';
  write_all(dir / "json.safetensors", bad_json);
  expect_error(dir / "json.safetensors", "malformed");
  std::string huge = good;
  huge[7] = 0x7f;
  write_all(dir / "len.safetensors", huge);
  expect_error(dir / "len.safetensors", "exceeds the file size");
  fs::remove_all(dir);

  Context ctx;
  nn::Linear lin(ctx, 2, 2, std::nullopt);
  try {
    lin.init_from("/nonexistent/dir/model.safetensors");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.safetensors"), std::string::npos);
  }
}

// A model trained by SGD over i saves every other iteration; the files hold exactly the
// parameters of those iterations and restore them in a fresh program.
TEST(Checkpoint, SavesUnderConditionAndRestores) {
  fs::path dir = temp_dir("ckpt");
  std::string pattern = (dir / "model_{i}.safetensors").string();
  torch::manual_seed(5);
  torch::Tensor w0 = torch::randn({2, 3}), b0 = torch::randn({2});
  HostTensor w_at_3;
  {
    Context ctx;
    Dim i = ctx.dim("i", "I");
    nn::Linear lin(ctx, 3, 2, i);
    lin.init_from({{"weight", host(w0)}, {"bias", host(b0)}});
    // Gradient of sum(W) and sum(b): all ones; plain SGD moves every entry by -lr per step.
    optim::SGD opt(lin.parameters(), 0.5);
    opt.step({ctx.ones({2, 3}), ctx.ones({2})});
    lin.save(pattern, (i.var + 1) % 2 == 0);
    RT w = RT(lin.weight()).retain();
    Executable exe = compile(ctx, {{i.bound, 4}});
    exe.run();
    w_at_3 = exe.get(w, {3});
    expect_close(eager(w_at_3), w0 - 1.5, "w[3]");
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"model_1.safetensors", "model_3.safetensors"}));
  auto m1 = nn::load((dir / "model_1.safetensors").string());
  expect_close(eager(m1.at("weight")), w0 - 0.5, "saved weight at i = 1");
  expect_close(eager(m1.at("bias")), b0 - 0.5, "saved bias at i = 1");

  Context ctx2;
  Dim i2 = ctx2.dim("i", "I");
  nn::Linear restored(ctx2, 3, 2, i2);
  restored.init_from((dir / "model_3.safetensors").string());
  RT y = restored(ctx2.ones({1, 3})).retain();
  Executable exe2 = compile(ctx2, {{i2.bound, 1}});
  exe2.run();
  torch::Tensor want = torch::ones({1, 3}).matmul(eager(w_at_3).t()) + (b0 - 1.5);
  expect_close(eager(exe2.get(y, {0})), want, "restored forward");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tempo
