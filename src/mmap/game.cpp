// The MMapGame: legality, interval and offset assignment, rewards, observations.
#include "mmap/game.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "util/error.h"

namespace tempo::mmap {

const char* action_name(Action a) {
  switch (a) {
    case Action::Copy:
      return "Copy";
    case Action::NoCopy:
      return "NoCopy";
    case Action::Drop:
      return "Drop";
  }
  return "?";
}

std::vector<float> Observation::flat() const {
  std::vector<float> v = grid;
  v.insert(v.end(), features.begin(), features.end());
  return v;
}

// Tables that depend only on the instance: dense tensor and alias indices, the alias groups'
// sizes and each buffer's position in its group, each buffer's next buffers of its tensor, and
// the scales of the features.
struct MMapGame::Shared {
  std::vector<int32_t> tensor, alias;
  std::vector<int32_t> alias_size, alias_pos;
  std::vector<int32_t> next_of_tensor;  // the next buffer of the tensor (-1: none)
  int32_t tensors = 0, aliases = 0;
  double max_supply = 1, max_demand = 1, max_benefit = 1;
};

namespace {
constexpr double kEps = 1e-9;
}

MMapGame::MMapGame(const Instance& instance, GameOptions options)
    : MMapGame(std::make_shared<const Instance>(instance), options) {}

MMapGame::MMapGame(std::shared_ptr<const Instance> instance, GameOptions options)
    : inst_(std::move(instance)), options_(options) {
  inst_->validate();
  auto sh = std::make_shared<Shared>();
  const size_t n = inst_->buffers.size();
  std::unordered_map<int64_t, int32_t> tensors, aliases;
  sh->tensor.resize(n);
  sh->alias.resize(n);
  sh->alias_pos.resize(n);
  sh->next_of_tensor.assign(n, -1);
  std::vector<int32_t> last_of_tensor;
  for (size_t k = 0; k < n; ++k) {
    const Buffer& b = inst_->buffers[k];
    auto [t, tnew] = tensors.try_emplace(b.tensor_id, static_cast<int32_t>(tensors.size()));
    auto [a, anew] = aliases.try_emplace(b.alias_id, static_cast<int32_t>(aliases.size()));
    sh->tensor[k] = t->second;
    sh->alias[k] = a->second;
    if (anew) sh->alias_size.push_back(0);
    sh->alias_pos[k] = sh->alias_size[a->second]++;
    if (tnew) last_of_tensor.push_back(-1);
    if (int32_t p = last_of_tensor[t->second]; p >= 0)
      sh->next_of_tensor[p] = static_cast<int32_t>(k);
    last_of_tensor[t->second] = static_cast<int32_t>(k);
    sh->max_demand = std::max(sh->max_demand, b.demand);
    sh->max_benefit = std::max(sh->max_benefit, b.benefit);
  }
  for (double s : inst_->supply) sh->max_supply = std::max(sh->max_supply, s);
  sh->tensors = static_cast<int32_t>(tensors.size());
  sh->aliases = static_cast<int32_t>(aliases.size());
  shared_ = std::move(sh);
  bandwidth_ = CopyBandwidth(inst_->supply);
  decisions_.assign(n, Action::Drop);
  placed_.assign(n, Placement{});
  alias_state_.assign(static_cast<size_t>(shared_->aliases), 0);
  alias_offset_.assign(static_cast<size_t>(shared_->aliases), -1);
  tensor_end_.assign(static_cast<size_t>(shared_->tensors), -1);
  tensor_offset_.assign(static_cast<size_t>(shared_->tensors), -1);
  enter();
}

std::vector<Action> MMapGame::legal_actions() const {
  std::vector<Action> out;
  if (done_) return out;
  for (int a = 0; a < kNumActions; ++a)
    if (cand_[a].legal) out.push_back(static_cast<Action>(a));
  return out;
}

bool MMapGame::is_free(int64_t offset, int64_t size, int64_t start, int64_t end,
                       int32_t alias) const {
  if (offset < 0 || offset + size > inst_->capacity) return false;
  for (const Alloc& a : allocs_) {
    if (a.alias == alias || a.end < start || a.start > end) continue;
    if (a.offset < offset + size && offset < a.offset + a.size) return false;
  }
  return true;
}

int64_t MMapGame::find_offset(int64_t size, int64_t start, int64_t end, int32_t alias) const {
  // The offset ranges taken during [start, end], by offset.
  std::vector<std::pair<int64_t, int64_t>> taken;
  for (const Alloc& a : allocs_)
    if (a.alias != alias && a.end >= start && a.start <= end)
      taken.emplace_back(a.offset, a.offset + a.size);
  std::sort(taken.begin(), taken.end());
  const int64_t cap = inst_->capacity;
  int64_t best = -1, best_gap = 0, cand = 0;
  for (const auto& [lo, hi] : taken) {
    if (lo >= cand + size) {  // the gap [cand, lo) fits
      if (!options_.best_fit) return cand;
      if (best < 0 || lo - cand < best_gap) best = cand, best_gap = lo - cand;
    }
    cand = std::max(cand, hi);
  }
  if (cand + size <= cap && (best < 0 || cap - cand < best_gap)) best = cand;
  return best;
}

bool CopyBandwidth::interval(const Buffer& b, int64_t* lo, int64_t* hi) const {
  const int64_t tau = b.time;
  if (b.demand <= 0) {  // nothing to copy
    *lo = tau;
    *hi = tau - 1;
    return true;
  }
  double acc = 0;
  if (!b.is_output) {  // a prefetch over [s, tau), the latest s that covers the demand
    for (int64_t s = tau - 1; s >= b.start; --s) {
      if (s + 1 <= tau - 1 && edge[static_cast<size_t>(s)]) return false;  // Eq. 6
      acc += left[static_cast<size_t>(s)];
      if (acc + kEps * b.demand >= b.demand) {  // Eq. 5
        *lo = s;
        *hi = tau - 1;
        return true;
      }
    }
    return false;
  }
  const int64_t steps = static_cast<int64_t>(left.size());
  for (int64_t e = tau + 1; e < steps; ++e) {  // a write-back over (tau, e]
    if (e - 1 >= tau + 1 && edge[static_cast<size_t>(e - 1)]) return false;
    acc += left[static_cast<size_t>(e)];
    if (acc + kEps * b.demand >= b.demand) {
      *lo = tau + 1;
      *hi = e;
      return true;
    }
  }
  return false;
}

void CopyBandwidth::use(const Buffer& b, int64_t lo, int64_t hi) {
  double demand = b.demand;
  auto take = [&](int64_t k) {
    double& s = left[static_cast<size_t>(k)];
    const double used = std::min(s, demand);
    s -= used;
    demand -= used;
  };
  if (b.is_output)
    for (int64_t k = lo; k <= hi; ++k) take(k);
  else
    for (int64_t k = hi; k >= lo; --k) take(k);
  for (int64_t k = lo; k < hi; ++k) edge[static_cast<size_t>(k)] = 1;
}

void MMapGame::choose_offset(Placement& p, const Buffer& b, int32_t alias) const {
  if (alias_state_[static_cast<size_t>(alias)] == 1) {
    p.offset = alias_offset_[static_cast<size_t>(alias)];
    if (!is_free(p.offset, b.size, p.start, p.end, alias)) p.offset = -1;
  } else {
    p.offset = find_offset(b.size, p.start, p.end, alias);
  }
  p.legal = p.offset >= 0;
}

Placement MMapGame::copy_placement(const Buffer& b, int32_t alias) const {
  Placement p;
  int64_t lo, hi;
  if (!bandwidth_.interval(b, &lo, &hi)) return p;
  p.copy_start = lo;
  p.copy_end = hi;
  if (b.is_output) {
    p.start = b.time;
    p.end = hi >= lo ? hi : b.time;
  } else {
    p.start = hi >= lo ? lo : b.time;
    p.end = b.time;
  }
  choose_offset(p, b, alias);
  return p;
}

Placement MMapGame::nocopy_placement(const Buffer& b, size_t index, int32_t alias) const {
  Placement p;
  const int32_t tensor = shared_->tensor[index];
  const bool alias_placed = alias_state_[static_cast<size_t>(alias)] == 1;
  if (b.is_output) {
    p.start = b.start;
    p.end = b.end;
  } else {
    const int64_t s = tensor_end_[static_cast<size_t>(tensor)];
    if (s < 0) return p;  // no earlier allocation of the tensor to extend
    if (s >= b.time) {    // that allocation already holds the tensor at b's time
      p.start = b.time;
      p.end = b.time - 1;
      p.offset = tensor_offset_[static_cast<size_t>(tensor)];
      p.legal = !alias_placed || alias_offset_[static_cast<size_t>(alias)] == p.offset;
      if (!p.legal) p.offset = -1;
      return p;
    }
    p.start = s + 1;
    p.end = b.time;
  }
  choose_offset(p, b, alias);
  return p;
}

void MMapGame::enter() {
  for (Placement& c : cand_) c = Placement{};
  if (next_ >= inst_->buffers.size()) {
    done_ = true;
    return;
  }
  const Buffer& b = inst_->buffers[next_];
  const int32_t alias = shared_->alias[next_];
  const int8_t state = alias_state_[static_cast<size_t>(alias)];
  if (state != 2) {
    cand_[static_cast<int>(Action::Copy)] = copy_placement(b, alias);
    cand_[static_cast<int>(Action::NoCopy)] = nocopy_placement(b, next_, alias);
  }
  Placement& drop = cand_[static_cast<int>(Action::Drop)];
  drop.legal = state != 1;
  drop.start = b.time;
  drop.end = b.time - 1;
  if (!cand_[0].legal && !cand_[1].legal && !drop.legal) {  // infeasible (§4.3.2)
    done_ = true;
    lost_ = true;
  }
}

double MMapGame::step(Action a) {
  if (done_) internal_error("MMapGame::step on a finished game");
  const int ai = static_cast<int>(a);
  if (ai < 0 || ai >= kNumActions || !cand_[ai].legal) {  // an illegal move loses
    const double r = -return_;
    return_ = 0;
    done_ = lost_ = true;
    ++moves_;
    return r;
  }
  const Buffer& b = inst_->buffers[next_];
  const Placement p = cand_[ai];
  const int32_t alias = shared_->alias[next_];
  const int32_t tensor = shared_->tensor[next_];
  double r = 0;
  if (a == Action::Drop) {
    alias_state_[static_cast<size_t>(alias)] = 2;
  } else {
    r = b.benefit;
    alias_state_[static_cast<size_t>(alias)] = 1;
    alias_offset_[static_cast<size_t>(alias)] = p.offset;
    if (p.end >= p.start) {
      allocs_.push_back({p.offset, b.size, p.start, p.end, alias});
      if (p.end >= tensor_end_[static_cast<size_t>(tensor)]) {
        tensor_end_[static_cast<size_t>(tensor)] = p.end;
        tensor_offset_[static_cast<size_t>(tensor)] = p.offset;
      }
    }
    if (a == Action::Copy && p.copy_end >= p.copy_start)
      bandwidth_.use(b, p.copy_start, p.copy_end);
  }
  decisions_[next_] = a;
  placed_[next_] = p;
  return_ += r;
  ++next_;
  ++moves_;
  enter();
  if (lost_) {  // the return goes back to 0
    r -= return_;
    return_ = 0;
  }
  return r;
}

std::string MMapGame::check() const {
  const auto& bufs = inst_->buffers;
  for (size_t i = 0; i < next_ && i < bufs.size(); ++i) {
    const Placement& p = placed_[i];
    if (decisions_[i] == Action::Drop) continue;
    if (p.offset < 0 || p.offset + bufs[i].size > inst_->capacity)
      return cat("buffer ", i, " lies outside the fast memory");
    for (size_t j = 0; j < i; ++j) {
      if (decisions_[j] == Action::Drop) continue;
      const Placement& q = placed_[j];
      const bool same_alias = shared_->alias[i] == shared_->alias[j];
      if (same_alias && p.offset != q.offset)
        return cat("buffers ", j, " and ", i, " share an alias group at different offsets");
      const bool time =
          p.end >= p.start && q.end >= q.start && p.start <= q.end && q.start <= p.end;
      const bool space = p.offset < q.offset + bufs[j].size && q.offset < p.offset + bufs[i].size;
      if (!same_alias && time && space) return cat("buffers ", j, " and ", i, " overlap");
      if (decisions_[i] == Action::Copy && decisions_[j] == Action::Copy &&
          std::min(p.copy_end, q.copy_end) - std::max(p.copy_start, q.copy_start) >= 1)
        return cat("the copies of buffers ", j, " and ", i, " overlap in more than one step");
    }
  }
  std::vector<int8_t> state(static_cast<size_t>(shared_->aliases), 0);
  for (size_t i = 0; i < next_ && i < bufs.size(); ++i) {
    int8_t s = decisions_[i] == Action::Drop ? 2 : 1;
    int8_t& g = state[static_cast<size_t>(shared_->alias[i])];
    if (g && g != s) return cat("buffer ", i, "'s alias group is split between the memories");
    g = s;
  }
  for (size_t k = 0; k < bandwidth_.left.size(); ++k)
    if (bandwidth_.left[k] < -1e-6) return cat("the copies overdraw the supply of step ", k);
  return "";
}

Observation MMapGame::observe(const ObservationOptions& o) const {
  Observation obs;
  const auto& bufs = inst_->buffers;
  const size_t n = bufs.size();
  const size_t cur = std::min(next_, n ? n - 1 : 0);
  const int64_t tau = n ? bufs[cur].time : 0;
  const double cap = static_cast<double>(inst_->capacity);
  const double window = static_cast<double>(std::max<int64_t>(1, o.time_window));

  // The memory map around tau: time rows of ceil(window / grid_time) steps, offset columns.
  obs.grid_time = o.grid_time;
  obs.grid_memory = o.grid_memory;
  obs.grid.assign(static_cast<size_t>(o.grid_time * o.grid_memory), 0.0f);
  const int64_t w0 = tau - o.time_window / 2;
  const int64_t rows_per = std::max<int64_t>(1, (o.time_window + o.grid_time - 1) / o.grid_time);
  for (const Alloc& a : allocs_) {
    const int64_t s = std::max(a.start, w0), e = std::min(a.end, w0 + o.time_window - 1);
    if (s > e) continue;
    const int64_t r0 = (s - w0) / rows_per, r1 = std::min(o.grid_time - 1, (e - w0) / rows_per);
    const int64_t c0 = static_cast<int64_t>(static_cast<double>(a.offset) / cap *
                                            static_cast<double>(o.grid_memory));
    const int64_t c1 = std::min<int64_t>(
        o.grid_memory - 1, static_cast<int64_t>(static_cast<double>(a.offset + a.size - 1) / cap *
                                                static_cast<double>(o.grid_memory)));
    for (int64_t r = r0; r <= r1; ++r)
      for (int64_t c = c0; c <= c1; ++c) obs.grid[static_cast<size_t>(r * o.grid_memory + c)] = 1;
  }

  std::vector<float>& f = obs.features;
  // The memory profile at tau: the occupied fraction of each offset bin.
  const size_t prof0 = f.size();
  f.resize(prof0 + static_cast<size_t>(o.profile_bins), 0.0f);
  const double bin = cap / static_cast<double>(o.profile_bins);
  for (const Alloc& a : allocs_) {
    if (a.start > tau || a.end < tau) continue;
    const double lo = static_cast<double>(a.offset), hi = static_cast<double>(a.offset + a.size);
    for (int64_t k = static_cast<int64_t>(lo / bin);
         k < o.profile_bins && static_cast<double>(k) * bin < hi; ++k) {
      const double cover = std::min(hi, static_cast<double>(k + 1) * bin) -
                           std::max(lo, static_cast<double>(k) * bin);
      f[prof0 + static_cast<size_t>(k)] += static_cast<float>(cover / bin);
    }
  }
  // The supply left around tau.
  for (int64_t k = tau - o.supply_window / 2; k < tau - o.supply_window / 2 + o.supply_window; ++k)
    f.push_back(
        k < 0 || k >= inst_->steps()
            ? 0.0f
            : static_cast<float>(bandwidth_.left[static_cast<size_t>(k)] / shared_->max_supply));
  // Buffer features.
  auto buffer_features = [&](int64_t i) {
    if (i < 0 || static_cast<size_t>(i) >= n || done_) {
      f.insert(f.end(), kBufferFeatures, 0.0f);
      return;
    }
    const Buffer& b = bufs[static_cast<size_t>(i)];
    f.push_back(1.0f);
    f.push_back(static_cast<float>(static_cast<double>(b.size) / cap));
    f.push_back(b.is_output ? 1.0f : 0.0f);
    f.push_back(static_cast<float>(static_cast<double>(b.time - tau) / window));
    f.push_back(static_cast<float>(static_cast<double>(b.start - tau) / window));
    f.push_back(static_cast<float>(static_cast<double>(b.end - tau) / window));
    f.push_back(static_cast<float>(b.demand / shared_->max_demand));
    f.push_back(static_cast<float>(b.benefit / shared_->max_benefit));
    f.push_back(shared_->tensor[static_cast<size_t>(i)] == shared_->tensor[cur] ? 1.0f : 0.0f);
    f.push_back(shared_->alias[static_cast<size_t>(i)] == shared_->alias[cur] ? 1.0f : 0.0f);
  };
  buffer_features(static_cast<int64_t>(cur));
  for (int64_t k = 1; k <= o.next_buffers; ++k) buffer_features(static_cast<int64_t>(cur) + k);
  int64_t j = n ? shared_->next_of_tensor[cur] : -1;
  for (int64_t k = 0; k < o.same_tensor; ++k) {
    buffer_features(j);
    if (j >= 0) j = shared_->next_of_tensor[static_cast<size_t>(j)];
  }
  // Action features.
  for (const Placement& p : cand_) {
    f.push_back(p.legal && !done_ ? 1.0f : 0.0f);
    f.push_back(static_cast<float>(static_cast<double>(p.start - tau) / window));
    f.push_back(static_cast<float>(static_cast<double>(p.end - tau) / window));
    f.push_back(p.offset < 0 ? 0.0f : static_cast<float>(static_cast<double>(p.offset) / cap));
  }
  // Global features.
  const double nb = static_cast<double>(std::max<size_t>(1, n));
  f.push_back(static_cast<float>(static_cast<double>(moves_) / nb));
  f.push_back(static_cast<float>(static_cast<double>(n - std::min(next_, n)) / nb));
  if (n && !done_) {
    const double gs = shared_->alias_size[static_cast<size_t>(shared_->alias[cur])];
    f.push_back(static_cast<float>(shared_->alias_pos[cur] / gs));
    f.push_back(static_cast<float>((gs - shared_->alias_pos[cur] - 1) / gs));
  } else {
    f.push_back(0.0f);
    f.push_back(0.0f);
  }
  return obs;
}

}  // namespace tempo::mmap
