"""Optimizers as recurrences over the parameters' steps (tempo.optim).

    opt = tempo.optim.Adam(pi.parameters(), lr=1e-3)
    tempo.optim.minimize(loss, opt, max_grad_norm=0.5)     # grad + step
"""
from ._tempo import optim as _optim

Optimizer = _optim.Optimizer
SGD = _optim.SGD
Adam = _optim.Adam
AdamW = _optim.AdamW
minimize = _optim.minimize
clip_grad_norm = _optim.clip_grad_norm
linear_decay = _optim.linear_decay
exponential_decay = _optim.exponential_decay
