#include "runtime/tensor_store.h"

#include <algorithm>

#include "util/error.h"

namespace tempo::runtime {

namespace {
// Domains with at most this many points are kept in a flat vector (16 bytes a point).
constexpr size_t kFlatLimit = size_t{1} << 20;
}  // namespace

PointStore::PointStore(std::string who, size_t rank, MemoryAccount* memory)
    : who_(std::move(who)), rank_(rank), memory_(memory), bounds_(rank, 1), strides_(rank, 1) {
  TEMPO_ASSERT(memory_ != nullptr);
}

PointStore::~PointStore() {
  clear();
}

void PointStore::clear() {
  for (auto& v : flat_)
    if (v) release(*v);
  for (auto& [k, v] : map_) release(*v);
  flat_.clear();
  flat_base_ = 0;
  map_.clear();
  blocks_.clear();
  first_point_.clear();
  for (auto& [k, v] : host_copies_) host_memory_->release(*v);
  host_copies_.clear();
  on_host_.clear();
  host_bytes_ = 0;
  size_ = 0;
  bytes_ = 0;
}

void PointStore::reset(const int64_t* bounds) {
  clear();
  peak_bytes_ = 0;
  total_ = 1;
  bool overflow = false;
  for (size_t i = rank_; i-- > 0;) {
    TEMPO_ASSERT(bounds[i] >= 1, who_, ": bound ", bounds[i], " of dimension ", i);
    bounds_[i] = bounds[i];
    strides_[i] = static_cast<int64_t>(total_);
    int64_t next;
    if (__builtin_mul_overflow(static_cast<int64_t>(total_), bounds[i], &next)) overflow = true;
    total_ = static_cast<size_t>(next);
  }
  if (overflow) throw UserError(cat("the temporal domain of ", who_, " has more than 2^63 points"));
  flat_mode_ = total_ <= kFlatLimit;
  if (rank_ && block_dim_ >= rank_) block_dim_ = rank_ - 1;
  dim_bound_ = rank_ ? bounds_[block_dim_] : 1;
  dim_stride_ = rank_ ? strides_[block_dim_] : 1;
  block_rows_ = dim_bound_;
  if (window_ > 0) block_rows_ = std::min(block_rows_, 2 * window_);
}

ValuePtr PointStore::into_block(int64_t k, ValuePtr v) {
  const auto [outer, last] = block_of(k);
  if (window_ == 0 && !blocks_.count(outer)) {
    // A block's first point stays as it is until a second one comes: allocated whole at its
    // first point, a block would coexist with the previous one wherever that point is made early
    // (a rollout's o[i + 1, 0], the last step of iteration i, made before iteration i's learner
    // is done with its block).
    auto p = first_point_.find(outer);
    if (p == first_point_.end() || p->second == k) {
      first_point_[outer] = k;
      return v;
    }
  }
  Block& b = blocks_[outer];
  if (!b.data) {
    b.data = blocks_backend_->new_block(*v, block_rows_, row_axis_);
    b.held.assign(static_cast<size_t>(block_rows_), false);
    b.base = window_ > 0 ? last : 0;
    b.row_bytes = v->nbytes();
    if (auto p = first_point_.find(outer); p != first_point_.end()) {
      const int64_t first = p->second;
      first_point_.erase(p);
      ValuePtr* slot = const_cast<ValuePtr*>(find(first));
      const int64_t r = block_of(first).second;
      if (slot && *slot && blocks_backend_->write_row(*b.data, row_axis_, r, **slot)) {
        memory_->release(**slot);
        memory_->acquire(*b.data);
        *slot = b.data;
        b.held[r] = true;
        ++b.live;
      }
    }
  }
  if (last < b.base) return v;  // older than the window: kept as it is
  if (last - b.base >= block_rows_) roll(outer, b, last - window_ + 1);
  const int64_t r = last - b.base;
  ValuePtr row = blocks_backend_->write_row(*b.data, row_axis_, r, *v);
  if (!row) {  // does not fit the block: kept as it is
    if (b.live == 0) blocks_.erase(outer);
    return v;
  }
  if (!b.held[r]) {
    b.held[r] = true;
    ++b.live;
  }
  b.latest = std::move(row);
  b.latest_row = r;
  return b.data;
}

ValuePtr PointStore::row_view(const Block& b, int64_t k) const {
  const int64_t r = block_of(k).second - b.base;
  return r == b.latest_row ? b.latest : blocks_backend_->block_row(*b.data, row_axis_, r);
}

void PointStore::roll(int64_t outer, Block& b, int64_t start) {
  // The rows from `start` on are copies of stored points: their slots and later window reads
  // take the new block; the points before keep a view each of the old one (freed with its last).
  const int64_t from = std::clamp<int64_t>(start - b.base, 0, block_rows_);
  const ValuePtr old = b.data;
  b.data = blocks_backend_->rolled_block(*old, row_axis_, from, block_rows_);
  for (int64_t r = 0; r < block_rows_; ++r) {
    if (!b.held[r]) continue;
    ValuePtr* slot = const_cast<ValuePtr*>(find(outer + (b.base + r) * dim_stride_));
    if (!slot || *slot != old) continue;
    ValuePtr now = r < from ? blocks_backend_->block_row(*old, row_axis_, r) : b.data;
    memory_->acquire(*now);
    memory_->release(*old);
    *slot = std::move(now);
  }
  b.latest = nullptr;
  b.latest_row = -1;
  std::vector<bool> held(static_cast<size_t>(block_rows_), false);
  std::copy(b.held.begin() + from, b.held.end(), held.begin());
  b.held = std::move(held);
  b.live = std::count(b.held.begin(), b.held.end(), true);
  b.base = std::max(b.base + from, start);  // past the block: every row dropped
}

ValuePtr PointStore::rows(const int64_t* point, int64_t start, int64_t stop, int64_t step) const {
  if (!blocks_backend_ || rank_ == 0 || step < 1 || start < 0 || stop <= start) return nullptr;
  int64_t k = 0;
  for (size_t i = 0; i < rank_; ++i) {
    if (i == block_dim_) continue;
    if (point[i] < 0 || point[i] >= bounds_[i]) return nullptr;
    k += point[i] * strides_[i];
  }
  auto it = blocks_.find(k);
  if (it == blocks_.end()) return nullptr;
  const Block& b = it->second;
  if (start < b.base || stop - b.base > block_rows_) return nullptr;
  for (int64_t r = start; r < stop; r += step)
    if (!b.held[r - b.base]) return nullptr;
  return blocks_backend_->block_rows(*b.data, row_axis_, start - b.base, stop - b.base, step);
}

bool PointStore::contains(const int64_t* point) const {
  int64_t k;
  return key_inside(point, &k) && find(k) != nullptr;
}

void PointStore::move(const int64_t* point, bool to_host, Backend& backend) {
  int64_t k;
  if (!key_inside(point, &k)) return;  // a read clipped at the domain's edge
  ValuePtr* slot = const_cast<ValuePtr*>(find(k));
  // Nothing there (the op's condition), or already where it should be (read by an earlier load).
  if (!slot || !*slot || on_host_.count(k) == static_cast<size_t>(to_host)) return;
  TEMPO_ASSERT(host_memory_ != nullptr && !blocks_backend_, who_, ": swapped without a host store");
  const int64_t n = (*slot)->nbytes();
  if (to_host) {
    auto copy = host_copies_.find(k);
    if (copy != host_copies_.end()) {  // loaded before: its host copy is still there
      memory_->release(**slot);
      *slot = std::move(copy->second);
      host_copies_.erase(copy);
    } else {
      ValuePtr moved = backend.evict(**slot);
      memory_->release(**slot);
      host_memory_->acquire(*moved);
      *slot = std::move(moved);
    }
    on_host_.insert(k);
    host_bytes_ += n;
  } else {  // the host copy stays until the point is freed: evicting it again costs no copy
    ValuePtr loaded = backend.load(**slot);
    memory_->acquire(*loaded);
    host_copies_[k] = std::move(*slot);
    *slot = std::move(loaded);
    on_host_.erase(k);
    host_bytes_ -= n;
  }
}

void PointStore::forget_host(int64_t k, const ValuePtr& v) {
  if (on_host_.erase(k)) host_bytes_ -= v->nbytes();
  if (auto copy = host_copies_.find(k); copy != host_copies_.end()) {
    host_memory_->release(*copy->second);
    host_copies_.erase(copy);
  }
}

bool PointStore::erase_key(int64_t k) {
  ValuePtr removed;
  if (flat_mode_) {
    const int64_t i = k - flat_base_;
    if (i < 0 || i >= static_cast<int64_t>(flat_.size()) || !flat_[i]) return false;
    removed = std::move(flat_[i]);
    flat_[i] = nullptr;
    for (; !flat_.empty() && !flat_.front(); ++flat_base_) flat_.pop_front();
  } else {
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    removed = std::move(it->second);
    map_.erase(it);
  }
  bytes_ -= stored_bytes(k, removed);
  release(*removed);
  if (host_memory_) forget_host(k, removed);
  --size_;
  if (blocks_backend_) {
    const auto [outer, pos] = block_of(k);
    if (auto p = first_point_.find(outer); p != first_point_.end() && p->second == k)
      first_point_.erase(p);
    auto it = blocks_.find(outer);
    const int64_t r = it == blocks_.end() ? -1 : pos - it->second.base;
    if (r >= 0 && r < block_rows_ && it->second.held[r]) {
      Block& b = it->second;
      b.held[r] = false;
      if (r == b.latest_row) b.latest = nullptr, b.latest_row = -1;
      if (--b.live == 0) blocks_.erase(it);  // its memory goes with the last view
    }
  }
  return true;
}

std::string PointStore::point_str(const int64_t* point) const {
  std::string s = "[";
  for (size_t i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(point[i]);
  return s + "]";
}

void PointStore::missing(const int64_t* point) const {
  internal_error(cat("read of ", who_, " at point ", point_str(point),
                     " which is not stored (not yet computed or already deallocated)"));
}

void PointStore::out_of_range(const int64_t* point) const {
  std::string b;
  for (size_t i = 0; i < rank_; ++i) b += (i ? ", " : "") + std::to_string(bounds_[i]);
  internal_error(cat("access to ", who_, " at point ", point_str(point),
                     " outside its domain (bounds [", b, "])"));
}

}  // namespace tempo::runtime
