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
automatically when its episode ends. A gymnasium.vector.VectorEnv is used as it is (num_envs
defaults to its size) when its autoreset_mode is SAME_STEP or DISABLED:

    tempo.rl.train("ppo", env=gymnasium.make_vec("CartPole-v1", 8, vectorization_mode="sync",
                   vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}))

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
    """Trains a policy with "reinforce", "a2c", "ppo", "dqn", "sac" or "td3" on `env`: a built-in
    environment's name (tempo.rl.env_names()), a Python environment (a class or factory taking
    num_envs) or a Gymnasium environment (an id, a gymnasium.Env instance or class; see the
    module's doc).
    `config` sets the fields of the algorithm's defaults: iterations, num_envs, steps, lr,
    lr_decay, gamma, gae_lambda, ent_coef, vf_coef, max_grad_norm, clip, epochs, minibatches,
    n_step, hidden (one width for every hidden layer, or a list of the layers' widths),
    layers, DQN's, SAC's and TD3's buffer_size, batch_size and learning_starts,
    DQN's target_every, eps_start, eps_end and exploration_fraction, SAC's and TD3's policy_lr
    and tau, TD3's exploration_noise, policy_noise, noise_clip and policy_every, warm_up (SAC,
    TD3: the steps before learning starts run as an acting-only program; default True),
    truncation ("bootstrap": A2C, PPO and DQN bootstrap a truncated episode from its last
    observation's value, the default; "terminate": no value after it, as CleanRL's ppo.py),
    normalize_observations and normalize_rewards (Gymnasium's NormalizeObservation and
    NormalizeReward, clipped to +-10, as CleanRL's PPO on MuJoCo), seed, memory_budget, save_dir
    (the policy is saved there at the end and every save_every iterations, with a training
    checkpoint; `tempo eval --load DIR` runs it), resume_dir (continues the run whose checkpoint
    is there, with the same config), ...
    With log=True it prints progress; on_iteration(curve) is called after each iteration with
    the curve so far (an exception it raises stops training and reaches the caller; so does
    Ctrl-C).
    distributed=True makes this process one rank of a data-parallel job started by
    `tempo launch -n N -- python3 script.py` (or torchrun): RANK, WORLD_SIZE, MASTER_ADDR and
    MASTER_PORT say where; each rank acts on its own num_envs environments, gradients are
    averaged across ranks, and rank 0 alone prints progress and saves.
    Returns a TrainResult (curve, final_mean_return, compile_seconds, run_seconds, ...)."""
    gym = _sys.modules.get("gymnasium")
    if gym is not None and isinstance(env, gym.vector.VectorEnv):
        config.setdefault("num_envs", env.num_envs)
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
    """A factory num_envs -> GymnasiumEnv (or GymnasiumVectorEnv) when `env` names or is a
    Gymnasium environment, else
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
    if isinstance(env, gym.vector.VectorEnv):
        def vector(n):
            if n != env.num_envs:
                raise UserError(f"num_envs={n} but the gymnasium.vector.VectorEnv has "
                                f"{env.num_envs} environments (leave num_envs out to use its)")
            return GymnasiumVectorEnv(env)
        return _named(vector, _GYMNASIUM_PREFIX + _gym_name(env))
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


def _gym_name(env):
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__


def _gym_box(name, space, what):
    if type(space).__name__ != "Box":
        raise UserError(f"Gymnasium environment {name}: {what} is {type(space).__name__}; "
                        "tempo.rl takes a Box (or a Discrete action space)")
    return Box(space.low, space.high, space.shape)


class _GymnasiumSpaces(Env):
    """The spaces of one Gymnasium environment in Tempo's terms; a Discrete action space's
    actions are 0, ..., n - 1 here and start, ..., start + n - 1 in Gymnasium."""

    def _set_spaces(self, name, observation_space, action_space):
        self._name = name
        self.observation_space = _gym_box(name, observation_space, "observation_space")
        self._obs_shape = self.observation_space.shape
        self._start = 0
        if type(action_space).__name__ == "Discrete":
            self._start = int(action_space.start)
            self.action_space = Discrete(int(action_space.n))
        else:
            self.action_space = _gym_box(name, action_space, "action_space")

    def _actions(self, actions):
        if isinstance(self.action_space, Discrete):
            return _np.asarray(actions, _np.int64) + self._start
        return _np.asarray(actions, _np.float32)


class GymnasiumEnv(_GymnasiumSpaces):
    """num_envs Gymnasium environments (one per copy) behind the batched protocol: reset(seed)
    resets copy i with seed + i; a copy whose episode ends is reset at once, its last
    observation returned in final_obs. Spaces: Discrete (any start) and float Box."""

    def __init__(self, envs):
        super().__init__(len(envs))
        if not envs:
            raise UserError("a Gymnasium environment needs num_envs >= 1")
        self.envs = list(envs)
        first = self.envs[0]
        self._set_spaces(_gym_name(first), first.observation_space, first.action_space)

    def _obs(self, o):
        return _np.asarray(o, dtype=_np.float32).reshape(self._obs_shape)

    def reset(self, seed):
        return _np.stack([self._obs(e.reset(seed=int(seed) + k)[0])
                          for k, e in enumerate(self.envs)])

    def step(self, actions):
        n = self.num_envs
        actions = self._actions(actions)
        obs = _np.empty((n,) + self._obs_shape, _np.float32)
        final = _np.empty_like(obs)
        reward = _np.empty(n, _np.float32)
        terminated = _np.zeros(n, bool)
        truncated = _np.zeros(n, bool)
        for k, e in enumerate(self.envs):
            a = int(actions[k]) if isinstance(self.action_space, Discrete) else actions[k]
            o, r, term, trunc, _ = e.step(a)
            final[k] = self._obs(o)
            reward[k], terminated[k], truncated[k] = r, term, trunc
            obs[k] = self._obs(e.reset()[0]) if term or trunc else final[k]
        return obs, reward, terminated, truncated, final


class GymnasiumVectorEnv(_GymnasiumSpaces):
    """A gymnasium.vector.VectorEnv behind the batched protocol. Its autoreset mode decides how
    a finished copy's last observation is found: SAME_STEP returns it in info["final_obs"];
    DISABLED leaves the copy at its end, and it is reset here (options reset_mask). NEXT_STEP
    spends the next step on the reset, ignoring that step's action, which the protocol cannot
    express: a clear error that says how to create the env instead."""

    def __init__(self, env):
        super().__init__(env.num_envs)
        import gymnasium
        self.env = env
        name = _gym_name(env)
        self._mode = env.metadata.get("autoreset_mode", gymnasium.vector.AutoresetMode.NEXT_STEP)
        modes = gymnasium.vector.AutoresetMode
        if self._mode not in (modes.SAME_STEP, modes.DISABLED):
            raise UserError(
                f"Gymnasium vector environment {name} resets with autoreset_mode {self._mode}, "
                "which spends a step on each reset; create it with autoreset_mode="
                "gymnasium.vector.AutoresetMode.SAME_STEP (or DISABLED) to train on it")
        self._same_step = self._mode == modes.SAME_STEP
        self._set_spaces(name, env.single_observation_space, env.single_action_space)

    def _batch(self, o):
        return _np.asarray(o, dtype=_np.float32).reshape((self.num_envs,) + self._obs_shape)

    def reset(self, seed):
        return self._batch(self.env.reset(seed=int(seed))[0])  # copy i: seed + i

    def step(self, actions):
        o, reward, terminated, truncated, info = self.env.step(self._actions(actions))
        obs = self._batch(o)
        final = obs.copy()
        done = _np.logical_or(terminated, truncated)
        if self._same_step:
            for k in _np.flatnonzero(info.get("_final_obs", _np.zeros(self.num_envs, bool))):
                final[k] = _np.asarray(info["final_obs"][k], _np.float32).reshape(self._obs_shape)
        elif done.any():
            fresh = self._batch(self.env.reset(options={"reset_mask": done})[0])
            obs = _np.where(done.reshape((-1,) + (1,) * len(self._obs_shape)), fresh, obs)
        return (obs, _np.asarray(reward, _np.float32), _np.asarray(terminated, bool),
                _np.asarray(truncated, bool), final)
