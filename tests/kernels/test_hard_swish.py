"""HARD_SWISH against the TFLM wheel: int8 (int16 fixed-point reluish multiplier, left- and right-shifting cases,
int16 wrap of the output zero-point add; every input value in every case) and float32."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from .activation_cases import assert_refused, float32_scales, run_case, shapes, unary_model, zero_points

OP = "HARD_SWISH"


@given(shape=shapes(max_last=64), s_in=float32_scales(-3, 1), ratio=st.floats(-2.0, 2.1),
       zp_in=zero_points(), zp_out=zero_points(), seed=st.integers(0, 2**32 - 1))
@example(shape=(256,), s_in=0.05, ratio=0.0, zp_in=-128, zp_out=127, seed=0)
@example(shape=(256,), s_in=1.0, ratio=np.log10(127.0), zp_in=0, zp_out=127, seed=1)  # output add wraps in int16
@example(shape=(256,), s_in=0.001, ratio=-2.0, zp_in=127, zp_out=-128, seed=2)  # tiny input scale: sr < 0
def test_int8(shape, s_in, ratio, zp_in, zp_out, seed):
    s_out = float(np.float32(s_in / 10.0 ** ratio))  # s_in / s_out < 128 (TFLM refuses the rest)
    model = unary_model(OP, shape, "INT8", "INT8", (s_in, zp_in), (s_out, zp_out))
    run_case(model, shape, "INT8", seed, include_all_values=True)


@given(shape=shapes(max_last=64), seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([1.0, 4.0, 100.0]))
def test_float32(shape, seed, spread):
    model = unary_model(OP, shape, "FLOAT32")
    run_case(model, shape, "FLOAT32", seed, low=-spread, high=spread)


def test_refusals():
    s = (2, 5)
    # output multiplier (s_in / 128) / s_out >= 1 gives a positive exponent: the wheel refuses too.
    assert_refused(unary_model(OP, s, "INT8", "INT8", (1.0, 0), (0.001, 0)), "exponent")
    assert_refused(unary_model(OP, s, "INT8", "INT16", (0.1, 0), (0.1, 0)), "differs", wheel=False)
    assert_refused(unary_model(OP, s, "INT16", "INT16", (0.1, 0), (0.1, 0)), "unsupported", wheel=False)
