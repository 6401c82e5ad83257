"""GATHER against the TFLM wheel: float32 / int8, 1-D to 4-D inputs, 0-D to 3-D positions (constant or runtime),
every axis (negative too), batch_dims (negative too), extreme zero points; refusals (types, axis, batch_dims,
positions out of range at invoke)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import InputError

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points


@st.composite
def gather_cases(draw):
    type_name = draw(st.sampled_from(["INT8", "FLOAT32"]))
    shape = draw(shapes(1, 4, 4))
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    batch_dims = draw(st.integers(0, axis))
    pos_shape = tuple(shape[:batch_dims]) + draw(shapes(0, 2, 3))
    positions = np.random.default_rng(draw(seeds)).integers(0, shape[axis], size=pos_shape).astype(np.int32)
    out = shape[:axis] + pos_shape[batch_dims:] + shape[axis + 1:]
    axis_opt = axis - rank if draw(st.booleans()) else axis
    batch_opt = batch_dims - len(pos_shape) if draw(st.booleans()) and batch_dims < len(pos_shape) else batch_dims
    runtime = draw(st.booleans())
    q = quant(type_name, 0.05, draw(zero_points))
    pos_t = T(pos_shape, "INT32") if runtime else const(positions)
    data = model("GATHER", [T(shape, type_name, **q), pos_t], T(out, type_name, **q), axis=axis_opt,
                 batch_dims=batch_opt)
    return data, draw(seeds), ({1: positions} if runtime else None)


@given(gather_cases())
def test_gather_matches_tflm(case):
    data, seed, overrides = case
    check(data, np.random.default_rng(seed), overrides=overrides)


@pytest.mark.parametrize("positions,outside", [([1, 4], True), ([-1, 0], True), ([3, 0], False),
                                               ([-(1 << 31), 2], True)])
def test_position_out_of_range_fails_invoke(positions, outside):
    """Positions given at invoke, checked as one unsigned compare: below 0 or at the axis' size fail the invoke,
    the last position does not."""
    q = quant("INT8")
    data = model("GATHER", [T((4, 3), "INT8", **q), T((2,), "INT32")], T((2, 3), "INT8", **q), axis=0)
    interp = Interpreter(data)
    x = np.arange(12, dtype=np.int8).reshape(4, 3)
    interp.set_input(x, 0)
    interp.set_input(np.array(positions, np.int32), 1)
    if outside:
        with pytest.raises(InputError, match="outside"):
            interp.invoke()
    else:
        interp.invoke()
        np.testing.assert_array_equal(interp.get_output(), x[positions])


def test_refusals():
    q = quant("INT8")
    x = T((4, 3), "INT8", **q)
    assert_refused(model("GATHER", [T((4, 3), "INT16", **quant("INT16")), const([1])],
                         T((1, 3), "INT16", **quant("INT16")), axis=0), match="INT16")
    assert_refused(model("GATHER", [x, const([1], "INT64")], T((1, 3), "INT8", **q), axis=0), match="INT64")
    assert_refused(model("GATHER", [x, const([1])], T((4, 1), "INT8", **q), axis=2), match="axis")
    assert_refused(model("GATHER", [x, const([[1]] * 4)], T((4, 1), "INT8", **q), axis=0, batch_dims=1),
                   match="batch_dims")
    assert_refused(model("GATHER", [x, const([1])], T((3, 3), "INT8", **q), axis=0), tflm=None, match="output shape")
