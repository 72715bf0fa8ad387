// The replay buffer of the off-policy algorithms (DQN, SAC, TD3). It is no data structure of its
// own: it is the window of the latest W iterations of each per-step RT, x[max(0, i - W + 1):i + 1,
// 0:T], which the executor keeps in a window store (TEMPO §6): O(W) memory, and each read a
// view. A buffer that outlasts the run is the prefix x[0:i + 1], which a block store serves.
//
// A resumed run's window holds only the transitions since it started; the checkpoint's rows
// (training checkpoints save the buffer) are a constant before them, and a sampled row reads
// whichever holds it, so that the minibatches are the uninterrupted run's.
#include <algorithm>
#include <cstring>
#include <random>

#include "rl/algorithms/program.h"
#include "util/error.h"

namespace tempo::rl::detail {

namespace {

// x over (i, t), of shape (N, ...), read over the buffer's window of iterations and flattened to
// one row per transition: (rows, ...) with rows = min(i + 1, W) * T * N. Each iteration's
// transitions are first one value over i, so that the window is one dimension's, which a window
// store serves as a view (a window over (i, t) would stack its points at every read).
RT replay_window(const RT& x, const Acting& a, int64_t W) {
  RT per_iteration = rollout(x, a.t).named(x.name() + "_rollout");  // (T, N, ...) over i
  const Expr from = W >= a.cfg.iterations ? Expr(0) : tempo::max(Expr(0), a.i.var - (W - 1));
  RT w = per_iteration[slice(from, a.i.var + 1)];
  std::vector<Expr> dims = w.shape().dims;  // (len, T, N, ...)
  dims[2] = dims[0] * dims[1] * dims[2];
  dims.erase(dims.begin(), dims.begin() + 2);
  return w.reshape(Shape(dims));
}

// Checks the checkpoint's buffer a resumed run starts from: one (rows, ...) tensor per field of
// `windows` (the program's), rows = the transitions of the last min(first, W) iterations.
void check_saved_buffer(const TrainCheckpoint& c, const std::vector<RT>& windows, int64_t rows) {
  if (c.replay.size() != windows.size())
    throw UserError(cat("--resume: the checkpoint holds ", c.replay.size(),
                        " replay buffer fields, the program has ", windows.size()));
  for (size_t k = 0; k < windows.size(); ++k) {
    const HostTensor& v = c.replay[k];
    const std::vector<Expr>& dims = windows[k].shape().dims;
    bool same = v.dtype == windows[k].dtype() && v.shape.size() == dims.size() &&
                !v.shape.empty() && v.shape[0] == rows;
    for (size_t d = 1; same && d < dims.size(); ++d) same = dims[d].same(Expr(v.shape[d]));
    if (!same)
      throw UserError(cat("--resume: the checkpoint's replay buffer field ", k, " is not ", rows,
                          " transitions of ", ir::dtype_name(windows[k].dtype()),
                          " rows of the program's shape ", windows[k].shape().str()));
  }
}

}  // namespace

HostTensor latest_rows(const HostTensor& before, const HostTensor& after, int64_t n) {
  const int64_t rows_before = before.shape.empty() ? 0 : before.shape[0];
  const int64_t keep_before = std::clamp<int64_t>(n - after.shape[0], 0, rows_before);
  const int64_t keep_after = std::min<int64_t>(n, after.shape[0]);
  const size_t row_bytes =
      after.shape[0] ? after.data.size() / static_cast<size_t>(after.shape[0]) : 0;
  std::vector<int64_t> shape = after.shape;
  shape[0] = keep_before + keep_after;
  HostTensor out(after.dtype, shape);
  uint8_t* dst = out.data.data();
  if (keep_before) {
    std::memcpy(dst, before.data.data() + (rows_before - keep_before) * row_bytes,
                static_cast<size_t>(keep_before) * row_bytes);
    dst += static_cast<size_t>(keep_before) * row_bytes;
  }
  std::memcpy(dst, after.data.data() + (after.shape[0] - keep_after) * row_bytes,
              static_cast<size_t>(keep_after) * row_bytes);
  return out;
}

int64_t iterations_of(int64_t env_steps, const TrainConfig& cfg) {
  return env_steps / (cfg.num_envs * cfg.steps);
}

void add_replay_windows(Acting& a) {
  const int64_t W = iterations_of(a.cfg.buffer_size, a.cfg);
  for (const RT* x : {&a.obs, &a.actions, &a.reward, &a.final_obs, &a.terminated})
    a.carried.replay.push_back(replay_window(*x, a, W));
}

Replay replay_batch(Acting& a) {
  const TrainConfig& cfg = a.cfg;
  const int64_t N = cfg.num_envs, T = cfg.steps, B = cfg.batch_size;
  const int64_t W = iterations_of(cfg.buffer_size, cfg);
  const uint64_t seed = cfg.compile.seed;
  const int64_t first = a.first_iteration;
  add_replay_windows(a);
  const int64_t saved_rows = std::min(first, W) * T * N;
  if (a.carried.resume) check_saved_buffer(*a.carried.resume, a.carried.replay, saved_rows);
  // Minibatch rows drawn uniformly, with replacement, among the transitions in the buffer, and,
  // in a resumed run, where each lies: in the checkpoint's rows or in this program's window.
  auto sample_fn = [seed, N, T, W, B, first, saved_rows](const std::vector<HostTensor>&,
                                                         const std::vector<int64_t>& p) {
    const int64_t whole = std::min(first + p[0] + 1, W) * T * N;  // the run's buffer
    const int64_t here = std::min(p[0] + 1, W) * T * N;           // this program's window
    const int64_t before = whole - here;                          // the checkpoint's, first
    std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(p[0] + first) * 7919 + 17);
    HostTensor idx(DType::Int64, {B}), saved_idx(DType::Int64, {B}), in_saved(DType::Bool, {B});
    for (int64_t k = 0; k < B; ++k) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      const auto row = static_cast<int64_t>(u * static_cast<double>(whole));
      idx.set(k, static_cast<double>(saved_rows ? std::max<int64_t>(row - before, 0) : row));
      const int64_t last_saved = std::max<int64_t>(saved_rows - 1, 0);
      saved_idx.set(k, static_cast<double>(
                           std::clamp<int64_t>(saved_rows - before + row, 0, last_saved)));
      in_saved.set(k, row < before ? 1.0 : 0.0);
    }
    if (!saved_rows) return std::vector<HostTensor>{idx};
    return std::vector<HostTensor>{idx, saved_idx, in_saved};
  };
  std::vector<TensorType> types{TensorType{DType::Int64, {B}}};
  if (saved_rows)
    types.insert(types.end(), {TensorType{DType::Int64, {B}}, TensorType{DType::Bool, {B}}});
  const std::vector<RT> drawn = a.ctx.udf("replay_sample", sample_fn, {}, types, {a.i});
  std::vector<RT> fields;
  for (size_t k = 0; k < a.carried.replay.size(); ++k) {
    RT sampled = a.carried.replay[k].index_select(0, drawn[0]);
    if (saved_rows) {
      std::vector<Expr> mask_shape(sampled.shape().rank(), Expr(1));
      mask_shape[0] = Expr(B);
      RT from_saved = a.ctx.tensor(a.carried.resume->replay[k]).index_select(0, drawn[1]);
      sampled = where(drawn[2].reshape(Shape(mask_shape)), from_saved, sampled);
    }
    fields.push_back(sampled);
  }
  return Replay{fields[0], fields[1], fields[2], fields[3], fields[4]};
}

}  // namespace tempo::rl::detail
