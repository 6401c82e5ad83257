"""Optimized MEAN (one int32 reduction + the prepared requantization) against the wheel and the reference kernel:
every axis combination of a 4-D tensor, all axes, unsorted / negative / duplicate axes, extreme zero points, output
scales that make the int32 wrap-arounds possible, int16, and the float32 / runtime-axes fallbacks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from microinterp import Interpreter
from microinterp.kernels.optimized.mean import FastMeanData
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import compare_optimized

from ..shape_op_models import T, check, const, model, quant

SHAPE = (2, 5, 3, 4)


def _mean(shape, axes, keep, type_name="INT8", q_in=(0.05, 0), q_out=(0.03, 0)) -> bytes:
    red = {a % len(shape) for a in axes}
    out = tuple((1 if i in red else d) for i, d in enumerate(shape) if keep or i not in red)
    return model("MEAN", [T(shape, type_name, **quant(type_name, *q_in)), const(axes)],
                 T(out, type_name, **quant(type_name, *q_out)), keep_dims=keep)


@pytest.mark.parametrize("axes", [list(c) for r in range(1, 5) for c in itertools.combinations(range(4), r)])
@pytest.mark.parametrize("keep", [True, False])
def test_every_axis_set(axes, keep):
    check(_mean(SHAPE, axes, keep, q_in=(0.05, -128), q_out=(0.02, 127)), np.random.default_rng(len(axes)))


@pytest.mark.parametrize("axes", [[2, 1], [-1, -3], [1, 1, 2, -2], [0, 3, 0]])
def test_axis_order_duplicates_negatives(axes):
    check(_mean(SHAPE, axes, True, q_in=(0.1, 127), q_out=(0.1, -128)), np.random.default_rng(7))


@pytest.mark.parametrize("q_in,q_out", [
    ((0.5, 3), (0.5, 3)),                   # equal quantization still requantizes
    ((1.0, -128), (1e-4, 127)),             # multiplier >> 1: saturates
    ((2.0, 100), (1e-7, -100)),             # multiplier ~ 2^24: the left shift wraps in int32
    ((1e-4, 0), (1.0, 0)),                  # tiny multiplier
])
def test_scales(q_in, q_out):
    m = _mean((1, 7, 7, 16), [1, 2], True, q_in=q_in, q_out=q_out)
    check(m, np.random.default_rng(3))


def test_wrap_guards_follow_the_bounds():
    it = Interpreter(_mean((1, 7, 7, 16), [1, 2], True, q_in=(0.05, 1), q_out=(0.05, 1)))
    data = it.runtime.op_data[0]
    assert isinstance(data, FastMeanData) and data.axes == (1, 2) and not data.wrap_in and not data.wrap_out
    data = Interpreter(_mean((1, 7, 7, 16), [1, 2], True, q_in=(2.0, 100), q_out=(1e-7, -100))).runtime.op_data[0]
    assert data.wrap_out


@pytest.mark.parametrize("shape,axes", [((1, 7, 7, 1280), [1, 2]), ((3, 40, 33), [1]), ((4, 5, 6), [0, 1, 2])])
def test_int16(shape, axes):
    check(_mean(shape, axes, False, "INT16", (0.002, 0), (0.001, 0)), np.random.default_rng(5))


def test_mobilenet_head_large():
    m = _mean((1, 7, 7, 1280), [1, 2], True, q_in=(0.0235, -128), q_out=(0.0203, -128))
    rng = np.random.default_rng(11)
    for _ in range(3):
        assert compare_optimized(m, [random_tensor(rng, (1, 7, 7, 1280), "INT8")]).ok


def test_fallbacks():
    """float32 and a runtime axis tensor run the reference invoke."""
    assert Interpreter(_mean(SHAPE, [1, 2], True, "FLOAT32")).runtime.op_data[0].axes is None
    m = model("MEAN", [T(SHAPE, "INT8", **quant("INT8", 0.1, 2)), T((2,), "INT32")],
              T((2, 1, 1, 4), "INT8", **quant("INT8", 0.1, 2)), keep_dims=True)
    assert Interpreter(m).runtime.op_data[0].axes is None
    check(m, np.random.default_rng(2), overrides={1: np.array([1, 2], np.int32)})


@pytest.mark.parametrize("type_name,shape,axes,bound", [
    ("INT8", (1, 7, 7, 16), [1, 2], True),          # 49 x 256 sums: a table
    ("INT16", (3, 2, 5), [1], True),                # 2 x 65536 sums: a table
    ("INT16", (1, 7, 7, 8), [1, 2], False),         # 49 x 65536 sums: too many, the invoke
])
def test_small_sum_ranges_bind_a_table_of_outputs(type_name, shape, axes, bound):
    """Where the range of sums is small the bound call looks every output up by its sum (the table built by the
    invoke's own requantization); both forms match the wheel and the reference."""
    m = _mean(shape, axes, False, type_name, q_in=(0.05, -7 if type_name == "INT8" else 0), q_out=(0.02, 5 if
              type_name == "INT8" else 0))
    call = Interpreter(m).runtime.graph.calls[0][0]
    assert (getattr(call, "__name__", "") == "call") is bound
    check(m, np.random.default_rng(11))
