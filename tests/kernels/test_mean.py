"""MEAN against the TFLM wheel: int8 / int16 (the folded 1/N multiplier) and float32 (sequential float32 sum),
random shapes up to 5-D, axes with negative values and duplicates, keep_dims, extreme zero points, equal and
different scales; the three planned scratch buffers (arena head); runtime axes; prepare refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.kernels.mean import fold_mean_multiplier
from microinterp.testing.tflm import tflm_arena_head

from .shape_op_models import T, assert_refused, check, const, model, quant, reduce_cases
from .single_op_models import T as SingleT
from .single_op_models import assert_bitwise_matches_tflm, single_op, with_specials


@given(reduce_cases("MEAN", ["INT8", "INT16", "FLOAT32"]))
def test_mean_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


@pytest.mark.parametrize("type_name", ["INT8", "INT16", "FLOAT32"])
def test_global_average_pool_shape(type_name):
    """The converter's GlobalAveragePooling: 4-D, axes (1, 2), keep_dims (TFLM's special float path)."""
    x = T((1, 7, 7, 40), type_name, **quant(type_name, 0.02, -128))
    y = T((1, 1, 1, 40), type_name, **quant(type_name, 0.01, 127))
    check(model("MEAN", [x, const([1, 2])], y, keep_dims=True), np.random.default_rng(1))
    check(model("MEAN", [x, const([2, 1])], y, keep_dims=True), np.random.default_rng(2))


def test_equal_quantization_still_requantizes():
    """Same scale and zero point in and out: TFLM still takes the multiplier path (not a truncating division)."""
    q = quant("INT8", 0.5, 3)
    check(model("MEAN", [T((64, 9, 7), "INT8", **q), const([1, 2])], T((64,), "INT8", **q)), np.random.default_rng(3))


def test_fold_mean_multiplier():
    assert fold_mean_multiplier(1 << 30, 0, 1) == (1 << 30, 0)
    assert fold_mean_multiplier(1 << 30, 0, 49) == ((1 << 35) // 49, -5)      # k = floor(log2 49) = 5
    assert fold_mean_multiplier(1 << 30, -30, 1 << 20) == ((1 << 31) // (1 << 20), -31)  # k capped at 31 + s = 1


@pytest.mark.parametrize("type_name,shape,axes,keep", [
    ("INT8", (1, 7, 7, 1280), [1, 2], True),
    ("INT8", (3, 9, 5, 7, 2), [0, -1, 2], False),
    ("INT16", (40, 3), [0, 0], True),
    ("FLOAT32", (2, 3, 4), [1], False),
])
def test_scratch_buffers_match_wheel_arena_head(type_name, shape, axes, keep):
    """[4*outputs (int only), 4*rank, 4*axis entries] are planned buffers: the arena head equals the wheel's."""
    red = {a % len(shape) for a in axes}
    out_shape = tuple((1 if i in red else d) for i, d in enumerate(shape) if keep or i not in red)
    data = model("MEAN", [T(shape, type_name, **quant(type_name, 0.1, 1)), const(axes)],
                 T(out_shape, type_name, **quant(type_name, 0.2, -3)), keep_dims=keep)
    assert Interpreter(data).head_bytes == tflm_arena_head(data)


def test_runtime_axis_tensor():
    """The axis tensor may be a graph input: TFLM reads it at Eval."""
    data = model("MEAN", [T((3, 4, 5), "INT8", **quant("INT8", 0.1, 7)), T((1,), "INT32")],
                 T((3, 5), "INT8", **quant("INT8", 0.03, -9)), keep_dims=False)
    check(data, np.random.default_rng(4), overrides={1: np.array([-2])})
    assert Interpreter(data).head_bytes == tflm_arena_head(data)


def test_refusals():
    x8 = T((2, 3), "INT8", **quant("INT8"))
    assert_refused(model("MEAN", [T((2, 3), "UINT8", scale=0.1, zp=0), const([1])],
                         T((2,), "UINT8", scale=0.1, zp=0)), tflm="invoke", match="UINT8")
    assert_refused(model("MEAN", [x8, const([1], "INT64")], T((2,), "INT8", **quant("INT8"))), match="INT32")
    # TFLM's int8 MEAN only logs the bad axis and leaves zeros (EvalIntegerMean ignores the failure): we refuse.
    assert_refused(model("MEAN", [x8, const([2])], T((2,), "INT8", **quant("INT8"))), tflm=None,
                   match="out of range")
    assert_refused(model("MEAN", [x8, const([1])], T((3,), "INT8", **quant("INT8"))), tflm=None,
                   match="elements")


def test_int32_sum_wraps_like_tflm():
    """70000 int16 extremes overflow TFLM's int32 accumulator: the wrapped sum is what gets requantized."""
    data = model("MEAN", [T((2, 70000), "INT16", scale=0.001, zp=0), const([1])], T((2,), "INT16", scale=0.002, zp=0),
                 keep_dims=False)
    x = np.full((2, 70000), 32767, np.int16)
    x[1] = -32768
    out = check(data, np.random.default_rng(15), overrides={0: x})[0]
    assert out.tolist() == [-14295, 14294]      # not [16384, -16384]: the sums wrapped around 2^32


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=4, max_size=4), axes=st.sets(st.integers(0, 3), min_size=1,
       max_size=3), keep=st.booleans(), specials=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_float_with_special_values_matches_the_wheel_bit_for_bit(shape, axes, keep, specials, seed):
    """Float MEAN (the bound call where it applies) with NaN, +-inf and -0: sums in TFLM's order from +0.f, NaN
    operands as x86 picks them, then / N -- bit for bit."""
    shape, axes = tuple(shape), sorted(axes)
    out = tuple(1 if d in axes else n for d, n in enumerate(shape)) if keep else \
        tuple(n for d, n in enumerate(shape) if d not in axes)
    x = (np.random.default_rng(seed).normal(size=shape) * 100).astype(np.float32)
    m = single_op("MEAN", [SingleT(shape, "FLOAT32"), SingleT((len(axes),), "INT32", data=np.array(axes, np.int32))],
                  SingleT(out, "FLOAT32"), keep_dims=keep)
    assert_bitwise_matches_tflm(m, [with_specials(x) if specials else x])
