"""The programming model from Python: operators and temporal indexing against NumPy,
gradients against finite differences, errors naming the Python line, and Python callbacks."""
import inspect
import os

import numpy as np
import pytest

import tempo


def source(ctx, dims, values):
    """A UDF over `dims` returning values[point] (a NumPy array indexed by the point)."""
    shape = values.shape[len(dims):]
    (x,) = ctx.udf("source", lambda ins, p: values[p], outputs=[(shape, "float32")], domain=dims)
    return x


def test_elementwise_and_reductions_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 3, 4)).astype(np.float32)
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    x, y = source(ctx, [t], a), source(ctx, [t], b)
    outs = {
        "arith": ((x + 2.0) * y - x / (y.abs() + 1.0)).retain(),
        "reflected": (1.0 - x * 3).retain(),
        "unary": (x.exp().log() + x.tanh() + x.sigmoid() + x.relu()).retain(),
        "compare": tempo.where(x > y, x, y).retain(),
        "sum": x.sum(1).retain(),
        "mean_all": x.mean().retain(),
        "max": x.max(-1).retain(),
        "softmax": x.softmax(-1).retain(),
        "matmul": (x @ y.transpose(0, 1)).retain(),
        "pow": (x ** 2).retain(),
        "symbol": (x * t).retain(),
    }
    exe = ctx.compile({"T": 5})
    exe.run()
    for k in range(5):
        xa, yb = a[k], b[k]
        e = np.exp(xa - xa.max(-1, keepdims=True))
        want = {
            "arith": (xa + 2.0) * yb - xa / (np.abs(yb) + 1.0),
            "reflected": 1.0 - xa * 3,
            "unary": xa + np.tanh(xa) + 1 / (1 + np.exp(-xa)) + np.maximum(xa, 0),
            "compare": np.where(xa > yb, xa, yb),
            "sum": xa.sum(1),
            "mean_all": xa.mean(),
            "max": xa.max(-1),
            "softmax": e / e.sum(-1, keepdims=True),
            "matmul": xa @ yb.T,
            "pow": xa**2,
            "symbol": xa * k,
        }
        for name, rt in outs.items():
            np.testing.assert_allclose(exe.get(rt, (k,)), want[name], rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} at t={k}")


def test_half_type_weights_are_summed_in_float32():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((6, 10)).astype(np.float32)
    x0 = rng.standard_normal((2, 10)).astype(np.float32)
    bits = w.view(np.uint32)
    rounded = {  # what a float16 / bfloat16 weight holds: w rounded to nearest even
        tempo.float16: w.astype(np.float16).astype(np.float32),
        tempo.bfloat16: ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32),
    }
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    x = ctx.tensor(x0) * (t + 1)
    outs = {dt: (x @ ctx.tensor(w, dt).transpose(0, 1)).retain() for dt in rounded}
    exe = ctx.compile({"T": 2})
    exe.run()
    for dt, rt in outs.items():
        for k in range(2):
            got = exe.get(rt, (k,))
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, (x0 * (k + 1)) @ rounded[dt].T, rtol=1e-5, atol=1e-5)


