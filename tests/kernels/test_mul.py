"""MUL against the TFLM wheel: int8 / int16 (one multiplier s1*s2/s_out, possibly > 1), float32, int32;
broadcasting up to rank 6, fused activations, zero points at the extremes, constant second operand."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given

from microinterp.testing.single_op import assert_matches_tflm

from .binary_cases import assert_refused, build, case, cases, check_case, check_common_refusals

OP = "MUL"


@given(cases(OP))
# multiplier 250 > 1: left shift inside MBQM (int32 wrap)
@example(case("INT8", (2, 4), (4,), (2, 4), q=((0.5, 3), (0.5, -7), (0.001, 0)), seed=5))
# int32 products wrap, then CalculateActivationRange<int32_t>
@example(case("INT32", (5,), (5,), (5,), act="RELU", seed=6))
def test_matches_tflm(case):
    check_case(OP, case)


def test_int16_large_multiplier_wraps_like_c():
    """int16 products up to 2^30 shifted left by a multiplier > 1 overflow int32 and wrap, as in TFLM."""
    rng = np.random.default_rng(11)
    a = rng.integers(-32768, 32768, (64,)).astype(np.int16)
    model = build(OP, "INT16", (64,), (64,), (64,), q=((0.01, 0), (0.02, 0), (1e-5, 0)))
    assert_matches_tflm(model, [a, a[::-1].copy()])


def test_refusals():
    check_common_refusals(OP)
    z16 = np.zeros(4, np.int16)
    # int16 MUL needs zero points 0 (the wheel refuses too).
    nonzero_zp = build(OP, "INT16", (4,), (4,), (4,), q=((0.1, 1), (0.1, 0), (0.1, 0)))
    assert_refused(nonzero_zp, "zero points", [z16, z16])
    # input types must agree (TF_LITE_ENSURE_TYPES_EQ; the wheel refuses too).
    assert_refused(build(OP, "INT8", (4,), (4,), (4,), q=((0.1, 0),) * 3, types=("INT8", "INT16", "INT8")),
                   "input types differ", [np.zeros(4, np.int8), z16])
