#!/usr/bin/env python3
"""Tempo's training against its peers: CleanRL's own scripts and Stable-Baselines3 on the same
hyperparameters and step budgets (one table per algorithm: wall time, time and env steps to a
return threshold, final return, peak RSS), and EnvPool's raw environment steps per second
against Tempo's environments (bench_envs).

Every run is a child process on 1 thread (OMP_NUM_THREADS=1, torch.set_num_threads(1)); its
time to a threshold is when its progress line crossing the threshold reached this process (so
Python's imports and Tempo's compile count), its peak RSS is the child's ru_maxrss (os.wait4).
The return is the mean of the last 20 finished episodes, as Tempo's progress lines print it.

bench/rl_peers.sh installs the peers (scripts/requirements-bench*.txt) and runs this; see
bench/README.md, section "RL peers: CleanRL, Stable-Baselines3, EnvPool".
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

WINDOW = 20  # episodes in the mean return, as Tempo's progress lines
ALGOS = ("dqn", "ppo", "sac", "td3", "ppo-mujoco", "td3-mujoco")

# Per algorithm: the environment, thresholds, and (steps, learning_starts) of the default and of
# --full; the hyperparameters are CleanRL's defaults for each script (Tempo's defaults follow
# them; SB3 is configured to them in sb3_child). gymnasium: CleanRL's script is written for
# Gymnasium (else gym 0.23); marks: env steps at which the table gives the mean return.
SETUPS = {
    "dqn": dict(env="CartPole-v1", thresholds=(475.0, 200.0), quick=(100_000, 10_000),
                full=(500_000, 10_000), script="dqn.py", gymnasium=True),
    "ppo": dict(env="CartPole-v1", thresholds=(475.0, 200.0), quick=(100_000, 0),
                full=(500_000, 0), script="ppo.py"),
    "sac": dict(env="Pendulum-v1", thresholds=(-200.0,), quick=(10_000, 1_000),
                full=(50_000, 5_000), script="sac_continuous_action.py"),
    "td3": dict(env="Pendulum-v1", thresholds=(-200.0,), quick=(10_000, 1_000),
                full=(50_000, 25_000), script="td3_continuous_action.py"),
    # CleanRL's ppo_continuous_action.py defaults on HalfCheetah: 1 env x 2048 steps, 10 epochs
    # x 32 minibatches, lr 3e-4, no entropy bonus, observations and rewards normalized. The
    # peers run Gymnasium 0.29.1's HalfCheetah-v4 (the v5 task's dynamics and reward, its older
    # API): CleanRL 1.2.0's script (written for Gymnasium) ends an episode at the 1000-step time
    # limit without a bootstrap, SB3 bootstraps there; Tempo does either (--tempo-truncation).
    "ppo-mujoco": dict(env="HalfCheetah-v5", peer_env="HalfCheetah-v4", thresholds=(1000.0,),
                       quick=(200_000, 0), full=(1_000_000, 0), script="ppo_continuous_action.py",
                       gymnasium=True, marks=(200_000, 500_000, 1_000_000)),
    # TD3 on Hopper: CleanRL's td3_continuous_action.py (gym 0.23) has no MuJoCo task without
    # mujoco-py either, so SB3 is the peer, on Gymnasium 0.29.1's Hopper-v4. Learning from step
    # 10k (CleanRL: 25k of 1M) to fit the step budgets.
    "td3-mujoco": dict(env="Hopper-v5", peer_env="Hopper-v4", thresholds=(1000.0,),
                       quick=(120_000, 10_000), full=(300_000, 10_000), script=None),
}
PPO_BATCH = 4 * 128  # CleanRL's ppo.py: 4 envs x 128 steps per update
PPO_MUJOCO_BATCH = 2048  # ppo_continuous_action.py: 1 env x 2048 steps

EPISODE_RE = re.compile(r"global_step=(\d+), episodic_return=\[?(-?[0-9.eE+-]+)")
TEMPO_RE = re.compile(r"^iteration \d+\s+env_steps (\d+)\s+mean_return (\S+)")
COMPILE_RE = re.compile(r"compile time: ([0-9.]+) s")


# ---------------------------------------------------------------------------------------------
# Children: run inside the peers' Python path, print one line per finished episode.

def limit_threads():
    import torch
    torch.set_num_threads(1)


def cleanrl_child(script, args):
    """Runs CleanRL's script from its installed package, unmodified. tensorboard is not
    installed: torch.utils.tensorboard is replaced by a SummaryWriter that drops what it gets
    (the script prints its episodic returns itself)."""
    import runpy
    import types
    limit_threads()

    class SummaryWriter:
        def __init__(self, *a, **k):
            pass

        def add_text(self, *a, **k):
            pass

        def add_scalar(self, *a, **k):
            pass

        def close(self):
            pass

    stub = types.ModuleType("torch.utils.tensorboard")
    stub.SummaryWriter = SummaryWriter
    sys.modules["torch.utils.tensorboard"] = stub
    import cleanrl  # a namespace package (no __init__.py): its scripts lie in its __path__
    path = os.path.join(list(cleanrl.__path__)[0], script)
    sys.argv = [path] + list(args)
    runpy.run_path(path, run_name="__main__")


def sb3_child(algo, env_id, steps, learning_starts, seed):
    """Stable-Baselines3 with CleanRL's hyperparameters of the same algorithm."""
    limit_threads()
    import numpy as np
    import torch
    import stable_baselines3 as sb3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    class Episodes(BaseCallback):
        def _on_step(self):
            for info in self.locals["infos"]:
                if "episode" in info:
                    r = info["episode"]["r"]
                    print(f"global_step={self.num_timesteps}, episodic_return={r}", flush=True)
            return True

    envs = make_vec_env(env_id, n_envs=4 if algo == "ppo" else 1, seed=seed)
    if algo == "ppo-mujoco":  # CleanRL's wrappers: running statistics, clipped to +-10
        from stable_baselines3.common.vec_env import VecNormalize
        envs = VecNormalize(envs, gamma=0.99, clip_obs=10.0, clip_reward=10.0)
    no_clip = 1e10  # CleanRL's DQN does not clip gradients
    if algo == "dqn":
        model = sb3.DQN("MlpPolicy", envs, learning_rate=2.5e-4, buffer_size=10_000,
                        learning_starts=learning_starts, batch_size=128, tau=1.0, gamma=0.99,
                        train_freq=10, gradient_steps=1, target_update_interval=500,
                        exploration_fraction=0.5, exploration_initial_eps=1.0,
                        exploration_final_eps=0.05, max_grad_norm=no_clip,
                        policy_kwargs=dict(net_arch=[120, 84]), seed=seed, device="cpu")
    elif algo == "ppo":
        model = sb3.PPO("MlpPolicy", envs, learning_rate=lambda frac: 2.5e-4 * frac, n_steps=128,
                        batch_size=PPO_BATCH // 4, n_epochs=4, gamma=0.99, gae_lambda=0.95,
                        clip_range=0.2, clip_range_vf=0.2, ent_coef=0.01, vf_coef=0.5,
                        max_grad_norm=0.5,
                        policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]),
                                           activation_fn=torch.nn.Tanh),
                        seed=seed, device="cpu")
    elif algo == "ppo-mujoco":
        model = sb3.PPO("MlpPolicy", envs, learning_rate=lambda frac: 3e-4 * frac,
                        n_steps=PPO_MUJOCO_BATCH, batch_size=PPO_MUJOCO_BATCH // 32, n_epochs=10,
                        gamma=0.99, gae_lambda=0.95, clip_range=0.2, clip_range_vf=0.2,
                        ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
                        policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]),
                                           activation_fn=torch.nn.Tanh),
                        seed=seed, device="cpu")
    elif algo == "sac":
        class SAC(sb3.SAC):
            # CleanRL's SAC: critics and entropy coefficient at 1e-3, the actor at 3e-4.
            def _update_learning_rate(self, optimizers):
                opts = optimizers if isinstance(optimizers, list) else [optimizers]
                for opt in opts:
                    for group in opt.param_groups:
                        group["lr"] = 3e-4 if opt is self.actor.optimizer else 1e-3

        model = SAC("MlpPolicy", envs, learning_rate=1e-3, buffer_size=1_000_000,
                    learning_starts=learning_starts, batch_size=256, tau=0.005, gamma=0.99,
                    train_freq=1, gradient_steps=1, ent_coef="auto",
                    policy_kwargs=dict(net_arch=[256, 256]), seed=seed, device="cpu")
    else:
        n = envs.action_space.shape[-1]
        high = float(envs.action_space.high[0])
        model = sb3.TD3("MlpPolicy", envs, learning_rate=3e-4, buffer_size=1_000_000,
                        learning_starts=learning_starts, batch_size=256, tau=0.005, gamma=0.99,
                        train_freq=1, gradient_steps=1, policy_delay=2,
                        target_policy_noise=0.2, target_noise_clip=0.5,
                        action_noise=NormalActionNoise(np.zeros(n), 0.1 * high * np.ones(n)),
                        policy_kwargs=dict(net_arch=[256, 256]), seed=seed, device="cpu")
    model.learn(total_timesteps=steps, callback=Episodes())


