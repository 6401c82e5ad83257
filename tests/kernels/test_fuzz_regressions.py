"""Models the semantic fuzzer found crashing a kernel's prepare; each must now be a PrepareError naming the rule."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.testing import ModelBuilder


def _fc(out_scale=0.1, bias_len=3) -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    w = b.add_tensor("w", (3, 4), "INT8", data=np.ones((3, 4)), scale=0.05, zero_point=0)
    bias = b.add_tensor("b", (bias_len,), "INT32", data=np.zeros(bias_len), scale=0.005, zero_point=0)
    y = b.add_tensor("y", (1, 3), "INT8", scale=out_scale, zero_point=0)
    b.add_op("FULLY_CONNECTED", [x, w, bias], [y])
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_fc_zero_output_scale():
    with pytest.raises(mi.PrepareError, match="output scale must be positive"):
        mi.Interpreter(_fc(out_scale=0.0))


def test_fc_bias_length_differs_from_depth():
    with pytest.raises(mi.PrepareError, match="bias has 2 elements for 3 output channels"):
        mi.Interpreter(_fc(bias_len=2))


def test_conv_zero_input_depth():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4, 4, 0), "INT8", scale=0.1, zero_point=0)
    w = b.add_tensor("w", (2, 1, 1, 3), "INT8", data=np.ones((2, 1, 1, 3)), scale=[0.1, 0.1], zero_point=0)
    y = b.add_tensor("y", (1, 4, 4, 2), "INT8", scale=0.1, zero_point=0)
    b.add_op("CONV_2D", [x, w], [y], padding="SAME")
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(mi.PrepareError, match="input depth 0"):
        mi.Interpreter(b.build())
