// The on-disk cache of generated kernels: built once, loaded after, and a corrupted or stale
// entry rebuilt rather than loaded.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backend/kernel_cache.h"

namespace tempo::backend {
namespace {

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Per process: the suite also runs as no_passes.*, possibly at the same time.
    dir_ = ::testing::TempDir() + "tempo_kernel_cache_test." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    setenv("TEMPO_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TEMPO_CACHE_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

const char* kSource = "extern \"C\" int add_one(int x) { return x + 1; }\n";

int call(const KernelLibrary& lib) {
  auto f = reinterpret_cast<int (*)(int)>(lib.symbol("add_one"));
  EXPECT_NE(f, nullptr);
  return f ? f(41) : -1;
}

TEST_F(KernelCacheTest, CompilesOnceThenLoadsFromTheCache) {
  auto first = KernelLibrary::load(kSource);
  EXPECT_FALSE(first->from_cache());
  EXPECT_EQ(call(*first), 42);
  auto second = KernelLibrary::load(kSource);
  EXPECT_TRUE(second->from_cache());
  EXPECT_EQ(second->path(), first->path());
  EXPECT_EQ(call(*second), 42);
  EXPECT_EQ(kernel_cache_dir(), dir_);
}

TEST_F(KernelCacheTest, CorruptedEntryIsRebuiltNotLoaded) {
  std::string path = KernelLibrary::load(kSource)->path();
  {
    std::ofstream out(path, std::ios::trunc);
    out << "not a shared object";
  }
  auto lib = KernelLibrary::load(kSource);
  EXPECT_FALSE(lib->from_cache());
  EXPECT_EQ(call(*lib), 42);
}

TEST_F(KernelCacheTest, StaleEntryWithAnotherKeyIsRebuilt) {
  // A library of other source under this source's name: loads, but identifies itself wrongly.
  std::string path = KernelLibrary::load(kSource)->path();
  std::string other = KernelLibrary::load("extern \"C\" int add_one(int x) { return x + 2; }\n")
                          ->path();
  std::filesystem::copy_file(other, path, std::filesystem::copy_options::overwrite_existing);
  auto lib = KernelLibrary::load(kSource);
  EXPECT_FALSE(lib->from_cache());
  EXPECT_EQ(call(*lib), 42);
}

TEST_F(KernelCacheTest, CompilerErrorsAreReported) {
  try {
    KernelLibrary::load("this is not C++");
    FAIL() << "expected a compile error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel compiler failed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tempo::backend
