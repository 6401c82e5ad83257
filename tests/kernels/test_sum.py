"""SUM against the TFLM wheel: int8 / int16 (int32 wrapping sum, MBQM with multipliers above and below one) and
float32 (sequential float32 fold), random shapes up to 5-D, axes with negative values and duplicates, keep_dims,
extreme zero points; the planned scratch buffers (arena head); prepare refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from microinterp import Interpreter
from microinterp.testing.tflm import tflm_arena_head

from .shape_op_models import T, assert_refused, check, const, model, quant, reduce_cases


@given(reduce_cases("SUM", ["INT8", "INT16", "FLOAT32"]))
def test_sum_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


@pytest.mark.parametrize("type_name", ["INT8", "INT16"])
def test_output_scale_smaller_than_input(type_name):
    """s_in / s_out > 1: the multiplier's shift is positive (left shift with int32 wrap inside MBQM)."""
    data = model("SUM", [T((4, 6, 5), type_name, **quant(type_name, 0.5, -128)), const([1])],
                 T((4, 5), type_name, **quant(type_name, 0.01, 127)), keep_dims=False)
    check(data, np.random.default_rng(5))


def test_float_sum_is_sequential():
    """Many float32 terms of mixed magnitude: a pairwise sum would round differently from TFLM's fold."""
    data = model("SUM", [T((3, 1000), "FLOAT32"), const([1])], T((3,), "FLOAT32"), keep_dims=False)
    x = np.random.default_rng(6).standard_normal((3, 1000)).astype(np.float32) * np.float32(1000)
    check(data, np.random.default_rng(6), overrides={0: x})


@pytest.mark.parametrize("type_name", ["INT8", "FLOAT32"])
def test_scratch_buffers_match_wheel_arena_head(type_name):
    data = model("SUM", [T((3, 9, 5, 7, 2), type_name, **quant(type_name, 0.1, 1)), const([0, -1, 2])],
                 T((9, 7), type_name, **quant(type_name, 0.2, -3)), keep_dims=False)
    assert Interpreter(data).head_bytes == tflm_arena_head(data)


def test_refusals():
    assert_refused(model("SUM", [T((2, 3), "INT32"), const([1])], T((2,), "INT32")), tflm="invoke",
                   match="INT32")
    assert_refused(model("SUM", [T((2, 3), "INT8", **quant("INT8")), const([1], "INT64")],
                         T((2,), "INT8", **quant("INT8"))), match="INT32")
