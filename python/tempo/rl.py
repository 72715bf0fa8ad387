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

Gymnasium environments work too: an id ("gymnasium:CartPole-v1" always means Gymnasium's; an
id that is not a built-in name is looked up in Gymnasium's registry), a gymnasium.Env
instance (copied for the other num_envs - 1 copies) or a gymnasium.Env subclass:

    tempo.rl.train("ppo", env="gymnasium:Acrobot-v1")
    tempo.rl.train("ppo", env=gymnasium.make("CartPole-v1", max_episode_steps=200))

Copy i is reset with seed + i (as Gymnasium's vector environments do) and reset again
automatically when its episode ends.

tempo.rl.make_env(name, num_envs) gives a built-in environment to step from Python.
"""
import copy as _copy
import sys as _sys

import numpy as _np

from ._tempo import UserError
from ._tempo import rl as _rl

TrainResult = _rl.TrainResult
BuiltinEnv = _rl.BuiltinEnv
env_names = _rl.env_names
make_env = _rl.make_env

_GYMNASIUM_PREFIX = "gymnasium:"


def train(algo, env="CartPole-v1", log=True, **config):
    """Trains a policy with "reinforce", "a2c" or "ppo" on `env`: a built-in environment's
    name (tempo.rl.env_names()), a Python environment (a class or factory taking num_envs) or
    a Gymnasium environment (an id, a gymnasium.Env instance or class; see the module's doc).
    `config` sets the fields of the algorithm's defaults: iterations, num_envs, steps, lr,
    lr_decay, gamma, gae_lambda, ent_coef, vf_coef, max_grad_norm, clip, epochs, minibatches,
    n_step, hidden, layers, truncation ("bootstrap": A2C and PPO bootstrap a truncated
    episode from its last observation's value, the default; "terminate": no value after it,
    as CleanRL's ppo.py), seed, memory_budget, save_dir (the policy is saved there at the end
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
    return _rl.train(algo, _gymnasium_factory(env) or env, log, **config)


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


# ---- Gymnasium environments ---------------------------------------------------------------------


def _gymnasium_factory(env):
    """A factory num_envs -> GymnasiumEnv when `env` names or is a Gymnasium environment, else
    None (a built-in name or a Tempo-protocol environment)."""
    if isinstance(env, str):
        if env.startswith(_GYMNASIUM_PREFIX):
            gym_id = env[len(_GYMNASIUM_PREFIX):]
            gym = _import_gymnasium(env)
            if gym_id not in gym.registry:
                raise UserError(f"Gymnasium has no environment '{gym_id}' (from env='{env}')")
        elif env in env_names():
            return None
        else:
            gym = _sys.modules.get("gymnasium") or _try_import_gymnasium()
            if gym is None or env not in gym.registry:
                return None  # training names the unknown environment
            gym_id = env
        return _named(lambda n: GymnasiumEnv([gym.make(gym_id) for _ in range(n)]),
                      _GYMNASIUM_PREFIX + gym_id)
    gym = _sys.modules.get("gymnasium")
    if gym is None:
        return None
    if isinstance(env, gym.Env):
        name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        return _named(lambda n: GymnasiumEnv([env] + [_copy.deepcopy(env) for _ in range(n - 1)]),
                      _GYMNASIUM_PREFIX + name)
    if isinstance(env, type) and issubclass(env, gym.Env):
        return _named(lambda n: GymnasiumEnv([env() for _ in range(n)]),
                      _GYMNASIUM_PREFIX + env.__name__)
    return None


def _named(factory, name):
    factory.__name__ = name
    return factory


def _try_import_gymnasium():
    try:
        import gymnasium
    except ImportError:
        return None
    return gymnasium


def _import_gymnasium(what):
    gym = _try_import_gymnasium()
    if gym is None:
        raise UserError(f"env='{what}' needs the gymnasium package (pip install gymnasium)")
    return gym


class GymnasiumEnv(Env):
    """num_envs Gymnasium environments (one per copy) behind the batched protocol: reset(seed)
    resets copy i with seed + i; a copy whose episode ends is reset at once, its last
    observation returned in final_obs. Spaces: Discrete (any start) and float Box."""

    def __init__(self, envs):
        super().__init__(len(envs))
        if not envs:
            raise UserError("a Gymnasium environment needs num_envs >= 1")
        self.envs = list(envs)
        first = self.envs[0]
        self._name = first.spec.id if first.spec is not None else type(first.unwrapped).__name__
        self.observation_space = self._box(first.observation_space, "observation_space")
        self._start = 0
        space = first.action_space
        if type(space).__name__ == "Discrete":
            self._start = int(space.start)
            self.action_space = Discrete(int(space.n))
        else:
            self.action_space = self._box(space, "action_space")
        self._obs_shape = self.observation_space.shape

    def _box(self, space, what):
        if type(space).__name__ != "Box":
            raise UserError(f"Gymnasium environment {self._name}: {what} is "
                            f"{type(space).__name__}; tempo.rl takes a Box (or a Discrete action "
                            "space)")
        return Box(space.low, space.high, space.shape)

    def _obs(self, o):
        return _np.asarray(o, dtype=_np.float32).reshape(self._obs_shape)

    def reset(self, seed):
        return _np.stack([self._obs(e.reset(seed=int(seed) + k)[0])
                          for k, e in enumerate(self.envs)])

    def step(self, actions):
        n = self.num_envs
        discrete = isinstance(self.action_space, Discrete)
        obs = _np.empty((n,) + self._obs_shape, _np.float32)
        final = _np.empty_like(obs)
        reward = _np.empty(n, _np.float32)
        terminated = _np.zeros(n, bool)
        truncated = _np.zeros(n, bool)
        for k, e in enumerate(self.envs):
            a = int(actions[k]) + self._start if discrete else actions[k]
            o, r, term, trunc, _ = e.step(a)
            final[k] = self._obs(o)
            reward[k], terminated[k], truncated[k] = r, term, trunc
            obs[k] = self._obs(e.reset()[0]) if term or trunc else final[k]
        return obs, reward, terminated, truncated, final
