"""REDUCE_MIN (int8, float32) and REDUCE_ALL (bool) against the TFLM wheel: random shapes up to 5-D, axes with
negative values and duplicates, keep_dims, the planned scratch buffers; float specials for REDUCE_MIN."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from microinterp import Interpreter
from microinterp.testing.tflm import compare_with_tflm, tflm_arena_head

from .shape_op_models import T, assert_refused, check, const, model, quant, reduce_cases


@given(reduce_cases("REDUCE_MIN", ["INT8", "FLOAT32"]))
def test_reduce_min_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


@given(reduce_cases("REDUCE_ALL", ["BOOL"]))
def test_reduce_all_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_reduce_all_of_mostly_true_rows():
    x = np.ones((4, 5), bool)
    x[1, 3] = x[3, 0] = False
    data = model("REDUCE_ALL", [T(x.shape, "BOOL"), const([1])], T((4,), "BOOL"), keep_dims=False)
    assert check(data, np.random.default_rng(0), {0: x})[0].tolist() == [True, False, True, False]


def test_reduce_min_float_special_values_match_tflm():
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, np.inf, np.inf], [0.0, -0.0, 1.0], [-0.0, 0.0, 3.0],
                  [np.nan, np.nan, np.nan], [5.0, -np.inf, np.nan]], dtype=np.float32)
    data = model("REDUCE_MIN", [T(x.shape, "FLOAT32"), const([1])], T((6,), "FLOAT32"), keep_dims=False)
    result = compare_with_tflm(data, [x])
    assert result.ok, str(result)
    assert np.array_equal(result.outputs[0].view(np.uint32), result.tflm_outputs[0].view(np.uint32))


@pytest.mark.parametrize("op,type_name", [("REDUCE_MIN", "INT8"), ("REDUCE_MIN", "FLOAT32"), ("REDUCE_ALL", "BOOL")])
def test_scratch_buffers_match_wheel_arena_head(op, type_name):
    data = model(op, [T((3, 9, 5, 7, 2), type_name, **quant(type_name, 0.1, 1)), const([0, -1, 2])],
                 T((1, 9, 1, 7, 1), type_name, **quant(type_name, 0.1, 1)), keep_dims=True)
    assert Interpreter(data).head_bytes == tflm_arena_head(data)


def test_refusals():
    x = T((2, 3), "INT8", **quant("INT8", 0.5, 3))
    assert_refused(model("REDUCE_MIN", [x, const([1])], T((2,), "INT8", **quant("INT8", 0.25, 3))),
                   tflm="invoke", match="scale")
    assert_refused(model("REDUCE_ALL", [T((2, 3), "FLOAT32"), const([1])], T((2,), "FLOAT32")), match="FLOAT32")
