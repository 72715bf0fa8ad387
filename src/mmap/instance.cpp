// Instances: validation, the text format, the synthetic generator.
#include "mmap/instance.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "util/error.h"

namespace tempo::mmap {

double Instance::total_benefit() const {
  double s = 0;
  for (const Buffer& b : buffers) s += b.benefit;
  return s;
}

void Instance::validate() const {
  const std::string who = name.empty() ? "instance" : cat("instance ", name);
  if (capacity <= 0)
    throw UserError(cat(who, ": the fast-memory capacity must be positive, got ", capacity));
  if (supply.empty()) throw UserError(cat(who, ": it has no time steps (supply is empty)"));
  for (size_t t = 0; t < supply.size(); ++t)
    if (!(supply[t] >= 0) || !std::isfinite(supply[t]))
      throw UserError(cat(who, ": the supply of step ", t, " must be a finite number >= 0"));
  for (size_t k = 0; k < buffers.size(); ++k) {
    const Buffer& b = buffers[k];
    const std::string bw = cat(who, ": buffer ", k);
    if (b.size <= 0) throw UserError(cat(bw, " has size ", b.size, "; sizes must be positive"));
    if (b.size > capacity)
      throw UserError(
          cat(bw, " (", b.size, " bytes) is larger than the fast memory (", capacity, " bytes)"));
    if (b.start < 0 || b.end >= steps() || b.start > b.end)
      throw UserError(cat(bw, " has live range [", b.start, ", ", b.end, "] outside the steps [0, ",
                          steps() - 1, "]"));
    if (b.time < b.start || b.time > b.end)
      throw UserError(cat(bw, " is used at step ", b.time, " outside its live range [", b.start,
                          ", ", b.end, "]"));
    if (k > 0 && b.time < buffers[k - 1].time)
      throw UserError(cat(bw, " (step ", b.time, ") comes after buffer ", k - 1, " (step ",
                          buffers[k - 1].time, "); buffers must be in chronological order"));
    if (!(b.benefit >= 0) || !std::isfinite(b.benefit) || !(b.demand >= 0) ||
        !std::isfinite(b.demand))
      throw UserError(cat(bw, " needs a finite benefit and demand >= 0"));
  }
}

// ---- text format -----------------------------------------------------------------------------

namespace {

// The shortest text that reads back as the same double.
std::string shortest(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

}  // namespace

std::string instance_to_string(const Instance& inst) {
  std::ostringstream os;
  os << "mmap-instance 1\n";
  os << "name " << (inst.name.empty() ? "unnamed" : inst.name) << "\n";
  os << "capacity " << inst.capacity << "\n";
  os << "supply " << inst.supply.size();
  for (size_t t = 0; t < inst.supply.size(); ++t)
    os << (t % 16 == 0 ? "\n" : " ") << shortest(inst.supply[t]);
  os << "\nbuffers " << inst.buffers.size() << "\n";
  os << "# size time start end in|out tensor_id alias_id benefit demand\n";
  for (const Buffer& b : inst.buffers)
    os << b.size << " " << b.time << " " << b.start << " " << b.end << " "
       << (b.is_output ? "out" : "in") << " " << b.tensor_id << " " << b.alias_id << " "
       << shortest(b.benefit) << " " << shortest(b.demand) << "\n";
  return os.str();
}

namespace {

// Whitespace-separated words with their line numbers; '#' comments to the end of the line.
class Words {
 public:
  Words(const std::string& text, std::string where) : where_(std::move(where)) {
    std::istringstream is(text);
    std::string line;
    int n = 0;
    while (std::getline(is, line)) {
      ++n;
      if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
      std::istringstream ls(line);
      std::string w;
      while (ls >> w) words_.push_back({w, n});
    }
  }
  bool done() const { return pos_ >= words_.size(); }
  [[noreturn]] void fail(const std::string& what) const {
    const int line =
        pos_ < words_.size() ? words_[pos_].line : (words_.empty() ? 1 : words_.back().line);
    throw UserError(cat(where_, ":", line, ": ", what));
  }
  std::string word(const std::string& what) {
    if (done()) fail(cat("the file ends where ", what, " was expected"));
    return words_[pos_++].text;
  }
  void keyword(const std::string& k) {
    if (done()) fail(cat("the file ends where '", k, "' was expected"));
    if (words_[pos_].text != k) fail(cat("expected '", k, "', got '", words_[pos_].text, "'"));
    ++pos_;
  }
  int64_t integer(const std::string& what) {
    if (done()) fail(cat("the file ends where ", what, " (an integer) was expected"));
    const std::string& w = words_[pos_].text;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(w.c_str(), &end, 10);
    if (*end || errno) fail(cat(what, " must be an integer, got '", w, "'"));
    ++pos_;
    return v;
  }
  double number(const std::string& what) {
    if (done()) fail(cat("the file ends where ", what, " (a number) was expected"));
    const std::string& w = words_[pos_].text;
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(w.c_str(), &end);
    if (*end || errno || !std::isfinite(v)) fail(cat(what, " must be a number, got '", w, "'"));
    ++pos_;
    return v;
  }

