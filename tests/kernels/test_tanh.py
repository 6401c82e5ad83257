"""TANH against the TFLM wheel: int8 (gemmlowp tanh on Q4.27, no output zero point; every input value in every
case, output quantization ignored by TFLM), int16 (sigmoid table; scales 2^-12 / 2^-11 are the power-of-two cases),
float32 (the C library's tanhf)."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm

from .activation_cases import assert_refused, float32_scales, run_case, shapes, unary_model, zero_points

OP = "TANH"


@given(shape=shapes(max_last=64), s_in=float32_scales(-3, 0.5), zp=zero_points(),
       out_q=st.sampled_from([(1.0 / 128, 0), (0.05, 10), (1.0 / 256, -128)]), seed=st.integers(0, 2**32 - 1))
@example(shape=(256,), s_in=0.1, zp=-128, out_q=(1.0 / 128, 0), seed=0)
@example(shape=(256,), s_in=2.5, zp=127, out_q=(0.05, 10), seed=1)
def test_int8(shape, s_in, zp, out_q, seed):
    model = unary_model(OP, shape, "INT8", "INT8", (s_in, zp), out_q)
    run_case(model, shape, "INT8", seed, include_all_values=True)


@given(shape=shapes(max_last=64), s_in=st.one_of(st.sampled_from([2.0**-12, 2.0**-11, 2.0**-13, 2.0**-10]),
                                                 float32_scales(-5.5, -2.5)),
       seed=st.integers(0, 2**32 - 1), narrow=st.booleans())
@example(shape=(4, 64), s_in=2.0**-11, seed=0, narrow=False)  # power-of-two case with shift 1: multiplier 6
def test_int16(shape, s_in, seed, narrow):
    model = unary_model(OP, shape, "INT16", "INT16", (s_in, 0), (2.0**-15, 0))
    lo, hi = (-3000, 3000) if narrow else (None, None)
    run_case(model, shape, "INT16", seed, low=lo, high=hi)


@given(shape=shapes(max_last=64), seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([0.01, 1.0, 5.0, 30.0]))
def test_float32(shape, seed, spread):
    model = unary_model(OP, shape, "FLOAT32")
    run_case(model, shape, "FLOAT32", seed, low=-spread, high=spread)


def test_float32_special_values():
    x = np.array([0.0, -0.0, 1e-20, -1e-30, 0.999999, 1.0, 21.99, 22.0, -22.0, 100.0, np.inf, -np.inf],
                 dtype=np.float32)
    assert_matches_tflm(unary_model(OP, x.shape, "FLOAT32"), [x])


def test_refusals():
    s = (2, 5)
    assert_refused(unary_model(OP, s, "INT8", "INT16", (0.1, 0), (2.0**-15, 0)), "differs")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (2.0**-12, 1), (2.0**-15, 0)), "zero points")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (2.0**-12, 0), (2.0**-15, -1)), "zero points")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (2.0**-12, 0), (2.0**-16, 0)), "2\\^-15")
