// Scalar reference models of Gymnasium's classic-control environments, one episode at a time,
// written straight from the published equations (independently of src/rl/envs) so the batched
// implementations can be checked step by step.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace tempo::rl::ref {

// x**2 as Python computes it (the C library's pow, not x * x: they differ in the last bit now and
// then); the volatile exponent keeps the compiler from folding it into x * x.
inline double py_sq(double x) {
  static volatile double two = 2.0;
  return std::pow(x, two);
}

// The reset distribution documented in rl/envs/env.h.
inline double uniform(std::mt19937_64& g, double lo, double hi) {
  const double u = static_cast<double>(g() >> 11) / 9007199254740992.0;  // / 2^53
  return lo + (hi - lo) * u;
}

struct Outcome {
  double reward;
  bool terminated;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual void reset(std::mt19937_64& g) = 0;
  virtual Outcome step(float action) = 0;
  virtual std::vector<double> obs() const = 0;
  virtual int64_t time_limit() const = 0;
};

class CartPole : public Model {
 public:
  void reset(std::mt19937_64& g) override {
    x_ = uniform(g, -0.05, 0.05);
    v_ = uniform(g, -0.05, 0.05);
    th_ = uniform(g, -0.05, 0.05);
    w_ = uniform(g, -0.05, 0.05);
  }
  Outcome step(float action) override {
    const double g = 9.8, mc = 1.0, mp = 0.1, half_len = 0.5, tau = 0.02;
    const double total = mc + mp;
    const double f = action == 1.0f ? 10.0 : -10.0;
    const double c = std::cos(th_), s = std::sin(th_);
    const double tmp = (f + mp * half_len * (w_ * w_) * s) / total;
    const double alpha = (g * s - c * tmp) / (half_len * (4.0 / 3.0 - mp * (c * c) / total));
    const double acc = tmp - mp * half_len * alpha * c / total;
    // Euler: positions use the old velocities.
    x_ += tau * v_;
    v_ += tau * acc;
    th_ += tau * w_;
    w_ += tau * alpha;
    const double limit = 12.0 * 2.0 * M_PI / 360.0;
    const bool done = std::abs(x_) > 2.4 || std::abs(th_) > limit;
    return {1.0, done};
  }
  std::vector<double> obs() const override { return {x_, v_, th_, w_}; }
  int64_t time_limit() const override { return 500; }

 private:
  double x_ = 0, v_ = 0, th_ = 0, w_ = 0;
};

class Pendulum : public Model {
 public:
  void reset(std::mt19937_64& g) override {
    th_ = uniform(g, -M_PI, M_PI);
    w_ = uniform(g, -1.0, 1.0);
  }
  Outcome step(float action) override {
    const double u = std::min(2.0, std::max(-2.0, static_cast<double>(action)));
    double norm = std::fmod(th_ + M_PI, 2.0 * M_PI);
    if (norm < 0) norm += 2.0 * M_PI;
    norm -= M_PI;
    const double cost = py_sq(norm) + 0.1 * py_sq(w_) + 0.001 * py_sq(u);
    const double g = 10.0, m = 1.0, l = 1.0, dt = 0.05;
    double w = w_ + (3.0 * g / (2.0 * l) * std::sin(th_) + 3.0 / (m * l * l) * u) * dt;
    w = std::min(8.0, std::max(-8.0, w));
    th_ = th_ + w * dt;
    w_ = w;
    return {-cost, false};
  }
  std::vector<double> obs() const override { return {std::cos(th_), std::sin(th_), w_}; }
  int64_t time_limit() const override { return 200; }

 private:
  double th_ = 0, w_ = 0;
};

class Acrobot : public Model {
 public:
  void reset(std::mt19937_64& g) override {
    for (double& v : s_) v = static_cast<float>(uniform(g, -0.1, 0.1));
  }
  Outcome step(float action) override {
    const double torque = action == 0.0f ? -1.0 : action == 1.0f ? 0.0 : 1.0;
    using V = std::array<double, 4>;
    auto axpy = [](const V& y, double h, const V& k) {
      V r;
      for (int i = 0; i < 4; ++i) r[i] = y[i] + h * k[i];
      return r;
    };
    const double dt = 0.2;
    const V k1 = deriv(s_, torque);
    const V k2 = deriv(axpy(s_, dt / 2.0, k1), torque);
    const V k3 = deriv(axpy(s_, dt / 2.0, k2), torque);
    const V k4 = deriv(axpy(s_, dt, k3), torque);
    for (int i = 0; i < 4; ++i) s_[i] = s_[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    for (int i = 0; i < 2; ++i) {
      while (s_[i] > M_PI) s_[i] -= 2 * M_PI;
      while (s_[i] < -M_PI) s_[i] += 2 * M_PI;
    }
    s_[2] = std::clamp(s_[2], -4 * M_PI, 4 * M_PI);
    s_[3] = std::clamp(s_[3], -9 * M_PI, 9 * M_PI);
    const bool done = -std::cos(s_[0]) - std::cos(s_[1] + s_[0]) > 1.0;
    return {done ? 0.0 : -1.0, done};
  }
  std::vector<double> obs() const override {
    return {std::cos(s_[0]), std::sin(s_[0]), std::cos(s_[1]), std::sin(s_[1]), s_[2], s_[3]};
  }
  int64_t time_limit() const override { return 500; }

 private:
  // Sutton & Barto's ("book") acrobot equations of motion.
  static std::array<double, 4> deriv(const std::array<double, 4>& s, double a) {
    const double m1 = 1, m2 = 1, l1 = 1, lc1 = 0.5, lc2 = 0.5, i1 = 1, i2 = 1, g = 9.8;
    const double t1 = s[0], t2 = s[1], w1 = s[2], w2 = s[3];
    const double d1 =
        m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(t2)) + i1 + i2;
    const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(t2)) + i2;
    const double phi2 = m2 * lc2 * g * std::cos(t1 + t2 - M_PI / 2.0);
    const double phi1 = -m2 * l1 * lc2 * py_sq(w2) * std::sin(t2) -
                        2 * m2 * l1 * lc2 * w2 * w1 * std::sin(t2) +
                        (m1 * lc1 + m2 * l1) * g * std::cos(t1 - M_PI / 2) + phi2;
    const double a2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * py_sq(w1) * std::sin(t2) - phi2) /
                      (m2 * lc2 * lc2 + i2 - py_sq(d2) / d1);
    const double a1 = -(d2 * a2 + phi1) / d1;
    return {w1, w2, a1, a2};
  }
  std::array<double, 4> s_{};
};

class MountainCar : public Model {
 public:
  void reset(std::mt19937_64& g) override {
    pos_ = uniform(g, -0.6, -0.4);
    vel_ = 0.0;
  }
  Outcome step(float action) override {
    vel_ += (static_cast<int>(action) - 1) * 0.001 + std::cos(3 * pos_) * (-0.0025);
    vel_ = std::clamp(vel_, -0.07, 0.07);
    pos_ += vel_;
    pos_ = std::clamp(pos_, -1.2, 0.6);
    if (pos_ == -1.2 && vel_ < 0) vel_ = 0;
    return {-1.0, pos_ >= 0.5 && vel_ >= 0};
  }
  std::vector<double> obs() const override { return {pos_, vel_}; }
  int64_t time_limit() const override { return 200; }
  double position() const { return pos_; }

 private:
  double pos_ = 0, vel_ = 0;
};

}  // namespace tempo::rl::ref
