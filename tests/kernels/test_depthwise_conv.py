"""DEPTHWISE_CONV_2D against the TFLM wheel: int8 (per-tensor/per-channel, int8 and packed int4 weights), 16x8
(int64 bias or none), float32; depth multipliers, strides, dilations, paddings, output sizes off the formula;
prepare refusals; the int4 scratch buffer in the arena plan; row-band computation for out-of-core tiling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.kernels import depthwise_conv
from microinterp.kernels.padding import input_rows_for
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import TflmRunner, tflm_arena_head

from .test_conv import build, cases, run_case

DW = "DEPTHWISE_CONV_2D"


@given(cases(op=DW))
@example(({"op": DW, "kind": "INT16", "bias": None}, 1))
@example(({"op": DW, "wtype": "INT4", "per_channel": True, "c_in": 5}, 2))
@example(({"op": DW, "mult": 4, "c_in": 1, "kh": 5, "kw": 5, "h": 3, "w": 3}, 3))
@example(({"op": DW, "out_hw": (8, 9)}, 4))
@example(({"op": DW, "dilation": (1, 0), "out_hw": (6, 5)}, 5))
@example(({"op": DW, "stride": (2, 0), "out_hw": (3, 4)}, 6))
@example(({"op": DW, "kind": "FLOAT32", "mult": 2, "act": "RELU_N1_TO_1"}, 7))
@example(({"op": DW, "bias_lim": 1 << 31, "zp_in": -128, "zp_out": 127}, 8))
def test_depthwise_matches_tflm(case):
    run_case(*case)


def test_int4_scratch_is_planned_like_tflm():
    rng = np.random.default_rng(0)
    model, _ = build(rng, op=DW, wtype="INT4", h=4, w=4, c_in=24, mult=2, kh=3, kw=3)
    assert Interpreter(model).head_bytes == tflm_arena_head(model)


def test_row_bands_match_full_tensor():
    rng = np.random.default_rng(1)
    model, (shape, kind) = build(rng, op=DW, h=10, w=6, c_in=3, mult=2, kh=3, kw=3, stride=(1, 2),
                                 dilation=(3, 1), padding="SAME", zp_in=-7, zp_out=2)
    x = random_tensor(rng, shape, kind)
    interp = Interpreter(model)
    interp.set_input(x)
    interp.invoke()
    full = interp.get_output()
    op = interp.operators[0]
    data = interp.runtime.op_data[0]
    w = interp.model.main.tensors[op.inputs[1]].data
    bias = interp.model.main.tensors[op.inputs[2]].data
    out = np.zeros_like(full)
    for y0 in range(0, full.shape[1], 3):
        y1 = min(y0 + 3, full.shape[1])
        lo, hi = input_rows_for(y0, y1, data.stride_h, data.dilation_h, w.shape[1], data.pad_h, shape[1])
        depthwise_conv.depthwise_rows(data, x[:, lo:hi], w, bias, out[:, y0:y1], y0, x_row0=lo)
    np.testing.assert_array_equal(out, full)


# -- refusals ----------------------------------------------------------------------------------------------------------
def _custom(kind_x="INT8", kind_w="INT8", kind_y=None, w_quant=True, w_scales=1, w_axis=3, bias=None, mult=2,
            out_c=6):
    b = ModelBuilder()
    q = {"scale": 0.05, "zero_point": 0}
    x = b.add_tensor("x", (1, 5, 5, 3), kind_x, **(q if kind_x != "FLOAT32" else {}))
    ky = kind_y or kind_x
    y = b.add_tensor("y", (1, 5, 5, out_c), ky, **(q if ky != "FLOAT32" else {}))
    fshape = (1, 3, 3, out_c)
    wq = {"scale": np.full(w_scales, 0.01), "zero_point": 0, "axis": w_axis} if w_quant else {}
    f = b.add_tensor("w", fshape, kind_w, data=np.ones(fshape, np.float32 if kind_w == "FLOAT32" else np.int8), **wq)
    ins = [x, f]
    if bias is not None:
        ins.append(b.add_tensor("b", (out_c,), bias, data=np.zeros(out_c),
                                **({} if bias == "FLOAT32" else {"scale": 0.0005, "zero_point": 0})))
    b.add_op(DW, ins, [y], padding="SAME", depth_multiplier=mult)
    b.inputs, b.outputs = [x], [y]
    return b.build()


REFUSED_BY_BOTH = {
    "hybrid int8 input, float filter": {"kind_w": "FLOAT32", "w_quant": False},
    "hybrid float input, int8 filter": {"kind_x": "FLOAT32"},
    "filter not quantized": {"w_quant": False},
    "filter scales along the wrong axis": {"w_scales": 3, "w_axis": 1},
}


@pytest.mark.parametrize("name", sorted(REFUSED_BY_BOTH))
def test_prepare_refusals_match_wheel(name):
    model = _custom(**REFUSED_BY_BOTH[name])
    with pytest.raises(PrepareError):
        Interpreter(model)
    with pytest.raises(RuntimeError):
        TflmRunner(model)


@pytest.mark.parametrize("params", [
    {"kind_x": "INT16", "kind_w": "INT16"},   # TFLM's Prepare accepts, its Eval fails ("Filter type ... not supported")
    {"kind_y": "INT16"},                    # TFLM does not check: it would write int8 results into an int16 tensor
    {"kind_x": "INT16", "bias": "INT32"},      # TFLM reads the int32 bias buffer as int64 (out of bounds)
    {"bias": "INT64"},                      # ... or the int64 one as int32
    {"mult": 1},                            # output depth 6 != 3 x 1: TFLM would leave channels unwritten
    {"mult": 3},                            # 3 x 3 > 6: TFLM would write past the output tensor
])
def test_prepare_refusals_where_tflm_is_undefined(params):
    with pytest.raises(PrepareError):
        Interpreter(_custom(**params))
