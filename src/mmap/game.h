// The MMapGame (Optimizing Memory Mapping Using Deep RL, §4.2 and Appendix A): an MDP that walks
// an instance's buffers in chronological order and decides for each whether it lives in fast
// memory, and for which time interval at which offset.
//
//   MMapGame g(instance);
//   while (!g.done()) g.step(policy(g.legal_actions(), g.observe()));
//   double r = g.total_return();   // the sum of the benefits placed; 0 if the game was lost
//
// Actions (for the current buffer b, at its target time τ):
//   Copy   - b is copied between the memories. An input is prefetched: it occupies fast memory
//            over I(b) = [s, τ], s the latest step such that the supply of the copy interval
//            [s, τ) covers b's demand (Eq. 5) and the copy interval shares at most one step
//            with any other copy (Eq. 6); it may not start before b's live range. An output is
//            written back: I(b) = [τ, e], e the earliest step such that the supply of (τ, e]
//            covers the demand, likewise. The supply the copy uses is subtracted from W, the
//            nearest steps first.
//   NoCopy - b reuses an earlier allocation of its tensor. An input extends it: I(b) = (s, τ], s
//            the latest step held by a buffer of the same tensor whose interval starts at or
//            before τ (legal only if there is one; if that allocation already covers τ nothing
//            new is allocated). An output stays in fast memory for its whole live range,
//            I(b) = live_range(b), with no copy.
//   Drop   - b stays in slow memory: no allocation, reward 0.
// The offset O(b) is the lowest offset whose [O, O + size) is free over all of I(b) (the
// paper's rule; GameOptions::best_fit picks the smallest free gap instead), or the offset
// already given to b's alias group (Eq. 4). Buffers of one alias group may overlap each other
// (an in-place update). Buffers of an alias group are all placed (Copy or NoCopy) or all
// dropped: once one is placed Drop is illegal for the others, and once one is dropped only Drop
// is legal.
//
// Rewards: the buffer's benefit for Copy and NoCopy, 0 for Drop. A state with no legal action is
// infeasible (§4.3.2): the game ends lost and the last step's reward takes the return back to 0;
// an illegal action also loses. States are plain values: copy a game to branch (MCTS; the
// instance and its tables are shared, a copy costs a few microseconds at 2000 buffers), and
// keep a copy as the Drop-backup's backup (mmap::play in baselines.h does).
// A finished game's decisions() and placements() are the placement a compiler would apply.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mmap/instance.h"

namespace tempo::mmap {

enum class Action : uint8_t { Copy = 0, NoCopy = 1, Drop = 2 };
inline constexpr int kNumActions = 3;
const char* action_name(Action a);

struct GameOptions {
  bool best_fit = false;  // offsets: the smallest free gap that fits instead of the lowest
};

// Where an action would put the current buffer.
struct Placement {
  bool legal = false;
  int64_t offset = -1;                    // -1: slow memory (Drop)
  int64_t start = 0, end = -1;            // I(b), inclusive; end < start: nothing allocated
  int64_t copy_start = 0, copy_end = -1;  // the copy interval, inclusive (empty if end < start)
};

// The copy bandwidth (Eq. 5 and 6): the supply left per step and the steps copies hold. The game
// and the heuristic's own plan place copies through it.
struct CopyBandwidth {
  std::vector<double> left;   // supply left per step
  std::vector<uint8_t> edge;  // edge[k]: some copy holds steps k and k + 1
  explicit CopyBandwidth(const std::vector<double>& supply = {})
      : left(supply), edge(supply.size(), 0) {}
  // The copy interval of b: a prefetch over [lo, τ) with the latest lo whose supply covers b's
  // demand, or a write-back over (τ, hi] with the earliest hi; sharing at most one step with any
  // other copy. Empty (hi < lo) when there is nothing to copy; false when none fits.
  bool interval(const Buffer& b, int64_t* lo, int64_t* hi) const;
  // Takes b's demand from the supply of [lo, hi], the steps nearest τ first, and marks the steps
  // the copy holds.
  void use(const Buffer& b, int64_t lo, int64_t hi);
};

// What the agent sees (§4.3.1), as float vectors scaled to about [0, 1].
struct ObservationOptions {
  int64_t grid_time = 32, grid_memory = 32;  // the down-sampled memory map (paper: 128 x 128)
  int64_t time_window = 256;                 // steps of the map, centred on the target time
  int64_t profile_bins = 64;                 // the memory profile at the target time
  int64_t supply_window = 32;                // steps of the supply profile
  int64_t next_buffers = 5;                  // k: the buffers after the current one
  int64_t same_tensor = 3;                   // l: the next buffers of the current tensor
};
struct Observation {
  // grid[row * grid_memory + col]: 1 where some allocation occupies that time x offset cell.
  std::vector<float> grid;
  int64_t grid_time = 0, grid_memory = 0;
  // The memory profile, the supply profile, the buffer features (kBufferFeatures per buffer:
  // the current one, the next k, the next l of its tensor; zeros where there is none), the
  // action features (per action: legal, interval start and end, offset) and the global
  // features (move, buffers left, position in the alias group, left in the alias group).
  std::vector<float> features;
  std::vector<float> flat() const;  // grid then features
};
inline constexpr int kBufferFeatures = 10;

class MMapGame {
 public:
  explicit MMapGame(std::shared_ptr<const Instance> instance, GameOptions options = {});
  explicit MMapGame(const Instance& instance, GameOptions options = {});

