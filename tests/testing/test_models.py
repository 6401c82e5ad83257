"""The in-process architectures: MobileNet v2 follows Keras' channel rounding and runs bit-exact against the wheel."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp import Interpreter
from microinterp.model import load_model
from microinterp.testing.models import _make_divisible, mobilenet_v2


def test_make_divisible_is_keras_rounding():
    assert [_make_divisible(c * 0.3) for c in (32, 16, 24, 32, 64, 96, 160, 320)] == [16, 8, 8, 16, 24, 32, 48, 96]
    assert [_make_divisible(c) for c in (32, 16, 24, 320)] == [32, 16, 24, 320]
    assert _make_divisible(0.35 * 24) == 8 and _make_divisible(0.75 * 24) == 24


def test_mobilenet_v2_shape():
    m = load_model(mobilenet_v2(alpha=0.3, input_size=80))
    keys = [op.key for op in m.main.operators]
    assert keys.count("ADD") == 10                      # the stride-1 blocks whose width does not change
    assert keys.count("DEPTHWISE_CONV_2D") == 17
    assert keys.count("CONV_2D") == 1 + 16 + 17 + 1     # stem, 16 expansions, 17 projections, head
    assert keys[-3:] == ["RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
    assert tuple(m.main.tensors[m.main.outputs[0]].shape) == (1, 1000)


def test_mobilenet_v2_matches_tflm():
    """Both kernel sets, op by op, against the wheel (assert_matches_tflm also holds optimized == reference)."""
    pytest.importorskip("tflite_micro")
    from microinterp.testing.single_op import assert_matches_tflm

    model = mobilenet_v2(alpha=0.3, input_size=48, classes=100)
    x = np.random.default_rng(3).integers(-128, 128, size=(1, 48, 48, 3)).astype(np.int8)
    assert_matches_tflm(model, [x])
    it = Interpreter(model)
    it.set_input(x)
    it.invoke()
    assert len(np.unique(it.get_output())) > 1           # the logits are spread, not one saturated tie
