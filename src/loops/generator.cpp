#include "loops/generator.h"

#include <algorithm>
#include <random>
#include <string>

#include "util/error.h"

namespace tempo::loops {
namespace {

using S = std::vector<std::string>;

// An array element: "A[i-1,j]" for isl, "A[i-1][j]" for C.
struct Ref {
  std::string array;
  S index;
  std::string isl() const {
    std::string out = array + "[";
    for (size_t k = 0; k < index.size(); ++k) out += (k ? "," : "") + index[k];
    return out + "]";
  }
  std::string c() const {
    std::string out = array;
    for (const std::string& e : index) out += "[" + e + "]";
    return out;
  }
};

class Generator {
 public:
  Generator(uint64_t seed, const GeneratorOptions& o) : rng_(seed * 0x9E3779B97F4A7C15ull + 1), o_(o), b_(cat("gen", seed)) {
    n_ = o.small ? pick<int>({10, 12}) : pick<int>({1024, 1536, 2048});
  }

  Program build() {
    const int target = 1 + static_cast<int>(rng_() % static_cast<uint64_t>(std::max(1, o_.max_statements)));
    while (statements_ < target) {
      const int room = target - statements_;
      switch (rng_() % 8) {
        case 0: map2(); break;
        case 1: stencil2(); break;
        case 2: if (room >= 2) jacobi_time(); else map3(); break;
        case 3: seidel_time(); break;
        case 4: matvec(); break;
        case 5: matmul(); break;
        case 6: if (room >= 2) init_accumulate(); else matvec(); break;
        default: map3(); break;
      }
    }
    return b_.build();
  }

 private:
  template <typename T>
  T pick(std::initializer_list<T> v) {
    return *(v.begin() + rng_() % v.size());
  }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::string coef() { return pick<const char*>({"0.25", "0.5", "0.3", "0.7", "0.125"}); }

  std::string fresh(std::vector<int64_t> sizes) {
    std::string name = cat("A", arrays_++);
    b_.array(name, std::move(sizes));
    return name;
  }
  // An N x N source: often what the previous nest wrote (producer-consumer chains).
  std::string source2d() {
    if (!written_.empty() && coin(0.6)) return written_.back();
    return fresh({n_, n_});
  }
  std::string name() { return cat("S", statements_++); }

  // The 2d+1 schedule of a nest at position `pos` over `vars` in a random order.
  S nest_schedule(S vars, bool shuffle) {
    if (shuffle) std::shuffle(vars.begin(), vars.end(), rng_);
    S rows{cat(pos_)};
    for (const std::string& v : vars) {
      rows.push_back(v);
      rows.push_back("0");
    }
    return rows;
  }
  static std::string range(const std::string& v, int64_t lo, int64_t hi) {
    return cat(lo, " <= ", v, " < ", hi);
  }
  void add(const S& vars, const std::string& dom, const Ref& dst, const std::string& rhs,
           const std::vector<Ref>& reads, const S& schedule) {
    S r;
    for (const Ref& x : reads) r.push_back(x.isl());
    b_.statement(name(), vars, dom, dst.c() + " = " + rhs, r, {dst.isl()}, schedule);
  }

  // dst[i,j] = c0 * a[i,j] + c1 * b[i,j] or b[j,i].
  void map2() {
    Ref a{source2d(), {"i", "j"}}, b{fresh({n_, n_}), coin(0.5) ? S{"j", "i"} : S{"i", "j"}};
    Ref d{fresh({n_, n_}), {"i", "j"}};
    add({"i", "j"}, range("i", 0, n_) + " and " + range("j", 0, n_), d,
        cat(coef(), " * ", a.c(), " + ", coef(), " * ", b.c()), {a, b},
        nest_schedule({"i", "j"}, true));
    written_.push_back(d.array);
    ++pos_;
  }

  std::vector<Ref> five_point(const std::string& a) {
    return {{a, {"i", "j"}}, {a, {"i-1", "j"}}, {a, {"i+1", "j"}}, {a, {"i", "j-1"}},
            {a, {"i", "j+1"}}};
  }
  std::string sum(const std::vector<Ref>& refs) {
    std::string out;
    for (const Ref& r : refs) out += (out.empty() ? "" : " + ") + r.c();
    return "(" + out + ")";
  }
  std::string inner(const S& vars) {
    std::string out;
    for (const std::string& v : vars) out += (out.empty() ? "" : " and ") + range(v, 1, n_ - 1);
    return out;
  }

  // dst[i,j] = c * (5-point stencil of a).
  void stencil2() {
    std::vector<Ref> r = five_point(source2d());
    Ref d{fresh({n_, n_}), {"i", "j"}};
    add({"i", "j"}, inner({"i", "j"}), d, cat(coef(), " * ", sum(r)), r,
        nest_schedule({"i", "j"}, true));
    written_.push_back(d.array);
    ++pos_;
  }

