"""Reinforcement learning (tempo.rl): REINFORCE, A2C and PPO as recurrent-tensor programs.

    result = tempo.rl.train("ppo", env="CartPole-v1", iterations=100)

An environment written in Python is a batched, Gymnasium-style class; pass the class (or any
callable num_envs -> env) as `env`:

    class MyEnv(tempo.rl.Env):
        observation_space = tempo.rl.Box(low=-1.0, high=1.0, shape=(4,))
        action_space = tempo.rl.Discrete(2)
        def __init__(self, num_envs): ...
        def reset(self, seed): ...          # -> obs, shape (num_envs, *obs_shape)
        def step(self, actions): ...        # -> obs, reward, terminated, truncated

`actions` is an int64 array (num_envs,) for a discrete space, else float32
(num_envs, *action_shape) clipped to the box. The env resets the copies whose episode ended
and returns their new first observation; it may return a fifth value, final_obs, with the
last observation of those episodes (A2C and PPO bootstrap truncated episodes from it).

tempo.rl.make_env(name, num_envs) gives a built-in environment to step from Python.
"""
import numpy as _np

from ._tempo import rl as _rl

TrainResult = _rl.TrainResult
BuiltinEnv = _rl.BuiltinEnv
env_names = _rl.env_names
make_env = _rl.make_env


def train(algo, env="CartPole-v1", log=True, **config):
    """Trains a policy with "reinforce", "a2c" or "ppo" on `env`: a built-in environment's
    name (tempo.rl.env_names()) or a Python environment (a class or factory taking num_envs).
    `config` sets the fields of the algorithm's defaults: iterations, num_envs, steps, lr,
    lr_decay, gamma, gae_lambda, ent_coef, vf_coef, max_grad_norm, clip, epochs, minibatches,
    n_step, hidden, layers, seed, memory_budget, save_dir (the policy is saved there at the end
    and every save_every iterations, with a training checkpoint; `tempo eval --load DIR` runs
    it), resume_dir (continues the run whose checkpoint is there, with the same config), ...
    With log=True it prints progress; on_iteration(curve) is called after each iteration with
    the curve so far
    (an exception it raises stops training and reaches the caller; so does Ctrl-C).
    distributed=True makes this process one rank of a data-parallel job started by
    `tempo launch -n N -- python3 script.py` (or torchrun): RANK, WORLD_SIZE, MASTER_ADDR and
    MASTER_PORT say where; each rank acts on its own num_envs environments, gradients are
    averaged across ranks, and rank 0 alone prints progress and saves.
    Returns a TrainResult (curve, final_mean_return, compile_seconds, run_seconds, ...)."""
    return _rl.train(algo, env, log, **config)


class Discrete:
    """A discrete space of n actions (0, ..., n - 1)."""

    def __init__(self, n):
        self.n = int(n)

    def __repr__(self):
        return f"Discrete({self.n})"


class Box:
    """A box of float32 values of `shape` between `low` and `high` (broadcast)."""

    def __init__(self, low=-_np.inf, high=_np.inf, shape=None):
        if shape is None:
            shape = _np.broadcast(_np.asarray(low), _np.asarray(high)).shape
        self.shape = tuple(int(s) for s in shape)
        self.low = _np.broadcast_to(_np.asarray(low, dtype=_np.float32), self.shape)
        self.high = _np.broadcast_to(_np.asarray(high, dtype=_np.float32), self.shape)

    def __repr__(self):
        return f"Box(shape={self.shape})"


class Env:
    """The protocol of a batched environment written in Python (subclassing is optional)."""

    observation_space = None
    action_space = None

    def __init__(self, num_envs):
        self.num_envs = int(num_envs)

    def reset(self, seed):
        raise NotImplementedError

    def step(self, actions):
        raise NotImplementedError
