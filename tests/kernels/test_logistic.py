"""LOGISTIC against the TFLM wheel: int8 (gemmlowp logistic on Q4.27, every input value in every case), int16
(sigmoid table; power-of-two and general input scales), float32 (glibc expf, cut-offs at -9 and 16.62)."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from .activation_cases import assert_refused, float32_scales, run_case, shapes, unary_model, zero_points
from .single_op_models import T, assert_bitwise_matches_tflm, single_op
from .test_elementwise import float_values

OP = "LOGISTIC"


@given(shape=shapes(max_last=64), s_in=float32_scales(-3, 0.5), zp=zero_points(), seed=st.integers(0, 2**32 - 1))
@example(shape=(256,), s_in=0.1, zp=-128, seed=0)
@example(shape=(256,), s_in=3.0, zp=127, seed=1)  # radius below one step: only saturated outputs
def test_int8(shape, s_in, zp, seed):
    model = unary_model(OP, shape, "INT8", "INT8", (s_in, zp), (1.0 / 256, -128))
    run_case(model, shape, "INT8", seed, include_all_values=True)


@given(shape=shapes(max_last=64), s_in=st.one_of(st.sampled_from([2.0**-12, 2.0**-11, 2.0**-13, 2.0**-10]),
                                                 float32_scales(-5.5, -2.5)),
       seed=st.integers(0, 2**32 - 1), narrow=st.booleans())
@example(shape=(4, 64), s_in=2.0**-12, seed=0, narrow=False)  # power-of-two case: multiplier 3, shift 0
def test_int16(shape, s_in, seed, narrow):
    model = unary_model(OP, shape, "INT16", "INT16", (s_in, 0), (2.0**-15, 0))
    lo, hi = (-3000, 3000) if narrow else (None, None)
    run_case(model, shape, "INT16", seed, low=lo, high=hi)


@given(shape=shapes(max_last=64), seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([1.0, 10.0, 30.0]))
def test_float32(shape, seed, spread):
    model = unary_model(OP, shape, "FLOAT32")
    run_case(model, shape, "FLOAT32", seed, low=-spread, high=spread)


def test_float32_cutoffs():
    x = np.array([-9.0, np.nextafter(np.float32(-9), np.float32(-10)), 16.619047164916992, 16.62, -80.0, 90.0,
                  0.0, -0.0], dtype=np.float32)
    from microinterp.testing.single_op import assert_matches_tflm
    assert_matches_tflm(unary_model(OP, x.shape, "FLOAT32"), [x])


def test_refusals():
    s = (2, 5)
    assert_refused(unary_model(OP, s, "INT8", "INT8", (0.1, 0), (1.0 / 256, 0)), "-128")
    assert_refused(unary_model(OP, s, "INT8", "INT16", (0.1, 0), (2.0**-15, 0)), "differs")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (2.0**-12, 1), (2.0**-15, 0)), "zero points")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (2.0**-12, 0), (2.0**-15, 2)), "zero points")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (2.0**-12, 0), (2.0**-14, 0)), "2\\^-15")
    assert_refused(unary_model(OP, s, "INT16", "INT16", (2.0**-12, 0), (1.0 / 30000, 0)), "2\\^-15")


@given(shape=shapes(1, 4, 6), seed=st.integers(0, 2**32 - 1))
def test_float_matches_tflm_bitwise(shape, seed):
    """Float LOGISTIC (the bound call) on random bit patterns, NaN payloads, infinities and denormals included."""
    x = float_values(np.random.default_rng(seed), shape)
    assert_bitwise_matches_tflm(single_op(OP, [T(shape, "FLOAT32")], T(shape, "FLOAT32")), [x])
