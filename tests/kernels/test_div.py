"""DIV against the TFLM wheel: float32 (bit for bit, with activations), int32 (truncation), int8 over every code
pair with random quantization (including multipliers above 1 and zero dividends, where the wheel's shifts leave
0..31), 5-D broadcasting; zero divisors refused at invoke."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, InvokeError
from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    broadcast_pair,
    scales,
    shapes,
    single_op,
    with_specials,
    zero_points,
)

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@given(same=st.booleans(), data=st.data(), act=st.sampled_from(ACTS), seed=st.integers(0, 2**32 - 1))
def test_float_div_matches_tflm_bitwise(same, data, act, seed):
    a_shape, b_shape, out_shape = (data.draw(shapes(0, 5, 4)),) * 3 if same else data.draw(broadcast_pair(5, 3))
    rng = np.random.default_rng(seed)
    a = with_specials(random_tensor(rng, a_shape, "FLOAT32", -1e30, 1e30))
    b = with_specials(random_tensor(rng, b_shape, "FLOAT32", -3, 3))
    model = single_op("DIV", [T(a_shape, "FLOAT32"), T(b_shape, "FLOAT32")], T(out_shape, "FLOAT32"),
                      fused_activation_function=act)
    assert_bitwise_matches_tflm(model, [a, b])


@given(data=st.data(), act=st.sampled_from(ACTS), seed=st.integers(0, 2**32 - 1))
def test_int32_div_matches_tflm(data, act, seed):
    a_shape, b_shape, out_shape = data.draw(broadcast_pair(4, 3))
    rng = np.random.default_rng(seed)
    a = np.asarray(rng.integers(-(1 << 31), 1 << 31, size=a_shape), np.int32)
    b = np.asarray(rng.integers(1, 1000, size=b_shape) * rng.choice([-1, 1], size=b_shape), np.int32)
    model = single_op("DIV", [T(a_shape, "INT32"), T(b_shape, "INT32")], T(out_shape, "INT32"),
                      fused_activation_function=act)
    assert_matches_tflm(model, [a, b])


@given(data=st.data(), act=st.sampled_from(ACTS), seed=st.integers(0, 2**32 - 1))
def test_int32_div_by_a_constant_matches_tflm(data, act, seed):
    """The bound form (a constant divisor without 0 or -1: float64 quotients truncated): divisors up to the int32
    extremes, dividends with INT32_MIN and INT32_MAX among them."""
    a_shape, b_shape, out_shape = data.draw(broadcast_pair(4, 3))
    rng = np.random.default_rng(seed)
    a = np.asarray(rng.integers(-(1 << 31), 1 << 31, size=a_shape), np.int32)
    a.reshape(-1)[:2] = [-(1 << 31), (1 << 31) - 1][:a.size]
    b = np.asarray(rng.integers(-(1 << 31), 1 << 31, size=b_shape), np.int32)
    b.reshape(-1)[0] = rng.choice([1, -2, 3, (1 << 31) - 1, -(1 << 31), 7])
    b[np.isin(b, (0, -1))] = 5
    model = single_op("DIV", [T(a_shape, "INT32"), T(b_shape, "INT32", data=b)], T(out_shape, "INT32"),
                      fused_activation_function=act)
    assert_matches_tflm(model, [a])


@given(s=st.lists(scales(-4, 1), min_size=3, max_size=3), zp=st.lists(zero_points("INT8"), min_size=3, max_size=3),
       act=st.sampled_from(ACTS))
def test_int8_div_matches_tflm_on_every_code_pair(s, zp, act):
    codes = np.arange(-128, 128, dtype=np.int8)
    a, b = np.repeat(codes, 256), np.tile(codes, 256)
    keep = b != zp[1]                       # a zero divisor is refused (a DCHECK in TFLM)
    a, b = a[keep], b[keep]
    model = single_op("DIV", [T(a.shape, "INT8", s[0], zp[0]), T(b.shape, "INT8", s[1], zp[1])],
                      T(a.shape, "INT8", s[2], zp[2]), fused_activation_function=act)
    assert_matches_tflm(model, [a, b])


def test_int8_div_broadcasts():
    rng = np.random.default_rng(1)
    a = random_tensor(rng, (2, 1, 3, 4), "INT8")
    b = random_tensor(rng, (5, 1, 4), "INT8", 1, 127)
    model = single_op("DIV", [T(a.shape, "INT8", 0.05, -3), T(b.shape, "INT8", 0.1, 0)],
                      T((2, 5, 3, 4), "INT8", 0.02, 4), fused_activation_function="NONE")
    assert_matches_tflm(model, [a, b])


@pytest.mark.parametrize("type_name,b", [("INT32", np.array([1, 0, 2, 3], np.int32)),
                                         ("INT8", np.array([1, 5, 2, 3], np.int8))])
def test_zero_divisors_fail_at_invoke(type_name, b):
    q = (0.1, 5) if type_name == "INT8" else (None, None)
    model = single_op("DIV", [T((4,), type_name, *q), T((4,), type_name, *q)], T((4,), type_name, *q),
                      fused_activation_function="NONE")
    it = Interpreter(model)
    it.set_input(np.ones(4, b.dtype), 0)
    it.set_input(b, 1)
    with pytest.raises(InvokeError, match="zero"):
        it.invoke()


def test_refusals():
    assert_refused(single_op("DIV", [T((4,), "INT16", 0.1, 0)] * 2, T((4,), "INT16", 0.1, 0),
                             fused_activation_function="NONE"), [np.ones(4, np.int16)] * 2, tflm="invoke")
    assert_refused(single_op("DIV", [T((4,), "INT8", 0.1, 0), T((4,), "FLOAT32")], T((4,), "INT8", 0.1, 0),
                             fused_activation_function="NONE"), [])
