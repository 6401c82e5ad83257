"""RELU6 against the TFLM wheel: float32, int8, int16 -- a clamp in the input's quantization, output params ignored."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    scales,
    shapes,
    single_op,
    with_specials,
    zero_points,
)


@given(dtype=st.sampled_from(["FLOAT32", "INT8", "INT16"]), shape=shapes(), s_in=scales(-4, 1), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
@example(dtype="INT8", shape=(8,), s_in=1e-9, data=None, seed=0)       # 6/s overflows int32: six = -128
@example(dtype="INT16", shape=(8,), s_in=1e-6, data=None, seed=0)
def test_relu6_matches_tflm(dtype, shape, s_in, data, seed):
    rng = np.random.default_rng(seed)
    if dtype == "FLOAT32":
        model = single_op("RELU6", [T(shape, dtype)], T(shape, dtype))
        assert_bitwise_matches_tflm(model, [with_specials(random_tensor(rng, shape, dtype, -10, 10))])
        return
    else:
        zp = data.draw(zero_points(dtype)) if data is not None else -5
        zp_out = data.draw(zero_points(dtype)) if data is not None else 0
        model = single_op("RELU6", [T(shape, dtype, s_in, zp)], T(shape, dtype, s_in * 2, zp_out))
        x = random_tensor(rng, shape, dtype)
    assert_matches_tflm(model, [x])


def test_int16_zero_point_wraps():
    model = single_op("RELU6", [T((8,), "INT16", 1e-6, -40000)], T((8,), "INT16", 1e-6, 0))
    assert_matches_tflm(model, [np.array([-32768, -100, -3, 0, 2, 4, 100, 32767], np.int16)])


@pytest.mark.parametrize("dtype", ["UINT8", "INT32"])
def test_unsupported_types_refused(dtype):
    model = single_op("RELU6", [T((4,), dtype, 0.1, 0)], T((4,), dtype, 0.1, 0))
    assert_refused(model, [np.zeros(4, {"UINT8": np.uint8, "INT32": np.int32}[dtype])], tflm="invoke")
