"""A PAD read by one row-band op never goes to the card; a convolution reader whose zero padding can stand for it
(fill = its input zero point, quantized) reads the PAD's input directly, any other reader gets padded bands."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import microinterp as mi
from microinterp.testing.models import QuantNet

from .conftest import in_memory, random_input, smallest_out_of_core_arena


def _padv2(net: QuantNet, value: int, top: int, bottom: int, left: int, right: int) -> None:
    """PADV2 with an explicit int8 constant (same quantization as the tensor, as TFLM requires)."""
    n, h, w, c = net.shape
    net.n += 1
    pads = net.b.add_tensor(f"pads_v2_{net.n}", (4, 2), "INT32",
                            data=np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))
    fill = net.b.add_tensor(f"fill{net.n}", (1,), "INT8", data=np.array([value], np.int8), scale=net.scale,
                            zero_point=net.zp)
    shape = (n, h + top + bottom, w + left + right, c)
    y = net._tensor(f"padv2_{net.n}", shape)
    net.b.add_op("PADV2", [net.x, pads, fill], [y])
    net.x, net.shape = y, shape


def _model(fill: int | None, reader: str, pads: tuple[int, int, int, int], stride: int, padding: str) -> bytes:
    net = QuantNet((1, 40, 36, 3), seed=11)
    net.conv(12, 3, act="RELU")             # zero point -128 after RELU
    if fill is None:
        net.pad(*pads)
    else:
        _padv2(net, fill, *pads)
    if reader == "conv":
        net.conv(10, 3, stride=stride, padding=padding, act="NONE")
    elif reader == "depthwise":
        net.depthwise(3, stride=stride, padding=padding, multiplier=2)
    else:
        net.pool("MAX", 2, 2)
    net.conv(8, 1, act="NONE")
    net.flatten()
    net.fc(5, act="NONE")
    return net.build()


@pytest.mark.parametrize("reader", ["conv", "depthwise", "pool"])
@pytest.mark.parametrize("fill", [None, -128, 7])
def test_pads_are_folded_exactly_when_exact(tmp_path, reader, fill):
    model = _model(fill, reader, (1, 2, 2, 1), 2, "SAME")
    x = random_input(model, 5)
    need = smallest_out_of_core_arena(model, tmp_path / "a.img", flash=0)
    for arena in (need, need + 4096):
        with mi.Interpreter(model, arena=arena, backing=tmp_path / "a.img", flash=0) as it:
            assert it.out_of_core
            it.set_input(x)
            it.invoke()
            assert np.array_equal(it.get_output(), in_memory(model, x))
            pad = next(p for p in it.runtime.plans if p.op.key in ("PAD", "PADV2"))
            assert pad.mode == "fused" and pad.op.outputs[0] in it.runtime.virtual
            folded = [p for p in it.runtime.plans if p.folded is pad]
            # fill -128 is the zero point (PADV2 spelling it out); 7 is not; a pool has no zero padding to fold into
            assert bool(folded) == (reader != "pool" and fill != 7)
            for p in folded:
                assert p.op.inputs[0] == pad.op.inputs[0] and p.op is not it.model.main.operators[p.index]


@given(top=st.integers(0, 3), bottom=st.integers(0, 3), left=st.integers(0, 3), right=st.integers(0, 3),
       stride=st.integers(1, 2), padding=st.sampled_from(["SAME", "VALID"]),
       reader=st.sampled_from(["conv", "depthwise"]), where=st.floats(0, 1))
def test_folded_pads_match_in_memory(tmp_path_factory, top, bottom, left, right, stride, padding, reader, where):
    model = _model(None, reader, (top, bottom, left, right), stride, padding)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    need = smallest_out_of_core_arena(model, path)
    full = mi.Interpreter(model).arena_used_bytes
    x = random_input(model, top + 7 * bottom)
    with mi.Interpreter(model, arena=need + int(where * max(full - 1 - need, 0)), backing=path) as it:
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))
