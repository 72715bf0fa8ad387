// Gymnasium's classic-control environments, written from their published equations. State is
// kept in double precision (as Gymnasium does) and rounded to float32 only in observations.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "rl/envs/classic.h"

namespace tempo::rl::detail {
namespace {

constexpr double kPi = std::numbers::pi;

// x**2 as Gymnasium computes it: Python's and NumPy's scalar `**` call the C library's pow, which
// rounds about one square in a thousand differently from x * x (a last bit that the chaotic
// dynamics then grow). The exponent is read at run time so that the compiler cannot turn
// pow(x, 2) into x * x.
double py_square(double x) {
  static volatile double two = 2.0;
  return std::pow(x, two);
}

Space discrete_space(int64_t n) {
  return Space{{}, true, n, {}, {}};
}

Space box_space(std::vector<float> low, std::vector<float> high) {
  const int64_t numel = static_cast<int64_t>(low.size());
  return Space{{numel}, false, 0, std::move(low), std::move(high)};
}

// CartPole-v1. State (x, x_dot, theta, theta_dot); action 0 pushes left, 1 right with
// force_mag = 10. With total_mass = masscart + masspole = 1.1 and polemass_length =
// masspole * length = 0.05 (length is the half pole length 0.5):
//   temp     = (force + polemass_length * theta_dot^2 * sin(theta)) / total_mass
//   thetaacc = (g sin(theta) - cos(theta) temp) /
//              (length (4/3 - masspole cos(theta)^2 / total_mass))
//   xacc     = temp - polemass_length * thetaacc * cos(theta) / total_mass
// then Euler with tau = 0.02: x += tau x_dot; x_dot += tau xacc; theta += tau theta_dot;
// theta_dot += tau thetaacc. Terminated when |x| > 2.4 or |theta| > 12 * 2 pi / 360; reward 1 on
// every step (the terminating one too); truncated at 500 steps. Reset: the 4 state values
// (in order) ~ U(-0.05, 0.05).
struct CartPole {
  static constexpr const char* kName = "CartPole-v1";
  static constexpr int kStateDim = 4, kObsDim = 4;
  static constexpr int64_t kMaxSteps = 500;
  static constexpr double kGravity = 9.8, kMassCart = 1.0, kMassPole = 0.1;
  static constexpr double kTotalMass = kMassPole + kMassCart, kLength = 0.5;
  static constexpr double kPoleMassLength = kMassPole * kLength;
  static constexpr double kForceMag = 10.0, kTau = 0.02;
  static constexpr double kThetaThreshold = 12 * 2 * kPi / 360, kXThreshold = 2.4;

  static Space observation_space() {
    const float big = std::numeric_limits<float>::max();
    const float x = static_cast<float>(kXThreshold * 2),
                th = static_cast<float>(kThetaThreshold * 2);
    return box_space({-x, -big, -th, -big}, {x, big, th, big});
  }
  static Space action_space() { return discrete_space(2); }

  static void reset(std::mt19937_64& rng, double* s) {
    for (int k = 0; k < 4; ++k) s[k] = reset_uniform(rng, -0.05, 0.05);
  }

  static double step(double* s, float action, bool* terminated) {
    const double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
    const double force = action == 1.0f ? kForceMag : -kForceMag;
    const double costheta = std::cos(theta), sintheta = std::sin(theta);
    // Squares are grouped as Gymnasium's np.square(...) is: the products round as there.
    const double temp =
        (force + kPoleMassLength * (theta_dot * theta_dot) * sintheta) / kTotalMass;
    const double thetaacc =
        (kGravity * sintheta - costheta * temp) /
        (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
    const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
    s[0] = x + kTau * x_dot;
    s[1] = x_dot + kTau * xacc;
    s[2] = theta + kTau * theta_dot;
    s[3] = theta_dot + kTau * thetaacc;
    *terminated = s[0] < -kXThreshold || s[0] > kXThreshold || s[2] < -kThetaThreshold ||
                  s[2] > kThetaThreshold;
    return 1.0;
  }

  static void observe(const double* s, float* obs) {
    for (int k = 0; k < 4; ++k) obs[k] = static_cast<float>(s[k]);
  }
};

// Python's float modulo: the result takes the sign of the divisor.
double py_mod(double x, double m) {
  double r = std::fmod(x, m);
  if (r != 0 && ((r < 0) != (m < 0))) r += m;
  return r;
}

// Pendulum-v1. State (th, thdot); action: torque u, clipped to [-2, 2]. With g = 10, m = 1,
// l = 1, dt = 0.05 and angle_normalize(x) = ((x + pi) mod 2 pi) - pi:
//   reward  = -(angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2)   (from the state before)
//   thdot' = clip(thdot + (3 g / (2 l) sin(th) + 3 / (m l^2) u) dt, -8, 8)
//   th'    = th + thdot' dt
// Observation (cos th, sin th, thdot). Never terminates; truncated at 200 steps. Reset: th ~
// U(-pi, pi), then thdot ~ U(-1, 1).
struct Pendulum {
  static constexpr const char* kName = "Pendulum-v1";
  static constexpr int kStateDim = 2, kObsDim = 3;
  static constexpr int64_t kMaxSteps = 200;
  static constexpr double kMaxSpeed = 8, kMaxTorque = 2.0, kDt = 0.05, kG = 10.0, kM = 1.0,
                          kL = 1.0;

