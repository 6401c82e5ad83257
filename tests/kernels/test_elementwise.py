"""ABS, SIN, COS, LOG, SQRT, RSQRT, SQUARE, LOGICAL_NOT against the TFLM wheel: float32 bit for bit over random
bit patterns and special values, int8/int16 ABS and int8 RSQRT over every input code with random quantization."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError
from microinterp.testing.single_op import assert_matches_tflm
from microinterp.testing.tflm import TflmRunner

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    scales,
    shapes,
    single_op,
    zero_points,
)

FLOAT_OPS = ["ABS", "SIN", "COS", "LOG", "SQRT", "RSQRT", "SQUARE"]


def float_values(rng: np.random.Generator, shape) -> np.ndarray:
    """Random bit patterns (NaNs, infinities, denormals), ordinary ranges, and the special values."""
    n = int(np.prod(shape))
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    mixed = rng.uniform(-10, 10, size=n).astype(np.float32)
    big = rng.uniform(-1e6, 1e6, size=n).astype(np.float32)
    pick = rng.integers(0, 3, size=n)
    x = np.where(pick == 0, bits, np.where(pick == 1, mixed, big)).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.0, -1.0, 0.5], np.float32)
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    return x.reshape(shape)


@given(op=st.sampled_from(FLOAT_OPS), shape=shapes(0, 4, 6), seed=st.integers(0, 2**32 - 1))
def test_float_ops_match_tflm_bitwise(op, shape, seed):
    x = float_values(np.random.default_rng(seed), shape)
    assert_bitwise_matches_tflm(single_op(op, [T(shape, "FLOAT32")], T(shape, "FLOAT32")), [x])


@given(op=st.sampled_from(["ABS", "RSQRT"]), type_name=st.sampled_from(["INT8", "INT16"]), data=st.data())
def test_quantized_ops_match_tflm_on_every_code(op, type_name, data):
    zps = [0, 0] if type_name == "INT16" else [data.draw(zero_points("INT8")) for _ in range(2)]
    s_in = data.draw(scales(-4, 1))
    s_out = s_in if data.draw(st.booleans()) else data.draw(scales(-4, 1))
    lo, hi = (-128, 127) if type_name == "INT8" else (-32768, 32767)
    if op == "RSQRT":
        lo = zps[0]             # below the input zero point RSQRT fails (tested separately)
    x = np.arange(lo, hi + 1, dtype=np.int64).astype(np.int8 if type_name == "INT8" else np.int16)
    model = single_op(op, [T(x.shape, type_name, s_in, zps[0])], T(x.shape, type_name, s_out, zps[1]))
    assert_matches_tflm(model, [x])


def test_int16_abs_without_quantization_is_plain_abs():
    x = np.array([-32768, -32767, -1, 0, 1, 32767], np.int16)
    assert_matches_tflm(single_op("ABS", [T((6,), "INT16")], T((6,), "INT16")), [x])


def test_logical_not():
    x = np.array([[True, False, True], [False, False, True]])
    assert_matches_tflm(single_op("LOGICAL_NOT", [T((2, 3), "BOOL")], T((2, 3), "BOOL")), [x])


def test_rsqrt_below_the_zero_point_fails_at_invoke_like_the_wheel():
    model = single_op("RSQRT", [T((3,), "INT8", 0.1, 5)], T((3,), "INT8", 0.05, 0))
    x = np.array([5, 6, 4], np.int8)
    with pytest.raises(InvokeError, match="positive values"):
        it = Interpreter(model)
        it.set_input(x)
        it.invoke()
    with pytest.raises(RuntimeError):
        TflmRunner(model).run([x])


@pytest.mark.parametrize("op,type_name", [("SIN", "INT8"), ("SQUARE", "INT8"), ("RSQRT", "INT32"),
                                          ("LOGICAL_NOT", "FLOAT32"), ("ABS", "INT32")])
def test_unsupported_types_are_refused_like_the_wheel(op, type_name):
    # the wheel's Prepare lets them through; its Eval fails (here: refused at prepare)
    q = (0.1, 0) if type_name in ("INT8", "INT16") else (None, None)
    dtype = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32}[type_name]
    assert_refused(single_op(op, [T((4,), type_name, *q)], T((4,), type_name, *q)), [np.zeros(4, dtype)],
                   tflm="invoke")


def test_int16_abs_needs_zero_points_0():
    assert_refused(single_op("ABS", [T((4,), "INT16", 0.1, 3)], T((4,), "INT16", 0.1, 0)), [])


def test_mixed_types_are_refused():
    assert_refused(single_op("ABS", [T((4,), "INT8", 0.1, 0)], T((4,), "INT16", 0.1, 0)), [])
