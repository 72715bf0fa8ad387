"""Tempo: recurrent-tensor programs, compiled and run by a C++ system.

    import tempo
    ctx = tempo.Context()
    t, T = ctx.dim("t", "T")
    x = ctx.placeholder((4,), domain=[t], name="x")
    x[0] = ctx.ones((4,))
    x[t + 1] = x[t] * 0.5
    y = x[0:T].sum(0).retain()          # a window over the whole dimension
    exe = ctx.compile({"T": 10})
    exe.run()
    exe.get(y, (3,))                    # NumPy array

Errors in a program raise tempo.UserError (a ValueError) naming the RT and the Python line
that created it.
"""
import os as _os
import sys as _sys

from . import _tempo
from ._tempo import (
    Context,
    Dim,
    DType,
    Executable,
    Expr,
    InternalError,
    RT,
    TensorType,
    UserError,
    bfloat16,
    bool_,
    cat,
    float16,
    float32,
    float64,
    grad,
    int32,
    int64,
    max,
    min,
    stack,
    where,
)

_tempo._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)))

from . import nn, optim, rl  # noqa: E402  (after the package dir is known)

__all__ = [
    "Context", "Dim", "DType", "Executable", "Expr", "InternalError", "RT", "TensorType",
    "UserError", "bfloat16", "bool_", "cat", "float16", "float32", "float64", "grad", "int32",
    "int64", "max", "min", "stack", "where", "nn", "optim", "rl",
]
