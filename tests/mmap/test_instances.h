// Instances the mmap tests share: buffers written out, the hand-solved instance, synthetic ones,
// and random play's mean return.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "mmap/game.h"
#include "mmap/instance.h"

namespace tempo::mmap::fixtures {

inline Buffer buf(int64_t size, int64_t time, int64_t start, int64_t end, bool out, int64_t tensor,
                  int64_t alias, double benefit, double demand = 0) {
  Buffer b;
  b.size = size;
  b.time = time;
  b.start = start;
  b.end = end;
  b.is_output = out;
  b.tensor_id = tensor;
  b.alias_id = alias;
  b.benefit = benefit;
  b.demand = demand;
  return b;
}

inline Instance make(int64_t capacity, int64_t steps, std::vector<Buffer> buffers,
                     double supply = 1.0) {
  Instance inst;
  inst.name = "test";
  inst.capacity = capacity;
  inst.supply.assign(static_cast<size_t>(steps), supply);
  inst.buffers = std::move(buffers);
  return inst;
}

// A hand-solved instance (capacity 100, supply 1 per step):
//   b0: tensor A written at 0 (60 bytes, live 0..4, benefit 1, no copy time)
//   b1: tensor B written at 1 (60 bytes, live 1..3, benefit 5, no copy time)
//   b2: tensor A read at 4 (benefit 2, copy time 2)
// A and B cannot share fast memory at any step. Keeping A from 0 to 4 (NoCopy) shuts B out: 3.
// Copy writes A back at once ([0, 0]) and B too ([1, 1]); A's read at 4 is then prefetched
// over [2, 4] (two steps of supply): 1 + 5 + 2 = 8, the optimum. Keeping B (NoCopy, [1, 3])
// instead blocks that prefetch and NoCopy of b2 ((0, 4]): 6.
inline Instance hand_solved() {
  return make(100, 6,
              {buf(60, 0, 0, 4, true, 0, 0, 1), buf(60, 1, 1, 3, true, 1, 1, 5),
               buf(60, 4, 0, 4, false, 0, 2, 2, 2)});
}

inline std::shared_ptr<const Instance> synthetic(int64_t n, double pressure, uint64_t seed,
                                                 double alias = 0.1) {
  SyntheticOptions o;
  o.buffers = n;
  o.pressure = pressure;
  o.seed = seed;
  o.alias_fraction = alias;
  return std::make_shared<const Instance>(generate_instance(o));
}

inline double mean_random_return(const std::shared_ptr<const Instance>& inst, int games,
                                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  double sum = 0;
  for (int k = 0; k < games; ++k) {
    MMapGame g(inst);
    while (!g.done()) {
      auto legal = g.legal_actions();
      g.step(legal[rng() % legal.size()]);
    }
    sum += g.total_return();
  }
  return sum / games;
}

}  // namespace tempo::mmap::fixtures