  int64_t steps() const { return o_.small ? 2 : std::max<int64_t>(2, 8000000 / (n_ * n_)); }

  // Two out-of-place sweeps per time step, a -> b -> a (two statements under one t loop).
  void jacobi_time() {
    std::string a = source2d(), b = fresh({n_, n_});
    std::string dom = range("t", 0, steps()) + " and " + inner({"i", "j"});
    std::string p = cat(pos_);
    std::vector<Ref> ra = five_point(a), rb = five_point(b);
    add({"t", "i", "j"}, dom, {b, {"i", "j"}}, cat("0.2 * ", sum(ra)), ra,
        {p, "t", "0", "i", "0", "j", "0"});
    add({"t", "i", "j"}, dom, {a, {"i", "j"}}, cat("0.2 * ", sum(rb)), rb,
        {p, "t", "1", "i", "0", "j", "0"});
    written_.push_back(a);
    ++pos_;
  }

  // In place over time (Gauss-Seidel-like): every loop carries a dependence.
  void seidel_time() {
    std::string a = source2d();
    std::vector<Ref> r = five_point(a);
    add({"t", "i", "j"}, range("t", 0, steps()) + " and " + inner({"i", "j"}), {a, {"i", "j"}},
        cat(sum(r), " / 5.0"), r, {cat(pos_), "t", "0", "i", "0", "j", "0"});
    written_.push_back(a);
    ++pos_;
  }

  // y[i] += A[i,j] * x[j] or A[j,i] * x[j].
  void matvec() {
    Ref m{source2d(), coin(0.5) ? S{"i", "j"} : S{"j", "i"}};
    Ref x{fresh({n_}), {"j"}}, y{fresh({n_}), {"i"}};
    add({"i", "j"}, range("i", 0, n_) + " and " + range("j", 0, n_), y,
        cat(y.c(), " + ", m.c(), " * ", x.c()), {y, m, x}, nest_schedule({"i", "j"}, true));
    ++pos_;
  }

  int64_t cube() { return o_.small ? 8 : pick<int64_t>({160, 192, 224}); }

  // C[i,j] += A[i,k] * B[k,j] in a random loop order.
  void matmul() {
    int64_t m = cube();
    Ref c{fresh({m, m}), {"i", "j"}}, a{fresh({m, m}), {"i", "k"}}, b{fresh({m, m}), {"k", "j"}};
    add({"i", "j", "k"},
        range("i", 0, m) + " and " + range("j", 0, m) + " and " + range("k", 0, m), c,
        cat(c.c(), " + ", a.c(), " * ", b.c()), {c, a, b}, nest_schedule({"i", "j", "k"}, true));
    ++pos_;
  }

  // sum[i,j] = 0, then sum[i,j] += A[i,k] * x[k,j] under the same i and j loops.
  void init_accumulate() {
    int64_t m = cube();
    Ref s{fresh({m, m}), {"i", "j"}}, a{fresh({m, m}), {"i", "k"}}, x{fresh({m, m}), {"k", "j"}};
    std::string ij = range("i", 0, m) + " and " + range("j", 0, m), p = cat(pos_);
    add({"i", "j"}, ij, s, "0.0", {}, {p, "i", "0", "j", "0"});
    add({"i", "j", "k"}, ij + " and " + range("k", 0, m), s,
        cat(s.c(), " + ", a.c(), " * ", x.c()), {s, a, x}, {p, "i", "0", "j", "1", "k", "0"});
    ++pos_;
  }

  // dst[i,j,k] = c0 * a[i,j,k] + c1 * a[i,k,j].
  void map3() {
    int64_t m = o_.small ? 6 : pick<int64_t>({128, 160});
    std::string a = fresh({m, m, m});
    Ref d{fresh({m, m, m}), {"i", "j", "k"}}, r0{a, {"i", "j", "k"}},
        r1{a, coin(0.5) ? S{"i", "k", "j"} : S{"k", "j", "i"}};
    add({"i", "j", "k"},
        range("i", 0, m) + " and " + range("j", 0, m) + " and " + range("k", 0, m), d,
        cat(coef(), " * ", r0.c(), " + ", coef(), " * ", r1.c()), {r0, r1},
        nest_schedule({"i", "j", "k"}, true));
    ++pos_;
  }

  std::mt19937_64 rng_;
  GeneratorOptions o_;
  ProgramBuilder b_;
  int64_t n_ = 0;
  int arrays_ = 0, statements_ = 0, pos_ = 0;
  std::vector<std::string> written_;  // N x N arrays written so far
};

}  // namespace

Program generate_program(uint64_t seed, const GeneratorOptions& o) {
  return Generator(seed, o).build();
}

std::vector<Program> generate_programs(uint64_t first_seed, int count, const GeneratorOptions& o) {
  std::vector<Program> out;
  for (int k = 0; k < count; ++k) out.push_back(generate_program(first_seed + k, o));
  return out;
}

}  // namespace tempo::loops
