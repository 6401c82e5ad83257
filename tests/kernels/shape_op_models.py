"""Model building and wheel checks shared by the reduce / data-movement kernel tests (MEAN ... GATHER).

:func:`model` builds a one-op model from tensor specs (a spec with ``data`` is a constant, every other input is a
graph input); :func:`check` feeds random inputs and requires microinterp's output to equal the wheel's;
:func:`assert_refused` requires a PrepareError from microinterp and a refusal from the wheel (at prepare or invoke).
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
from microinterp.model import load_model
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm, random_tensor
from microinterp.testing.tflm import TflmRunner

DTYPES = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32, "INT64": np.int64,
          "BOOL": np.bool_, "UINT8": np.uint8}
QRANGE = {"INT8": (-128, 127), "INT16": (-32768, 32767)}


@dataclass
class T:
    """One tensor: shape, type, optional constant data and per-tensor quantization."""

    shape: Sequence[int]
    type: str = "INT8"
    data: Any = None
    scale: float | None = None
    zp: int | None = None


def quant(type_name: str, scale: float = 0.05, zp: int = 0) -> dict[str, Any]:
    """Keyword arguments of a T with per-tensor quantization for int types, none for the others."""
    if type_name in ("INT8", "INT16"):
        return {"scale": scale, "zp": zp if type_name == "INT8" else 0}
    return {}


def const(values: Any, type_name: str = "INT32") -> T:
    arr = np.asarray(values, dtype=DTYPES[type_name])
    return T(arr.shape, type_name, data=arr)


def model(op: str, inputs: Sequence[T], outputs: Sequence[T] | T, **options: Any) -> bytes:
    outputs = [outputs] if isinstance(outputs, T) else list(outputs)
    b = ModelBuilder()
    ids, graph_inputs = [], []
    for i, t in enumerate(inputs):
        ti = b.add_tensor(f"in{i}", t.shape, t.type, data=t.data, scale=t.scale, zero_point=t.zp)
        ids.append(ti)
        if t.data is None:
            graph_inputs.append(ti)
    outs = [b.add_tensor(f"out{k}", t.shape, t.type, scale=t.scale, zero_point=t.zp) for k, t in enumerate(outputs)]
    b.add_op(op, ids, outs, **options)
    b.inputs, b.outputs = graph_inputs, outs
    return b.build()


def random_inputs(rng: np.random.Generator, data: bytes, overrides: dict[int, np.ndarray] | None = None
                  ) -> list[np.ndarray]:
    """Random values for every graph input (full range of the type; floats in [-4, 4)); ``overrides`` by position."""
    m = load_model(data)
    out = []
    for k, ti in enumerate(m.main.inputs):
        t = m.main.tensors[ti]
        if overrides and k in overrides:
            out.append(np.asarray(overrides[k], dtype=t.dtype).reshape(t.shape))
        elif t.type_name == "BOOL":
            out.append(rng.integers(0, 2, size=t.shape).astype(np.bool_))
        elif t.type_name == "INT64":
            out.append(rng.integers(-(1 << 62), 1 << 62, size=t.shape).astype(np.int64))
        else:
            out.append(random_tensor(rng, t.shape, t.type_name))
    return out


def check(data: bytes, rng: np.random.Generator, overrides: dict[int, np.ndarray] | None = None) -> list[np.ndarray]:
    """Random inputs through microinterp and the wheel; every op output must be identical."""
    return assert_matches_tflm(data, random_inputs(rng, data, overrides))


def assert_refused(data: bytes, tflm: str | None = "prepare", match: str | None = None) -> None:
    """microinterp raises PrepareError when built; the wheel refuses at ``tflm`` ("prepare"/"invoke"/None)."""
    with pytest.raises(PrepareError, match=match):
        Interpreter(data)
    if tflm == "prepare":
        with pytest.raises(RuntimeError):
            TflmRunner(data)
    elif tflm == "invoke":
        runner = TflmRunner(data)
        with pytest.raises(RuntimeError):
            runner.run(random_inputs(np.random.default_rng(0), data))


def shapes(min_rank: int = 1, max_rank: int = 4, max_side: int = 5) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(1, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


seeds = st.integers(0, 2**32 - 1)
zero_points = st.sampled_from([-128, -127, -1, 0, 1, 5, 126, 127])
scales = st.floats(1e-3, 2.0, allow_nan=False, allow_infinity=False).map(lambda s: float(np.float32(s)))


@st.composite
def reduce_cases(draw, op: str, types: Sequence[str], max_rank: int = 5):
    """(model bytes, seed) of one MEAN/SUM/REDUCE_MAX/REDUCE_MIN/REDUCE_ALL op: random shape, axes (negative
    forms, duplicates, any order), keep_dims, type, scales and zero points (REDUCE_MAX/MIN int8: output
    quantization = input's)."""
    type_name = draw(st.sampled_from(list(types)))
    shape = draw(shapes(1, max_rank, 6))
    rank = len(shape)
    picked = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank + 1))
    axes = [a - rank if draw(st.booleans()) else a for a in picked]
    keep = draw(st.booleans())
    red = {a % rank for a in axes}
    out_shape = tuple((1 if i in red else d) for i, d in enumerate(shape) if keep or i not in red)
    s_in, zp_in = draw(scales), draw(zero_points)
    n = int(np.prod([shape[a] for a in red]))
    if op in ("REDUCE_MAX", "REDUCE_MIN", "REDUCE_ALL"):
        s_out, zp_out = s_in, zp_in
    else:
        hi = 20.0 if op == "MEAN" else 4.0 * n
        factor = draw(st.one_of(st.just(1.0), st.floats(0.05, hi)))
        s_out, zp_out = float(np.float32(s_in * factor)), draw(zero_points)
    data = model(op, [T(shape, type_name, **quant(type_name, s_in, zp_in)), const(axes)],
                 T(out_shape, type_name, **quant(type_name, s_out, zp_out)), keep_dims=keep)
    return data, draw(seeds)
