// Baselines: the decoder, the XLA-style heuristic, random play and evolutionary search.
#include "mmap/baselines.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace tempo::mmap {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void keep_if_better(SearchResult& best, const MMapGame& g) {
  if (best.games == 0 || g.total_return() > best.best_return) {
    best.best_return = g.total_return();
    best.decisions = g.decisions();
    best.lost = g.lost();
  }
  ++best.games;
}

// The heuristic's own placement state: allocations in fast memory and the copy bandwidth left.
struct Plan {
  struct Alloc {
    int64_t offset, size, start, end, alias;
  };
  const Instance* inst = nullptr;
  std::vector<Alloc> allocs;
  CopyBandwidth bandwidth;
  std::vector<int8_t> decided;  // per buffer: -1 not yet, else an Action

  // The best-fit offset for [start, end] (-1: none); `fixed` >= 0 must be that offset.
  int64_t offset(int64_t size, int64_t start, int64_t end, int64_t alias, int64_t fixed) const {
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (const Alloc& a : allocs)
      if (a.alias != alias && a.end >= start && a.start <= end)
        taken.emplace_back(a.offset, a.offset + a.size);
    if (fixed >= 0) {
      if (fixed + size > inst->capacity) return -1;
      for (const auto& [lo, hi] : taken)
        if (lo < fixed + size && fixed < hi) return -1;
      return fixed;
    }
    std::sort(taken.begin(), taken.end());
    int64_t best = -1, best_gap = 0, cand = 0;
    for (const auto& [lo, hi] : taken) {
      if (lo >= cand + size && (best < 0 || lo - cand < best_gap))
        best = cand, best_gap = lo - cand;
      cand = std::max(cand, hi);
    }
    if (cand + size <= inst->capacity && (best < 0 || inst->capacity - cand < best_gap))
      best = cand;
    return best;
  }
};

}  // namespace

MMapGame play(const std::shared_ptr<const Instance>& inst, const std::vector<Action>& preferred,
              GameOptions options) {
  return play(
      inst,
      [&](const MMapGame& g) {
        return g.current() < preferred.size() ? preferred[g.current()] : Action::Drop;
      },
      options);
}

MMapGame play(const std::shared_ptr<const Instance>& inst,
              const std::function<Action(const MMapGame&)>& policy, GameOptions options) {
  return play_from(MMapGame(inst, options), policy);
}

std::unordered_map<int64_t, int> alias_group_sizes(const Instance& inst) {
  std::unordered_map<int64_t, int> sizes;
  for (const Buffer& b : inst.buffers) ++sizes[b.alias_id];
  return sizes;
}

Action playable(const MMapGame& g, Action want) {
  if (g.is_legal(want)) return want;
  const Action other = want == Action::Copy ? Action::NoCopy : Action::Copy;
  if (want != Action::Drop && g.is_legal(other)) return other;
  if (g.is_legal(Action::Drop)) return Action::Drop;
  return g.is_legal(Action::Copy) ? Action::Copy : Action::NoCopy;
}

MMapGame play_from(MMapGame start, const std::function<Action(const MMapGame&)>& policy,
                   int64_t buffers, const std::unordered_map<int64_t, int>* group_sizes) {
  const Instance* inst = &start.instance();
  std::unordered_map<int64_t, int> computed;
  if (!group_sizes) computed = alias_group_sizes(*inst);
  const std::unordered_map<int64_t, int>& group_size = group_sizes ? *group_sizes : computed;
  std::unordered_set<int64_t> dropped;            // alias groups the Drop-backup gave up
  std::unordered_map<int64_t, MMapGame> backups;  // before each group's first decision
  const size_t stop =
      buffers > 0 ? start.current() + static_cast<size_t>(buffers) : inst->buffers.size();
  MMapGame g = std::move(start);
  while (!g.done() && g.current() < stop) {
    const int64_t alias = inst->buffers[g.current()].alias_id;
    if (group_size.at(alias) > 1 && !backups.count(alias)) backups.emplace(alias, g);
    g.step(playable(g, dropped.count(alias) ? Action::Drop : policy(g)));
    if (g.lost() && !g.legal_actions().size()) {
      // Drop-backup: back to before the group of the buffer left without a legal action, which
      // is then dropped whole.
      const int64_t failed = inst->buffers[g.current()].alias_id;
      auto it = backups.find(failed);
      if (it == backups.end() || dropped.count(failed)) break;
      dropped.insert(failed);
      MMapGame back = it->second;
      for (auto b = backups.begin(); b != backups.end();)
        b = b->second.moves() > back.moves() ? backups.erase(b) : std::next(b);
      g = std::move(back);
    }
  }
  return g;
}

