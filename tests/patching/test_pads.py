"""Folding an explicit PAD into the convolution after it (SAME padding): identical outputs in microinterp and the
TFLM wheel, a smaller whole arena, and every case where the pair computes something else left alone."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import microinterp as mi
from microinterp.apps.optimize import rewrite, wheel_arena
from microinterp.model_writer import ModelBuilder
from microinterp.patching.pads import fold_pads

from .test_channels import float_chain_model
from .test_patching import inputs, residual_model, run, wheel_output


def pad_conv_model(h: int, w: int, k: int, stride: int, dilation: int, pads: tuple[int, int, int, int], *,
                   depthwise: bool = False, type_name: str = "INT8", pad_zero_point: int | None = None,
                   padv2: int | None = None, read_twice: bool = False) -> bytes:
    """x -> PAD(pads: top, bottom, left, right) -> CONV_2D / DEPTHWISE_CONV_2D VALID (k x k, stride, dilation)."""
    rng = np.random.default_rng(h * 131 + w * 17 + k + stride * 7 + dilation)
    b = ModelBuilder()
    zp = -3 if type_name == "INT8" else 0
    q = {"scale": 0.05, "zero_point": zp}
    c = 5
    x = b.add_tensor("x", (1, h, w, c), type_name, **q)
    padded = (1, h + pads[0] + pads[1], w + pads[2] + pads[3], c)
    p = b.add_tensor("p", padded, type_name, scale=0.05, zero_point=zp if pad_zero_point is None else pad_zero_point)
    paddings = b.add_tensor("paddings", (4, 2), "INT32",
                            data=np.array([[0, 0], [pads[0], pads[1]], [pads[2], pads[3]], [0, 0]], np.int32))
    if padv2 is None:
        b.add_op("PAD", [x, paddings], [p])
    else:
        value = b.add_tensor("value", (1,), type_name, data=np.array([padv2], np.int8 if type_name == "INT8"
                                                                        else np.int16), **q)
        b.add_op("PADV2", [x, paddings, value], [p])
    cout = c if depthwise else 4
    wshape = (1, k, k, c) if depthwise else (cout, k, k, c)
    scales = rng.uniform(0.005, 0.02, cout).astype(np.float32)
    wt = b.add_tensor("w", wshape, data=rng.integers(-127, 128, wshape, dtype=np.int8), scale=scales,
                      zero_point=np.zeros(cout, np.int64), axis=3 if depthwise else 0)
    bias_type = "INT32" if type_name == "INT8" else "INT64"
    bias = b.add_tensor("b", (cout,), bias_type, data=rng.integers(-500, 500, cout), scale=scales * 0.05,
                        zero_point=np.zeros(cout, np.int64))
    eff = (k - 1) * dilation + 1
    oh, ow = (padded[1] - eff) // stride + 1, (padded[2] - eff) // stride + 1
    y = b.add_tensor("y", (1, oh, ow, cout), type_name, scale=0.04, zero_point=-5 if type_name == "INT8" else 0)
    opts = {"padding": "VALID", "stride_h": stride, "stride_w": stride, "dilation_h_factor": dilation,
            "dilation_w_factor": dilation, "fused_activation_function": "NONE"}
    if depthwise:
        b.add_op("DEPTHWISE_CONV_2D", [p, wt, bias], [y], depth_multiplier=1, **opts)
    else:
        b.add_op("CONV_2D", [p, wt, bias], [y], **opts)
    outputs = [y]
    if read_twice:
        z = b.add_tensor("z", padded, type_name, **q)
        b.add_op("RELU", [p], [z])
        outputs.append(z)
    b.inputs, b.outputs = [x], outputs
    return b.build()


def _ops(model: bytes) -> list[str]:
    return [op.name for op in mi.load_model(model).main.operators]


def _same_padding(size: int, k: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


def test_a_pytorch_style_block_folds_both_pads_and_the_wheel_gives_the_same_bits():
    model = residual_model()
    folded = fold_pads(mi.load_model(model))
    assert folded is not None
    data, cut = folded
    assert len(cut.pads) == 2 and "2 explicit PADs folded" in cut.describe()
    assert "PAD" not in _ops(data)
    convs = [op for op in mi.load_model(data).main.operators if op.name in ("CONV_2D", "DEPTHWISE_CONV_2D")]
    assert [op.options["padding"] for op in convs] == ["SAME", "VALID", "SAME", "VALID", "SAME"]
    for seed in (0, 1, 2):
        xs = inputs(model, seed)
        assert all(np.array_equal(a, b) for a, b in zip(run(model, xs), run(data, xs)))
    assert wheel_arena(mi.load_model(data)) < wheel_arena(mi.load_model(model))
    pytest.importorskip("tflite_micro")
    xs = inputs(model, 3)
    assert np.array_equal(wheel_output(data, xs), wheel_output(model, xs))


SWEEP = [(h, w, k, s, d, dw) for h, w in ((7, 6), (8, 8), (9, 5)) for k in (1, 2, 3, 5) for s in (1, 2, 3)
         for d in (1, 2) for dw in (False, True) if (k - 1) * d + 1 <= min(h, w)]


@pytest.mark.parametrize("h,w,k,s,d,dw", SWEEP)
def test_a_pad_is_folded_exactly_when_same_pads_alike_and_outputs_are_identical(h, w, k, s, d, dw):
    """Every explicit padding around the SAME one (before: SAME's, one less, one more; after: 0 to 2): folded iff
    the window starts and the output size match SAME's, and a folded pair gives identical outputs."""
    (top, _), (left, _) = _same_padding(h, k, s, d), _same_padding(w, k, s, d)
    for dt, db in itertools.product((top, top + 1, max(0, top - 1)), range(3)):
        pads = (dt, db, left, db)
        model = pad_conv_model(h, w, k, s, d, pads, depthwise=dw)
        out = mi.load_model(model).main.tensors[mi.load_model(model).main.outputs[0]].shape
        same_out = (-(-h // s), -(-w // s))
        folded = fold_pads(mi.load_model(model))
        assert (folded is not None) == (dt == top and out[1:3] == same_out), (pads, out)
        if folded is not None:
            for seed in (0, 1):
                xs = inputs(model, seed)
                assert np.array_equal(run(model, xs)[0], run(folded[0], xs)[0])


def test_a_one_row_convolution_keeps_its_pad_for_heliums_1_x_n_kernel():
    """CMSIS-NN's arm_convolve_1_x_n_s8 (one-row input and filter) computes other outputs on Cortex-M55 when the
    padding's total is odd: folding would change what that firmware computes, so the PAD stays. A one-row
    depthwise convolution runs another kernel and folds."""
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 1, 9, 4), scale=0.05, zero_point=3)
    paddings = b.add_tensor("paddings", (4, 2), "INT32", data=np.array([[0, 0], [0, 0], [1, 1], [0, 0]], np.int32))
    p = b.add_tensor("p", (1, 1, 11, 4), scale=0.05, zero_point=3)
    b.add_op("PAD", [x, paddings], [p])
    w = b.add_tensor("w", (2, 1, 3, 4), data=np.ones((2, 1, 3, 4), np.int8), scale=np.full(2, 0.01, np.float32),
                     zero_point=np.zeros(2, np.int64), axis=0)
    y = b.add_tensor("y", (1, 1, 9, 2), scale=0.1, zero_point=0)
    b.add_op("CONV_2D", [p, w, -1], [y], padding="VALID", stride_h=1, stride_w=1, fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    assert fold_pads(mi.load_model(b.build())) is None
    assert fold_pads(mi.load_model(pad_conv_model(1, 9, 3, 1, 1, (1, 1, 1, 1), depthwise=True))) is not None


@pytest.mark.parametrize("case", ["float", "other zero point", "padv2 not the zero point", "read twice",
                                  "channels padded"])
def test_pads_that_compute_something_else_stay(case):
    if case == "float":
        model = float_chain_model()
    elif case == "other zero point":
        model = pad_conv_model(8, 8, 3, 1, 1, (1, 1, 1, 1), pad_zero_point=4)
    elif case == "padv2 not the zero point":
        model = pad_conv_model(8, 8, 3, 1, 1, (1, 1, 1, 1), padv2=7)
    elif case == "read twice":
        model = pad_conv_model(8, 8, 3, 1, 1, (1, 1, 1, 1), read_twice=True)
    else:
        b = ModelBuilder()
        x = b.add_tensor("x", (1, 4, 4, 2), scale=0.1, zero_point=0)
        paddings = b.add_tensor("paddings", (4, 2), "INT32", data=np.array([[0, 0], [1, 1], [1, 1], [0, 1]],
                                                                            np.int32))
        p = b.add_tensor("p", (1, 6, 6, 3), scale=0.1, zero_point=0)
        b.add_op("PAD", [x, paddings], [p])
        wt = b.add_tensor("w", (1, 3, 3, 3), data=np.ones((1, 3, 3, 3), np.int8), scale=np.full(3, 0.01, np.float32),
                          zero_point=np.zeros(3, np.int64), axis=3)
        y = b.add_tensor("y", (1, 4, 4, 3), scale=0.1, zero_point=0)
        b.add_op("DEPTHWISE_CONV_2D", [p, wt, -1], [y], padding="VALID", stride_h=1, stride_w=1, depth_multiplier=1,
                 fused_activation_function="NONE")
        b.inputs, b.outputs = [x], [y]
        model = b.build()
    assert fold_pads(mi.load_model(model)) is None


def test_padv2_with_the_zero_point_and_int16_fold():
    for model in (pad_conv_model(8, 8, 3, 1, 1, (1, 1, 1, 1), padv2=-3),
                  pad_conv_model(8, 8, 3, 1, 1, (1, 1, 1, 1), type_name="INT16", depthwise=True)):
        folded = fold_pads(mi.load_model(model))
        assert folded is not None and "PAD" not in " ".join(_ops(folded[0]))
        xs = inputs(model, 5)
        assert np.array_equal(run(model, xs)[0], run(folded[0], xs)[0])


def test_rewrite_reports_the_fold_and_writes_identical_outputs():
    model = pad_conv_model(12, 12, 3, 1, 1, (1, 1, 1, 1), depthwise=True)
    r = rewrite(model, budget_s=0.2)
    assert any("folded into the next convolution's SAME padding" in c.describe() for c in r.cuts), r.message
    assert r.arena_after < r.arena_before
    assert "PAD" not in _ops(r.data)
    xs = inputs(model, 0)
    assert np.array_equal(run(model, xs)[0], run(r.data, xs)[0])


@pytest.mark.parametrize("h,w,k,s,d,dw", [(9, 5, 3, 2, 2, True), (8, 8, 5, 3, 1, False), (7, 6, 2, 1, 2, True)])
def test_folded_strided_and_dilated_windows_give_the_wheels_bits(h, w, k, s, d, dw):
    pytest.importorskip("tflite_micro")
    (top, bottom), (left, right) = _same_padding(h, k, s, d), _same_padding(w, k, s, d)
    model = pad_conv_model(h, w, k, s, d, (top, bottom, left, right), depthwise=dw)
    folded = fold_pads(mi.load_model(model))
    assert folded is not None
    xs = inputs(model, 7)
    assert np.array_equal(wheel_output(folded[0], xs), wheel_output(model, xs))
