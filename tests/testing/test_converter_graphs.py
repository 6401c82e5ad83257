"""The builder-made equivalents of stock-converter graphs (dilated Conv1D + swish, reflect padding + pixel shuffle,
tf.where / reduce_min / cumsum, LayerNormalization + MultiHeadAttention) run bit-exact against the TFLM wheel, op by
op, with both kernel sets, and plan the wheel's arena head."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp import Interpreter
from microinterp.testing.converter_graphs import GRAPHS
from microinterp.testing.single_op import assert_matches_tflm
from microinterp.testing.tflm import tflm_arena_head

pytest.importorskip("tflite_micro")


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_converter_graph_matches_tflm(name):
    model = GRAPHS[name]()
    it = Interpreter(model)
    shape = tuple(it.get_input_details(0)["shape"])
    rng = np.random.default_rng(11)
    for _ in range(4):
        x = rng.integers(-128, 128, size=shape).astype(np.int8)
        assert_matches_tflm(model, [x])
    assert it.head_bytes == tflm_arena_head(model)