  static Space observation_space() { return box_space({-1, -1, -8}, {1, 1, 8}); }
  static Space action_space() { return box_space({-2}, {2}); }

  static void reset(std::mt19937_64& rng, double* s) {
    s[0] = reset_uniform(rng, -kPi, kPi);
    s[1] = reset_uniform(rng, -1.0, 1.0);
  }

  static double step(double* s, float action, bool* terminated) {
    const double th = s[0], thdot = s[1];
    const double u = std::clamp(static_cast<double>(action), -kMaxTorque, kMaxTorque);
    const double an = py_mod(th + kPi, 2 * kPi) - kPi;
    // As Gymnasium's angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * (u**2), rounding alike.
    const double cost = py_square(an) + 0.1 * py_square(thdot) + 0.001 * py_square(u);
    double newthdot = thdot + (3 * kG / (2 * kL) * std::sin(th) + 3.0 / (kM * kL * kL) * u) * kDt;
    newthdot = std::clamp(newthdot, -kMaxSpeed, kMaxSpeed);
    s[0] = th + newthdot * kDt;
    s[1] = newthdot;
    *terminated = false;
    return -cost;
  }

  static void observe(const double* s, float* obs) {
    obs[0] = static_cast<float>(std::cos(s[0]));
    obs[1] = static_cast<float>(std::sin(s[0]));
    obs[2] = static_cast<float>(s[1]);
  }
};

// Acrobot-v1 ("book" dynamics of Sutton & Barto, no torque noise). State (th1, th2, dth1, dth2);
// action a in {0, 1, 2} applies torque {-1, 0, +1} on the joint between the links. With
// m1 = m2 = 1, l1 = 1, lc1 = lc2 = 0.5, I1 = I2 = 1, g = 9.8:
//   d1   = m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos th2) + I1 + I2
//   d2   = m2 (lc2^2 + l1 lc2 cos th2) + I2
//   phi2 = m2 lc2 g cos(th1 + th2 - pi/2)
//   phi1 = -m2 l1 lc2 dth2^2 sin th2 - 2 m2 l1 lc2 dth2 dth1 sin th2
//          + (m1 lc1 + m2 l1) g cos(th1 - pi/2) + phi2
//   ddth2 = (a + d2/d1 phi1 - m2 l1 lc2 dth1^2 sin th2 - phi2) / (m2 lc2^2 + I2 - d2^2/d1)
//   ddth1 = -(d2 ddth2 + phi1) / d1
// One classic RK4 step over dt = 0.2 (torque held constant), then th1, th2 wrapped into
// [-pi, pi] (by repeated +-2 pi), dth1 clipped to +-4 pi, dth2 to +-9 pi. Terminated when
// -cos th1 - cos(th2 + th1) > 1; reward -1, or 0 on the terminating step; truncated at 500 steps.
// Observation (cos th1, sin th1, cos th2, sin th2, dth1, dth2). Reset: the 4 state values (in
// order) ~ U(-0.1, 0.1), rounded to float32 (Gymnasium stores the reset state as float32).
struct Acrobot {
  static constexpr const char* kName = "Acrobot-v1";
  static constexpr int kStateDim = 4, kObsDim = 6;
  static constexpr int64_t kMaxSteps = 500;
  static constexpr double kDt = 0.2, kL1 = 1.0, kM1 = 1.0, kM2 = 1.0, kLc1 = 0.5, kLc2 = 0.5,
                          kI1 = 1.0, kI2 = 1.0, kG = 9.8;
  static constexpr double kMaxVel1 = 4 * kPi, kMaxVel2 = 9 * kPi;