SearchResult heuristic(const std::shared_ptr<const Instance>& inst, GameOptions options) {
  const auto t0 = Clock::now();
  const auto& bufs = inst->buffers;
  const size_t n = bufs.size();
  Plan plan{inst.get(), {}, CopyBandwidth(inst->supply), std::vector<int8_t>(n, -1)};
  // Alias groups and the buffers of each tensor, in chronological order.
  std::unordered_map<int64_t, std::vector<size_t>> groups, tensors;
  for (size_t k = 0; k < n; ++k) {
    groups[bufs[k].alias_id].push_back(k);
    tensors[bufs[k].tensor_id].push_back(k);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return bufs[a].benefit * static_cast<double>(bufs[b].size) >
           bufs[b].benefit * static_cast<double>(bufs[a].size);
  });
  // The interval a buffer would hold kept alive from its tensor's placed buffers before it.
  auto keep_alive = [&](size_t k, int64_t* start, int64_t* end) {
    const Buffer& b = bufs[k];
    if (b.is_output) {
      *start = b.start;
      *end = b.end;
      return true;
    }
    int64_t s = -1;
    for (size_t j : tensors[b.tensor_id]) {
      if (bufs[j].time >= b.time) break;
      if (plan.decided[j] >= 0 && plan.decided[j] != static_cast<int8_t>(Action::Drop))
        for (const Plan::Alloc& a : plan.allocs)
          if (a.alias == bufs[j].alias_id && a.start <= bufs[j].time && a.end >= bufs[j].time)
            s = std::max(s, a.end);
    }
    if (s < 0) return false;
    *start = std::min(s + 1, b.time);
    *end = s >= b.time ? b.time - 1 : b.time;  // already covered: nothing new
    return true;
  };
  for (size_t k : order) {
    if (plan.decided[k] >= 0) continue;
    const std::vector<size_t>& group = groups[bufs[k].alias_id];
    // A group of several is placed whole or not at all (Eq. 4): undone if a member fits nowhere.
    Plan saved;
    if (group.size() > 1) saved = plan;
    int64_t fixed = -1;
    bool ok = true;
    for (size_t m : group) {
      const Buffer& b = bufs[m];
      // Candidates: keep alive (NoCopy) and copy (Copy); the one holding fewer bytes x steps.
      struct Option {
        Action action;
        int64_t start, end, lo = 0, hi = -1, offset = -1;
      };
      std::vector<Option> options_m;
      int64_t s, e;
      if (keep_alive(m, &s, &e)) options_m.push_back({Action::NoCopy, s, e});
      int64_t lo, hi;
      if (plan.bandwidth.interval(b, &lo, &hi)) {
        Option c{Action::Copy, b.is_output ? b.time : (hi >= lo ? lo : b.time),
                 b.is_output ? (hi >= lo ? hi : b.time) : b.time, lo, hi};
        options_m.push_back(c);
      }
      std::stable_sort(options_m.begin(), options_m.end(), [](const Option& x, const Option& y) {
        return x.end - x.start < y.end - y.start;
      });
      bool placed = false;
      for (Option& o : options_m) {
        o.offset = o.end >= o.start ? plan.offset(b.size, o.start, o.end, b.alias_id, fixed)
                                    : std::max<int64_t>(fixed, 0);
        if (o.offset < 0) continue;
        if (o.end >= o.start) plan.allocs.push_back({o.offset, b.size, o.start, o.end, b.alias_id});
        if (o.action == Action::Copy && o.hi >= o.lo) plan.bandwidth.use(b, o.lo, o.hi);
        plan.decided[m] = static_cast<int8_t>(o.action);
        fixed = o.offset;
        placed = true;
        break;
      }
      if (!placed) {
        ok = false;
        break;
      }
    }
    if (!ok) {
      if (group.size() > 1) plan = std::move(saved);
      for (size_t m : group) plan.decided[m] = static_cast<int8_t>(Action::Drop);
    }
  }
  std::vector<Action> decisions(n, Action::Drop);
  for (size_t k = 0; k < n; ++k)
    if (plan.decided[k] >= 0) decisions[k] = static_cast<Action>(plan.decided[k]);
  SearchResult r;
  keep_if_better(r, play(inst, decisions, options));
  // The plan was made out of chronological order, and the game assigns intervals and offsets
  // in it: the same greedy played in order often keeps more. A tensor kept resident from its
  // write (NoCopy of the output: its whole live range) serves all its reads at no further cost,
  // so outputs are kept by the benefit of the whole tensor per byte-step held, and reads are
  // prefetched (Copy) by their own benefit per byte. Both thresholds are swept over quantiles;
  // the best of these games and the plan's is the heuristic's.
  std::unordered_map<int64_t, double> tensor_benefit;
  for (const Buffer& b : bufs) tensor_benefit[b.tensor_id] += b.benefit;
  std::vector<double> per_byte(n), resident;
  for (size_t k = 0; k < n; ++k) {
    const Buffer& b = bufs[k];
    per_byte[k] = b.benefit / static_cast<double>(b.size);
    if (b.is_output)
      resident.push_back(tensor_benefit[b.tensor_id] /
                         (static_cast<double>(b.size) * static_cast<double>(b.end - b.start + 1)));
  }
  std::vector<double> per_byte_sorted = per_byte;
  std::sort(per_byte_sorted.begin(), per_byte_sorted.end());
  std::sort(resident.begin(), resident.end());
  auto quantile = [](const std::vector<double>& v, int q, int of) {
    if (v.empty()) return 0.0;
    return q >= of ? v.back() * 2 + 1
                   : v[v.size() * static_cast<size_t>(q) / static_cast<size_t>(of)];
  };
  constexpr int kQuantiles = 8;
  for (int qr = 0; qr <= kQuantiles; ++qr)
    for (int qc = 0; qc <= kQuantiles; qc += 2) {
      const double keep_at = quantile(resident, qr, kQuantiles);
      const double copy_at = quantile(per_byte_sorted, qc, kQuantiles);
      auto policy = [&](const MMapGame& g) {
        const size_t k = g.current();
        const Buffer& b = bufs[k];
        const Placement& c = g.placement(Action::Copy);
        const Placement& nc = g.placement(Action::NoCopy);
        if (nc.legal && !b.is_output && nc.end < nc.start) return Action::NoCopy;  // resident
        if (b.is_output && nc.legal &&
            tensor_benefit[b.tensor_id] /
                    (static_cast<double>(b.size) * static_cast<double>(b.end - b.start + 1)) >=
                keep_at)
          return Action::NoCopy;
        if (c.legal && per_byte[k] >= copy_at) return Action::Copy;
        return Action::Drop;  // play() places it where an alias group leaves no choice
      };
      MMapGame g = play(inst, policy, options);
      keep_if_better(r, g);
    }
  r.seconds = since(t0);
  return r;
}

