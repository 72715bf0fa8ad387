// Loop transformations as schedule changes, their legality by isl dependence analysis, and the
// action space of a Pearl-style agent: it works on one branch (statement) of the loop tree at a
// time, picks a transformation and its loop levels and parameters, or "next" to move on to the
// following branch; the episode ends with "next" on the last branch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loops/program.h"

struct isl_ctx;
struct isl_union_map;

namespace tempo::sym {
class IslContext;
}

namespace tempo::loops {

// One row of a statement's 2d+1 schedule. Even rows are scalars (tree positions), odd rows loops.
struct Row {
  std::string expr;       // affine in the statement's iterators (isl syntax), or a constant
  bool parallel = false;  // loop rows: run as an OpenMP parallel loop
  int unroll = 0;         // loop rows: unroll factor (0: none)
};

struct Schedule {
  std::vector<std::vector<Row>> rows;  // per statement, in program order

  static Schedule original(const Program& p);
  int loops(size_t stmt) const { return static_cast<int>(rows[stmt].size() / 2); }
  // The isl union map { S[i..] -> [rows..] } with every statement padded to one length.
  std::string to_isl(const Program& p) const;
  // Identifies the schedule with its loop marks: the key for memoization.
  std::string key(const Program& p) const;
};

enum class Kind { Interchange, Reversal, Skew, Tile, Parallelize, Unroll, Next };

struct Action {
  Kind kind = Kind::Next;
  int level = 0, level2 = 0;  // loop levels within the branch (0: outermost)
  int factor = 0;             // skew factor, unroll factor
  int size1 = 0, size2 = 0;   // tile sizes
  int size3 = 0;              // 3-D tiles (level2 = level + 2): the third loop's size; 0: 2-D
  std::string to_string() const;
};

// The fixed action space (Pearl's 56 actions, here over kMaxLevels loop levels).
constexpr int kMaxLevels = 5;
const std::vector<Action>& action_space();
int num_actions();

// Applies a transformation to the loops of branch `stmt`: the other statements that share the
// targeted loops change with it. nullopt when the action does not fit the loop tree (a level
// past the branch's depth, loops shared with different statements). Legality is not checked.
std::optional<Schedule> apply(const Schedule& s, int stmt, const Action& a);

// The dependences of a program (flow, anti and output, memory-based, under the original schedule)
// and legality checks of new schedules against them. Owns its isl context.
class Dependences {
 public:
  explicit Dependences(const Program& p);
  ~Dependences();
  Dependences(const Dependences&) = delete;
  Dependences& operator=(const Dependences&) = delete;

  // Every dependence's source runs before its sink, and no parallel loop carries one; with
  // `same_order`, the caller knows the first (s only marks loops of a legal schedule).
  bool legal(const Schedule& s, bool same_order = false) const;
  // Every dependence's source runs before its sink under the schedule map (`rows` dimensions).
  bool order_ok(const std::string& schedule_isl, int rows) const;
  // The loop at schedule dimension `dim` carries no dependence between the statements `among`
  // (all when empty).
  bool parallel_ok(const std::string& schedule_isl, int dim,
                   const std::vector<std::string>& among = {}) const;
  isl_ctx* ctx() const;
  isl_union_map* deps() const { return deps_; }  // borrowed
  const Program& program() const { return p_; }

 private:
  Program p_;
  std::unique_ptr<sym::IslContext> isl_;
  isl_union_map* deps_;
};

struct MemoStats {
  int64_t legality_hits = 0, legality_misses = 0, time_hits = 0, time_misses = 0;
};

// The environment: a program, its current schedule and branch, and memoized legality.
class LoopEnv {
 public:
  explicit LoopEnv(Program p);
  // Back to the original schedule at the first branch; the legality memo stays.
  void reset();
  // Off: every legality question goes to isl (to measure what the memo saves).
  void set_memoize(bool on) { memoize_ = on; }
  const Program& program() const { return deps_->program(); }
  const Schedule& schedule() const { return schedule_; }
  int branch() const { return branch_; }
  bool done() const { return done_; }
  const std::vector<Action>& history() const { return history_; }

  // The schedule after `a` if it is legal (memoized by schedule key) and not one this episode
  // has already been at (interchanging a pair twice), else nullopt.
  std::optional<Schedule> try_action(const Action& a);
  std::vector<bool> legal_mask();  // over action_space()
  // Applies action `index` of the action space; false (and no change) when it is illegal.
  bool step(int index);
  bool legal(const Schedule& s, bool same_order = false);  // memoized
  const MemoStats& stats() const { return stats_; }
  const Dependences& deps() const { return *deps_; }

 private:
  std::shared_ptr<Dependences> deps_;
  Schedule schedule_;
  int branch_ = 0;
  bool done_ = false;
  std::vector<Action> history_;
  std::unordered_set<std::string> visited_;  // schedule keys of this episode
  std::unordered_map<std::string, bool> legal_memo_;
  bool memoize_ = true;
  MemoStats stats_;
};

}  // namespace tempo::loops
