"""The cost of Python in Tempo programs, side by side in one process.

1. Per-step overhead of a Python UDF: the same program over T steps with its source as a Python
   callable and as a built-in op (ctx.symbol); the difference per step is the price of
   re-taking the GIL, converting arrays and calling Python.
2. PPO on CartPole with the environment written in Python (NumPy) and the built-in C++ one,
   same algorithm, seed and budget.

    PYTHONPATH=build/python python3 bench/bench_python.py [--quick]
"""
import os
import sys
import time

import numpy as np

import tempo

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "python"))
from custom_env_ppo import NumpyCartPole  # noqa: E402


def per_step_seconds(python_udf, steps, repeats=3):
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    if python_udf:
        (x,) = ctx.udf("source", lambda ins, p: np.full((4,), p[0], np.float32),
                       outputs=[((4,), "float32")], domain=[t])
    else:
        x = ctx.symbol(t).cast(tempo.float32).expand((4,))
    (x * 2.0).sum().retain()
    exe = ctx.compile({T: steps})
    exe.run()  # warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        exe.run()
        best = min(best, time.perf_counter() - start)
    return best / steps


def main():
    quick = "--quick" in sys.argv
    steps = 2000 if quick else 20000
    py = per_step_seconds(True, steps)
    native = per_step_seconds(False, steps)
    print(f"per step over T = {steps}: Python UDF {py * 1e6:.1f} us, built-in source "
          f"{native * 1e6:.1f} us: a Python UDF call costs {(py - native) * 1e6:.1f} us")

    iterations = 10 if quick else 50
    cfg = dict(iterations=iterations, num_envs=8, steps=128, seed=1, log=False)
    runs = {}
    for name, env in (("Python (NumPy) CartPole", NumpyCartPole), ("built-in C++ CartPole",
                                                                   "CartPole-v1")):
        start = time.perf_counter()
        r = tempo.rl.train("ppo", env=env, **cfg)
        runs[name] = (time.perf_counter() - start, r)
    for name, (wall, r) in runs.items():
        print(f"PPO, {iterations} iterations x 8 envs x 128 steps, {name}: run {r.run_seconds:.2f} s "
              f"(compile {r.compile_seconds:.2f} s), final mean return {r.final_mean_return:.1f}")
    (py_s, py_r), (cpp_s, cpp_r) = runs.values()
    print(f"Python env / built-in env run time: {py_r.run_seconds / cpp_r.run_seconds:.2f}x")


if __name__ == "__main__":
    main()
