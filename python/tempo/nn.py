"""Neural-network modules written as recurrent tensors (tempo.nn).

A parameter is state over its update steps, usually the iteration dimension i:

    pi = tempo.nn.MLP(ctx, [4, 64, 2], steps=i, activation="tanh")
    logits = pi(obs)                      # obs over (i, t) -> logits over (i, t)
"""
from ._tempo import nn as _nn

Module = _nn.Module
Parameter = _nn.Parameter
Linear = _nn.Linear
MLP = _nn.MLP
LayerNorm = _nn.LayerNorm
RMSNorm = _nn.RMSNorm
Embedding = _nn.Embedding
Conv2d = _nn.Conv2d
Categorical = _nn.Categorical
Normal = _nn.Normal
identity = _nn.identity
tanh = _nn.tanh
relu = _nn.relu
sigmoid = _nn.sigmoid
gelu = _nn.gelu
silu = _nn.silu