def test_temporal_indexing_windows_and_recurrence():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 3)).astype(np.float32)
    ctx = tempo.Context()
    t = ctx.dim("t", "T")  # a Dim behaves as its variable in expressions
    x = source(ctx, [t], a)
    future = x[t:t.bound].sum(0).retain()                 # all future values: T - t rows
    past = x[tempo.max(0, t - 2):t + 1].sum(0).retain()  # a window of up to 3 steps
    prev = x[tempo.max(0, t - 1)].retain()
    s = ctx.placeholder((3,), domain=[t], name="s")
    s[0] = x[0]
    s[t + 1] = s[t] * 0.5 + x[t]  # the value is read at t: s[t + 1] from x[t]
    s_out = s.retain()
    exe = ctx.compile({t: 8})
    exe.run()
    state = a[0]
    for k in range(8):
        if k > 0:
            state = state * 0.5 + a[k - 1]
        np.testing.assert_allclose(exe.get(future, (k,)), a[k:].sum(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(exe.get(past, (k,)), a[max(0, k - 2):k + 1].sum(0), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(exe.get(prev, (k,)), a[max(0, k - 1)], rtol=1e-6)
        np.testing.assert_allclose(exe.get(s_out, (k,)), state, rtol=1e-5, atol=1e-5)


def test_unpacked_dims_and_two_dimensions():
    ctx = tempo.Context()
    i, I = ctx.dim("i", "I")
    t, T = ctx.dim("t", "T")
    v = ctx.symbol(i * 10 + t).cast(tempo.float32)  # a value that names its point
    total = v[i, 0:T].sum(0).retain()                # over t, per i
    exe = ctx.compile({I: 3, T: 4})
    exe.run()
    for k in range(3):
        assert exe.get(total, (k,)) == pytest.approx(sum(k * 10 + j for j in range(4)))
    assert [d.name for d in ctx.dims] == ["i", "t"]


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((3, 4)).astype(np.float64)
    x0 = rng.standard_normal((5, 4)).astype(np.float64)

    def loss_of(w):
        h = np.tanh(x0 @ w.T)
        return float((h ** 2).sum() + np.log1p(np.exp(h)).mean())

    ctx = tempo.Context()
    w = ctx.tensor(w0)
    x = ctx.tensor(x0)
    h = (x @ w.transpose(0, 1)).tanh()
    loss = (h * h).sum() + (h.exp() + 1.0).log().mean()
    (gw,) = tempo.grad(loss, [w])
    gw = gw.retain()
    exe = ctx.compile()
    exe.run()
    got = exe.get(gw)
    eps = 1e-6
    want = np.zeros_like(w0)
    for idx in np.ndindex(*w0.shape):
        d = np.zeros_like(w0)
        d[idx] = eps
        want[idx] = (loss_of(w0 + d) - loss_of(w0 - d)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_errors_name_the_python_line():
    ctx = tempo.Context()
    a = ctx.zeros((3,))
    b = ctx.zeros((4,))
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(tempo.UserError) as err:
        a + b
    assert f"test_core.py:{line}" in str(err.value)


def test_errors_at_compile_name_the_line_of_the_rt():
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    x = ctx.placeholder((2,), domain=[t], name="never_defined")
    line = inspect.currentframe().f_lineno - 1
    y = (x * 2.0).retain()
    with pytest.raises(tempo.UserError) as err:
        ctx.compile({"T": 3})
    assert "never_defined" in str(err.value)
    assert f"test_core.py:{line}" in str(err.value)
    del y


def test_bad_input_is_a_clear_error():
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    x = ctx.zeros((2,))
    with pytest.raises(tempo.UserError, match="not a bound"):
        ctx.compile({"Q": 3})
    with pytest.raises(TypeError, match="unknown option 'fast'"):
        ctx.compile({"T": 3}, fast=True)
    with pytest.raises(tempo.UserError, match='unknown device "gpu"'):
        ctx.compile({"T": 3}, device="gpu")
    with pytest.raises(tempo.UserError,
                       match="loop_schedules 'fastest': expected rows, measured, columns or learned"):
        ctx.compile({"T": 3}, loop_schedules="fastest")
    with pytest.raises(tempo.UserError,
                       match="rewrites 'greedy': expected none, search, learned, learned:FILE"):
        ctx.compile({"T": 3}, rewrites="greedy")
    with pytest.raises(TypeError, match="no truth value"):
        bool(x > 0)
    with pytest.raises(tempo.UserError, match="not supported"):
        ctx.zeros((2,), dtype="complex64")


def test_a_raising_callback_reaches_the_caller_and_the_executable_stays_usable():
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    fail_at = {"t": 2}

    def step(ins, point):
        if point[0] == fail_at["t"]:
            raise KeyError("boom at %d" % point[0])
        return np.full((2,), point[0], np.float32)

    (x,) = ctx.udf("step", step, outputs=[((2,), "float32")], domain=[t])
    y = (x * 2.0).retain()
    exe = ctx.compile({"T": 4})
    with pytest.raises(KeyError, match="boom at 2"):
        exe.run()
    fail_at["t"] = -1
    exe.run()  # usable again
    np.testing.assert_allclose(exe.get(y, (3,)), [6.0, 6.0])


def test_udf_output_checked_against_its_declared_type():
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    (x,) = ctx.udf("wrong", lambda ins, p: np.zeros(3), outputs=[((2,), "float32")], domain=[t])
    x.retain()
    exe = ctx.compile({"T": 2})
    with pytest.raises(tempo.UserError, match=r"udf 'wrong' output 0 has shape \(3\)"):
        exe.run()


def test_options_on_and_off_give_the_same_values():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 4)).astype(np.float32)
    results = []
    for options in ({}, {"no_pass": "all", "codegen": False, "block_stores": False}):
        ctx = tempo.Context()
        t, T = ctx.dim("t", "T")
        x = source(ctx, [t], a)
        y = (x[0:t + 1].sum(0) * 2.0 + x.exp()).retain()
        exe = ctx.compile({T: 6}, **options)
        exe.run()
        results.append([exe.get(y, (k,)) for k in range(6)])
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_loop_schedules_by_name_and_learned_give_the_same_values():
    model = os.path.join(os.path.dirname(__file__), "..", "..", "data",
                         "loop_schedules.safetensors")
    a = np.random.default_rng(4).standard_normal((3, 512, 2)).astype(np.float32)
    results = []
    for schedules in ("rows", "columns", "measured", "learned:" + model):
        ctx = tempo.Context()
        t, T = ctx.dim("t", "T")
        x = source(ctx, [t], a)
        y = (x.softmax(-1) * 2.0 + x.max(-1, keepdim=True)).retain()
        exe = ctx.compile({T: 3}, loop_schedules=schedules)
        exe.run()
        results.append(np.stack([exe.get(y, (k,)) for k in range(3)]))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    with pytest.raises(tempo.UserError, match="not a loop schedule model"):
        ctx.compile({T: 3}, loop_schedules="learned:" + __file__)


def test_rewrites_by_search_give_the_same_values():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 64, 8)).astype(np.float32)
    w1, w2 = (rng.standard_normal((8, 16)).astype(np.float32) for _ in range(2))
    results = []
    for rewrites in ("none", "search"):
        ctx = tempo.Context()
        t, T = ctx.dim("t", "T")
        x = source(ctx, [t], a)
        y = ((x @ ctx.tensor(w1)).tanh() + (x @ ctx.tensor(w2)).relu()).retain()
        exe = ctx.compile({T: 3}, rewrites=rewrites)
        exe.run()
        results.append(np.stack([exe.get(y, (k,)) for k in range(3)]))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-5)


