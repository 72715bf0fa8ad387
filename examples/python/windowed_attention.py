"""Attention of each step over a sliding window of past steps, checked against NumPy.

    out[t] = softmax(q[t] . k[max(0, t - W + 1) : t + 1]^T / sqrt(D)) v[max(0, t - W + 1) : t + 1]

    PYTHONPATH=build/python python3 examples/python/windowed_attention.py
"""
import numpy as np

import tempo

T_VALUE, D, W = 64, 16, 8
rng = np.random.default_rng(0)
xs = rng.standard_normal((T_VALUE, D)).astype(np.float32)
wq, wk, wv = (rng.standard_normal((D, D)).astype(np.float32) / np.sqrt(D) for _ in range(3))

ctx = tempo.Context()
t, T = ctx.dim("t", "T")
(x,) = ctx.udf("tokens", lambda ins, p: xs[p[0]], outputs=[((D,),)], domain=[t])
q, k, v = (x @ ctx.tensor(w) for w in (wq, wk, wv))  # (D,) over t

window = slice(tempo.max(0, t - (W - 1)), t + 1)
keys, values = k[window], v[window]                    # (n, D) with n = min(t + 1, W)
scores = (keys @ q.unsqueeze(1)).squeeze(1) * (1.0 / np.sqrt(D))
out = (scores.softmax(0).unsqueeze(0) @ values).squeeze(0).retain()

exe = ctx.compile({T: T_VALUE})
exe.run()

Q, K, V = xs @ wq, xs @ wk, xs @ wv
for step in range(T_VALUE):
    lo = max(0, step - W + 1)
    s = K[lo:step + 1] @ Q[step] / np.sqrt(D)
    p = np.exp(s - s.max())
    p /= p.sum()
    np.testing.assert_allclose(exe.get(out, (step,)), p @ V[lo:step + 1], rtol=1e-4, atol=1e-5)
print(f"windowed attention (window {W}): values match NumPy at all {T_VALUE} steps")