def envpool_child(envs, counts, seconds):
    """EnvPool's steps per second: one thread, all envs stepped together (batch = num_envs),
    a fixed cycle of valid actions as bench_envs."""
    import numpy as np
    import envpool
    out = {}
    for env_id in envs:
        for n in counts:
            env = envpool.make_gymnasium(env_id, num_envs=n, batch_size=n, num_threads=1, seed=0)
            env.reset()
            space = env.action_space
            cycle = []
            for c in range(8):
                k = (c * 31 + np.arange(n * max(1, int(np.prod(space.shape or (1,))))) * 17) % 97
                if hasattr(space, "n"):
                    cycle.append((k % space.n).astype(np.int32))
                else:
                    a = np.clip(k / 24.0 - 2.0, space.low[0], space.high[0])
                    cycle.append(a.reshape(n, *space.shape).astype(space.dtype))
            done, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                for a in cycle:
                    env.step(a)
                done += len(cycle)
            out[f"{env_id}/{n}"] = done * n / (time.perf_counter() - start)
            del env
    print("ENVPOOL " + json.dumps({"version": envpool.__version__, "sps": out}), flush=True)


# ---------------------------------------------------------------------------------------------
# The parent: runs each child, timestamps its lines, collects the tables.

def run_child(cmd, env, thresholds, marks, parse, label, log):
    """Runs cmd; returns wall time, per threshold (seconds, env steps) of the first crossing,
    the mean return at each mark (the first line at or past that many env steps, or the last
    line within 1% of it), the final mean return, peak RSS (MiB) and the lines' extra
    figures."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
    state = dict(recent=[], mean=None, steps=0, compile=None)
    hits = {t: None for t in thresholds}
    at_mark = {m: None for m in marks}
    tail = []
    for line in proc.stdout:
        now = time.monotonic() - start
        log.write(line)
        tail = (tail + [line])[-15:]
        if not parse(line, state):
            continue
        for t in thresholds:
            if hits[t] is None and state["mean"] is not None and state["mean"] >= t:
                hits[t] = (now, state["steps"])
        for m in marks:
            if at_mark[m] is None and state["steps"] >= m:
                at_mark[m] = state["mean"]
    for m in marks:  # a run ends a batch short of its budget: its last figure counts there
        if at_mark[m] is None and state["steps"] >= 0.99 * m:
            at_mark[m] = state["mean"]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(f"{label}: exit code {code}; last lines:\n{''.join(tail)}")
    return dict(wall=wall, hits={str(t): hits[t] for t in thresholds},
                marks={str(m): at_mark[m] for m in marks}, final=state["mean"],
                rss_mib=usage.ru_maxrss / 1024.0, ok=code == 0, compile=state["compile"],
                steps=state["steps"])


def parse_episode(line, state):
    m = EPISODE_RE.search(line)
    if not m:
        return False
    state["recent"] = (state["recent"] + [float(m.group(2))])[-WINDOW:]
    state["mean"] = sum(state["recent"]) / len(state["recent"])
    state["steps"] = int(m.group(1)) + 1
    return True


def parse_tempo(line, state):
    c = COMPILE_RE.search(line)
    if c:
        state["compile"] = float(c.group(1))
    m = TEMPO_RE.match(line)
    if not m:
        return False
    state["steps"] = int(m.group(1))
    if m.group(2) != "nan":
        state["mean"] = float(m.group(2))
    return True


def tempo_knows(tempo, algo):
    out = subprocess.run([tempo, "train", "--help"], capture_output=True, text=True)
    usage = (out.stdout + out.stderr).split("\n", 1)[0]
    return re.search(r"[<|]" + algo + r"[|>]", usage) is not None


def tempo_cmd(tempo, algo, env_id, steps, learning_starts, seed, truncation):
    # "ppo-mujoco" and "td3-mujoco" are `tempo train ppo` and `tempo train td3`
    cmd = [tempo, "train", algo.split("-")[0], "--env", env_id, "--seed", str(seed)]
    if algo == "dqn":
        return cmd + ["--iterations", str(steps // 10), "--learning-starts", str(learning_starts)]
    if algo == "ppo":  # CleanRL's ppo.py ends an episode at a time limit without a bootstrap
        return cmd + ["--iterations", str(steps // PPO_BATCH), "--truncation", "terminate"]
    if algo == "ppo-mujoco":  # bootstrapping at the time limit (SB3) or not (CleanRL)
        return cmd + ["--truncation", truncation,
                      "--iterations", str(steps // PPO_MUJOCO_BATCH), "--num-envs", "1",
                      "--steps", str(PPO_MUJOCO_BATCH), "--epochs", "10", "--minibatches", "32",
                      "--lr", "3e-4", "--ent-coef", "0", "--normalize-obs", "--normalize-reward"]
    return cmd + ["--iterations", str(steps), "--learning-starts", str(learning_starts)]


def cleanrl_args(algo, env_id, steps, learning_starts, seed):
    args = ["--env-id", env_id, "--total-timesteps", str(steps), "--seed", str(seed),
            "--cuda", "False"]
    if not algo.startswith("ppo"):
        args += ["--learning-starts", str(learning_starts)]
    return args


def child_env(paths):
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONUNBUFFERED="1", PYTHONPATH=":".join(paths), SDL_AUDIODRIVER="dummy",
               PYGAME_HIDE_SUPPORT_PROMPT="1", PYTHONWARNINGS="ignore")
    return env


def tempo_env(opts):
    # Every Tempo run schedules its program, as a first run does, unless --schedule-cache.
    env = child_env([])
    if not opts.schedule_cache:
        env["TEMPO_NO_SCHEDULE_CACHE"] = "1"
    return env


def run_algo(opts, algo, log):
    setup = SETUPS[algo]
    steps, starts = setup["full" if opts.full else "quick"]
    if opts.steps:
        steps = opts.steps
    env_id, thresholds = setup["env"], setup["thresholds"]
    me = os.path.abspath(__file__)
    py = sys.executable
    # CleanRL 1.2.0's scripts marked `gymnasium` in SETUPS (dqn.py, ppo_continuous_action.py)
    # are written for Gymnasium and SB3 2.x; its ppo.py, SAC and TD3 for gym 0.23 and SB3 1.2
    # (the gym prefix goes first there).
    gymnasium_path = [opts.prefix + "/gymnasium", opts.torch_prefix]
    gym_path = [opts.prefix + "/gym"] + gymnasium_path
    rows = {}
    runners = {
        "tempo": lambda s: (tempo_cmd(opts.tempo, algo, env_id, steps, starts, s,
                                      opts.tempo_truncation), tempo_env(opts), parse_tempo),
        "cleanrl": lambda s: ([py, me, "--child", "cleanrl", setup["script"]] +
                              cleanrl_args(algo, peer_env, steps, starts, s),
                              child_env(gymnasium_path if setup.get("gymnasium") else gym_path),
                              parse_episode),
        "sb3": lambda s: ([py, me, "--child", "sb3", algo, peer_env, str(steps), str(starts),
                           str(s)], child_env(gymnasium_path), parse_episode),
    }
    peer_env = setup.get("peer_env", env_id)
    for who in opts.who:
        if who == "cleanrl" and setup["script"] is None:
            rows[who] = None
            continue
        if who == "tempo" and not tempo_knows(opts.tempo, algo.split("-")[0]):
            print(f"[{algo}] skipped Tempo: `{opts.tempo} train {algo}` is not known to this "
                  f"build", flush=True)
            rows[who] = None
            continue
        runs = []
        for seed in range(1, opts.seeds + 1):
            cmd, env, parse = runners[who](seed)
            log.write(f"\n### {algo} {who} seed {seed}: {' '.join(cmd)}\n")
            r = run_child(cmd, env, thresholds, setup.get("marks", ()), parse,
                          f"{algo}/{who}/seed {seed}", log)
            print(f"[{algo}] {who} seed {seed}: wall {r['wall']:.1f}s hits {r['hits']} "
                  f"final {r['final']} rss {r['rss_mib']:.0f} MiB", flush=True)
            runs.append(r)
        rows[who] = runs
    return dict(env=env_id, peer_env=setup.get("peer_env"), steps=steps, learning_starts=starts,
                thresholds=thresholds, marks=[m for m in setup.get("marks", ()) if m <= steps],
                truncation=opts.tempo_truncation if algo == "ppo-mujoco" else None, rows=rows)


def run_envs(opts, log):
    counts = [1, 16]
    names = ["CartPole-v1", "Pendulum-v1", "HalfCheetah-v5", "Hopper-v5"]
    res = dict(counts=counts, names=names, tempo={}, envpool={}, envpool_version=None)
    bench = opts.bench_envs
    if bench and os.path.exists(bench):
        out = subprocess.run([bench, "--benchmark_filter=BM_(CartPole|Pendulum|HalfCheetah|Hopper)"
                              "/(1|16)$", "--benchmark_format=json",
                              f"--benchmark_min_time={opts.env_seconds}"],
                             capture_output=True, text=True, env=child_env([]))
        log.write(out.stderr)
        try:
            for b in json.loads(out.stdout)["benchmarks"]:
                name, n = b["name"].split("/")[:2]
                env_id = {"BM_CartPole": "CartPole-v1", "BM_Pendulum": "Pendulum-v1",
                          "BM_HalfCheetah": "HalfCheetah-v5", "BM_Hopper": "Hopper-v5"}[name]
                # Wall-clock steps per second, as EnvPool's (items_per_second is per CPU second).
                scale = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}[b.get("time_unit", "ns")]
                if b.get("real_time"):
                    res["tempo"][f"{env_id}/{n}"] = int(n) * scale / b["real_time"]
        except (ValueError, KeyError) as e:
            print(f"[envs] could not read bench_envs' output ({e})", flush=True)
    else:
        print(f"[envs] skipped Tempo's environments: no bench_envs at {bench!r} (build it with "
              f"-DTEMPO_BUILD_BENCH=ON)", flush=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "envpool",
           ",".join(names), ",".join(map(str, counts)), str(opts.env_seconds)]
    out = subprocess.run(cmd, capture_output=True, text=True,
                         env=child_env([opts.prefix + "/gymnasium"]))
    log.write(out.stdout + out.stderr)
    for line in out.stdout.splitlines():
        if line.startswith("ENVPOOL "):
            got = json.loads(line[len("ENVPOOL "):])
            res["envpool"], res["envpool_version"] = got["sps"], got["version"]
    if not res["envpool"]:
        print(f"[envs] EnvPool failed:\n{out.stderr[-2000:]}", flush=True)
    return res


# ---------------------------------------------------------------------------------------------
# Tables.

def fmt_s(x):
    return "-" if x is None else f"{x:.1f}"


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def hit_cell(runs, t):
    got = [r["hits"][str(t)] for r in runs if r["hits"][str(t)] is not None]
    if not got:
        return "not reached", None
    secs = mean([g[0] for g in got])
    steps = mean([g[1] for g in got])
    extra = "" if len(got) == len(runs) else f" ({len(got)}/{len(runs)} seeds)"
    return f"{secs:.1f} s / {steps / 1000:.1f}k{extra}", secs


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def algo_table(algo, res):
    t = res["thresholds"]
    marks = res.get("marks", [])
    head = ["", "wall (s)"] + [f"to {x:g}: time / env steps" for x in t] + \
        [f"return at {m // 1000}k" for m in marks] + ["final return", "peak RSS (MiB)"]
    lines = [f"**{algo.upper()}** on {res['env']}: {res['steps']:,} env steps"
             + (f", learning from step {res['learning_starts']:,}"
                if not algo.startswith("ppo") else "")
             + (f" (the peers: {res['peer_env']})" if res.get("peer_env") else ""),
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    summary = {}
    names = {"tempo": "Tempo", "cleanrl": "CleanRL", "sb3": "SB3"}
    if res.get("truncation"):  # how each row ends an episode at the time limit
        names = {"tempo": f"Tempo ({res['truncation']})", "cleanrl": "CleanRL (terminate)",
                 "sb3": "SB3 (bootstrap)"}
    for who, runs in res["rows"].items():
        if runs is None:
            why = (f"`tempo train {algo}` not in this build" if who == "tempo"
                   else "CleanRL 1.2.0's script runs this task only with mujoco-py")
            lines.append(f"| {names[who]} | skipped: {why} |" + " |" * (len(head) - 2))
            continue
        wall = mean([r["wall"] for r in runs])
        cells, firsts = [], []
        for x in t:
            cell, secs = hit_cell(runs, x)
            cells.append(cell)
            firsts.append(secs)
        for m in marks:
            got = mean([r["marks"][str(m)] for r in runs])
            cells.append("-" if got is None else f"{got:.1f}")
        finals = [r["final"] for r in runs if r["final"] is not None]
        final = "-" if not finals else f"{mean(finals):.1f}" + (
            f" [{min(finals):.0f}, {max(finals):.0f}]" if len(finals) > 1 else "")
        failed = sum(not r["ok"] for r in runs)
        note = f" ({failed} failed)" if failed else ""
        lines.append(f"| {names[who]}{note} | {wall:.1f} | " + " | ".join(cells) +
                     f" | {final} | {mean([r['rss_mib'] for r in runs]):.0f} |")
        summary[who] = dict(wall=wall, firsts=firsts)
    if "tempo" in summary:
        for peer in ("cleanrl", "sb3"):
            if peer not in summary:
                continue
            a, b = summary["tempo"], summary[peer]
            parts = [f"wall {ratio(a['wall'], b['wall'])}"] + [
                f"to {x:g} {ratio(a['firsts'][k], b['firsts'][k])}" for k, x in enumerate(t)]
            lines.append(f"\n{names['tempo']}/{names[peer]}: " + ", ".join(parts))
    return "\n".join(lines) + "\n"


def envs_table(res):
    lines = [f"**Environment steps per second** (1 thread; Tempo: bench_envs' step_into; EnvPool "
             f"{res['envpool_version']}: make_gymnasium, num_envs = batch_size, num_threads=1)",
             "", "| env | envs | Tempo | EnvPool | Tempo/EnvPool |", "|---|---|---|---|---|"]
    for name in res["names"]:
        for n in res["counts"]:
            key = f"{name}/{n}"
            a, b = res["tempo"].get(key), res["envpool"].get(key)
            lines.append(f"| {name} | {n} | {'-' if a is None else f'{a / 1e3:,.0f}k'} | "
                         f"{'-' if b is None else f'{b / 1e3:,.0f}k'} | {ratio(a, b)} |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "cleanrl":
            return cleanrl_child(rest[0], rest[1:])
        if kind == "sb3":
            return sb3_child(rest[0], rest[1], int(rest[2]), int(rest[3]), int(rest[4]))
        return envpool_child(rest[0].split(","), [int(x) for x in rest[1].split(",")],
                             float(rest[2]))
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algos", default="dqn,ppo,sac,td3,ppo-mujoco,envs",
                   help="comma-separated: dqn, ppo, sac, td3, ppo-mujoco (HalfCheetah), "
                        "td3-mujoco (Hopper), envs (default: all but td3-mujoco)")
    p.add_argument("--who", default="tempo,cleanrl,sb3", help="rows: tempo, cleanrl, sb3")
    p.add_argument("--full", action="store_true",
                   help="CleanRL's budgets for DQN and PPO (500k steps), SAC and TD3 50k with "
                        "CleanRL's learning starts, 3 seeds")
    p.add_argument("--seeds", type=int, default=None, help="seeds 1..N (default 1, --full 3)")
    p.add_argument("--steps", type=int, default=None, help="env steps of every algorithm")
    p.add_argument("--tempo", default=os.path.join(root, "build", "tempo"))
    p.add_argument("--tempo-truncation", default="bootstrap", choices=("bootstrap", "terminate"),
                   help="ppo-mujoco: Tempo's episodes at the time limit bootstrap from the value "
                        "of the last observation (SB3) or end as terminated (CleanRL)")
    p.add_argument("--schedule-cache", action="store_true",
                   help="let Tempo read its schedules back from the cache (a second run of the "
                        "same command); default: every run schedules, as a first run does")
    p.add_argument("--bench-envs", default=os.path.join(root, "build-bench", "bench_envs"))
    p.add_argument("--prefix", default=os.environ.get("TEMPO_BENCH_PREFIX",
                                                      "/opt/tempo-deps/bench"),
                   help="where bench/rl_peers.sh installed the peers (gymnasium/ and gym/)")
    p.add_argument("--torch-prefix", default=None,
                   help="PyTorch's folder (default: scripts/torch_prefix.sh)")
    p.add_argument("--env-seconds", type=float, default=1.0)
    p.add_argument("--out", default=None, help="also write the tables (markdown) here")
    p.add_argument("--json", default=None, help="also write the raw results here")
    p.add_argument("--log", default="rl_peers.log", help="every child's output")
    opts = p.parse_args()
    opts.seeds = opts.seeds or (3 if opts.full else 1)
    opts.who = [w for w in opts.who.split(",") if w]
    bad = [w for w in opts.who if w not in ("tempo", "cleanrl", "sb3")]
    algos = [a for a in opts.algos.split(",") if a]
    bad += [a for a in algos if a not in ALGOS + ("envs",)]
    if bad:
        p.error(f"unknown {', '.join(bad)}")
    if opts.torch_prefix is None:
        opts.torch_prefix = subprocess.run(["bash", os.path.join(root, "scripts",
                                                                 "torch_prefix.sh")],
                                           capture_output=True, text=True).stdout.strip()
    if "tempo" in opts.who and not os.path.exists(opts.tempo):
        p.error(f"no Tempo binary at {opts.tempo} (build the `tempo` target or pass --tempo)")
    load = os.getloadavg()
    header = (f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {platform.node()}, "
              f"{os.cpu_count()} cores, load average at start {load[0]:.1f} "
              f"(1 min) / {load[1]:.1f} (5 min); {'--full' if opts.full else 'default budgets'}, "
              f"{opts.seeds} seed(s)\n")
    print(header, flush=True)
    results, tables = {}, []
    with open(opts.log, "w") as log:
        for algo in algos:
            if algo == "envs":
                results[algo] = run_envs(opts, log)
                tables.append(envs_table(results[algo]))
            else:
                results[algo] = run_algo(opts, algo, log)
                tables.append(algo_table(algo, results[algo]))
            print("\n" + tables[-1], flush=True)
            log.flush()
    load = os.getloadavg()
    text = header + f"load average at the end {load[0]:.1f} / {load[1]:.1f}\n\n" + \
        "\n".join(tables)
    print("\n" + text)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
