"""ELU, L2_POOL_2D, L2_NORMALIZATION and LOG_SOFTMAX against the TFLM wheel: float32 bit for bit (NaN, +-0, +-inf),
int8 over random quantization with every code represented."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import (
    T,
    assert_bitwise_matches_tflm,
    assert_refused,
    scales,
    shapes,
    single_op,
    with_specials,
    zero_points,
)


@given(type_name=st.sampled_from(["FLOAT32", "INT8"]), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_elu_matches_tflm(type_name, data, seed):
    if type_name == "INT8":
        x = np.arange(-128, 128, dtype=np.int8)
        q_in = (data.draw(scales(-3, 0)), data.draw(zero_points("INT8")))
        q_out = (data.draw(scales(-3, 0)), data.draw(zero_points("INT8")))
        assert_matches_tflm(single_op("ELU", [T(x.shape, "INT8", *q_in)], T(x.shape, "INT8", *q_out)), [x])
    else:
        shape = data.draw(shapes(1, 4, 6))
        x = with_specials(random_tensor(np.random.default_rng(seed), shape, "FLOAT32", -20, 5))
        assert_bitwise_matches_tflm(single_op("ELU", [T(shape, "FLOAT32")], T(shape, "FLOAT32")), [x])


@given(n=st.integers(1, 2), h=st.integers(1, 7), w=st.integers(1, 7), c=st.integers(1, 3),
       fh=st.integers(1, 3), fw=st.integers(1, 3), sh=st.integers(1, 3), sw=st.integers(1, 3),
       padding=st.sampled_from(["SAME", "VALID"]), act=st.sampled_from(["NONE", "RELU", "RELU6"]),
       seed=st.integers(0, 2**32 - 1))
def test_l2_pool_matches_tflm(n, h, w, c, fh, fw, sh, sw, padding, act, seed):
    if padding == "VALID" and (fh > h or fw > w):
        return
    oh = (h + sh - 1) // sh if padding == "SAME" else (h - fh + sh) // sh
    ow = (w + sw - 1) // sw if padding == "SAME" else (w - fw + sw) // sw
    x = with_specials(random_tensor(np.random.default_rng(seed), (n, h, w, c), "FLOAT32", -10, 10))
    model = single_op("L2_POOL_2D", [T((n, h, w, c), "FLOAT32")], T((n, oh, ow, c), "FLOAT32"), padding=padding,
                      stride_h=sh, stride_w=sw, filter_height=fh, filter_width=fw, fused_activation_function=act)
    assert_bitwise_matches_tflm(model, [x])


@given(type_name=st.sampled_from(["FLOAT32", "INT8"]), shape=shapes(1, 4, 6), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_l2_normalization_matches_tflm(type_name, shape, data, seed):
    rng = np.random.default_rng(seed)
    if type_name == "FLOAT32":
        x = random_tensor(rng, shape, "FLOAT32", -3, 3)
        if data.draw(st.booleans()):
            x = with_specials(x)
        model = single_op("L2_NORMALIZATION", [T(shape, "FLOAT32")], T(shape, "FLOAT32"),
                          fused_activation_function="NONE")
        assert_bitwise_matches_tflm(model, [x])
    else:
        zp = data.draw(zero_points("INT8"))
        x = random_tensor(rng, shape, "INT8")
        if data.draw(st.booleans()):
            x[...] = zp        # an all-zero row: GetInvSqrt of 0
        model = single_op("L2_NORMALIZATION", [T(shape, "INT8", 0.05, zp)], T(shape, "INT8", 1 / 128, 0),
                          fused_activation_function="NONE")
        assert_matches_tflm(model, [x])


@given(type_name=st.sampled_from(["FLOAT32", "INT8"]), shape=shapes(1, 3, 8), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_log_softmax_matches_tflm(type_name, shape, data, seed):
    rng = np.random.default_rng(seed)
    if type_name == "FLOAT32":
        x = random_tensor(rng, shape, "FLOAT32", -30, 30)
        if data.draw(st.booleans()):
            x = with_specials(x)
        assert_bitwise_matches_tflm(single_op("LOG_SOFTMAX", [T(shape, "FLOAT32")], T(shape, "FLOAT32")), [x])
    else:
        s_in = data.draw(scales(-3, 1))
        x = random_tensor(rng, shape, "INT8")
        model = single_op("LOG_SOFTMAX", [T(shape, "INT8", s_in, data.draw(zero_points("INT8")))],
                          T(shape, "INT8", 16 / 256, 127))
        assert_matches_tflm(model, [x])


def test_log_softmax_int8_all_row_patterns():
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=(300, 10)).astype(np.int8)
    x[:50] = x[:50] // 16 * 16          # ties
    x[50:60] = 127
    x[60:70, 1:] = -128
    for s_in in (0.003, 0.05, 0.4, 2.0):
        model = single_op("LOG_SOFTMAX", [T(x.shape, "INT8", s_in, -5)], T(x.shape, "INT8", 16 / 256, 127))
        assert_matches_tflm(model, [x])


def test_refusals():
    assert_refused(single_op("LOG_SOFTMAX", [T((4,), "INT8", 0.1, 0)], T((4,), "INT8", 0.1, 0)), [])
    assert_refused(single_op("L2_NORMALIZATION", [T((4,), "FLOAT32")], T((4,), "FLOAT32"),
                             fused_activation_function="RELU"), [])
    assert_refused(single_op("L2_POOL_2D", [T((1, 4, 4, 1), "INT8", 0.1, 0)], T((1, 2, 2, 1), "INT8", 0.1, 0),
                             padding="VALID", stride_h=2, stride_w=2, filter_height=2, filter_width=2), [])
    assert_refused(single_op("ELU", [T((4,), "INT16", 0.1, 0)], T((4,), "INT16", 0.1, 0)), [np.zeros(4, np.int16)],
                   tflm="invoke")