def test_compile_stages_dump_their_results(tmp_path):
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    x = source(ctx, [t], np.ones((4, 3), np.float32))
    y = x[t:T].sum(0).retain()
    exe = ctx.compile({T: 4}, dump="passes,schedule", dump_dir=str(tmp_path))
    exe.run()
    np.testing.assert_allclose(exe.get(y, (1,)), np.full(3, 3.0))
    assert sorted(f.name for f in tmp_path.iterdir()) == ["1-passes.txt", "2-schedule.txt"]
    assert "exec" in (tmp_path / "2-schedule.txt").read_text()
    with pytest.raises(tempo.UserError, match="unknown compile stage 'bogus'"):
        ctx.compile({T: 4}, dump="bogus")


def test_rts_keep_their_context_alive():
    def build():
        ctx = tempo.Context()
        return (ctx.ones((2,)) * 3.0).retain()

    y = build()
    assert y.shape == (2,)
    assert y.dtype == tempo.float32


def test_dims_and_expressions_compare_structurally_where_python_asks():
    ctx = tempo.Context()
    i = ctx.dim("i", "I")
    t, T = ctx.dim("t", "T")
    x = ctx.zeros((2,)) * ctx.symbol(t)
    assert t in x.domain and i not in x.domain
    assert list(ctx.dims).index(t) == 1
    assert (t + 1 == 1 + t) and not (t == T)
    with pytest.raises(TypeError, match="no truth value"):
        bool(t < T)


def _rollout_learned_backwards(ctx, values):
    """A rollout o[i, t] read point by point, backwards in time, once the acting loop is done:
    the outputs a memory budget swaps to host memory."""
    i, I = ctx.dim("i", "I")
    t, T = ctx.dim("t", "T")
    o = source(ctx, [i, t], values)
    state = ctx.placeholder(values.shape[2:], domain=[i, t], name="state")
    state[i, 0] = o[i, 0]
    state[i, t + 1] = state[i, t] * 0.5 + o
    last = state[i, T - 1]
    g = ctx.placeholder(values.shape[2:], domain=[i, t], name="g")
    g[i, 0] = o[i, T - 1] * last
    g[i, t + 1] = g[i, t].tanh() * 0.5 + o[i, tempo.max(0, T - 2 - t)] * last
    return g[i, T - 1].retain(), i, t


def test_a_python_swap_policy_decides_what_to_swap():
    values = np.random.default_rng(5).standard_normal((2, 32, 4096)).astype(np.float32)
    ctx = tempo.Context()
    learned, i, t = _rollout_learned_backwards(ctx, values)
    seen = []

    def largest(candidates, excess):
        seen.append((list(candidates), excess))
        order = sorted(range(len(candidates)), key=lambda k: -candidates[k]["bytes"])
        return order[:1]

    budget = 32 * 4096 * 4 // 2
    exe = ctx.compile({"I": 2, "T": 32}, memory_budget=budget, swap_policy=largest)
    exe.run()
    assert seen and seen[0][1] > 0
    assert all(set(c) == {"rt", "bytes"} for c in seen[0][0])
    assert any("test_core.py" in c["rt"] for c in seen[0][0])
    assert exe.memory()["peak_bytes"] <= budget

    reference = tempo.Context()
    plain, _, _ = _rollout_learned_backwards(reference, values)
    ref = reference.compile({"I": 2, "T": 32})
    ref.run()
    for k in range(2):
        np.testing.assert_allclose(exe.get(learned, (k,)), ref.get(plain, (k,)), rtol=1e-6)


def test_a_python_swap_policy_errors_reach_the_caller():
    values = np.zeros((2, 32, 4096), np.float32)
    ctx = tempo.Context()
    _rollout_learned_backwards(ctx, values)

    def broken(candidates, excess):
        raise RuntimeError("no idea")

    with pytest.raises(RuntimeError, match="no idea"):
        ctx.compile({"I": 2, "T": 32}, memory_budget=32 * 4096 * 2, swap_policy=broken)
    with pytest.raises(tempo.UserError, match="not the index of one of the"):
        ctx.compile({"I": 2, "T": 32}, memory_budget=32 * 4096 * 2,
                    swap_policy=lambda c, e: [len(c)])
    with pytest.raises(TypeError, match="swap_policy must be callable"):
        ctx.compile({"I": 2, "T": 32}, memory_budget=32 * 4096 * 2, swap_policy=3)
