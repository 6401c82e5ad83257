"""SLICE against the TFLM wheel: float32 / int8 / int16 / int32, 1-D to 5-D, INT32 or INT64 begin/size, size -1,
constant or runtime begin/size, extreme zero points; refusals (boxes out of bounds, count mismatch, 6-D)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import InputError

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points


@st.composite
def slice_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "INT16", "INT32", "FLOAT32"]))
    shape = draw(shapes(1, 5, 5))
    begin = [draw(st.integers(0, d - 1)) for d in shape]
    size = [draw(st.sampled_from([-1, draw(st.integers(1, d - b))])) for d, b in zip(shape, begin)]
    out = tuple(d - b if s == -1 else s for d, b, s in zip(shape, begin, size))
    index_type = draw(st.sampled_from(["INT32", "INT64"]))
    q = quant(type_name, 0.05, draw(zero_points))
    data = model("SLICE", [T(shape, type_name, **q), const(begin, index_type), const(size, index_type)],
                 T(out, type_name, **q))
    return data, draw(seeds)


@given(slice_cases())
def test_slice_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_runtime_begin_and_size():
    """begin/size are read at Eval: they may be graph inputs (only the output's element count is fixed)."""
    q = quant("INT8", 0.1, -128)
    data = model("SLICE", [T((4, 5, 6), "INT8", **q), T((3,), "INT32"), T((3,), "INT32")], T((2, 3, 4), "INT8", **q))
    check(data, np.random.default_rng(13), overrides={1: [1, 2, 0], 2: [2, -1, 4]})
    interp = Interpreter(data)
    interp.set_input(np.zeros((4, 5, 6), np.int8), 0)
    interp.set_input(np.array([3, 0, 0], np.int32), 1)
    interp.set_input(np.array([2, 3, 4], np.int32), 2)
    with pytest.raises(InputError, match="does not fit"):
        interp.invoke()


def test_refusals():
    q = quant("INT8")
    x = T((4, 6), "INT8", **q)
    # The pinned wheel reads out of bounds for these instead of refusing; we refuse at prepare.
    assert_refused(model("SLICE", [x, const([3, 0]), const([2, 6])], T((2, 6), "INT8", **q)), tflm=None,
                   match="does not fit")
    assert_refused(model("SLICE", [x, const([0, 7]), const([1, -1])], T((1, 1), "INT8", **q)), tflm=None,
                   match="begin")
    assert_refused(model("SLICE", [x, const([0, 0]), const([2, 2])], T((2, 3), "INT8", **q)), tflm=None,
                   match="elements")
    assert_refused(model("SLICE", [x, const([0, 0], "INT64"), const([2, 2])], T((2, 2), "INT8", **q)), tflm=None,
                   match="INT32 or INT64")
    assert_refused(model("SLICE", [x, const([0, 0], "INT16"), const([2, 2], "INT16")], T((2, 2), "INT8", **q)),
                   tflm="invoke", match="INT32 or INT64")
    assert_refused(model("SLICE", [x, const([0]), const([2])], T((2, 6), "INT8", **q)), tflm=None, match="entries")
    # 6-D: the pinned wheel aborts the whole process on this model, so it is not run there.
    assert_refused(model("SLICE", [T((1, 1, 1, 1, 2, 3), "INT8", **q), const([0] * 6), const([-1] * 6)],
                         T((1, 1, 1, 1, 2, 3), "INT8", **q)), tflm=None, match="at most 5")


def test_two_dimensional_begin_and_size():
    """The wheel reads begin/size flat: a [1, rank] tensor works like a vector."""
    q = quant("INT8", 0.1, 127)
    data = model("SLICE", [T((4, 6), "INT8", **q), const([[1, 2]]), const([[2, -1]])], T((2, 4), "INT8", **q))
    check(data, np.random.default_rng(14))