  static Space observation_space() {
    const float v1 = static_cast<float>(kMaxVel1), v2 = static_cast<float>(kMaxVel2);
    return box_space({-1, -1, -1, -1, -v1, -v2}, {1, 1, 1, 1, v1, v2});
  }
  static Space action_space() { return discrete_space(3); }

  static void reset(std::mt19937_64& rng, double* s) {
    for (int k = 0; k < 4; ++k) s[k] = static_cast<float>(reset_uniform(rng, -0.1, 0.1));
  }

  // Time derivative of the state under torque a.
  static void dsdt(const double* s, double a, double* d) {
    const double th1 = s[0], th2 = s[1], dth1 = s[2], dth2 = s[3];
    const double d1 = kM1 * kLc1 * kLc1 +
                      kM2 * (kL1 * kL1 + kLc2 * kLc2 + 2 * kL1 * kLc2 * std::cos(th2)) + kI1 + kI2;
    const double d2 = kM2 * (kLc2 * kLc2 + kL1 * kLc2 * std::cos(th2)) + kI2;
    const double phi2 = kM2 * kLc2 * kG * std::cos(th1 + th2 - kPi / 2.0);
    // The squares of velocities and of d2 as Gymnasium's `**2` (py_square).
    const double phi1 = -kM2 * kL1 * kLc2 * py_square(dth2) * std::sin(th2) -
                        2 * kM2 * kL1 * kLc2 * dth2 * dth1 * std::sin(th2) +
                        (kM1 * kLc1 + kM2 * kL1) * kG * std::cos(th1 - kPi / 2) + phi2;
    const double ddth2 =
        (a + d2 / d1 * phi1 - kM2 * kL1 * kLc2 * py_square(dth1) * std::sin(th2) - phi2) /
        (kM2 * kLc2 * kLc2 + kI2 - py_square(d2) / d1);
    const double ddth1 = -(d2 * ddth2 + phi1) / d1;
    d[0] = dth1;
    d[1] = dth2;
    d[2] = ddth1;
    d[3] = ddth2;
  }

  static double wrap(double x, double lo, double hi) {
    const double diff = hi - lo;
    while (x > hi) x -= diff;
    while (x < lo) x += diff;
    return x;
  }

  static double step(double* s, float action, bool* terminated) {
    const double torque = static_cast<double>(action) - 1.0;  // {0, 1, 2} -> {-1, 0, +1}
    double k1[4], k2[4], k3[4], k4[4], y[4];
    const double h = kDt, h2 = kDt / 2.0;
    dsdt(s, torque, k1);
    for (int j = 0; j < 4; ++j) y[j] = s[j] + h2 * k1[j];
    dsdt(y, torque, k2);
    for (int j = 0; j < 4; ++j) y[j] = s[j] + h2 * k2[j];
    dsdt(y, torque, k3);
    for (int j = 0; j < 4; ++j) y[j] = s[j] + h * k3[j];
    dsdt(y, torque, k4);
    for (int j = 0; j < 4; ++j) s[j] = s[j] + h / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    s[0] = wrap(s[0], -kPi, kPi);
    s[1] = wrap(s[1], -kPi, kPi);
    s[2] = std::clamp(s[2], -kMaxVel1, kMaxVel1);
    s[3] = std::clamp(s[3], -kMaxVel2, kMaxVel2);
    *terminated = -std::cos(s[0]) - std::cos(s[1] + s[0]) > 1.0;
    return *terminated ? 0.0 : -1.0;
  }

