"""A recurrence over time, checked against the same loop in NumPy.

    s[0] = x[0];   s[t + 1] = 0.9 * s[t] + x[t];   y[t] = sum of s over the next 3 steps

    PYTHONPATH=build/python python3 examples/python/recurrence.py [--schedule]
"""
import sys

import numpy as np

import tempo

T_VALUE = 50
data = np.random.default_rng(0).standard_normal((T_VALUE, 8)).astype(np.float32)

ctx = tempo.Context()
t, T = ctx.dim("t", "T")
(x,) = ctx.udf("data", lambda ins, p: data[p[0]], outputs=[((8,),)], domain=[t])

s = ctx.placeholder((8,), domain=[t], name="s")
s[0] = x[0]
s[t + 1] = s[t] * 0.9 + x[t]  # the right side is read at t
y = s[t:tempo.min(t + 3, T)].sum(0).retain()  # a window reaching into the future

exe = ctx.compile({T: T_VALUE})
exe.run()

state, states = np.zeros(8, np.float32), []
for k in range(T_VALUE):
    state = data[0] if k == 0 else state * 0.9 + data[k - 1]
    states.append(state)
for k in range(T_VALUE):
    np.testing.assert_allclose(exe.get(y, (k,)), np.sum(states[k:k + 3], 0), rtol=1e-4, atol=1e-5)
print("recurrence: values match NumPy at all", T_VALUE, "steps")
if "--schedule" in sys.argv:
    print(exe.schedule)  # the execution order isl found, as a C-like loop nest
