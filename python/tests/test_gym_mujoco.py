"""Tempo's MuJoCo locomotion environments (v5) against Gymnasium's, step by step and exactly.

Both run the same MuJoCo build (PyPI's mujoco 3.3.7 C library; Tempo links the one in the same
wheel) on Gymnasium's own XML models. Tempo's reset states come from its own generator, not
NumPy's PCG64, so after every reset (the first, and each automatic one when an episode ends)
Tempo's simulator state is copied into Gymnasium's env: state() holds MuJoCo's
mjSTATE_INTEGRATION vector (time, qpos, qvel, act, warmstart, ctrl, ...), set with mj_setState.

Tolerance: none. After every step of random float32 actions (some past the actuators' +-1
range, which MuJoCo clamps while the control cost uses the raw action), the whole float64
integration state must be equal bit for bit, the float32 observations equal, float32 of
Gymnasium's float64 reward equal to Tempo's reward, the float64 episode returns (Tempo's state()
against the sum of Gymnasium's rewards) equal, and terminated/truncated equal.
"""
import numpy as np
import pytest

import tempo

gym = pytest.importorskip("gymnasium")
mujoco = pytest.importorskip("mujoco")
assert gym.__version__ == "1.2.2", gym.__version__
assert mujoco.__version__ == "3.3.7", mujoco.__version__

NAMES = ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5"]
INTEGRATION = mujoco.mjtState.mjSTATE_INTEGRATION

pytestmark = pytest.mark.skipif("HalfCheetah-v5" not in tempo.rl.env_names(),
                                reason="Tempo was built without MuJoCo")


def tempo_sim_state(tenv):
    """Copy 0's mjSTATE_INTEGRATION vector and episode return, from state()'s text:
    'NAME count hex... count generator count steps count return'."""
    words = tenv.state().split()
    count = int(words[1])
    return np.array([float.fromhex(w) for w in words[2:2 + count]]), float.fromhex(words[-1])


def gym_sim_state(genv):
    u = genv.unwrapped
    out = np.empty(mujoco.mj_stateSize(u.model, INTEGRATION))
    mujoco.mj_getState(u.model, u.data, out, INTEGRATION)
    return out


def copy_state(tenv, genv):
    u = genv.unwrapped
    state, _ = tempo_sim_state(tenv)
    mujoco.mj_setState(u.model, u.data, state, INTEGRATION)
    mujoco.mj_forward(u.model, u.data)


# Per environment: steps, so that episodes end both ways (HalfCheetah only by its time limit;
# random actions make the others fall within tens of steps, Ant within hundreds).
STEPS = {"HalfCheetah-v5": 2100, "Hopper-v5": 1500, "Walker2d-v5": 1500, "Ant-v5": 1500,
         "Humanoid-v5": 1000}


@pytest.mark.parametrize("name", NAMES)
def test_steps_equal_gymnasium_exactly(name):
    tenv = tempo.rl.make_env(name, 1)
    genv = gym.make(name)
    obs = tenv.reset(seed=7)[0]
    genv.reset(seed=7)
    copy_state(tenv, genv)
    assert np.array_equal(genv.unwrapped._get_obs().astype(np.float32), obs)
    nu = genv.action_space.shape[0]
    rng = np.random.default_rng(11)
    episode, terminated, truncated, g_return = 0, 0, 0, 0.0
    for k in range(STEPS[name]):
        bound = 1.0 if episode % 2 == 0 else 1.5
        a = rng.uniform(-bound, bound, size=nu).astype(np.float32)
        g_obs, g_reward, g_term, g_trunc, _ = genv.step(a)
        g_return += g_reward
        t_obs, t_reward, t_term, t_trunc, t_final = tenv.step(a)
        at = f"{name} step {k} (episode {episode})"
        last = t_obs[0] if t_final is None else t_final[0]
        assert np.array_equal(g_obs.astype(np.float32), last), (at, g_obs, last)
        assert np.float32(g_reward) == t_reward[0], (at, g_reward, t_reward[0])
        assert (bool(g_term), bool(g_trunc)) == (bool(t_term[0]), bool(t_trunc[0])), at
        assert (t_final is not None) == (g_term or g_trunc), at
        if t_final is None:  # mid-episode: the whole float64 state and the return so far
            state, t_return = tempo_sim_state(tenv)
            assert np.array_equal(state, gym_sim_state(genv)), at
            assert t_return == g_return, (at, t_return, g_return)
        obs = t_obs[0]
        if g_term or g_trunc:
            terminated += bool(g_term)
            truncated += bool(g_trunc)
            episode += 1
            g_return = 0.0
            genv.reset()  # restarts Gymnasium's time limit; the state is Tempo's reset one
            copy_state(tenv, genv)
            assert np.array_equal(genv.unwrapped._get_obs().astype(np.float32), obs), at
    assert truncated >= (2 if name == "HalfCheetah-v5" else 0), (name, terminated, truncated)
    assert terminated >= (0 if name == "HalfCheetah-v5" else 5), (name, terminated, truncated)


def test_reset_noise_ranges():
    """Hopper's and Walker2d's reset noise is U(-0.005, 0.005) on qpos and qvel; HalfCheetah's
    is U(-0.1, 0.1) on qpos and 0.1 N(0, 1) on qvel (Gymnasium's defaults)."""
    for name, scale in (("Hopper-v5", 5e-3), ("Walker2d-v5", 5e-3), ("HalfCheetah-v5", 0.1)):
        tenv = tempo.rl.make_env(name, 1)
        genv = gym.make(name)
        u = genv.unwrapped
        nq, nv = u.model.nq, u.model.nv
        qpos, qvel = [], []
        for seed in range(300):
            tenv.reset(seed=seed)
            s, _ = tempo_sim_state(tenv)
            qpos.append(s[1:1 + nq] - u.init_qpos)
            qvel.append(s[1 + nq:1 + nq + nv])
        qpos, qvel = np.array(qpos), np.array(qvel)
        assert np.abs(qpos).max() <= scale and np.abs(qpos).max() > 0.95 * scale, name
        if name == "HalfCheetah-v5":
            assert abs(qvel.std() - scale) < 0.05 * scale and abs(qvel.mean()) < 0.1 * scale
        else:
            assert np.abs(qvel).max() <= scale and np.abs(qvel).max() > 0.95 * scale, name


def test_errors_name_the_problem():
    env = tempo.rl.make_env("Hopper-v5", 2)
    with pytest.raises(tempo.UserError, match="reset"):
        env.step(np.zeros(6, np.float32))
    env.reset(seed=0)
    with pytest.raises(tempo.UserError, match="expected 6"):
        env.step(np.zeros(3, np.float32))