  const Instance& instance() const { return *inst_; }
  const std::shared_ptr<const Instance>& shared_instance() const { return inst_; }
  bool done() const { return done_; }
  bool lost() const { return lost_; }
  // The sum of the rewards so far (0 once lost).
  double total_return() const { return return_; }
  // The index of the buffer to decide (== buffers().size() when done).
  size_t current() const { return next_; }
  size_t moves() const { return moves_; }

  std::vector<Action> legal_actions() const;
  bool is_legal(Action a) const { return !done_ && cand_[static_cast<int>(a)].legal; }
  const Placement& placement(Action a) const { return cand_[static_cast<int>(a)]; }
  // Applies `a` to the current buffer and returns the reward. An illegal action loses the game.
  double step(Action a);

  // The decisions so far, per buffer (Drop for those not decided), and where each placed buffer
  // lives: offset (-1 in slow memory) and interval I(b).
  const std::vector<Action>& decisions() const { return decisions_; }
  const std::vector<Placement>& placements() const { return placed_; }
  const std::vector<double>& supply_left() const { return bandwidth_.left; }

  Observation observe(const ObservationOptions& o = {}) const;

  // Checks the placements so far against Appendix A's constraints (capacity, no overlap in
  // time x offset except within an alias group, Eq. 4, 5, 6); an empty string when they hold.
  std::string check() const;

 private:
  struct Shared;  // per-instance tables shared by copies of a game
  struct Alloc {
    int64_t offset, size, start, end;
    int32_t alias;
  };
  void enter();  // computes the current buffer's candidates; loses if none is legal
  Placement copy_placement(const Buffer& b, int32_t alias) const;
  Placement nocopy_placement(const Buffer& b, size_t index, int32_t alias) const;
  // Sets p's offset for its interval (the alias group's, or a free one) and its legality.
  void choose_offset(Placement& p, const Buffer& b, int32_t alias) const;
  int64_t find_offset(int64_t size, int64_t start, int64_t end, int32_t alias) const;
  bool is_free(int64_t offset, int64_t size, int64_t start, int64_t end, int32_t alias) const;

  std::shared_ptr<const Instance> inst_;
  std::shared_ptr<const Shared> shared_;
  GameOptions options_;
  size_t next_ = 0, moves_ = 0;
  bool done_ = false, lost_ = false;
  double return_ = 0;
  CopyBandwidth bandwidth_;
  std::vector<Alloc> allocs_;
  std::vector<Action> decisions_;
  std::vector<Placement> placed_;
  std::vector<int8_t> alias_state_;     // per alias group: 0 open, 1 fast, 2 slow
  std::vector<int64_t> alias_offset_;   // per alias group: its offset once placed
  std::vector<int64_t> tensor_end_;     // per tensor: the latest step held in fast memory
  std::vector<int64_t> tensor_offset_;  // per tensor: the offset of that allocation
  Placement cand_[kNumActions];
};

}  // namespace tempo::mmap
