"""RESIZE_BILINEAR against the TFLM wheel: float32 (float maths) and int8 (10-bit fixed point), all corner modes."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_bitwise_matches_tflm, assert_refused, single_op, with_specials


@given(dtype=st.sampled_from(["FLOAT32", "INT8"]), n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 9),
       c=st.integers(1, 3), oh=st.integers(1, 24), ow=st.integers(1, 24),
       mode=st.sampled_from(["none", "align", "half"]), seed=st.integers(0, 2**32 - 1))
def test_resize_bilinear_matches_tflm(dtype, n, h, w, c, oh, ow, mode, seed):
    rng = np.random.default_rng(seed)
    q = (0.1, -7) if dtype != "FLOAT32" else (None, None)
    model = single_op("RESIZE_BILINEAR", [T((n, h, w, c), dtype, *q), T((2,), "INT32", data=[oh, ow])],
                      T((n, oh, ow, c), dtype, *q), align_corners=mode == "align", half_pixel_centers=mode == "half")
    x = random_tensor(rng, (n, h, w, c), dtype, *((-100, 100) if dtype == "FLOAT32" else ()))
    if dtype == "FLOAT32":      # NaN, +-inf, -0 too, bit for bit
        assert_bitwise_matches_tflm(model, [with_specials(x)])
    else:
        assert_matches_tflm(model, [x])


def test_invalid_models_refused():
    x = np.zeros((1, 2, 2, 1), np.int8)

    def model(size=None, dtype="INT8", **options):
        size = size or T((2,), "INT32", data=[3, 3])
        return single_op("RESIZE_BILINEAR", [T((1, 2, 2, 1), dtype), size], T((1, 3, 3, 1), dtype), **options)

    assert_refused(model(align_corners=True, half_pixel_centers=True), [x], tflm="prepare")
    assert_refused(model(size=T((2,), "INT32")), [x, np.array([3, 3], np.int32)], tflm="prepare")
    assert_refused(model(dtype="INT16"), [x.astype(np.int16)], tflm="invoke")


@given(h=st.integers(1, 4), w=st.integers(1, 4), c=st.integers(1, 2), oh=st.integers(1, 11), ow=st.integers(1, 11),
       mode=st.sampled_from(["none", "align", "half"]), seed=st.integers(0, 2**32 - 1))
def test_float_nan_payloads_match_the_wheel(h, w, c, oh, ow, mode, seed):
    """NaNs of many payloads and signs, and infinities (inf * 0 is the default NaN): where two NaN terms meet, x86
    keeps the left one's, bit for bit."""
    rng = np.random.default_rng(seed)
    model = single_op("RESIZE_BILINEAR", [T((1, h, w, c), "FLOAT32"), T((2,), "INT32", data=[oh, ow])],
                      T((1, oh, ow, c), "FLOAT32"), align_corners=mode == "align", half_pixel_centers=mode == "half")
    x = rng.normal(size=(1, h, w, c)).astype(np.float32)
    bits = x.view(np.uint32).reshape(-1)
    pick = rng.random(bits.size)
    nan = (0x7FC00000 | rng.integers(1, 1 << 20, bits.size) | (rng.integers(0, 2, bits.size) << 31)).astype(np.uint32)
    inf = (0x7F800000 | (rng.integers(0, 2, bits.size) << 31)).astype(np.uint32)
    bits[...] = np.where(pick < 0.3, nan, np.where(pick < 0.4, inf, bits))
    assert_bitwise_matches_tflm(model, [x])