SearchResult random_search(const std::shared_ptr<const Instance>& inst, double seconds,
                           uint64_t seed, GameOptions options) {
  const auto t0 = Clock::now();
  std::mt19937_64 rng(seed);
  SearchResult r;
  do {
    MMapGame g(inst, options);
    while (!g.done()) {
      const std::vector<Action> legal = g.legal_actions();
      g.step(legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)]);
    }
    keep_if_better(r, g);
  } while (since(t0) < seconds);
  r.seconds = since(t0);
  return r;
}

SearchResult evolutionary_search(const std::shared_ptr<const Instance>& inst, double seconds,
                                 uint64_t seed, EvolutionOptions evo, GameOptions options) {
  const auto t0 = Clock::now();
  std::mt19937_64 rng(seed);
  const size_t n = inst->buffers.size();
  std::uniform_int_distribution<int> gene(0, kNumActions - 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  struct Individual {
    std::vector<Action> genes;
    double fitness;
  };
  SearchResult r;
  std::vector<Individual> pop;
  auto evaluate = [&](std::vector<Action> genes) {
    MMapGame g = play(inst, genes, options);
    keep_if_better(r, g);
    return Individual{std::move(genes), g.total_return()};
  };
  const size_t size = static_cast<size_t>(std::max<int64_t>(2, evo.population));
  while (pop.size() < size && (pop.empty() || since(t0) < seconds)) {
    std::vector<Action> genes(n);
    for (Action& a : genes) a = static_cast<Action>(gene(rng));
    pop.push_back(evaluate(std::move(genes)));
  }
  const double p_mut = n ? std::min(1.0, evo.mutation / static_cast<double>(n)) : 0.0;
  auto tournament = [&]() -> const Individual& {
    const Individual& a = pop[std::uniform_int_distribution<size_t>(0, pop.size() - 1)(rng)];
    const Individual& b = pop[std::uniform_int_distribution<size_t>(0, pop.size() - 1)(rng)];
    return a.fitness >= b.fitness ? a : b;
  };
  while (pop.size() >= 2 && since(t0) < seconds) {
    const Individual& x = tournament();
    const Individual& y = tournament();
    std::vector<Action> child(n);
    for (size_t k = 0; k < n; ++k) {
      child[k] = unit(rng) < 0.5 ? x.genes[k] : y.genes[k];
      if (unit(rng) < p_mut) child[k] = static_cast<Action>(gene(rng));
    }
    Individual c = evaluate(std::move(child));
    auto worst = std::min_element(
        pop.begin(), pop.end(),
        [](const Individual& a, const Individual& b) { return a.fitness < b.fitness; });
    if (c.fitness >= worst->fitness) *worst = std::move(c);
  }
  r.seconds = since(t0);
  return r;
}

}  // namespace tempo::mmap
