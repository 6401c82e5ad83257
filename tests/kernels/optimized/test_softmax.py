"""Optimized int8 SOFTMAX against the wheel and the reference kernel: the bound Python-int path (up to BOUND_ROWS
rows and BOUND_SIZE values) and beyond it (the vectorized invoke), int8 and int16 outputs, rows concentrated
near their maximum or spread below diff_min, the int32 wrap of the sum; the closed-form GetReciprocal against quant's
vectorized chain; the bound call over repeated invokes of one interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.kernels.optimized import softmax
from microinterp.quant import INT32_MAX, get_reciprocal
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm

OUT_Q = {"INT8": (1.0 / 256, -128), "INT16": (1.0 / 65536, -32768)}


def model(shape: tuple, out_type: str, s_in: float, zp: int, beta: float) -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", shape, "INT8", scale=s_in, zero_point=zp)
    s, z = OUT_Q[out_type]
    y = b.add_tensor("y", shape, out_type, scale=s, zero_point=z)
    b.add_op("SOFTMAX", [x], [y], beta=beta)
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_reciprocal_equals_quant():
    """The closed form (no wraps, no inner saturation) on every positive int32 kind: powers of two and their
    neighbours (the final saturation), random int32 and random softmax sums (2^19 .. 2^28)."""
    rng = np.random.default_rng(0)
    powers = [(1 << k) + d for k in range(32) for d in (-2, -1, 0, 1, 2)]
    values = [1, 2, 3, INT32_MAX, *powers, *rng.integers(1, INT32_MAX, 20000, endpoint=True).tolist(),
              *rng.integers(1 << 19, 1 << 28, 20000).tolist()]
    values = [v for v in values if 0 < v <= INT32_MAX]
    recip, bits = get_reciprocal(np.array(values, np.int64), 12)    # > 16 values: quant's vectorized chain
    assert [softmax.reciprocal(v) for v in values] == list(zip(recip.tolist(), bits.tolist()))


@st.composite
def cases(draw):
    rows = draw(st.sampled_from([1, 1, 2, 4, softmax.BOUND_ROWS, softmax.BOUND_ROWS + 1]) | st.integers(1, 40))
    lead = (rows,) if draw(st.booleans()) else (1, rows)
    size = softmax.BOUND_SIZE
    depth = st.sampled_from([1, 2, 4, 10, 12, size // rows, size // rows + 1, size, size + 1, 300]) | st.integers(1, 64)
    shape = (*lead, draw(depth))
    return {"shape": shape, "out": draw(st.sampled_from(["INT8", "INT16"])),
            "s_in": float(np.float32(10 ** draw(st.floats(-3, 1)))), "zp": draw(st.integers(-128, 127)),
            "beta": float(np.float32(draw(st.sampled_from([1.0, 0.05, 4.0]) | st.floats(0.05, 4.0)))),
            "spread": draw(st.sampled_from([0, 3, 40, 255])), "seed": draw(st.integers(0, 2**32 - 1))}


@given(cases())
@example({"shape": (1, 2), "out": "INT8", "s_in": 0.0125, "zp": -1, "beta": 1.0, "spread": 255, "seed": 0})
@example({"shape": (1, 12), "out": "INT16", "s_in": 10.0, "zp": 127, "beta": 4.0, "spread": 3, "seed": 1})
@example({"shape": (17, 300), "out": "INT8", "s_in": 0.001, "zp": 0, "beta": 0.05, "spread": 0, "seed": 2})
def test_matches_tflm(c):
    """``spread`` = how far below the row's maximum values fall (0: all equal; small: many terms near 1)."""
    rng = np.random.default_rng(c["seed"])
    top = rng.integers(-128, 128, c["shape"][:-1] + (1,))
    x = np.clip(top - rng.integers(0, c["spread"] + 1, c["shape"]), -128, 127).astype(np.int8)
    m = model(c["shape"], c["out"], c["s_in"], c["zp"], c["beta"])
    try:
        Interpreter(m)
    except PrepareError as e:   # beta * s_in * 2^26 <= 1: refused (TFLM aborts)
        assert "must exceed 1" in str(e)
        return
    assert_matches_tflm(m, [x])


@pytest.mark.parametrize("shape,s_in", [((1, 4096), 0.05), ((1, 8192), 0.05), ((1, 8192 + 7), 0.05),
                                        ((3, 8192), 0.05), ((20, 4100), 0.05), ((1, 8192 + 7), 1.0),
                                        ((2, 8192 + 7), 1.0)])
def test_sum_wraps_like_the_reference(shape, s_in):
    """Thousands of equal maxima: the int32 sum wraps (TFLM then fails its exponent check, or runs on the wrapped
    sum; with s_in = 1 the seven small values add nothing and the sum wraps to exactly 0, whose reciprocal is
    negative: the optimized kernel hands that to the reference). Optimized and reference raise or compute the same
    (the wheel would abort, it is not asked)."""
    m = model(shape, "INT8", s_in, 0, 1.0)
    x = np.full(shape, 5, np.int8)
    x[..., -7:] = -100
    results = []
    for optimized in (True, False):
        it = Interpreter(m, optimized=optimized)
        it.set_input(x)
        try:
            it.invoke()
            results.append(it.get_output())
        except RuntimeError as e:
            results.append(str(e))
    assert str(results[0]) == str(results[1]) and np.array_equal(results[0], results[1])


@pytest.mark.parametrize("shape,out_type,s_in,zp,call", [
    ((1, 4), "INT8", 0.09173192083835602, 14, "one_row"),          # micro_speech
    ((1, 12), "INT8", 0.14469251036643982, 14, "one_row"),         # kws_ref_model
    ((1, 1), "INT8", 1.0, 0, "one_row"),
    ((1, softmax.BOUND_SIZE), "INT16", 0.05, -128, "one_row"),
    ((softmax.BOUND_ROWS, softmax.BOUND_SIZE // softmax.BOUND_ROWS), "INT16", 0.05, -128, "each_row"),
    ((2, 3, 5), "INT8", 10.0, 127, "each_row"),
    ((1, softmax.BOUND_SIZE + 1), "INT8", 0.1, 0, "partial"),
    ((softmax.BOUND_ROWS + 1, 1), "INT8", 0.1, 0, "partial"),
])
def test_bound_call_over_invokes(shape, out_type, s_in, zp, call):
    """The interpreter runs the bound call where the shape allows it; on repeated invokes of one interpreter (random
    rows, all equal, one maximum and the rest at -128, all -128 / 127) it equals the kernel's invoke on the same
    views; the first and the extreme inputs also equal the wheel."""
    m = model(shape, out_type, s_in, zp, 1.0)
    it = Interpreter(m, optimized=True)
    bound, _ = it.runtime.calls[0]
    assert getattr(bound, "__name__", type(bound).__name__) == call
    rng = np.random.default_rng(5)
    one_top = np.full(shape, -128, np.int8)
    one_top[..., 0] = 127
    inputs = [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(4)]
    inputs += [np.full(shape, 3, np.int8), one_top, np.full(shape, -128, np.int8), np.full(shape, 127, np.int8)]
    for i, x in enumerate(inputs):
        it.set_input(x)
        it.invoke()
        got = it.get_output().copy()
        it.preparation.kernels[0][0].invoke(it.runtime.ctx, it.operators[0], it.runtime.op_data[0])
        assert np.array_equal(got.view(np.uint8), it.get_output().view(np.uint8))
        if i == 0 or i >= 4:
            assert_matches_tflm(m, [x])
