"""Hypothesis cases shared by test_add.py, test_sub.py, test_mul.py: broadcasting binary ops vs the wheel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import TflmRunner

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
TYPES = ["INT8", "INT16", "FLOAT32", "INT32"]


def build(op: str, kind: str, s1: tuple, s2: tuple, out_shape: tuple, *, act: str = "NONE",
          q: tuple = ((0.1, 0), (0.1, 0), (0.1, 0)), const2: np.ndarray | None = None,
          types: tuple[str, str, str] | None = None, quantize_all: bool = False) -> bytes:
    """A one-op model ``op(a, b) -> y``; ``const2`` makes ``b`` a constant. ``q`` = ((scale, zp) x 3), applied
    to int8/int16 tensors (to every tensor with ``quantize_all``)."""
    types = types or (kind, kind, kind)
    b = ModelBuilder()
    tensors = []
    for name, shape, t, (scale, zp) in zip("aby", (s1, s2, out_shape), types, q):
        quantized = (quantize_all or t in ("INT8", "INT16")) and scale is not None
        quant = {"scale": scale, "zero_point": zp} if quantized else {}
        data = const2 if name == "b" else None
        tensors.append(b.add_tensor(name, shape, t, data=data, **quant))
    b.add_op(op, tensors[:2], tensors[2:], fused_activation_function=act)
    b.inputs = [tensors[0]] + ([tensors[1]] if const2 is None else [])
    b.outputs = [tensors[2]]
    return b.build()


@st.composite
def broadcast_shapes(draw) -> tuple[tuple, tuple, tuple]:
    """Output shape of rank 0..6 (<= 4 per dim, <= ~600 elements) and two input shapes broadcasting to it."""
    rank = draw(st.integers(0, 6))
    out = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    while int(np.prod(out)) > 600:
        out = out[1:]

    def operand():
        r = draw(st.integers(0, len(out)))
        dims = out[len(out) - r:]
        return tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in dims)

    s1, s2 = operand(), operand()
    if draw(st.booleans()):  # make sure one side carries the full output shape (the common converter layout)
        s1 = out
    if draw(st.integers(0, 4)) == 0:
        s2 = s1  # no broadcast at all
    full = tuple(np.broadcast_shapes(s1, s2))
    return s1, s2, (1,) * max(0, len(out) - len(full)) + full   # the output may carry extra leading 1s


def case(kind: str, s1: tuple, s2: tuple, out: tuple, *, act: str = "NONE", q: tuple = ((None, 0),) * 3,
         const2: bool = False, special: bool = False, seed: int = 0) -> dict[str, Any]:
    """One explicit case, in the form :func:`cases` draws (for ``@example``)."""
    return {"kind": kind, "s1": s1, "s2": s2, "out": out, "act": act, "q": q, "const2": const2,
            "special": special, "seed": seed}


@st.composite
def cases(draw, op: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(TYPES))
    s1, s2, out = draw(broadcast_shapes())
    q = ((None, 0),) * 3
    if kind in ("INT8", "INT16"):
        lo, hi = (-128, 127) if kind == "INT8" else (-32768, 32767)
        zp = st.sampled_from([lo, hi, 0, -1, 1]) | st.integers(lo, hi)
        if kind == "INT16":
            zp = st.sampled_from([0, 0, 0, 5, -300]) if op != "MUL" else st.just(0)
        s1_ = 10 ** draw(st.floats(-4, 0))
        s2_ = s1_ * 10 ** draw(st.floats(-2, 2))
        # ADD/SUB need 2*max(s1,s2) / (2^L * s_out) < 1; keep s_out within [1e-2, 1e2] of the inputs' scale.
        base = max(s1_, s2_) if op != "MUL" else s1_ * s2_
        so = base * 10 ** draw(st.floats(-2, 2))
        q = ((s1_, draw(zp)), (s2_, draw(zp)), (so, draw(zp)))
    return {"kind": kind, "s1": s1, "s2": s2, "out": out, "act": draw(st.sampled_from(ACTS)), "q": q,
                "const2": draw(st.integers(0, 3)) == 0, "special": draw(st.booleans()),
                "seed": draw(st.integers(0, 2**32 - 1))}


def values(rng: np.random.Generator, kind: str, shape: tuple, special: bool) -> np.ndarray:
    if kind == "FLOAT32":
        v = np.asarray(rng.normal(size=shape) * 10 ** rng.uniform(-3, 3), dtype=np.float32)
        if special and v.size:  # huge values (overflow to inf is clamped to FLT_MAX), signed zeros
            flat = v.reshape(-1)
            specials = np.array([3e38, -3e38, 0.0, -0.0], np.float32)
            flat[rng.integers(0, flat.size, 3)] = rng.choice(specials, 3)
        return np.asarray(v)
    return np.asarray(random_tensor(rng, shape, kind))


def check_case(op: str, case: dict[str, Any]) -> None:
    rng = np.random.default_rng(case["seed"])
    kind = case["kind"]
    x1 = values(rng, kind, case["s1"], case["special"])
    x2 = values(rng, kind, case["s2"], case["special"])
    model = build(op, kind, case["s1"], case["s2"], case["out"], act=case["act"], q=case["q"],
                  const2=x2 if case["const2"] else None)
    assert_matches_tflm(model, [x1] if case["const2"] else [x1, x2])


def wheel_refuses(model: bytes, inputs) -> bool:
    try:
        runner = TflmRunner(model)
        runner.run(inputs)
    except RuntimeError:
        return True
    return False


def assert_refused(model: bytes, match: str, inputs=None) -> None:
    """microinterp refuses at prepare; with ``inputs`` the wheel must refuse too (only for cases that do not
    abort the process)."""
    with pytest.raises(PrepareError, match=match):
        Interpreter(model)
    if inputs is not None:
        assert wheel_refuses(model, inputs)


def check_common_refusals(op: str) -> None:
    """Refusals shared by ADD/SUB/MUL (these would be undefined behaviour in TFLM; the wheel is not asked)."""
    q = ((0.1, 0),) * 3
    # Rank 7: TFLM's RuntimeShape holds 6 dims; beyond that the wheel computes garbage or crashes.
    s7 = (1, 2, 1, 2, 1, 2, 2)
    assert_refused(build(op, "FLOAT32", s7, s7, s7), "at most 6")
    assert_refused(build(op, "INT8", (2, 3), (4,), (2, 3), q=q), "do not broadcast")
    assert_refused(build(op, "INT8", (2, 3), (3,), (3, 3), q=q), "not the broadcast shape")
    assert_refused(build(op, "INT8", (4,), (4,), (4,), q=q, types=("INT8", "INT8", "INT16")), "type")
    assert_refused(build(op, "UINT8", (4,), (4,), (4,), q=q), "not supported")
