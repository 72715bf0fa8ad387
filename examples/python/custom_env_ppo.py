"""A custom environment written in Python, trained with PPO by Tempo.

The environment is CartPole (the classic-control dynamics of Gymnasium's CartPole-v1) written
with NumPy as a batched, Gymnasium-style class: tempo.rl.train calls its reset and step from
the compiled program, re-taking the GIL for each call.

    PYTHONPATH=build/python python3 examples/python/custom_env_ppo.py [iterations]
"""
import sys

import numpy as np

import tempo


class NumpyCartPole(tempo.rl.Env):
    observation_space = tempo.rl.Box(low=-np.inf, high=np.inf, shape=(4,))
    action_space = tempo.rl.Discrete(2)

    gravity, cart_mass, pole_mass, half_length = 9.8, 1.0, 0.1, 0.5
    force, tau, max_steps = 10.0, 0.02, 500

    def __init__(self, num_envs):
        super().__init__(num_envs)
        self.state = np.zeros((num_envs, 4))
        self.steps = np.zeros(num_envs, dtype=np.int64)
        self.rng = np.random.default_rng(0)

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, (self.num_envs, 4))
        self.steps[:] = 0
        return self.state.astype(np.float32)

    def step(self, actions):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(actions == 1, self.force, -self.force)
        total = self.cart_mass + self.pole_mass
        pole_ml = self.pole_mass * self.half_length
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + pole_ml * theta_dot**2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.half_length * (4.0 / 3.0 - self.pole_mass * cos**2 / total))
        x_acc = temp - pole_ml * theta_acc * cos / total
        self.state = np.stack([x + self.tau * x_dot, x_dot + self.tau * x_acc,
                               theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc], 1)
        self.steps += 1
        terminated = (np.abs(self.state[:, 0]) > 2.4) | (np.abs(self.state[:, 2]) > 0.2095)
        truncated = (self.steps >= self.max_steps) & ~terminated
        reward = np.ones(self.num_envs, dtype=np.float32)
        final_obs = self.state.astype(np.float32)
        done = terminated | truncated
        if done.any():  # reset the copies whose episode ended
            self.state[done] = self.rng.uniform(-0.05, 0.05, (int(done.sum()), 4))
            self.steps[done] = 0
        return self.state.astype(np.float32), reward, terminated, truncated, final_obs


def main(iterations):
    result = tempo.rl.train("ppo", env=NumpyCartPole, iterations=iterations, num_envs=8,
                            steps=64, lr=2.5e-3, log=False)
    curve = [r for _, r in result.curve]
    print(f"PPO on a Python CartPole: mean return {curve[0]:.1f} -> {curve[-1]:.1f} "
          f"over {iterations} iterations ({result.run_seconds:.1f} s)")
    return curve


if __name__ == "__main__":
    curve = main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
    if curve[-1] <= curve[0]:
        sys.exit("the return did not rise")
