"""Regrouping after the search (microinterp.apps.regroup): a convolution chain at the planned peak split into groups
of channels lowers the written plan's arena, the wheel runs the result with identical outputs, and a zero time
budget changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp.apps.optimize import optimize, wheel_arena
from microinterp.apps.regroup import peak_ops, regroup
from microinterp.model import load_model
from microinterp.testing.models import QuantNet
from microinterp.testing.tflm import TflmRunner

pytest.importorskip("tflite_micro")


def _expand_net() -> bytes:
    """A MobileNetV2-like block whose expanded map is the peak: 1x1 to 96 channels, a stride-2 depthwise, 1x1 back."""
    net = QuantNet((1, 32, 32, 8), seed=3, name="expand block")
    net.conv(8, 3)
    net.conv(96, 1)
    net.depthwise(3, stride=2)
    net.conv(8, 1, act="NONE")
    return net.build()


def _replan(data: bytes):
    return optimize(data, budget_s=0.2, share_bytes=True)


def test_a_split_at_the_planned_peak_lowers_the_arena():
    model = _expand_net()
    plan = _replan(model)
    before = wheel_arena(load_model(plan.data))
    window = peak_ops(plan.data, 0)
    assert window is not None and window[0] <= 2 <= window[1] + 1      # the expand / depthwise at the peak
    best, cuts = regroup(plan, lambda d: wheel_arena(load_model(d)), _replan, seconds=60)
    after = wheel_arena(load_model(best.data))
    assert cuts and after < before
    assert all(c.groups >= 2 and c.arena == after for c in cuts[-1:])
    x = np.random.default_rng(0).integers(-128, 128, (1, 32, 32, 8)).astype(np.int8)
    a, b = TflmRunner(model, preserve_all=False), TflmRunner(best.data, preserve_all=False)
    a.run([x])
    b.run([x])
    assert np.array_equal(a.output(0), b.output(0))


def test_no_time_no_change():
    plan = _replan(_expand_net())
    best, cuts = regroup(plan, lambda d: wheel_arena(load_model(d)), _replan, seconds=0)
    assert best is plan and cuts == ()
