"""PAD against the TFLM wheel: int8 / int16 / int32 / float32, 1-D to 5-D, random (also zero and negative)
paddings, fill = output zero point (int8) or 0, no requantization between different input and output quantization,
extreme zero points; prepare refusals."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from .shape_op_models import T, assert_refused, check, const, model, quant, seeds, shapes, zero_points

TYPES = ["INT8", "INT16", "INT32", "FLOAT32"]


@st.composite
def pad_cases(draw, op: str = "PAD"):
    type_name = draw(st.sampled_from(TYPES))
    shape = draw(shapes(1, 5, 5))
    low = draw(st.sampled_from([0, 0, -2]))        # mostly ordinary paddings, sometimes negative ones
    pads = [[draw(st.integers(low, 3)), draw(st.integers(low, 3))] for _ in shape]
    pads = [[a, max(b, 1 - d - a)] for d, (a, b) in zip(shape, pads)]   # keep every output dim >= 1
    out_shape = tuple(d + a + b for d, (a, b) in zip(shape, pads))
    zp_in, zp_out = draw(zero_points), draw(zero_points)
    inputs = [T(shape, type_name, **quant(type_name, 0.05, zp_in)), const(pads)]
    if op == "PADV2":
        value = draw(st.integers(-128, 127)) if type_name == "INT8" else draw(st.integers(-1000, 1000))
        inputs.append(T((1,), type_name, data=np.array([value]).astype(_np(type_name)),
                        **quant(type_name, 0.07, zp_out)))
    return model(op, inputs, T(out_shape, type_name, **quant(type_name, 0.07, zp_out))), draw(seeds)


def _np(type_name):
    return {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32}[type_name]


@given(pad_cases())
def test_pad_matches_tflm(case):
    data, seed = case
    check(data, np.random.default_rng(seed))


def test_image_style_padding():
    """mobilenet_v2's PAD: 4-D, batch and channel paddings zero (TFLM's "image style" path)."""
    data = model("PAD", [T((1, 7, 7, 8), "INT8", **quant("INT8", 0.02, -128)), const([[0, 0], [1, 1], [1, 1], [0, 0]])],
                 T((1, 9, 9, 8), "INT8", **quant("INT8", 0.02, -128)))
    check(data, np.random.default_rng(7))


def test_negative_paddings():
    """TFLM does not refuse negative paddings: the kept box takes the input's first elements in flat order."""
    for type_name in ("INT8", "FLOAT32"):
        data = model("PAD", [T((5, 6), type_name, **quant(type_name, 0.1, 4)), const([[-1, 2], [2, -3]])],
                     T((6, 5), type_name, **quant(type_name, 0.1, 4)))
        check(data, np.random.default_rng(8))


def test_refusals():
    q = quant("INT8")
    assert_refused(model("PAD", [T((1, 1, 1, 1, 1, 2), "INT8", **q), const([[0, 0]] * 5 + [[1, 0]])],
                         T((1, 1, 1, 1, 1, 3), "INT8", **q)), match="5")
    assert_refused(model("PAD", [T((2, 3), "UINT8", scale=0.1, zp=0), const([[1, 0], [0, 0]])],
                         T((3, 3), "UINT8", scale=0.1, zp=0)), tflm="invoke", match="UINT8")
    assert_refused(model("PAD", [T((2, 3), "INT8", **q), T((2, 2), "INT32")], T((3, 3), "INT8", **q)),
                   match="Non-constant")
    assert_refused(model("PAD", [T((2, 3), "INT8", **q), const([[1, 0], [0, 0]])], T((3, 4), "INT8", **q)),
                   match="output dim")
    assert_refused(model("PAD", [T((2, 3), "INT8", **q), const([[1, 0]])], T((3, 3), "INT8", **q)),
                   match="paddings")
