"""tempo.nn and tempo.optim from Python: a model trained by Adam against the same updates in
NumPy, checkpoints, and distributions."""
import numpy as np
import pytest

import tempo


def numpy_adam(w, grads_of, steps, lr, b1=0.9, b2=0.999, eps=1e-8):
    m, v, out = np.zeros_like(w), np.zeros_like(w), [w.copy()]
    for k in range(1, steps):
        g = grads_of(w)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1**k)) / (np.sqrt(v / (1 - b2**k)) + eps)
        out.append(w.copy())
    return out


def test_linear_regression_with_adam_matches_numpy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((32, 3)).astype(np.float32)
    y = (X @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    w0 = rng.standard_normal((1, 3)).astype(np.float32)
    b0 = np.zeros(1, np.float32)

    ctx = tempo.Context()
    i, I = ctx.dim("i", "I")
    lin = tempo.nn.Linear(ctx, 3, 1, steps=i)
    lin.weight.set_initial(w0)
    lin.bias.set_initial(b0)
    err = lin(ctx.tensor(X)) - ctx.tensor(y)
    loss = (err * err).mean()
    tempo.optim.minimize(loss, tempo.optim.Adam(lin.parameters(), lr=0.05))
    weight = lin.weight.retain()
    exe = ctx.compile({I: 20})
    exe.run()

    def grads(p):
        w, b = p[:3].reshape(1, 3), p[3:]
        e = X @ w.T + b - y
        return np.concatenate([(2 * e * X).mean(0), [(2 * e).mean()]])

    want = numpy_adam(np.concatenate([w0[0], b0]).astype(np.float64), grads, 20, 0.05)
    for k in (0, 1, 10, 19):
        np.testing.assert_allclose(exe.get(weight, (k,))[0], want[k][:3], rtol=1e-4, atol=1e-5)


def test_checkpoint_round_trip(tmp_path):
    path = str(tmp_path / "mlp_{i}.safetensors")
    ctx = tempo.Context()
    i, I = ctx.dim("i", "I")
    mlp = tempo.nn.MLP(ctx, [2, 8, 1], steps=i, activation="relu")
    x = ctx.tensor(np.ones((4, 2), np.float32))
    loss = mlp(x).square().mean()
    tempo.optim.minimize(loss, tempo.optim.SGD(mlp.parameters(), lr=0.1))
    mlp.save(path, condition=(i + 1) % 3 == 0)
    out = mlp(x).retain()
    exe = ctx.compile({I: 3})
    exe.run()
    saved = tmp_path / "mlp_2.safetensors"
    assert saved.exists()
    names = [n for n, _ in mlp.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias"]

    ctx2 = tempo.Context()
    mlp2 = tempo.nn.MLP(ctx2, [2, 8, 1], activation="relu")  # constant parameters
    mlp2.init_from(str(saved))
    out2 = mlp2(ctx2.tensor(np.ones((4, 2), np.float32))).retain()
    exe2 = ctx2.compile()
    exe2.run()
    np.testing.assert_allclose(exe2.get(out2), exe.get(out, (2,)), rtol=1e-6)


def test_categorical_sampling_and_log_prob():
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    logits = ctx.tensor(np.log(np.array([[0.7, 0.2, 0.1]], np.float32)))
    d = tempo.nn.Categorical(logits + ctx.constant(0.0, domain=[t]))
    a = d.sample().retain()
    lp = d.log_prob(ctx.tensor(np.array([0], np.int64))).retain()
    exe = ctx.compile({T: 2000}, seed=7)
    exe.run()
    draws = np.array([exe.get(a, (k,))[0] for k in range(2000)])
    assert abs((draws == 0).mean() - 0.7) < 0.04
    assert exe.get(lp, (0,))[0] == pytest.approx(np.log(0.7), rel=1e-5)


def test_python_activation_and_errors():
    ctx = tempo.Context()
    mlp = tempo.nn.MLP(ctx, [2, 4, 1], activation=lambda x: x.relu() * 2.0)
    y = mlp(ctx.ones((3, 2))).retain()
    exe = ctx.compile()
    exe.run()
    assert exe.get(y).shape == (3, 1)
    with pytest.raises(tempo.UserError, match="unknown activation 'swish'"):
        tempo.nn.MLP(ctx, [2, 1], activation="swish")
