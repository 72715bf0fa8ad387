// Point stores and memory accounting, with a stand-in value type (no backend).
#include <gtest/gtest.h>

#include "runtime/tensor_store.h"
#include "util/error.h"

namespace tempo::runtime {
namespace {

class FakeValue : public Value {
 public:
  explicit FakeValue(int64_t n) : n_(n) {}
  int64_t nbytes() const override { return n_; }

 private:
  int64_t n_;
};

ValuePtr val(int64_t n) {
  return std::make_shared<FakeValue>(n);
}

// A view of another value's storage (as a reshape or a transpose is).
class FakeView : public Value {
 public:
  explicit FakeView(ValuePtr base) : base_(std::move(base)) {}
  int64_t nbytes() const override { return base_->nbytes(); }
  const void* storage() const override { return base_->storage(); }
  int64_t storage_nbytes() const override { return base_->storage_nbytes(); }

 private:
  ValuePtr base_;
};

TEST(MemoryAccount, ViewsOfOneStorageCountOnce) {
  MemoryAccount mem;
  PointStore a("RT 'x'", 1, &mem), b("RT 'reshape'", 1, &mem);
  int64_t bounds[] = {2};
  a.reset(bounds);
  b.reset(bounds);
  int64_t p[] = {0};
  ValuePtr x = val(100);
  a.put(p, x);
  b.put(p, std::make_shared<FakeView>(x));
  EXPECT_EQ(mem.live_bytes, 100);
  EXPECT_TRUE(a.erase(p));
  EXPECT_EQ(mem.live_bytes, 100);  // the view still holds the storage
  EXPECT_TRUE(b.erase(p));
  EXPECT_EQ(mem.live_bytes, 0);
  EXPECT_EQ(mem.peak_bytes, 100);
  EXPECT_EQ(b.peak_bytes(), 100);
}

TEST(PointStore, PutGetErase) {
  MemoryAccount mem;
  PointStore s("RT 'x'", 2, &mem);
  int64_t bounds[] = {3, 4};
  s.reset(bounds);
  int64_t p[] = {1, 2};
  ValuePtr v = val(8);
  s.put(p, v);
  EXPECT_EQ(s.get(p).get(), v.get());
  EXPECT_TRUE(s.contains(p));
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(mem.live_bytes, 8);
  int64_t q[] = {2, 3};
  EXPECT_FALSE(s.contains(q));
  EXPECT_TRUE(s.erase(p));
  EXPECT_FALSE(s.erase(p));
  EXPECT_EQ(mem.live_bytes, 0);
  EXPECT_EQ(mem.peak_bytes, 8);
  EXPECT_EQ(s.size(), 0u);
}

TEST(PointStore, MissingReadIsInternalErrorNamingTheOp) {
  MemoryAccount mem;
  PointStore s("RT 'acc' (Add) created at prog.cpp:3", 1, &mem);
  int64_t bounds[] = {5};
  s.reset(bounds);
  int64_t p[] = {4};
  try {
    s.get(p);
    FAIL();
  } catch (const InternalError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("RT 'acc'"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  }
  int64_t out[] = {5};
  EXPECT_THROW(s.get(out), InternalError);
  EXPECT_FALSE(s.contains(out));
}

TEST(PointStore, ScalarDomain) {
  MemoryAccount mem;
  PointStore s("c", 0, &mem);
  s.reset(nullptr);
  s.put(nullptr, val(4));
  EXPECT_EQ(s.get(nullptr)->nbytes(), 4);
  s.put(nullptr, val(6));  // overwrite releases the old value
  EXPECT_EQ(mem.live_bytes, 6);
  EXPECT_EQ(mem.peak_bytes, 6);
}

TEST(PointStore, LargeDomainUsesSparseStorage) {
  MemoryAccount mem;
  PointStore s("big", 3, &mem);
  int64_t bounds[] = {1000, 1000, 1000};
  s.reset(bounds);
  for (int64_t i = 0; i < 100; ++i) {
    int64_t p[] = {i * 7, 999 - i, i};
    s.put(p, val(1));
  }
  EXPECT_EQ(s.size(), 100u);
  int64_t p[] = {7 * 50, 949, 50};
  EXPECT_TRUE(s.contains(p));
  EXPECT_TRUE(s.erase(p));
  EXPECT_EQ(mem.live_bytes, 99);
}

TEST(PointStore, ResetClearsEntries) {
  MemoryAccount mem;
  PointStore s("x", 1, &mem);
  int64_t bounds[] = {10};
  s.reset(bounds);
  for (int64_t i = 0; i < 10; ++i) s.put(&i, val(2));
  EXPECT_EQ(mem.live_bytes, 20);
  s.reset(bounds);
  EXPECT_EQ(mem.live_bytes, 0);
  EXPECT_EQ(s.size(), 0u);
}

TEST(MemoryAccount, SharedValueCountedOnce) {
  MemoryAccount mem;
  PointStore a("a", 1, &mem), b("b", 1, &mem);
  int64_t bounds[] = {4};
  a.reset(bounds);
  b.reset(bounds);
  ValuePtr v = val(100);
  int64_t p = 1;
  a.put(&p, v);
  b.put(&p, v);
  EXPECT_EQ(mem.live_bytes, 100);
  a.erase(&p);
  EXPECT_EQ(mem.live_bytes, 100);
  b.erase(&p);
  EXPECT_EQ(mem.live_bytes, 0);
  EXPECT_EQ(mem.peak_bytes, 100);
}

}  // namespace
}  // namespace tempo::runtime
