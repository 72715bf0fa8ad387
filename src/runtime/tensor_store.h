// Tensor stores (TEMPO §6): where the runtime keeps the timesteps of each op output, and the
// memory accounting of what they hold.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/backend.h"

namespace tempo::runtime {

// A record of the device storages of a run, for memory-placement instances (src/mmap): when each
// storage was first held by a store (Acquire) and last let go (Release), and each statement that
// read it (Use), with the boundaries and wall times of the executed statements. Filled by
// Executor::trace_buffers; off by default (then it costs one branch per acquire, release and read).
struct BufferTrace {
  enum class Kind : uint8_t { Acquire, Release, Use };
  struct Event {
    const void* storage = nullptr;  // an identity only while held: addresses are reused
    int64_t bytes = 0;              // the storage's size (Acquire)
    Kind kind = Kind::Use;
  };
  std::vector<Event> events;
  // Per executed statement k (the memory timeline's steps): its events are
  // events[k ? ends[k - 1] : 0 : ends[k]]; its wall time; its op; the stores' device bytes after
  // it.
  std::vector<size_t> ends;
  std::vector<int64_t> ns;
  std::vector<ir::OpId> ops;
  std::vector<int64_t> device_bytes;
  void clear() {
    events.clear();
    ends.clear();
    ns.clear();
    ops.clear();
    device_bytes.clear();
  }
};

// Bytes held by the tensor stores of one device: now and at the peak of the current run. Memory
// is counted per storage: a value held by several stores (Merge, Identity) or several views of one
// storage count once.
struct MemoryAccount {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  BufferTrace* trace = nullptr;  // receives Acquire and Release events where set

  void acquire(const Value& v) {
    auto [it, added] = held_.try_emplace(v.storage(), 0, v.storage_nbytes());
    if (it->second.refs++ == 0) {
      live_bytes += it->second.bytes;
      if (live_bytes > peak_bytes) peak_bytes = live_bytes;
      if (trace) trace->events.push_back({it->first, it->second.bytes, BufferTrace::Kind::Acquire});
    }
  }
  void release(const Value& v) {
    auto it = held_.find(v.storage());
    if (it == held_.end()) return;
    if (--it->second.refs == 0) {
      live_bytes -= it->second.bytes;
      if (trace) trace->events.push_back({it->first, 0, BufferTrace::Kind::Release});
      held_.erase(it);
    }
  }
  void reset_peak() { peak_bytes = live_bytes; }

 private:
  struct Held {
    Held(int64_t r, int64_t b) : refs(r), bytes(b) {}
    int64_t refs;
    int64_t bytes;
  };
  std::unordered_map<const void*, Held> held_;
};

// A point store: maps each point of an op output's temporal domain to one value. Points are
// linearized (row-major over the run's bounds) into an int64 key; small domains use flat slots
// from the first live key to the last, large ones a hash map (memory proportional to the live
// entries).
//
// With blocks (TEMPO §6's block store; the executor uses them for outputs read as x[0:t+1] or
// x[t:T] along their last dimension), the points that differ only in the last coordinate are
// rows of one preallocated block: a stored value is copied into its row, and a read of
// consecutive points is one view of the block (rows()) instead of a stack of copies. A block is
// allocated at its second point (the first is then copied in) and dropped when its last row is
// erased. The store keeps no view per point: a read of one point makes a view of its row (the
// last row written keeps one), since a LibTorch view costs ~0.5 KiB, more than the data of the
// small points a replay buffer holds by the million.
//
// A window store (TEMPO §6; for outputs read through sliding windows x[max(0,t-w):t+1] of at
// most W points) keeps a block of 2W rows that rolls: when a point does not fit, the last W - 1
// rows move to the front of a new block (the points left behind each keep a view of the old one,
// which goes with its last view), so memory stays O(W) however long the dimension, and each
// window read is one view.
class PointStore {
 public:
  // `who` names the op output in error messages; `rank` is the number of domain dimensions.
  PointStore(std::string who, size_t rank, MemoryAccount* memory);
  ~PointStore();
  PointStore(const PointStore&) = delete;
  PointStore& operator=(const PointStore&) = delete;

  // Drops every entry and sets the domain bounds (rank values, each >= 1) for the next run.
  void reset(const int64_t* bounds);
  void clear();

