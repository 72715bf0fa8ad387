"""Tempo's classic-control environments against Gymnasium's, step by step and exactly.

Both start from the same physical state: after Tempo's env resets (itself, or automatically when
an episode ends), its state() is copied into Gymnasium's env (`env.unwrapped.state`), whose own
reset drew from NumPy's PCG64 rather than Tempo's generator. From there the same actions must
give equal float32 observations, equal rewards, and equal terminated and truncated flags, over
long action sequences that end episodes both ways.

dtypes: Gymnasium keeps the state in float64 (Acrobot's reset state in float32, widened to
float64 by its first step) and rounds observations to float32; Tempo does the same. Gymnasium's
rewards are Python or NumPy float64 (Pendulum's cost is computed in float64 from a float32
torque); Tempo computes them in float64 with the same operations in the same order and rounds
once to float32, the dtype of its rewards, so float32(Gymnasium's reward) must equal Tempo's.
"""
import math

import numpy as np
import pytest

import tempo

gym = pytest.importorskip("gymnasium")
assert gym.__version__ == "1.2.2", gym.__version__


def tempo_state(env):
    """The physical state of copy 0 from state()'s text: 'NAME count hex hex ...'."""
    words = env.state().split()
    count = int(words[1])
    return [float.fromhex(w) for w in words[2:2 + count]]


def gym_observation(genv, name):
    u = genv.unwrapped
    if name == "Pendulum-v1":
        return u._get_obs()
    if name == "Acrobot-v1":
        return u._get_ob()
    return np.array(u.state, dtype=np.float32)


def copy_state(tenv, genv, name):
    s = tempo_state(tenv)
    # Gymnasium's Acrobot keeps its reset state as float32 (Tempo's holds the same values).
    genv.unwrapped.state = np.array(s, dtype=np.float32 if name == "Acrobot-v1" else np.float64)


# Per environment: steps and a policy (obs, rng, episode) -> action that ends episodes both by
# termination and by the time limit: half the episodes follow a controller, half act at random.
def cartpole_policy(obs, rng, episode):
    if episode % 2 == 0 and rng.random() > 0.05:
        return int(obs[2] + 0.5 * obs[3] > 0)
    return int(rng.integers(2))


def acrobot_policy(obs, rng, episode):
    if episode % 2 == 0:  # pump energy: torque along the second joint's velocity
        return 2 if obs[5] > 0 else 0
    return int(rng.integers(3))


def mountain_car_policy(obs, rng, episode):
    if episode % 2 == 0:  # push along the velocity
        return 2 if obs[1] >= 0 else 0
    return int(rng.integers(3))


def continuous_mountain_car_policy(obs, rng, episode):
    # Even episodes push along the velocity (and reach the goal); odd ones act at random, past
    # the +-1 clip too, until the 999-step limit.
    if episode % 2 == 0:
        return np.array([0.9 if obs[1] >= 0 else -0.9], np.float32)
    return rng.uniform(-1.5, 1.5, size=(1,)).astype(np.float32)


def pendulum_policy(obs, rng, episode):
    # Torques past the +-2 clip and with full float32 mantissas.
    return rng.uniform(-2.5, 2.5, size=(1,)).astype(np.float32)


CASES = {
    "CartPole-v1": (10000, cartpole_policy),
    "Acrobot-v1": (8000, acrobot_policy),
    "MountainCar-v0": (5000, mountain_car_policy),
    "MountainCarContinuous-v0": (6000, continuous_mountain_car_policy),
    "Pendulum-v1": (5000, pendulum_policy),
}


