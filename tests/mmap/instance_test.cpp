// Instances: the text format (round trip, malformed files), validation, the generator.
#include "mmap/instance.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "expect_error.h"
#include "util/error.h"

namespace tempo::mmap {
namespace {

namespace fs = std::filesystem;
using testing::expect_user_error;
using testing::user_error_of;

void expect_same(const Instance& a, const Instance& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.capacity, b.capacity);
  ASSERT_EQ(a.supply.size(), b.supply.size());
  for (size_t k = 0; k < a.supply.size(); ++k) EXPECT_DOUBLE_EQ(a.supply[k], b.supply[k]);
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t k = 0; k < a.buffers.size(); ++k) {
    const Buffer &x = a.buffers[k], &y = b.buffers[k];
    EXPECT_EQ(x.size, y.size);
    EXPECT_EQ(x.time, y.time);
    EXPECT_EQ(x.start, y.start);
    EXPECT_EQ(x.end, y.end);
    EXPECT_EQ(x.is_output, y.is_output);
    EXPECT_EQ(x.tensor_id, y.tensor_id);
    EXPECT_EQ(x.alias_id, y.alias_id);
    EXPECT_DOUBLE_EQ(x.benefit, y.benefit);
    EXPECT_DOUBLE_EQ(x.demand, y.demand);
  }
}

TEST(Instance, FilesRoundTrip) {
  SyntheticOptions o;
  o.buffers = 300;
  o.alias_fraction = 0.2;
  const Instance inst = generate_instance(o);
  expect_same(inst, instance_from_string(instance_to_string(inst)));
  const fs::path path = fs::temp_directory_path() / "tempo_mmap_instance_test.txt";
  save_instance(inst, path.string());
  expect_same(inst, load_instance(path.string()));
  fs::remove(path);
}

const char* kSmall =
    "mmap-instance 1\n"
    "name small\n"
    "capacity 100\n"
    "supply 3 1 1 1\n"
    "buffers 2\n"
    "# size time start end in|out tensor alias benefit demand\n"
    "10 0 0 2 out 0 0 1.5 0.5\n"
    "10 2 0 2 in 0 1 1.5 0.5\n";

TEST(Instance, ParsesTheTextFormat) {
  Instance inst = instance_from_string(kSmall);
  EXPECT_EQ(inst.name, "small");
  EXPECT_EQ(inst.capacity, 100);
  EXPECT_EQ(inst.steps(), 3);
  ASSERT_EQ(inst.buffers.size(), 2u);
  EXPECT_TRUE(inst.buffers[0].is_output);
  EXPECT_FALSE(inst.buffers[1].is_output);
  EXPECT_DOUBLE_EQ(inst.total_benefit(), 3.0);
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

TEST(Instance, MalformedFilesAreOneLineUserErrors) {
  struct Case {
    std::string text, fragment;
  };
  const std::vector<Case> cases = {
      {"", "ends where 'mmap-instance'"},
      {replaced(kSmall, "mmap-instance 1", "mmap-instance 2"), "unknown format version 2"},
      {replaced(kSmall, "capacity 100", "capacity lots"), "capacity must be an integer"},
      {replaced(kSmall, "supply 3 1 1 1", "supply 3 1 x 1"), "supply value must be a number"},
      {replaced(kSmall, "0 1 1.5 0.5\n", ""), "the file ends where"},
      {replaced(kSmall, "2 in 0 1", "2 sideways 0 1"), "expected 'in' or 'out'"},
      {std::string(kSmall) + "7\n", "unexpected text after the 2 buffers"},
      {replaced(kSmall, "capacity 100", "capacity 0"), "capacity must be positive"},
      {replaced(kSmall, "10 0 0 2 out", "200 0 0 2 out"), "larger than the fast memory"},
      {replaced(kSmall, "10 2 0 2 in", "10 5 0 2 in"), "outside its live range"},
      {replaced(kSmall, "10 0 0 2 out", "10 0 0 7 out"), "outside the steps"},
      {replaced(kSmall, "10 0 0 2 out", "-4 0 0 2 out"), "sizes must be positive"},
      // Counts far beyond what the file holds: an error where the values run out, and no memory
      // allocated for the count.
      {replaced(kSmall, "supply 3 1 1 1", "supply 4294967296 1 1 1"),
       "a supply value must be a number, got 'buffers'"},
      {replaced(kSmall, "buffers 2", "buffers 4294967296"), "the file ends where"},
  };
  for (const Case& c : cases) {
    const std::string msg = user_error_of([&] { instance_from_string(c.text, "f.txt"); });
    EXPECT_NE(msg.find(c.fragment), std::string::npos) << "got: " << msg << "\nfor:\n" << c.text;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind("f.txt", 0), 0u) << msg;  // names the file
  }
  expect_user_error([] { load_instance("/nonexistent/instance.txt"); },
                    {"cannot read the instance file", "/nonexistent/instance.txt"});
}

TEST(Instance, ValidationRejectsBadInstances) {
  Instance inst = instance_from_string(kSmall);
  inst.capacity = 0;
  expect_user_error([&] { inst.validate(); }, {"capacity must be positive"});
  inst.capacity = 5;
  expect_user_error([&] { inst.validate(); }, {"buffer 0", "larger than the fast memory"});
  inst.capacity = 100;
  std::swap(inst.buffers[0], inst.buffers[1]);
  expect_user_error([&] { inst.validate(); }, {"chronological order"});
}

TEST(Instance, GeneratorIsSeededAndControlsPressure) {
  SyntheticOptions o;
  o.buffers = 500;
  const Instance a = generate_instance(o), b = generate_instance(o);
  expect_same(a, b);
  EXPECT_EQ(a.buffers.size(), 500u);
  o.seed = 2;
  EXPECT_NE(instance_to_string(generate_instance(o)), instance_to_string(a));
  // Pressure: the peak bytes live at one step over the capacity.
  o.pressure = 1.0;
  const int64_t loose = generate_instance(o).capacity;
  o.pressure = 4.0;
  const Instance tight = generate_instance(o);
  EXPECT_NEAR(static_cast<double>(loose) / static_cast<double>(tight.capacity), 4.0, 0.01);
  for (const Buffer& x : tight.buffers) {
    EXPECT_GE(x.size, o.min_size);
    EXPECT_LE(x.size, o.max_size);
  }
  // In-place updates: alias groups of two (a read and the next output).
  o.alias_fraction = 0.5;
  const Instance aliased = generate_instance(o);
  std::map<int64_t, int> groups;
  for (const Buffer& x : aliased.buffers) ++groups[x.alias_id];
  int pairs = 0;
  for (const auto& [id, n] : groups) {
    EXPECT_LE(n, 2);
    pairs += n == 2;
  }
  EXPECT_GT(pairs, 20);
  expect_user_error(
      [&] {
        SyntheticOptions bad;
        bad.pressure = 0;
        generate_instance(bad);
      },
      {"pressure must be > 0"});
}

}  // namespace
}  // namespace tempo::mmap
