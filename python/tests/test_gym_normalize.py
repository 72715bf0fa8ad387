"""Tempo's observation and reward normalization against Gymnasium's wrappers.

Tempo's normalized environment and a raw copy are stepped with the same seed and actions. The raw
copy's stream (observations, rewards, flags) is replayed through a Gymnasium environment wrapped
as CleanRL's continuous-action PPO wraps its tasks: NormalizeObservation, clipping to +-10,
NormalizeReward(gamma), clipping to +-10. Where an episode ends, Gymnasium's wrapper sees the last
observation from step() and the new episode's first from reset(); Tempo's gives them as final_obs
and obs of the same step.

Gymnasium keeps the observation statistics in float32 (the wrapped space's dtype) and the reward
statistics in float64; Tempo keeps both in float64, so observations agree to float32 rounding
accumulated over the run (rtol 1e-4) and rewards to 1e-6.
"""
import numpy as np
import pytest

import tempo

gym = pytest.importorskip("gymnasium")
assert gym.__version__ == "1.2.2", gym.__version__


class Replay(gym.Env):
    """Plays back a recorded stream: reset() gives the next reset observation, step() the next
    step's (obs, reward, terminated, truncated)."""

    def __init__(self, obs_dim, resets, steps):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.resets, self.steps = resets, steps

    def reset(self, seed=None, options=None):
        return self.resets.pop(0), {}

    def step(self, action):
        obs, reward, terminated, truncated = self.steps.pop(0)
        return obs, reward, terminated, truncated, {}


def cartpole_action(obs, rng):
    return np.float32(int(obs[2] + 0.5 * obs[3] > 0) if rng.random() > 0.1 else rng.integers(2))


def pendulum_action(obs, rng):
    return rng.uniform(-2.5, 2.5, size=(1,)).astype(np.float32)


@pytest.mark.parametrize("name,steps,act", [("CartPole-v1", 3000, cartpole_action),
                                            ("Pendulum-v1", 1000, pendulum_action)])
def test_normalization_equals_gymnasium_wrappers(name, steps, act):
    gamma = 0.97
    raw = tempo.rl.make_env(name, 1)
    env = tempo.rl.make_env(name, 1, normalize_observations=True, normalize_rewards=True,
                            gamma=gamma)
    raw_obs = raw.reset(seed=5)[0]
    obs = env.reset(seed=5)[0]
    rng = np.random.default_rng(3)
    resets, stream, outputs, actions = [raw_obs], [], [], []
    for _ in range(steps):
        a = act(raw_obs, rng)
        actions.append(a)
        r_obs, r_reward, r_term, r_trunc, r_final = raw.step(np.atleast_1d(a))
        n_obs, n_reward, n_term, n_trunc, n_final = env.step(np.atleast_1d(a))
        assert (bool(r_term[0]), bool(r_trunc[0])) == (bool(n_term[0]), bool(n_trunc[0]))
        ended = r_final is not None
        stream.append((r_final[0] if ended else r_obs[0], float(r_reward[0]), bool(r_term[0]),
                       bool(r_trunc[0])))
        outputs.append((n_final[0] if ended else n_obs[0], n_reward[0], ended, n_obs[0]))
        if ended:
            resets.append(r_obs[0])
        raw_obs = r_obs[0]

    genv = Replay(raw_obs.shape[0], resets, stream)
    genv = gym.wrappers.NormalizeObservation(genv)
    genv = gym.wrappers.TransformObservation(genv, lambda o: np.clip(o, -10, 10), None)
    genv = gym.wrappers.NormalizeReward(genv, gamma=gamma)
    genv = gym.wrappers.TransformReward(genv, lambda r: np.clip(r, -10, 10))
    g_obs = genv.reset()[0]
    np.testing.assert_allclose(obs, g_obs, rtol=1e-4, atol=1e-5)
    episodes = 0
    for k, (a, (t_obs, t_reward, ended, t_next)) in enumerate(zip(actions, outputs)):
        g_obs, g_reward, g_term, g_trunc, _ = genv.step(a)
        np.testing.assert_allclose(t_obs, g_obs, rtol=1e-4, atol=1e-5, err_msg=f"step {k}")
        np.testing.assert_allclose(t_reward, g_reward, rtol=1e-6, atol=1e-6, err_msg=f"step {k}")
        if ended:
            episodes += 1
            np.testing.assert_allclose(t_next, genv.reset()[0], rtol=1e-4, atol=1e-5,
                                       err_msg=f"reset after step {k}")
    assert episodes >= 4, episodes


def test_normalization_state_round_trips():
    env = tempo.rl.make_env("Pendulum-v1", 2, normalize_observations=True,
                            normalize_rewards=True)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(50):
        env.step(rng.uniform(-2, 2, size=(2,)))
    copy = tempo.rl.make_env("Pendulum-v1", 2, normalize_observations=True,
                             normalize_rewards=True)
    copy.set_state(env.state())
    for _ in range(300):  # past a truncation at step 200
        a = rng.uniform(-2, 2, size=(2,))
        for x, y in zip(env.step(a), copy.step(a)):
            assert (x is None and y is None) or np.array_equal(x, y)
