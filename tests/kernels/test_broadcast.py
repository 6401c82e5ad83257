"""Long inner loops for short broadcasts (``kernels/_broadcast.py``): the relaid views give NumPy's own results, and
the element-wise ops that bind them -- ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, the comparisons,
PRELU -- equal the TFLM wheel bit for bit on per-channel and per-row operands, NaN payloads in both inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.kernels._broadcast import MIN_RUN, inner_run, long_inner

from .single_op_models import T, assert_bitwise_matches_tflm, single_op


@st.composite
def broadcasts(draw):
    """An output shape of 4096 to 30 000 elements and two operand shapes broadcasting to it."""
    rank = draw(st.integers(2, 5))
    shape = [draw(st.integers(1, 40)) for _ in range(rank)]
    while np.prod(shape) < 4096:
        shape[draw(st.integers(0, rank - 1))] *= 2
    if np.prod(shape) > 30_000:
        shape = [max(1, s // 2) for s in shape]
    operands = []
    for _ in range(2):
        kept = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
        s = tuple(n if keep else 1 for n, keep in zip(shape, kept))
        operands.append(s[draw(st.integers(0, rank - 1)):])
    return tuple(shape), operands


@settings(max_examples=60, deadline=None)
@given(case=broadcasts(), constant=st.sampled_from([None, 0, 1]), seed=st.integers(0, 2**32 - 1))
def test_long_inner_gives_numpys_result(case, constant, seed):
    shape, shapes = case
    if np.broadcast_shapes(*shapes) != shape:
        shapes = [shape, shapes[1]]
    rng = np.random.default_rng(seed)
    xs = [rng.normal(size=s).astype(np.float32) for s in shapes]
    if constant is not None:
        xs[constant].flags.writeable = False
    out = np.empty(shape, np.float32)
    wide = long_inner(xs, out)
    want = np.subtract(*xs)
    if wide is None:
        return
    (a, b), y, refreshes = wide
    assert inner_run([(1,) * (y.ndim - v.ndim) + v.shape for v in (a, b)], y.shape) >= MIN_RUN
    assert len(refreshes) <= (2 if constant is None else 1)      # a constant operand is laid out once
    for refresh in refreshes:
        refresh()
    np.subtract(a, b, out=y)
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))


def test_a_per_channel_operand_is_relaid_and_a_long_one_left_alone():
    out = np.empty((1, 384, 384, 3), np.float32)
    image, mean = np.ones(out.shape, np.float32), np.ones((1, 1, 1, 3), np.float32)
    (_, m), y, refreshes = long_inner((image, mean), out)
    assert y.shape == (1, 384, 1, 384, 3) and m.shape == (1, 1, 1, 384, 3) and len(refreshes) == 1
    assert long_inner((image, np.ones((1, 384, 1, 1), np.float32)), out) is None      # runs of 1152 already
    assert long_inner((image[:, :8, :8], mean), out[:, :8, :8]) is None                  # small: NumPy's layout


def _nans(rng, shape, sign):
    """float32 values with a third NaNs of distinct payloads (sign ``sign``), infinities and signed zeros."""
    x = (rng.normal(size=shape) * 10.0 ** rng.integers(-3, 38)).astype(np.float32)
    flat = x.reshape(-1)
    pick = rng.random(flat.size)
    bits = (0x7FC00000 | rng.integers(1, 1 << 20, flat.size) | sign << 31).astype(np.uint32)
    flat[pick < 0.33] = bits.view(np.float32)[pick < 0.33]
    flat[(pick > 0.9) & (pick < 0.93)] = np.inf
    flat[(pick > 0.93) & (pick < 0.96)] = -0.0
    return x


SHAPES = [((1, 40, 40, 3), (1, 1, 1, 3)), ((1, 1, 1, 3), (1, 40, 40, 3)), ((2, 30, 30, 5), (2, 1, 1, 5)),
          ((1, 64, 64, 2), (64, 2)), ((1, 48, 48, 5), (1, 48, 1, 1))]


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "LESS",
                                "GREATER_EQUAL"])
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("constant", [False, True])
def test_wide_float_broadcasts_match_the_wheel(op, shapes, constant):
    rng = np.random.default_rng(len(op) * 7 + len(shapes[1]))
    a, b = _nans(rng, shapes[0], 0), _nans(rng, shapes[1], 1)
    out_shape = np.broadcast_shapes(*shapes)
    out_type = "BOOL" if op in ("LESS", "GREATER_EQUAL") else "FLOAT32"
    second = T(shapes[1], "FLOAT32", data=b) if constant else T(shapes[1], "FLOAT32")
    model = single_op(op, [T(shapes[0], "FLOAT32"), second], T(out_shape, out_type))
    it = mi.Interpreter(model)
    assert not any(hasattr(call, "func") and getattr(call.func, "__name__", "") == "invoke"
                   for call, _ in it.runtime.calls)        # a bound call runs, not the kernel's invoke
    assert_bitwise_matches_tflm(model, [a] if constant else [a, b])


@pytest.mark.parametrize("op", ["ADD", "MUL", "SQUARED_DIFFERENCE", "MAXIMUM"])
def test_wide_int32_broadcasts_match_the_wheel(op):
    rng = np.random.default_rng(3)
    a = rng.integers(-(1 << 31), 1 << 31, (1, 40, 40, 3), dtype=np.int64).astype(np.int32)
    b = rng.integers(-(1 << 31), 1 << 31, (1, 1, 1, 3), dtype=np.int64).astype(np.int32)
    model = single_op(op, [T(a.shape, "INT32"), T(b.shape, "INT32")], T(a.shape, "INT32"))
    assert_bitwise_matches_tflm(model, [a, b])


@pytest.mark.parametrize("alpha_shape", [(1, 1, 3), (40, 1, 3), (3,)])
def test_wide_prelu_matches_the_wheel(alpha_shape):
    rng = np.random.default_rng(4)
    x, alpha = _nans(rng, (1, 40, 40, 3), 0), _nans(rng, alpha_shape, 1)
    model = single_op("PRELU", [T(x.shape, "FLOAT32"), T(alpha_shape, "FLOAT32")], T(x.shape, "FLOAT32"))
    assert_bitwise_matches_tflm(model, [x, alpha])