 private:
  struct Word {
    std::string text;
    int line;
  };
  std::vector<Word> words_;
  size_t pos_ = 0;
  std::string where_;
};

}  // namespace

Instance instance_from_string(const std::string& text, const std::string& where) {
  Words w(text, where);
  w.keyword("mmap-instance");
  if (int64_t v = w.integer("the format version"); v != 1)
    w.fail(cat("unknown format version ", v, " (this reader knows version 1)"));
  Instance inst;
  w.keyword("name");
  inst.name = w.word("a name");
  w.keyword("capacity");
  inst.capacity = w.integer("the capacity");
  w.keyword("supply");
  const int64_t steps = w.integer("the number of steps");
  if (steps <= 0 || steps > (int64_t{1} << 32)) w.fail(cat("bad number of steps ", steps));
  // Appended value by value: the counts are the file's word, the memory only what it holds.
  for (int64_t k = 0; k < steps; ++k) inst.supply.push_back(w.number("a supply value"));
  w.keyword("buffers");
  const int64_t n = w.integer("the number of buffers");
  if (n < 0 || n > (int64_t{1} << 32)) w.fail(cat("bad number of buffers ", n));
  for (int64_t k = 0; k < n; ++k) {
    Buffer& b = inst.buffers.emplace_back();
    b.size = w.integer("a buffer size");
    b.time = w.integer("a buffer time");
    b.start = w.integer("a live-range start");
    b.end = w.integer("a live-range end");
    const std::string io = w.word("'in' or 'out'");
    if (io != "in" && io != "out")
      throw UserError(cat(where, ": expected 'in' or 'out', got '", io, "'"));
    b.is_output = io == "out";
    b.tensor_id = w.integer("a tensor id");
    b.alias_id = w.integer("an alias id");
    b.benefit = w.number("a benefit");
    b.demand = w.number("a demand");
  }
  if (!w.done()) w.fail(cat("unexpected text after the ", n, " buffers"));
  try {
    inst.validate();
  } catch (const UserError& e) {
    throw UserError(cat(where, ": ", e.what()));
  }
  return inst;
}

void save_instance(const Instance& inst, const std::string& path) {
  inst.validate();
  std::ofstream f(path);
  if (!f) throw UserError(cat("cannot write the instance file '", path, "'"));
  f << instance_to_string(inst);
  if (!f) throw UserError(cat("failed writing the instance file '", path, "'"));
}

Instance load_instance(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UserError(cat("cannot read the instance file '", path, "'"));
  std::stringstream ss;
  ss << f.rdbuf();
  return instance_from_string(ss.str(), path);
}

// ---- synthetic instances ---------------------------------------------------------------------

Instance generate_instance(const SyntheticOptions& o) {
  if (o.buffers < 1)
    throw UserError(cat("a synthetic instance needs >= 1 buffer, got ", o.buffers));
  if (o.min_size < 1 || o.max_size < o.min_size)
    throw UserError(cat("synthetic sizes need 1 <= min_size <= max_size, got ", o.min_size, " and ",
                        o.max_size));
  if (!(o.pressure > 0)) throw UserError(cat("the memory pressure must be > 0, got ", o.pressure));
  if (o.max_uses < 1 || o.span < 1)
    throw UserError("a synthetic instance needs max_uses >= 1 and span >= 1");
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double lmin = std::log(static_cast<double>(o.min_size));
  const double lmax = std::log(static_cast<double>(o.max_size));

  struct Tensor {
    int64_t made = 0, size = 0;
    std::vector<int64_t> reads;
    bool in_place_next = false;  // the next tensor overwrites this one at its last read
  };
  std::vector<Tensor> tensors;
  int64_t count = 0;
  bool next_in_place = false;
  for (int64_t k = 0; count < o.buffers; ++k) {
    Tensor t;
    t.made = k;
    const bool in_place = next_in_place;
    t.size = in_place ? tensors.back().size
                      : static_cast<int64_t>(std::exp(lmin + (lmax - lmin) * unit(rng)));
    next_in_place = unit(rng) < o.alias_fraction;
    t.in_place_next = next_in_place;
    ++count;
    if (next_in_place) {
      if (count < o.buffers) {
        t.reads.push_back(k + 1);  // read last by the next instruction, which updates it in place
        ++count;
      } else {
        t.in_place_next = next_in_place = false;
      }
    } else {
      const int64_t uses = 1 + static_cast<int64_t>(unit(rng) * static_cast<double>(o.max_uses));
      for (int64_t u = 0; u < std::min(uses, o.max_uses) && count < o.buffers; ++u, ++count)
        t.reads.push_back(k + 1 +
                          static_cast<int64_t>(unit(rng) * 2.0 * static_cast<double>(o.span)));
      std::sort(t.reads.begin(), t.reads.end());
      const size_t before = t.reads.size();
      t.reads.erase(std::unique(t.reads.begin(), t.reads.end()), t.reads.end());
      count -= static_cast<int64_t>(before - t.reads.size());  // one read per step and tensor
    }
    tensors.push_back(std::move(t));
  }
  int64_t steps = 1;
  for (const Tensor& t : tensors) {
    steps = std::max(steps, t.made + 1);
    for (int64_t r : t.reads) steps = std::max(steps, r + 1);
  }

  Instance inst;
  inst.name = cat("synthetic-n", o.buffers, "-p", o.pressure, "-s", o.seed);
  inst.supply.resize(static_cast<size_t>(steps));
  for (double& s : inst.supply) s = 0.5 + unit(rng);
  double mean_size = 0;
  for (const Tensor& t : tensors) mean_size += static_cast<double>(t.size);
  mean_size /= static_cast<double>(tensors.size());
  const double per_byte = o.copy_steps / mean_size;  // demand per byte (supply averages 1)
  int64_t alias = 0;
  std::vector<int64_t> live(static_cast<size_t>(steps), 0);
  int64_t largest = 0;
  for (size_t j = 0; j < tensors.size(); ++j) {
    const Tensor& t = tensors[j];
    const int64_t end = t.reads.empty() ? t.made : t.reads.back();
    for (int64_t s = t.made; s <= end; ++s) live[static_cast<size_t>(s)] += t.size;
    largest = std::max(largest, t.size);
    const double demand = per_byte * static_cast<double>(t.size);
    auto add = [&](int64_t time, bool out, int64_t alias_id) {
      Buffer b;
      b.size = t.size;
      b.time = time;
      b.start = t.made;
      b.end = end;
      b.is_output = out;
      b.tensor_id = static_cast<int64_t>(j);
      b.alias_id = alias_id;
      b.demand = demand;
      b.benefit = demand * (0.2 + 1.8 * unit(rng));  // how memory-bound the instruction is
      inst.buffers.push_back(b);
    };
    // An in-place output shares the alias group of the previous tensor's last read.
    const bool in_place = j > 0 && tensors[j - 1].in_place_next;
    add(t.made, true, in_place ? alias - 1 : alias++);
    for (size_t r = 0; r < t.reads.size(); ++r) add(t.reads[r], false, alias++);
  }
  std::stable_sort(inst.buffers.begin(), inst.buffers.end(), [](const Buffer& a, const Buffer& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.is_output < b.is_output;  // an instruction reads its inputs before it writes
  });
  const int64_t peak = *std::max_element(live.begin(), live.end());
  inst.capacity = std::max(largest, static_cast<int64_t>(static_cast<double>(peak) / o.pressure));
  inst.validate();
  return inst;
}

}  // namespace tempo::mmap
