"""FULLY_CONNECTED's prebuilt calls: the paths :meth:`FullyConnected.bind <.fully_connected.FullyConnected.bind>`
hands to the interpreter's flat invoke loop for small layers, where the number of NumPy calls is the cost.

Each function takes the op's fixed input and output views and its prepared ``FullyConnectedData`` and returns a call
without arguments that computes exactly what ``FullyConnected.invoke`` computes (tests/kernels/test_fully_connected.py
checks both against the wheel): an exhaustive table for one int8 input value per batch, the step-function product
with a ``searchsorted`` whose index is the int8 code, and a scalar dot + ``bisect`` for one output value.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import partial
from typing import Any

import numpy as np

from ._blas import matmul


def bind_table(x: np.ndarray, out: np.ndarray, data: Any):
    """The exhaustive table: one batch copies the row of its input code (rows kept as bytes: one buffer copy);
    more batches gather their rows."""
    if data.batches == 1:
        rows, dest = [row.tobytes() for row in data.table], memoryview(out).cast("B")

        def lookup() -> None:
            dest[:] = rows[x.item(0)]
        return lookup
    table, xv, ov = data.table, x.reshape(-1)[:data.batches], out.reshape(data.batches, data.depth)

    def lookups() -> None:
        ov[...] = table[xv]
    return lookups


def bind_steps(x: np.ndarray, out: np.ndarray, data: Any):
    """The step-function path on preallocated buffers: the input is copied into a float64 row ``[x, 1]``; its
    product with ``gemm`` (weights, then bias + key offsets) gives the exact accumulators (keys); ``searchsorted``
    finds each key's index into the step values.

    - One output value (batches = depth = 1): the product is one dot of two vectors and the search a ``bisect``
      among the thresholds as Python floats; the value is stored as a Python int.
    - One channel of steps and int8 output: the thresholds are preceded by ``(lo - 1) mod 256`` entries of -inf, so
      that the index, cast to int8 (modulo 256), IS the output code: the store is the cast.
    - Otherwise the index picks from the step values (channel and code).
    """
    b, a, d = data.batches, data.accum, data.depth
    steps, gemm = data.steps, data.gemm
    if b == 1 and d == 1:
        row, col = np.ones(a + 1, gemm.dtype), np.ascontiguousarray(gemm[:, 0])
        xs, xr, o = row[:a], x.reshape(-1)[:a], out.reshape(1)
        dot, thresholds, values = row.dot, steps.thresholds.tolist(), steps.values.tolist()

        def scalar() -> None:
            xs[...] = xr
            o[0] = values[bisect_right(thresholds, float(dot(col)))]
        return scalar
    x2, ov = x.reshape(-1)[:b * a].reshape(b, a), out.reshape(b, d)
    cols = np.ones((b, a + 1), gemm.dtype)
    xs, acc = cols[:, :a], np.empty((b, d), gemm.dtype)
    coded = coded_thresholds(data)      # exact in float32 too: prepare checked its bound
    if coded is not None:
        find, values = coded.astype(gemm.dtype).searchsorted, None
    else:
        find, values = steps.thresholds.astype(gemm.dtype).searchsorted, steps.values
    product = cols.dot if data.small else partial(matmul, cols)         # product(gemm, acc): cols @ gemm -> acc
    if values is None:
        def codes() -> None:
            xs[...] = x2
            product(gemm, acc)
            ov[...] = find(acc, "right")
        return codes

    def indexed() -> None:
        xs[...] = x2
        product(gemm, acc)
        ov[...] = values[find(acc, "right")]
    return indexed


def coded_thresholds(data: Any) -> np.ndarray | None:
    """With a step function of one channel and int8 output: its thresholds preceded by ``(lo - 1) mod 256``
    entries below every key, so that the ``searchsorted`` index, cast to int8, is the output code
    (:meth:`._step_requant.StepRequantizer.coded`); None otherwise (per-channel steps, int16 output, no steps)."""
    if data.steps is None or data.type_name != "INT8":
        return None
    return data.steps.coded(8)
