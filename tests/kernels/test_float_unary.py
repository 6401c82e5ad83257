"""FLOOR, CEIL, ROUND, NEG, EXP (float32 only in TFLM) and ZEROS_LIKE against the TFLM wheel, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm

from .single_op_models import T, assert_bitwise_matches_tflm, assert_refused, shapes, single_op
from .test_elementwise import float_values

OPS = ["FLOOR", "CEIL", "ROUND", "NEG", "EXP"]


@given(op=st.sampled_from(OPS), shape=shapes(0, 4, 6), seed=st.integers(0, 2**32 - 1))
def test_float_unary_matches_tflm_bitwise(op, shape, seed):
    x = float_values(np.random.default_rng(seed), shape)
    assert_bitwise_matches_tflm(single_op(op, [T(shape, "FLOAT32")], T(shape, "FLOAT32")), [x])


def test_round_ties_and_signs():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.3, 0.49999997, 8388609.0, -0.0, 1e10, -1e10, 3.5, -3.5],
                 np.float32)
    assert_bitwise_matches_tflm(single_op("ROUND", [T(x.shape, "FLOAT32")], T(x.shape, "FLOAT32")), [x])


@pytest.mark.parametrize("op", OPS)
def test_integer_inputs_are_refused(op):
    # FLOOR and NEG have no Prepare in TFLM: they fail at Eval
    when = "invoke" if op in ("FLOOR", "NEG") else "prepare"
    assert_refused(single_op(op, [T((4,), "INT8", 0.1, 0)], T((4,), "INT8", 0.1, 0)), [np.zeros(4, np.int8)],
                   tflm=when)


@given(type_name=st.sampled_from(["INT64", "INT32", "INT8", "FLOAT32"]), shape=shapes(0, 4, 5))
def test_zeros_like_matches_tflm(type_name, shape):
    q = (0.1, 3) if type_name == "INT8" else (None, None)
    dtype = {"INT64": np.int64, "INT32": np.int32, "INT8": np.int8, "FLOAT32": np.float32}[type_name]
    x = np.full(shape, 7, dtype)
    assert_matches_tflm(single_op("ZEROS_LIKE", [T(shape, type_name, *q)], T(shape, type_name, *q)), [x])


def test_zeros_like_int16_is_refused_like_the_wheel():
    assert_refused(single_op("ZEROS_LIKE", [T((4,), "INT16", 0.1, 0)], T((4,), "INT16", 0.1, 0)),
                   [np.zeros(4, np.int16)], tflm="invoke")
