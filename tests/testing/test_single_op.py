"""assert_matches_tflm also holds optimized kernels to the reference, op by op."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp.kernels import REFERENCE_KERNELS
from microinterp.kernels.contract import Kernel
from microinterp.resolver import default_resolver
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import uses_optimized

from ..kernels.single_op_models import T, single_op


class _OffByOneRelu(Kernel):
    """A deliberately wrong "optimized" RELU: the reference result plus one wherever it is below 127."""

    def prepare(self, ctx, op):
        return REFERENCE_KERNELS["RELU"].prepare(ctx, op)

    def invoke(self, ctx, op, data):
        REFERENCE_KERNELS["RELU"].invoke(ctx, op, data)
        out = ctx.output(op, 0)
        np.add(out, 1, out=out, where=out < 127, casting="unsafe")


@pytest.fixture
def wrong_optimized_relu(monkeypatch):
    layers = default_resolver()._layers
    monkeypatch.setitem(layers["optimized"], "RELU", _OffByOneRelu())
    yield


def _relu_model():
    return single_op("RELU", [T((2, 3, 4), "INT8", 0.1, -3)], T((2, 3, 4), "INT8", 0.05, 2))


def test_uses_optimized_follows_the_optimized_layer(monkeypatch):
    layers = default_resolver()._layers
    monkeypatch.delitem(layers["optimized"], "RELU", raising=False)
    assert not uses_optimized(_relu_model())
    monkeypatch.setitem(layers["optimized"], "RELU", _OffByOneRelu())
    assert uses_optimized(_relu_model())


def test_a_wrong_optimized_kernel_is_named(wrong_optimized_relu):
    model = _relu_model()
    assert uses_optimized(model)
    x = random_tensor(np.random.default_rng(0), (2, 3, 4))
    with pytest.raises(AssertionError, match=r"optimized kernels differ from the reference kernels: op 0 \(RELU\)"):
        assert_matches_tflm(model, [x])
