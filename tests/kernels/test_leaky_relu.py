"""LEAKY_RELU against the TFLM wheel: float32, int8, int16; alpha of either sign, below and above 1."""

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

ALPHAS = st.one_of(st.sampled_from([0.0, 0.1, 0.2, 0.01, 1.0, -0.5, 2.5, 0.3333]), st.floats(-4.0, 4.0, width=32))


@given(dtype=st.sampled_from(["FLOAT32", "INT8", "INT16"]), shape=shapes(), alpha=ALPHAS, s_in=scales(-3, 1),
       ratio=st.floats(-1.5, 1.5), data=st.data(), seed=st.integers(0, 2**32 - 1))
@example(dtype="INT16", shape=(2, 3), alpha=-0.5, s_in=1.0, ratio=0.0, data=None, seed=0)  # -MBQM(v,|M|) != MBQM(v,M)
def test_leaky_relu_matches_tflm(dtype, shape, alpha, s_in, ratio, data, seed):
    rng = np.random.default_rng(seed)
    if dtype == "FLOAT32":
        model = single_op("LEAKY_RELU", [T(shape, dtype)], T(shape, dtype), alpha=alpha)
    else:
        s_out = float(np.float32(s_in * 10.0 ** ratio))
        zp_in, zp_out = (data.draw(zero_points(dtype)), data.draw(zero_points(dtype))) if data else (0, 0)
        model = single_op("LEAKY_RELU", [T(shape, dtype, s_in, zp_in)], T(shape, dtype, s_out, zp_out), alpha=alpha)
    if dtype == "FLOAT32":
        assert_bitwise_matches_tflm(model, [with_specials(random_tensor(rng, shape, dtype))])
    else:
        assert_matches_tflm(model, [random_tensor(rng, shape, dtype)])


def test_mixed_types_refused():
    model = single_op("LEAKY_RELU", [T((4,), "INT8", 0.1, 0)], T((4,), "INT16", 0.1, 0), alpha=0.2)
    assert_refused(model, [], tflm="prepare")


@pytest.mark.parametrize("dtype", ["UINT8", "INT32"])
def test_unsupported_types_refused(dtype):
    model = single_op("LEAKY_RELU", [T((4,), dtype, 0.1, 0)], T((4,), dtype, 0.1, 0), alpha=0.2)
    assert_refused(model, [np.zeros(4, {"UINT8": np.uint8, "INT32": np.int32}[dtype])], tflm="invoke")


def test_zero_output_scale_refused():
    model = single_op("LEAKY_RELU", [T((4,), "INT8", 0.1, 0)], T((4,), "INT8", 0.0, 0), alpha=0.2)
    assert_refused(model, [], tflm=None, match="positive quantization scale")
