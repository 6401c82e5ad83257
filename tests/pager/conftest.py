"""Shared helpers of the pager tests: random small int8 networks and in-memory reference runs."""

from __future__ import annotations

import numpy as np

import microinterp as mi
from microinterp.errors import ArenaOverflowError
from microinterp.testing.models import QuantNet


def small_net(seed: int, size: int = 32, layers: int = 5) -> bytes:
    """A random chain of conv / depthwise / pool / residual-add layers, then flatten + FC (+ softmax)."""
    rng = np.random.default_rng(seed)
    net = QuantNet((1, size, size, int(rng.integers(1, 5))), seed=seed, name=f"pager net {seed}")
    for _ in range(layers):
        kind = rng.choice(["conv", "conv", "depthwise", "pool", "residual", "pad"])
        h = net.shape[1]
        if kind == "conv":
            k = int(rng.choice([1, 3, 5]))
            stride = int(rng.choice([1, 2])) if h >= 8 else 1
            net.conv(int(rng.integers(2, 17)), k, stride=stride, padding=str(rng.choice(["SAME", "VALID"])) if h > k
                     else "SAME", act=str(rng.choice(["RELU", "RELU6", "NONE"])))
        elif kind == "depthwise":
            net.depthwise(3, stride=int(rng.choice([1, 2])) if h >= 8 else 1, multiplier=int(rng.choice([1, 2])))
        elif kind == "pool" and h >= 4:
            net.pool(str(rng.choice(["MAX", "AVERAGE"])), 2, 2, padding=str(rng.choice(["SAME", "VALID"])))
        elif kind == "pad":
            net.pad(*(int(v) for v in rng.integers(0, 3, size=4)))
            if rng.random() < 0.8:         # usually read by a row-band op: the PAD is fused into its reads
                net.depthwise(3, stride=int(rng.choice([1, 2])), padding="VALID")
        elif kind == "residual":
            mark = net.mark()
            net.conv(net.shape[3], 3, act="NONE")
            net.add(mark, act=str(rng.choice(["NONE", "RELU"])))
    net.flatten()
    net.fc(int(rng.integers(2, 12)), act="NONE")
    if rng.random() < 0.5:
        net.softmax()
    return net.build()


def in_memory(model: bytes, x: np.ndarray) -> np.ndarray:
    it = mi.Interpreter(model, optimized=False)
    it.set_input(x)
    it.invoke()
    return it.get_output()


def smallest_out_of_core_arena(model: bytes, path, **kwargs) -> int:
    """The ``needed_arena`` the pager names for a far too small arena."""
    try:
        mi.Interpreter(model, arena=256, backing=path, **kwargs)
    except ArenaOverflowError as e:
        return e.needed_arena
    raise AssertionError("an arena of 256 bytes was accepted")


def arena_between(model: bytes, path, where: float, **kwargs) -> int:
    """An arena between the smallest out-of-core one and one byte less than the in-memory plan (``where`` in
    [0, 1]); rejects (hypothesis ``assume``) a model that the smallest out-of-core arena would run in memory."""
    from hypothesis import assume

    need = smallest_out_of_core_arena(model, path, **kwargs)
    full = mi.Interpreter(model).arena_used_bytes
    assume(need < full)
    return need + int(where * (full - 1 - need))


def random_input(model: bytes, seed: int = 0) -> np.ndarray:
    d = mi.Interpreter(model).get_input_details(0)
    return np.random.default_rng(seed).integers(-128, 128, size=tuple(d["shape"]), dtype=np.int8)