def numpy_trig_is_libm():
    """Whether NumPy's float64 sin and cos round as the C library's (Tempo's) do: NumPy builds
    for AVX-512 may dispatch them to their own vectorized code."""
    x = np.random.default_rng(0).uniform(-10, 10, 2000)
    return all(np.sin(v) == math.sin(v) and np.cos(v) == math.cos(v) for v in x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_steps_equal_gymnasium_exactly(name):
    steps, policy = CASES[name]
    if not name.startswith("MountainCar") and not numpy_trig_is_libm():  # these use math.cos
        pytest.skip("NumPy's sin/cos are not the C library's here: the last bits differ")
    assert name in tempo.rl.env_names()
    tenv = tempo.rl.make_env(name, 1)
    genv = gym.make(name)
    obs = tenv.reset(seed=7)[0]
    genv.reset(seed=7)
    copy_state(tenv, genv, name)
    assert np.array_equal(gym_observation(genv, name), obs)
    rng = np.random.default_rng(11)
    episode, terminated, truncated = 0, 0, 0
    for k in range(steps):
        a = policy(obs, rng, episode)
        g_obs, g_reward, g_term, g_trunc, _ = genv.step(a)
        t_obs, t_reward, t_term, t_trunc, t_final = tenv.step(np.asarray(a, np.float32))
        at = f"{name} step {k} (episode {episode})"
        last = t_obs[0] if t_final is None else t_final[0]
        assert g_obs.dtype == np.float32 and np.array_equal(g_obs, last), (at, g_obs, last)
        assert np.float32(g_reward) == t_reward[0], (at, g_reward, t_reward[0])
        assert (bool(g_term), bool(g_trunc)) == (bool(t_term[0]), bool(t_trunc[0])), at
        assert (t_final is not None) == (g_term or g_trunc), at
        obs = t_obs[0]
        if g_term or g_trunc:
            terminated += bool(g_term)
            truncated += bool(g_trunc)
            episode += 1
            genv.reset()  # restarts Gymnasium's time limit; the state is Tempo's reset one
            copy_state(tenv, genv, name)
            assert np.array_equal(gym_observation(genv, name), obs), at
    # Both ways of ending an episode were exercised (Pendulum never terminates).
    assert truncated >= 2, (name, terminated, truncated)
    assert terminated >= (0 if name == "Pendulum-v1" else 2), (name, terminated, truncated)


# Gymnasium's documented reset ranges, per state value (uniform in [low, high)).
RESET_RANGES = {
    "CartPole-v1": [(-0.05, 0.05)] * 4,
    "Acrobot-v1": [(-0.1, 0.1)] * 4,
    "MountainCar-v0": [(-0.6, -0.4), (0.0, 0.0)],
    "MountainCarContinuous-v0": [(-0.6, -0.4), (0.0, 0.0)],
    "Pendulum-v1": [(-np.pi, np.pi), (-1.0, 1.0)],
}


@pytest.mark.parametrize("name", sorted(RESET_RANGES))
def test_reset_distribution_covers_gymnasium_range(name):
    n = 400
    tenv = tempo.rl.make_env(name, 1)
    genv = gym.make(name)
    ours, theirs = [], []
    for seed in range(n):
        tenv.reset(seed=seed)
        ours.append(tempo_state(tenv))
        genv.reset(seed=seed)
        theirs.append(np.array(genv.unwrapped.state, dtype=np.float64))
    ours, theirs = np.array(ours), np.array(theirs)
    for k, (lo, hi) in enumerate(RESET_RANGES[name]):
        width = hi - lo
        for states in (ours, theirs):  # Gymnasium's own draws confirm the documented range
            col = states[:, k]
            assert col.min() >= lo and col.max() <= hi, (name, k, col.min(), col.max())
            if width > 0:  # and both spread over it: 400 uniform draws reach its last 3%
                assert col.min() < lo + 0.03 * width and col.max() > hi - 0.03 * width, (name, k)
                assert abs(col.mean() - (lo + hi) / 2) < 0.1 * width, (name, k, col.mean())


def test_make_env_errors_name_the_problem():
    with pytest.raises(tempo.UserError, match='unknown environment "NoSuchEnv-v0"'):
        tempo.rl.make_env("NoSuchEnv-v0", 1)
    env = tempo.rl.make_env("CartPole-v1", 2)
    with pytest.raises(tempo.UserError, match="reset"):
        env.step(np.zeros(2, np.float32))
    env.reset(seed=0)
    with pytest.raises(tempo.UserError, match="action"):
        env.step(np.full(2, 5, np.float32))
