"""QUANTIZE against the TFLM wheel: float32 -> int8/int16 and every int -> int pair TFLM's Eval supports."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from microinterp.kernels.quantize import SUPPORTED
from microinterp.testing.single_op import assert_matches_tflm, random_tensor

from .single_op_models import T, assert_refused, scales, shapes, single_op, zero_points

INT_PAIRS = [(i, o) for i, outs in SUPPORTED.items() if i != "FLOAT32" for o in outs]


def _float_input(rng: np.random.Generator, shape, scale: float, special: bool) -> np.ndarray:
    """Values spanning a bit more than the int16 range in units of ``scale``, ties, and optionally inf/nan/huge."""
    x = (rng.uniform(-40000, 40000, size=shape) * scale).astype(np.float32)
    flat = x.reshape(-1)
    k = flat.size
    flat[: k // 3] = (rng.integers(-300, 300, size=k // 3) + 0.5).astype(np.float32) * np.float32(scale)
    if special and k >= 6:
        flat[-6:] = np.array([np.inf, -np.inf, np.nan, 3e9, -3e9, 1e30], np.float32) * np.float32(scale)
    return x


@given(out_type=st.sampled_from(["INT8", "INT16"]), shape=shapes(), scale=scales(-4, 2),
       zp=st.data(), special=st.booleans(), seed=st.integers(0, 2**32 - 1))
@example(out_type="INT8", shape=(12,), scale=1.0, zp=None, special=True, seed=0)
def test_float_to_int_matches_tflm(out_type, shape, scale, zp, special, seed):
    rng = np.random.default_rng(seed)
    z = zp.draw(zero_points(out_type)) if zp is not None else -5
    model = single_op("QUANTIZE", [T(shape, "FLOAT32")], T(shape, out_type, scale, z))
    assert_matches_tflm(model, [_float_input(rng, shape, scale, special)])


@given(pair=st.sampled_from(INT_PAIRS), shape=shapes(), s_in=scales(-3, 1), ratio=st.sampled_from(
    [1.0, 0.5, 2.0, 1 / 3, 3.7, 1e-3, 250.0, None]), data=st.data(), seed=st.integers(0, 2**32 - 1))
@example(pair=("INT8", "UINT8"), shape=(3, 5), s_in=0.05, ratio=1.0, data=None, seed=1)
@example(pair=("UINT8", "INT8"), shape=(7,), s_in=0.25, ratio=1.0, data=None, seed=2)
def test_requantize_matches_tflm(pair, shape, s_in, ratio, data, seed):
    in_type, out_type = pair
    rng = np.random.default_rng(seed)
    if data is None:  # the XOR 0x80 fast path: same scale, zero points 128 apart
        zp_in, zp_out = (0, 128) if in_type == "INT8" else (128, 0)
    else:
        zp_in, zp_out = data.draw(zero_points(in_type)), data.draw(zero_points(out_type))
        if ratio is None:
            ratio = data.draw(st.floats(1e-4, 1e4))
    s_out = float(np.float32(s_in / ratio))
    model = single_op("QUANTIZE", [T(shape, in_type, s_in, zp_in)], T(shape, out_type, s_out, zp_out))
    assert_matches_tflm(model, [random_tensor(rng, shape, in_type)])


@pytest.mark.parametrize("in_type,out_type", [("FLOAT32", "UINT8"), ("FLOAT32", "INT32"), ("UINT8", "INT16"),
                                              ("INT16", "UINT8"), ("INT32", "INT32"), ("UINT8", "UINT8")])
def test_unsupported_pairs_refused(in_type, out_type):
    x = np.zeros((4,), {"FLOAT32": np.float32, "UINT8": np.uint8, "INT16": np.int16, "INT32": np.int32}[in_type])
    scale = None if in_type == "FLOAT32" else 0.5
    model = single_op("QUANTIZE", [T((4,), in_type, scale, 0 if scale else None)], T((4,), out_type, 0.25, 0))
    assert_refused(model, [x], tflm="invoke")


@pytest.mark.parametrize("in_type,out_type", [("INT64", "INT8"), ("INT8", "INT64")])
def test_unsupported_types_refused_at_prepare(in_type, out_type):
    model = single_op("QUANTIZE", [T((4,), in_type, 0.5, 0)], T((4,), out_type, 0.25, 0))
    assert_refused(model, [], tflm="prepare")


def test_output_must_be_per_tensor():
    model = single_op("QUANTIZE", [T((2, 3), "FLOAT32")], T((2, 3), "INT8", [0.1, 0.2, 0.3], [0, 0, 0], axis=1))
    assert_refused(model, [], tflm="prepare")


def test_output_must_be_quantized():
    model = single_op("QUANTIZE", [T((4,), "FLOAT32")], T((4,), "INT8"))
    assert_refused(model, [], tflm="prepare")