  // Keeps values in blocks along domain dimension `dim` from the next reset() on (`backend` makes
  // and views them); with `window` > 0, in rolling blocks of 2 x window rows for reads of at most
  // `window` points.
  // Points smaller than `min_point_bytes` stay as they are (blocks only pay for large points).
  // The rows lie before the points' dim `row_axis` in a block (Backend::new_block).
  void use_blocks(Backend* backend, int64_t window = 0, size_t dim = SIZE_MAX,
                  int64_t min_point_bytes = 0, int64_t row_axis = 0) {
    blocks_backend_ = backend;
    window_ = window;
    block_dim_ = dim;
    min_point_bytes_ = min_point_bytes;
    row_axis_ = row_axis;
  }
  int64_t row_axis() const { return row_axis_; }
  bool blocked() const { return blocks_backend_ != nullptr; }
  int64_t window() const { return window_; }  // > 0: a window store of that many points
  // Swapping (TEMPO §5.2): values moved to host memory are counted in `host` instead.
  void use_host(MemoryAccount* host) { host_memory_ = host; }
  // Every value is in host memory (views of swapped values read by gathers): counted in `host`.
  void keep_on_host(MemoryAccount* host) {
    memory_ = host;
    on_host_only_ = true;
  }
  // Moves the value at `point` to host memory (evict) or back (load) through `backend`; a point
  // with no value (not produced: the op's condition) or already there is skipped. A loaded
  // value keeps its host copy, so evicting it again drops the device copy without copying.
  void move(const int64_t* point, bool to_host, Backend& backend);
  // The points of `point` with the block dimension's coordinate in start:stop:step, as one view
  // of their block; null where some are missing or not in the block (the caller then stacks the
  // points). `point`'s coordinate of the block dimension is ignored.
  ValuePtr rows(const int64_t* point, int64_t start, int64_t stop, int64_t step) const;

  void put(const int64_t* point, ValuePtr v) {
    const int64_t k = key(point);
    const int64_t n = v->nbytes();
    // In a block, the slot holds the block itself (rows are viewed when read).
    if (blocks_backend_ && n >= min_point_bytes_) v = into_block(k, std::move(v));
    ValuePtr& slot = slot_for_write(k);
    if (slot) {
      bytes_ -= stored_bytes(k, slot);
      release(*slot);
      if (host_memory_) forget_host(k, slot);
    } else {
      ++size_;
    }
    memory_->acquire(*v);
    bytes_ += n;
    peak_bytes_ = std::max(peak_bytes_, bytes_);
    slot = std::move(v);
  }
  // The value at `point`; a missing point is an InternalError (a schedule bug) naming the op.
  ValuePtr get(const int64_t* point) const {
    const int64_t k = key(point);
    const ValuePtr* v = find(k);
    if (!v) missing(point);
    if (const Block* b = holding_block(k, *v)) return row_view(*b, k);
    return *v;
  }
  bool contains(const int64_t* point) const;
  // Removes the value at `point`; returns false where there was none.
  bool erase(const int64_t* point) { return erase_key(key(point)); }
  // Same, but a point outside the domain is not an error (nothing is stored there).
  bool erase_if_present(const int64_t* point) {
    int64_t k;
    return key_inside(point, &k) && erase_key(k);
  }

  size_t rank() const { return rank_; }
  size_t size() const { return size_; }
  // Bytes of the values this store held at its fullest during the current run (values shared
  // with other stores counted here too).
  int64_t peak_bytes() const { return peak_bytes_; }
  int64_t bytes() const { return on_host_only_ ? 0 : bytes_ - host_bytes_; }  // on the device now
  const std::string& who() const { return who_; }

