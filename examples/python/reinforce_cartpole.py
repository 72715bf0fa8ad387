"""REINFORCE on CartPole, written from scratch as a recurrent-tensor program.

Two temporal dimensions: the iteration i and the timestep t of each rollout. The environment
(a NumPy CartPole) runs in user-defined functions; the policy's parameters are state over i,
updated by Adam from the policy-gradient loss of the whole rollout.

    PYTHONPATH=build/python python3 examples/python/reinforce_cartpole.py [iterations]
"""
import sys

import numpy as np

import tempo
from custom_env_ppo import NumpyCartPole

N, STEPS, GAMMA = 16, 100, 0.99


def main(iterations):
    env = NumpyCartPole(N)
    ended = []  # episodes that ended, per iteration

    ctx = tempo.Context()
    i, I = ctx.dim("i", "I")
    t, T = ctx.dim("t", "T")

    # Every iteration starts a fresh rollout from reset observations.
    (first,) = ctx.udf("reset", lambda ins, p: env.reset(seed=p[0]),
                       outputs=[((N, 4), "float32")], domain=[i])

    def step(ins, point):
        obs, reward, terminated, truncated, final = env.step(ins[0])
        done = terminated | truncated
        if point[1] == 0:
            ended.append(0)
        ended[-1] += int(done.sum())
        return obs, reward, done.astype(np.float32)

    obs = ctx.placeholder((N, 4), domain=[i, t], name="obs")
    policy = tempo.nn.MLP(ctx, [4, 64, 64, 2], steps=i, activation="tanh")
    dist = tempo.nn.Categorical(policy(obs))  # over (i, t)
    action = dist.sample()
    next_obs, reward, done = ctx.udf("step", step, inputs=[action],
                                     outputs=[((N, 4),), ((N,),), ((N,),)], domain=[i, t])
    obs[i, 0] = first
    obs[i, t + 1] = next_obs  # the recurrence through the environment

    # The discounted return of every step within its episode: a window over the future.
    G = reward[i, t:T].discounted_sum(GAMMA, done[i, t:T])
    G_all = G[i, 0:T]  # the whole rollout, normalized
    G = (G - G_all.mean()) / (G_all.var().sqrt() + 1e-8)
    step_loss = -(dist.log_prob(action) * G.detach()).mean()
    loss = step_loss[i, 0:T].mean()

    tempo.optim.minimize(loss, tempo.optim.Adam(policy.parameters(), lr=1e-2))

    exe = ctx.compile({I: iterations, T: STEPS})
    exe.run()
    # Every step earns 1: the mean return of the episodes in a rollout (those cut by its end
    # included) is its steps over its episodes.
    means = [N * STEPS / (n + N) for n in ended]
    for k in range(0, iterations, max(1, iterations // 10)):
        print(f"iteration {k:4d}: mean episode return {means[k]:.1f} (at most {STEPS})")
    return means


if __name__ == "__main__":
    means = main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
    if np.mean(means[-5:]) <= np.mean(means[:5]):
        sys.exit("the return did not rise")