  static void observe(const double* s, float* obs) {
    obs[0] = static_cast<float>(std::cos(s[0]));
    obs[1] = static_cast<float>(std::sin(s[0]));
    obs[2] = static_cast<float>(std::cos(s[1]));
    obs[3] = static_cast<float>(std::sin(s[1]));
    obs[4] = static_cast<float>(s[2]);
    obs[5] = static_cast<float>(s[3]);
  }
};

// MountainCar-v0. State (position, velocity); action in {0, 1, 2} (push left, none, right):
//   velocity += (action - 1) * 0.001 + cos(3 position) * (-0.0025); clip to [-0.07, 0.07]
//   position += velocity; clip to [-1.2, 0.6]; if position == -1.2 and velocity < 0: velocity = 0
// Terminated when position >= 0.5 and velocity >= 0; reward -1 per step; truncated at 200
// steps. Reset: position ~ U(-0.6, -0.4), velocity 0.
struct MountainCar {
  static constexpr const char* kName = "MountainCar-v0";
  static constexpr int kStateDim = 2, kObsDim = 2;
  static constexpr int64_t kMaxSteps = 200;
  static constexpr double kMinPosition = -1.2, kMaxPosition = 0.6, kMaxSpeed = 0.07,
                          kGoalPosition = 0.5, kGoalVelocity = 0, kForce = 0.001, kGravity = 0.0025;

  static Space observation_space() { return box_space({-1.2f, -0.07f}, {0.6f, 0.07f}); }
  static Space action_space() { return discrete_space(3); }

  static void reset(std::mt19937_64& rng, double* s) {
    s[0] = reset_uniform(rng, -0.6, -0.4);
    s[1] = 0.0;
  }

  static double step(double* s, float action, bool* terminated) {
    double position = s[0], velocity = s[1];
    velocity += (static_cast<double>(action) - 1) * kForce + std::cos(3 * position) * (-kGravity);
    velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
    position += velocity;
    position = std::clamp(position, kMinPosition, kMaxPosition);
    if (position == kMinPosition && velocity < 0) velocity = 0;
    s[0] = position;
    s[1] = velocity;
    *terminated = position >= kGoalPosition && velocity >= kGoalVelocity;
    return -1.0;
  }

  static void observe(const double* s, float* obs) {
    obs[0] = static_cast<float>(s[0]);
    obs[1] = static_cast<float>(s[1]);
  }
};

// MountainCarContinuous-v0: the hill of MountainCar-v0 with a force in [-1, 1] (power 0.0015),
// the goal at 0.45, reward 100 on reaching it minus 0.1 a^2 (a unclipped) every step; truncated
// at 999 steps. Gymnasium rounds its state to float32 after each step (not after the reset) and
// computes in float64 from it (NumPy's float32 scalars widen against Python numbers).
struct MountainCarContinuous {
  static constexpr const char* kName = "MountainCarContinuous-v0";
  static constexpr int kStateDim = 2, kObsDim = 2;
  static constexpr int64_t kMaxSteps = 999;
  static constexpr double kMinPosition = -1.2, kMaxPosition = 0.6, kMaxSpeed = 0.07,
                          kGoalPosition = 0.45, kPower = 0.0015;

  static Space observation_space() { return MountainCar::observation_space(); }
  static Space action_space() { return box_space({-1}, {1}); }

  static void reset(std::mt19937_64& rng, double* s) { MountainCar::reset(rng, s); }

  static double step(double* s, float action, bool* terminated) {
    double position = s[0], velocity = s[1];
    const double force = std::clamp(static_cast<double>(action), -1.0, 1.0);
    velocity += force * kPower - 0.0025 * std::cos(3 * position);
    velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
    position = std::clamp(position + velocity, kMinPosition, kMaxPosition);
    if (position == kMinPosition && velocity < 0) velocity = 0;
    *terminated = position >= kGoalPosition && velocity >= 0;
    s[0] = static_cast<float>(position);
    s[1] = static_cast<float>(velocity);
    return (*terminated ? 100.0 : 0.0) - py_square(action) * 0.1;
  }

  static void observe(const double* s, float* obs) { MountainCar::observe(s, obs); }
};

}  // namespace

std::unique_ptr<BatchedEnv> make_cartpole(int64_t n) {
  return std::make_unique<ClassicEnv<CartPole>>(n);
}
std::unique_ptr<BatchedEnv> make_pendulum(int64_t n) {
  return std::make_unique<ClassicEnv<Pendulum>>(n);
}
std::unique_ptr<BatchedEnv> make_acrobot(int64_t n) {
  return std::make_unique<ClassicEnv<Acrobot>>(n);
}
std::unique_ptr<BatchedEnv> make_mountain_car(int64_t n) {
  return std::make_unique<ClassicEnv<MountainCar>>(n);
}
std::unique_ptr<BatchedEnv> make_mountain_car_continuous(int64_t n) {
  return std::make_unique<ClassicEnv<MountainCarContinuous>>(n);
}

}  // namespace tempo::rl::detail
