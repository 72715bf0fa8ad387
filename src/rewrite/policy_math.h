// The agents' CPU forward-pass pieces (agent.cpp, world_model.cpp): dense layers in nn::Linear's
// layout, masked log-softmax and sampling from it, and advantages of an episode.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ir/types.h"

namespace tempo::rewrite::detail {

// y = W x + b for W (out x in) row-major and b (out), as nn::Linear stores them.
inline void linear(const ir::HostTensor& w, const ir::HostTensor& b, const float* x,
                   std::vector<float>& y) {
  const int64_t out = w.shape[0], in = w.shape[1];
  y.assign(out, 0.f);
  const float *W = w.ptr<float>(), *B = b.ptr<float>();
  for (int64_t o = 0; o < out; ++o) {
    float s = B[o];
    for (int64_t k = 0; k < in; ++k) s += W[o * in + k] * x[k];
    y[o] = s;
  }
}

// Log-probabilities of softmax over the entries where mask is set; -1e30 elsewhere.
inline std::vector<double> masked_log_softmax(const std::vector<float>& logits,
                                              const uint8_t* mask) {
  double mx = -1e300, sum = 0;
  for (size_t k = 0; k < logits.size(); ++k)
    if (mask[k]) mx = std::max(mx, double(logits[k]));
  for (size_t k = 0; k < logits.size(); ++k)
    if (mask[k]) sum += std::exp(logits[k] - mx);
  std::vector<double> lp(logits.size(), -1e30);
  for (size_t k = 0; k < logits.size(); ++k)
    if (mask[k]) lp[k] = logits[k] - mx - std::log(sum);
  return lp;
}

// An index drawn from the log-probabilities (the most likely one when greedy).
inline int sample(const std::vector<double>& logp, std::mt19937_64& rng, bool greedy) {
  if (greedy) return static_cast<int>(std::max_element(logp.begin(), logp.end()) - logp.begin());
  std::uniform_real_distribution<double> u(0, 1);
  double r = u(rng), acc = 0;
  int last = 0;
  for (size_t k = 0; k < logp.size(); ++k) {
    if (logp[k] < -1e20) continue;
    acc += std::exp(logp[k]);
    last = static_cast<int>(k);
    if (r <= acc) return last;
  }
  return last;
}

// GAE over one episode, from its end: each step's `adv` and `ret` from its `reward`, `value` and
// `done` (no bootstrap after a done step or past the episode's end).
template <typename Step>
void episode_advantages(std::vector<Step>& ep, double gamma, double lambda) {
  double next_value = 0, gae = 0;
  for (int64_t k = static_cast<int64_t>(ep.size()) - 1; k >= 0; --k) {
    Step& s = ep[static_cast<size_t>(k)];
    const double nv = s.done ? 0 : next_value;
    const double delta = s.reward + gamma * nv - s.value;
    gae = delta + gamma * lambda * (s.done ? 0 : gae);
    s.adv = gae;
    s.ret = gae + s.value;
    next_value = s.value;
  }
}

}  // namespace tempo::rewrite::detail