 private:
  int64_t key(const int64_t* point) const {
    int64_t k = 0;
    for (size_t i = 0; i < rank_; ++i) {
      if (point[i] < 0 || point[i] >= bounds_[i]) out_of_range(point);
      k += point[i] * strides_[i];
    }
    return k;
  }
  // The key of `point` where it lies inside the domain; false otherwise.
  bool key_inside(const int64_t* point, int64_t* k) const {
    *k = 0;
    for (size_t i = 0; i < rank_; ++i) {
      if (point[i] < 0 || point[i] >= bounds_[i]) return false;
      *k += point[i] * strides_[i];
    }
    return true;
  }
  const ValuePtr* find(int64_t k) const {
    if (flat_mode_) {
      const int64_t i = k - flat_base_;
      return i >= 0 && i < static_cast<int64_t>(flat_.size()) && flat_[i] ? &flat_[i] : nullptr;
    }
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : &it->second;
  }
  ValuePtr& slot_for_write(int64_t k) {
    if (flat_mode_) {
      if (flat_.empty()) flat_base_ = k;
      for (; k < flat_base_; --flat_base_) flat_.push_front(nullptr);
      if (k - flat_base_ >= static_cast<int64_t>(flat_.size())) flat_.resize(k - flat_base_ + 1);
      return flat_[k - flat_base_];
    }
    return map_[k];
  }
  bool erase_key(int64_t k);
  void forget_host(int64_t k, const ValuePtr& v);  // a swapped point replaced or erased
  void release(const Value& v) {
    memory_->release(v);
    if (host_memory_) host_memory_->release(v);
  }
  // Copies `v` into its block's row where it fits and returns the block (what the point's slot
  // then holds); else returns `v`.
  ValuePtr into_block(int64_t k, ValuePtr v);
  std::string point_str(const int64_t* point) const;
  [[noreturn]] void missing(const int64_t* point) const;
  [[noreturn]] void out_of_range(const int64_t* point) const;

  std::string who_;
  size_t rank_;
  MemoryAccount* memory_;
  MemoryAccount* host_memory_ = nullptr;
  bool on_host_only_ = false;                          // keep_on_host
  std::unordered_set<int64_t> on_host_;                // keys of the values moved to host memory
  int64_t host_bytes_ = 0;                             // their bytes
  std::unordered_map<int64_t, ValuePtr> host_copies_;  // host copies of loaded values
  std::vector<int64_t> bounds_, strides_;
  size_t total_ = 1;
  bool flat_mode_ = true;
  size_t size_ = 0;
  int64_t bytes_ = 0, peak_bytes_ = 0;
  // The slots of keys flat_base_ onwards: erasing the first live key drops the empty slots
  // before the next one, so a long run's store spans its live points, not every point so far.
  std::deque<ValuePtr> flat_;
  int64_t flat_base_ = 0;
  std::unordered_map<int64_t, ValuePtr> map_;

  struct Block {
    ValuePtr data;
    std::vector<bool> held;  // per row: the point's value is this row
    int64_t live = 0;        // rows held
    int64_t base = 0;        // the last coordinate of row 0 (window stores roll it forward)
    int64_t row_bytes = 0;
    ValuePtr latest;          // a view of the last row written (most reads are of it)
    int64_t latest_row = -1;
  };
  // The block whose row is the value at key `k`, where `slot` (k's) holds that block.
  const Block* holding_block(int64_t k, const ValuePtr& slot) const {
    if (!blocks_backend_) return nullptr;
    auto it = blocks_.find(block_of(k).first);
    return it != blocks_.end() && it->second.data == slot ? &it->second : nullptr;
  }
  ValuePtr row_view(const Block& b, int64_t k) const;
  int64_t stored_bytes(int64_t k, const ValuePtr& slot) const {
    const Block* b = holding_block(k, slot);
    return b ? b->row_bytes : slot->nbytes();
  }
  // Block `b` (of key `outer`): its rows from `start` on moved to the front of a new block
  // (window stores).
  void roll(int64_t outer, Block& b, int64_t start);
  Backend* blocks_backend_ = nullptr;
  int64_t window_ = 0;           // > 0: window store for reads of at most this many rows
  int64_t min_point_bytes_ = 0;  // smaller points are not put in blocks
  int64_t row_axis_ = 0;         // where the rows lie among a point's dims in a block
  size_t block_dim_ = SIZE_MAX;  // the dimension along which a block's rows lie (default: last)
  int64_t block_rows_ = 1;       // rows of a block: that dimension's bound, or 2 x window
  int64_t dim_bound_ = 1, dim_stride_ = 1;  // that dimension's bound and key stride
  // A key as (the key of its block: that dimension's coordinate zeroed, the coordinate).
  std::pair<int64_t, int64_t> block_of(int64_t k) const {
    const int64_t pos = (k / dim_stride_) % dim_bound_;
    return {k - pos * dim_stride_, pos};
  }
  std::unordered_map<int64_t, Block> blocks_;  // by block_of(key).first
  // Blocks not allocated yet: the key of their one stored point (kept as it is), by block.
  std::unordered_map<int64_t, int64_t> first_point_;
};

// Point, block and window stores (TEMPO §6) are modes of one class.
using TensorStore = PointStore;

}  // namespace tempo::runtime
