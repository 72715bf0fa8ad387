// The eager actor-learner baseline of bench_rl_vs_eager: REINFORCE, A2C and PPO written the way
// CleanRL writes them, in plain LibTorch C++, matching rl::train's programs (same environments,
// networks, initialization, losses, hyperparameters and seeds).
//
// Acting runs the policy (and the value network) step by step under NoGradGuard and fills
// preallocated rollout buffers; learning recomputes forward passes over the rollout: one update
// on the whole rollout (REINFORCE, A2C) or epochs x minibatches over a shuffled flat index (PPO).
#pragma once

#include <malloc.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <numeric>
#include <vector>

#include "rl/algorithms/algorithms.h"
#include "rl/envs/env.h"

namespace bench {

// Bytes in use on the C heap (LibTorch's CPU allocator allocates there), all arenas.
inline int64_t heap_in_use() {
  struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

struct EagerResult {
  std::vector<double> iteration_seconds;  // one per iteration, acting + learning
  // Peak over sampled points (after acting, after each loss, after each backward) of the heap in
  // use, minus the heap in use before the networks were built: parameters, optimizer state,
  // rollout buffers and the autograd graph of the update.
  int64_t heap_peak_bytes = 0;
  double final_mean_return = std::nan("");
};

class EagerMLP : public torch::nn::Module {
 public:
  // As rl::train (CleanRL's gains): orthogonal weights of gain sqrt(2), `output_gain` for the
  // last layer (0.01 for a policy, 1 for a value), zero biases.
  EagerMLP(const std::vector<int64_t>& sizes, bool orthogonal, double output_gain) {
    for (size_t k = 0; k + 1 < sizes.size(); ++k) {
      torch::nn::Linear l =
          register_module(std::to_string(k), torch::nn::Linear(sizes[k], sizes[k + 1]));
      if (orthogonal) {
        torch::NoGradGuard g;
        torch::nn::init::orthogonal_(l->weight, k + 2 == sizes.size() ? output_gain : M_SQRT2);
        torch::nn::init::zeros_(l->bias);
      }
      layers_.push_back(l);
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t k = 0; k < layers_.size(); ++k) {
      x = layers_[k](x);
      if (k + 1 < layers_.size()) x = torch::tanh(x);
    }
    return x;
  }

 private:
  std::vector<torch::nn::Linear> layers_;
};

// As rl::train's normalized(): over all elements, population variance, eps inside the sqrt.
inline torch::Tensor eager_normalized(const torch::Tensor& x) {
  torch::Tensor c = x - x.mean();
  return c / (c.square().mean() + 1e-8).sqrt();
}

// As rl::discounted_returns on [T, N] float tensors: out[t] = sum_{k in [t, end)} g^(k - t) x[k]
// while no done in [t, k); end = T (n = 0, a backward recursion) or min(t + n, T).
inline torch::Tensor eager_discounted(const torch::Tensor& x_in, const torch::Tensor& done_in,
                                      double g, int64_t n = 0) {
  torch::Tensor x = x_in.contiguous(), done = done_in.contiguous();
  const int64_t T = x.size(0), N = x.size(1);
  torch::Tensor out = torch::empty_like(x);
  const float* px = x.data_ptr<float>();
  const float* pd = done.data_ptr<float>();
  float* po = out.data_ptr<float>();
  for (int64_t e = 0; e < N; ++e) {
    if (n <= 0) {
      double acc = 0;
      for (int64_t t = T - 1; t >= 0; --t) {
        acc = px[t * N + e] + g * (1.0 - pd[t * N + e]) * acc;
        po[t * N + e] = static_cast<float>(acc);
      }
      continue;
    }
    for (int64_t t = 0; t < T; ++t) {
      double acc = 0, w = 1;
      for (int64_t k = t; k < std::min(t + n, T); ++k) {
        acc += w * px[k * N + e];
        if (pd[k * N + e] > 0.5f) break;
        w *= g;
      }
      po[t * N + e] = static_cast<float>(acc);
    }
  }
  return out;
}

inline EagerResult run_eager(const tempo::rl::TrainConfig& cfg) {
  using Clock = std::chrono::steady_clock;
  const int64_t heap0 = heap_in_use();
  int64_t heap_peak = heap0;
  auto sample = [&] { heap_peak = std::max(heap_peak, heap_in_use()); };

  torch::manual_seed(cfg.compile.seed);
  const int64_t N = cfg.num_envs, T = cfg.steps, I = cfg.iterations;
  const bool ppo = cfg.algo == "ppo", use_value = cfg.algo != "reinforce";
  auto env = tempo::rl::make_env(cfg.env, N, cfg.env_options);
  const tempo::rl::Space& aspace = env->action_space();
  const bool discrete = aspace.discrete;
  const int64_t obs_dim = env->obs_numel();
  const int64_t act_dim = discrete ? aspace.n : aspace.numel();
  auto sizes = [&](int64_t out) { return tempo::rl::mlp_layer_sizes(obs_dim, cfg.hidden, out); };

  auto pi = std::make_shared<EagerMLP>(sizes(act_dim), cfg.orthogonal_init, 0.01);
  std::vector<torch::Tensor> params = pi->parameters();
  std::shared_ptr<EagerMLP> vf;
  if (use_value) {
    vf = std::make_shared<EagerMLP>(sizes(1), cfg.orthogonal_init, 1.0);
    for (const torch::Tensor& p : vf->parameters()) params.push_back(p);
  }
  torch::Tensor log_std;
  if (!discrete) {
    log_std = torch::zeros({act_dim}, torch::requires_grad());
    params.push_back(log_std);
  }
  const bool sgd = cfg.optimizer == "sgd";
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (sgd)
    opt = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(cfg.lr));
  else
    opt = std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(cfg.lr).betas({0.9, 0.999}).eps(1e-5));
  auto set_lr = [&](double lr) {
    for (auto& group : opt->param_groups()) {
      if (sgd)
        static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
      else
        static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    }
  };
  auto update = [&](const torch::Tensor& loss) {
    sample();
    opt->zero_grad();
    loss.backward();
    sample();
    if (cfg.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(params, cfg.max_grad_norm);
    opt->step();
  };

  const double half_log_2pi = 0.5 * std::log(2 * M_PI);
  // log pi(a) and the entropy for network outputs `out` ([..., act_dim]).
  auto logp_ent = [&](const torch::Tensor& out, const torch::Tensor& a) {
    if (discrete) {
      torch::Tensor lp = torch::log_softmax(out, -1);
      return std::make_pair(lp.gather(-1, a.unsqueeze(-1)).squeeze(-1), -(lp.exp() * lp).sum(-1));
    }
    torch::Tensor z = (a - out) * (-log_std).exp();
    torch::Tensor logp = (-0.5 * z.square() - log_std - half_log_2pi).sum(-1);
    torch::Tensor ent = (0.5 + half_log_2pi + log_std).expand_as(out).sum(-1);
    return std::make_pair(logp, ent);
  };

  // Rollout buffers: T + 1 observations (the last one starts the next rollout).
  torch::Tensor obs_buf = torch::empty({T + 1, N, obs_dim});
  torch::Tensor act_buf =
      discrete ? torch::empty({T, N}, torch::kLong) : torch::empty({T, N, act_dim});
  torch::Tensor rew_buf = torch::empty({T, N}), done_buf = torch::empty({T, N});
  torch::Tensor term_buf, val_buf, vfin_buf, fin_mask, logp_buf;
  if (use_value) {
    term_buf = torch::empty({T, N});
    val_buf = torch::empty({T, N});
    vfin_buf = torch::zeros({T, N});  // V(final_obs) where an episode ended
    fin_mask = torch::zeros({T, N}, torch::kBool);
  }
  if (ppo) logp_buf = torch::empty({T, N});
  const size_t obs_bytes = static_cast<size_t>(N * obs_dim) * sizeof(float);
  {
    std::vector<float> o = env->reset(cfg.compile.seed);
    std::memcpy(obs_buf[0].data_ptr<float>(), o.data(), obs_bytes);
  }
  std::vector<float> act(static_cast<size_t>(N * (discrete ? 1 : act_dim)));
  tempo::rl::StepResult sr;
  std::deque<double> recent;
  std::vector<double> curve;
  EagerResult res;

  for (int64_t it = 0; it < I; ++it) {
    const Clock::time_point t0 = Clock::now();
    set_lr(cfg.lr_decay ? cfg.lr * (1.0 - static_cast<double>(it) / static_cast<double>(I))
                        : cfg.lr);
    {  // ---- acting ----
      torch::NoGradGuard no_grad;
      if (use_value) fin_mask.zero_();
      for (int64_t t = 0; t < T; ++t) {
        torch::Tensor o = obs_buf[t];
        torch::Tensor out = pi->forward(o);
        torch::Tensor a;
        if (discrete) {
          a = torch::multinomial(torch::softmax(out, -1), 1).squeeze(-1);
          const int64_t* pa = a.data_ptr<int64_t>();
          for (int64_t n = 0; n < N; ++n) act[n] = static_cast<float>(pa[n]);
        } else {
          a = out + log_std.exp() * torch::randn_like(out);
          const float* pa = a.data_ptr<float>();
          for (int64_t k = 0; k < N * act_dim; ++k)
            act[k] = std::clamp(pa[k], aspace.low[k % act_dim], aspace.high[k % act_dim]);
        }
        act_buf[t].copy_(a);
        if (ppo) logp_buf[t].copy_(logp_ent(out, a).first);
        if (use_value) val_buf[t].copy_(vf->forward(o).squeeze(-1));
        env->step_into(act, sr);
        std::memcpy(obs_buf[t + 1].data_ptr<float>(), sr.obs.data(), obs_bytes);
        std::memcpy(rew_buf[t].data_ptr<float>(), sr.reward.data(), N * sizeof(float));
        float* pd = done_buf[t].data_ptr<float>();
        bool any_done = false;
        for (int64_t n = 0; n < N; ++n) {
          const bool d = sr.terminated[n] || sr.truncated[n];
          pd[n] = d ? 1.0f : 0.0f;
          any_done |= d;
          if (d) recent.push_back(sr.episode_return[n]);
        }
        while (recent.size() > 20) recent.pop_front();
        if (use_value) {
          float* pt = term_buf[t].data_ptr<float>();
          for (int64_t n = 0; n < N; ++n) pt[n] = sr.terminated[n] ? 1.0f : 0.0f;
          if (any_done) {  // bootstrap a truncated episode from its own last observation
            torch::Tensor fo = torch::from_blob(sr.final_obs.data(), {N, obs_dim});
            vfin_buf[t].copy_(vf->forward(fo).squeeze(-1));
            fin_mask[t].copy_(done_buf[t] > 0.5f);
          }
        }
      }
    }
    sample();
    // ---- learning ----
    torch::Tensor O = obs_buf.slice(0, 0, T);
    if (!use_value) {
      auto [logp, ent] = logp_ent(pi->forward(O), act_buf);
      torch::Tensor G = eager_discounted(rew_buf, done_buf, cfg.gamma, cfg.n_step);
      if (cfg.normalize_returns) G = eager_normalized(G);
      update(-(logp * G).mean() - cfg.ent_coef * ent.mean());
    } else {
      torch::Tensor adv, ret;
      {
        torch::NoGradGuard no_grad;
        torch::Tensor vlast = vf->forward(obs_buf[T]).squeeze(-1).unsqueeze(0);
        torch::Tensor vnext = torch::cat({val_buf.slice(0, 1, T), vlast}, 0);
        torch::Tensor vn = torch::where(fin_mask, vfin_buf, vnext);
        torch::Tensor delta = rew_buf + cfg.gamma * (1.0 - term_buf) * vn - val_buf;
        adv = eager_discounted(delta, done_buf, cfg.gamma * cfg.gae_lambda);
        ret = adv + val_buf;
      }
      if (!ppo) {
        auto [logp, ent] = logp_ent(pi->forward(O), act_buf);
        torch::Tensor V = vf->forward(O).squeeze(-1);
        torch::Tensor vloss = 0.5 * (V - ret).square().mean();
        update(-(logp * eager_normalized(adv)).mean() + cfg.vf_coef * vloss -
               cfg.ent_coef * ent.mean());
      } else {
        const int64_t rows = T * N, M = cfg.minibatches, B = rows / M;
        torch::Tensor Of = O.reshape({rows, obs_dim});
        torch::Tensor Af = discrete ? act_buf.reshape({rows}) : act_buf.reshape({rows, act_dim});
        torch::Tensor Lf = logp_buf.reshape({rows}), ADVf = adv.reshape({rows});
        torch::Tensor RETf = ret.reshape({rows}), V0f = val_buf.reshape({rows});
        for (int64_t e = 0; e < cfg.epochs; ++e) {
          torch::Tensor perm = torch::randperm(rows, torch::kLong);
          for (int64_t m = 0; m < M; ++m) {
            torch::Tensor idx = perm.slice(0, m * B, (m + 1) * B);
            torch::Tensor Ob = Of.index_select(0, idx);
            auto [logp, ent] = logp_ent(pi->forward(Ob), Af.index_select(0, idx));
            torch::Tensor ratio = (logp - Lf.index_select(0, idx)).exp();
            torch::Tensor nadv = eager_normalized(ADVf.index_select(0, idx));
            torch::Tensor pg =
                -torch::min(ratio * nadv, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * nadv).mean();
            torch::Tensor V = vf->forward(Ob).squeeze(-1);
            torch::Tensor V0b = V0f.index_select(0, idx), Rb = RETf.index_select(0, idx);
            torch::Tensor Vc = V0b + (V - V0b).clamp(-cfg.clip, cfg.clip);
            torch::Tensor vloss = 0.5 * torch::max((V - Rb).square(), (Vc - Rb).square()).mean();
            update(pg + cfg.vf_coef * vloss - cfg.ent_coef * ent.mean());
          }
        }
      }
    }
    obs_buf[0].copy_(obs_buf[T]);  // the next rollout starts where this one ended
    res.iteration_seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    curve.push_back(recent.empty() ? std::nan("")
                                   : std::accumulate(recent.begin(), recent.end(), 0.0) /
                                         static_cast<double>(recent.size()));
  }
  res.heap_peak_bytes = heap_peak - heap0;
  // As rl::train: the mean over the last (up to) 10% of iterations of the recent-episode mean.
  const size_t tail = std::max<size_t>(1, curve.size() / 10);
  double sum = 0;
  size_t n = 0;
  for (size_t k = curve.size() - std::min(tail, curve.size()); k < curve.size(); ++k)
    if (!std::isnan(curve[k])) {
      sum += curve[k];
      ++n;
    }
  res.final_mean_return = n ? sum / static_cast<double>(n) : std::nan("");
  return res;
}

}  // namespace bench
