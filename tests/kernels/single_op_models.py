"""Tiny single-op models and wheel checks shared by the element-wise / resize kernel tests.

``T(shape, type, scale, zp, data)`` describes one tensor (``data`` makes it a constant); :func:`single_op` builds a
model with one op whose non-constant inputs are the graph inputs; :func:`assert_refused` checks that microinterp
raises PrepareError at build time and that the wheel refuses the model too (at its AllocateTensors, or at its first
invoke for the checks TFLM only makes in Eval); :func:`assert_bitwise_matches_tflm` compares outputs byte for byte
(the harness's ``np.array_equal`` treats NaN != NaN).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.errors import PrepareError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.tflm import TflmRunner, compare_with_tflm

ZP = {"INT8": (-128, 127), "UINT8": (0, 255), "INT16": (-32768, 32767), "INT32": (-(1 << 31), (1 << 31) - 1)}


@dataclass
class T:
    shape: Sequence[int]
    type: str = "INT8"
    scale: float | Sequence[float] | None = None
    zp: int | Sequence[int] | None = None
    data: Any = None
    axis: int = 0


def single_op(op: str, inputs: Sequence[T], output: T, **options: Any) -> bytes:
    b = ModelBuilder()
    ids, graph_inputs = [], []
    for i, t in enumerate(inputs):
        ti = b.add_tensor(f"in{i}", t.shape, t.type, data=t.data, scale=t.scale, zero_point=t.zp, axis=t.axis)
        ids.append(ti)
        if t.data is None:
            graph_inputs.append(ti)
    y = b.add_tensor("out", output.shape, output.type, scale=output.scale, zero_point=output.zp, axis=output.axis)
    b.add_op(op, ids, [y], **options)
    b.inputs, b.outputs = graph_inputs, [y]
    return b.build()


def assert_bitwise_matches_tflm(model: bytes, inputs: Sequence[np.ndarray]) -> None:
    """Like ``assert_matches_tflm`` but byte-for-byte on the outputs, so NaN outputs compare (as bit patterns)."""
    result = compare_with_tflm(model, inputs, per_op=False)
    for mine, theirs in zip(result.outputs, result.tflm_outputs):
        assert mine.shape == theirs.shape, (mine.shape, theirs.shape)
        same = np.ascontiguousarray(mine).view(np.uint8) == np.ascontiguousarray(theirs).view(np.uint8)
        assert same.all(), f"outputs differ bitwise: microinterp {mine.ravel()[:8]} vs TFLM {theirs.ravel()[:8]}"


def assert_refused(model: bytes, inputs: Sequence[np.ndarray], tflm: str | None = "prepare",
                   match: str | None = None) -> None:
    """microinterp refuses at build time; the wheel refuses at ``tflm`` ("prepare" / "invoke"; None: unchecked)."""
    with pytest.raises(PrepareError, match=match):
        Interpreter(model)
    if tflm == "prepare":
        with pytest.raises(RuntimeError):
            TflmRunner(model)
    elif tflm == "invoke":
        runner = TflmRunner(model)
        with pytest.raises(RuntimeError):
            runner.run(inputs)


def with_specials(x: np.ndarray) -> np.ndarray:
    """A float32 array with NaN, -0.0, +-inf and exact 0 sprinkled in (for bitwise checks of float kernels)."""
    x = np.array(x, dtype=np.float32)
    flat = x.reshape(-1)
    for k, v in enumerate([np.nan, -0.0, 0.0, np.inf, -np.inf]):
        flat[k::7] = v
    return x


# -- hypothesis building blocks ------------------------------------------------------------------------------------
def scales(lo: float = -3.0, hi: float = 1.0):
    """Log-uniform positive scales, as float32 values."""
    return st.floats(lo, hi).map(lambda e: float(np.float32(10.0 ** e)))


def zero_points(type_name: str):
    """Zero points with the extremes of the type well represented."""
    lo, hi = ZP[type_name]
    if type_name == "INT16":
        return st.sampled_from([0, 0, lo, hi, -1000, 77])
    return st.one_of(st.sampled_from([lo, lo + 1, 0, hi - 1, hi]), st.integers(lo, hi))


def shapes(min_rank: int = 1, max_rank: int = 4, max_side: int = 5):
    return st.lists(st.integers(1, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def broadcast_pair(draw, max_rank: int = 4, max_side: int = 4):
    """Two shapes that broadcast: a random full shape, each dim of each side possibly 1, ranks possibly cut."""
    full = draw(shapes(1, max_rank, max_side))
    out = []
    for _ in range(2):
        dims = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else d for d in full)
        cut = draw(st.integers(0, len(dims) - 1))
        out.append(dims[cut:])
    return out[0], out[1], tuple(np.broadcast_shapes(out[0], out[1]))
