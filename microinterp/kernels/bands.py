"""How a kernel declares that its op runs in pieces: the vocabulary the out-of-core pager and the phased planner read.

A kernel states its band capability with a ``bands`` attribute; without one its op runs **whole** (its inputs and
output at once). A declaration has one method, ``for_op(op, data, inputs, output) -> Tiler | None``: the
:class:`Tiler` that runs this op (these shapes, this OpData) in pieces, or None when they do not allow it. A
:class:`Tiler` says

- ``mode``: ``rows`` (bands of output rows, axis 1 of a batch-1 NHWC output) or ``channels`` (the output and its
  input whole, the filter streamed in output-channel groups: FULLY_CONNECTED);
- ``row_inputs``: input index -> the axis along which a band of output rows reads that input (the other inputs,
  weights and constants, are passed whole);
- ``input_rows(data, k, y0, y1) -> (lo, hi)``: the rows of input ``k`` that output rows ``[y0, y1)`` need;
- ``input_row_runs(data, k, y0, y1)``: those rows as runs with gaps between them, when the band skips rows (a
  dilated filter); by default the one run ``input_rows``;
- ``channel_input``: the input whose output channels may stream in groups (a filter), or None;
- ``compute(kernel, op, data, band)``: the band's output from the band views (:class:`BandViews`); it must equal the
  same rows (and channels) of ``invoke``'s result.

Three declarations cover most kernels:

- :class:`RowBands`: the kernel gives its row inputs, its row arithmetic and its band computation (resizes,
  TRANSPOSE_CONV; docs/ops.md shows a whole one-file op);
- :data:`ROW_LOCAL` / :class:`RowLocal`: an output row depends only on the same row of every input (elementwise ops of
  every type, comparisons, logic; SOFTMAX and LOG_SOFTMAX, which normalise within a row): ``invoke`` itself runs on
  band views;
- a :class:`Tiler` subclass with a ``for_op`` classmethod, for kernels with their own band functions (convolutions,
  pools, PAD, TRANSPOSE, FULLY_CONNECTED in channel groups).

Plugins may declare bands too; an override that declares nothing keeps the declaration of the kernel it replaces
(``bands = None`` opts out), see :func:`~.contract.declaration`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .base import is_batch1_nhwc


@dataclass
class BandViews:
    """What a tile computation sees: per input its view and first row, the (channel-sliced) filter/bias, the output
    band view and its first row, the channel range, and an invoke context for kernels that need one."""

    inputs: dict[int, np.ndarray]
    row0: dict[int, int]
    out: np.ndarray
    y0: int
    c0: int
    c1: int
    ctx: Any
    memo: dict = field(default_factory=dict)    # what a band function keeps across the tile's channel tiles
    #: input index -> the row runs its view holds, one after another, when they are not one run
    #: (:meth:`Tiler.input_row_runs`); absent: the view holds rows ``row0[k]`` on, contiguously
    runs: dict = field(default_factory=dict)


class Tiler:
    """How one op runs in pieces (see the module docstring). The base runs whole."""

    mode = "whole"
    #: input index -> axis along which a row band of the output reads that input (absent: read whole)
    row_inputs: ClassVar[dict[int, int]] = {}
    #: input index of a filter that may stream in output-channel tiles (CONV_2D, FULLY_CONNECTED)
    channel_input: int | None = None
    #: whether a constant main input (a rewired model) may still run in bands (it has no records on the card)
    takes_constants = False

    def input_rows(self, data: Any, k: int, y0: int, y1: int) -> tuple[int, int]:
        """Rows ``[lo, hi)`` of input ``k`` (along ``row_inputs[k]``) that output rows ``[y0, y1)`` need."""
        return y0, y1

    def input_row_runs(self, data: Any, k: int, y0: int, y1: int) -> list[tuple[int, int]]:
        """The rows of input ``k`` that output rows ``[y0, y1)`` read, as sorted disjoint runs inside
        :meth:`input_rows`. A tiler whose band reads rows with gaps between them (a dilated filter) returns
        several runs; the pager then reads only those and hands ``compute`` their rows one run after another,
        with the runs in ``BandViews.runs[k]``. The default: the one run :meth:`input_rows`."""
        lo, hi = self.input_rows(data, k, y0, y1)
        return [(lo, hi)] if lo < hi else []

    def compute(self, kernel: Any, op: Any, data: Any, band: BandViews) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def invoke_on_band(kernel: Any, op: Any, data: Any, band: BandViews) -> None:
    """Run the kernel's own ``invoke`` with its tensors replaced by the band views (ops whose result at a position
    does not depend on the rows outside the band)."""
    for k, view in band.inputs.items():
        band.ctx.views[op.inputs[k]] = view
    out = op.outputs[0]
    if out in op.inputs:        # an op writing over its own input (TFLM runs it in place): it reads the output buffer
        k = op.inputs.index(out)
        band.out[...] = band.inputs.get(k, band.ctx.views[out])
    band.ctx.views[out] = band.out
    kernel.invoke(band.ctx, op, data)


def _always(op: Any, data: Any, inputs: Sequence[Any], output: Any) -> bool:
    return True


@dataclass(frozen=True)
class RowBands:
    """A kernel's declaration that it runs in bands of output rows (axis 1 of a batch-1 NHWC output).

    - ``row_inputs``: input index -> the axis along which a band of output rows reads that input in bands (the
      other inputs, weights and constants, are passed whole);
    - ``input_rows(data, k, y0, y1) -> (lo, hi)``: the rows of input ``k`` that output rows ``[y0, y1)`` need;
    - ``compute(data, inputs, row0, out, y0)``: output rows ``[y0, y0 + out rows)`` into ``out`` from ``inputs``
      (input index -> its band view, or the whole tensor), ``row0`` giving each banded input's first row; it must
      equal the same rows of ``invoke``'s result;
    - ``applies(op, data, inputs, output)``: whether this op (these shapes, this OpData) can run in bands.
    """

    row_inputs: Mapping[int, int]
    input_rows: Callable[[Any, int, int, int], tuple[int, int]]
    compute: Callable[[Any, dict[int, np.ndarray], dict[int, int], np.ndarray, int], None]
    applies: Callable[[Any, Any, Sequence[Any], Any], bool] = field(default=_always)

    def for_op(self, op: Any, data: Any, inputs: Sequence[Any], output: Any) -> Tiler | None:
        return DeclaredTiler(self) if self.applies(op, data, inputs, output) else None


class DeclaredTiler(Tiler):
    """The tiler of a :class:`RowBands` declaration."""

    mode = "rows"
    takes_constants = True

    def __init__(self, bands: RowBands):
        self.bands = bands
        self.row_inputs = dict(bands.row_inputs)

    def input_rows(self, data, k, y0, y1):
        return self.bands.input_rows(data, k, y0, y1)

    def compute(self, kernel, op, data, band):
        self.bands.compute(data, band.inputs, band.row0, band.out, band.y0)


class RowLocalTiler(Tiler):
    """Rows ``[y0, y1)`` of the output from rows ``[y0, y1)`` of every banded input: ``invoke`` on band views."""

    mode = "rows"
    takes_constants = True

    def __init__(self, row_inputs: dict[int, int]):
        self.row_inputs = row_inputs

    def compute(self, kernel, op, data, band):
        invoke_on_band(kernel, op, data, band)


@dataclass(frozen=True)
class RowLocal:
    """An op whose output row depends only on the same row of each input. Inputs of the output's shape are read in
    row bands; a broadcast input that is constant along the row axis (or has fewer than three dimensions) is passed
    whole; anything else runs whole. ``elementwise=False`` (SOFTMAX, LOG_SOFTMAX): a constant main input runs
    whole too."""

    elementwise: bool = True

    def for_op(self, op: Any, data: Any, inputs: Sequence[Any], output: Any) -> Tiler | None:
        if not is_batch1_nhwc(output):
            return None
        if not self.elementwise and inputs and inputs[0] is not None and inputs[0].is_constant:
            return None
        rows = {}
        for k, t in enumerate(inputs):
            if t is None:
                continue
            if t.data is not None:      # a constant is passed whole: it must not vary along the row axis
                if len(t.shape) >= 3 and t.shape[-3] > 1:
                    return None
                continue
            if t.shape == output.shape:
                rows[k] = 1
            elif not (len(t.shape) <= 4 and (len(t.shape) < 3 or t.shape[-3] == 1)):
                return None         # broadcasts along the row axis in a way a band cannot follow
        return RowLocalTiler(rows)


@dataclass(frozen=True)
class SplitRows:
    """SPLIT / SPLIT_V along another axis than the rows (batch-1 4-D tensors): a band of rows of the input (input
    ``data_input``) gives the same rows of every output, cut by ``invoke`` on band views (the engine has every
    output's band in place)."""

    data_input: int
    multiple_outputs: ClassVar[bool] = True

    def for_op(self, op: Any, data: Any, inputs: Sequence[Any], output: Any) -> Tiler | None:
        x = inputs[self.data_input] if self.data_input < len(inputs) else None
        if x is None or x.data is not None or data.axis == 1 or not is_batch1_nhwc(x):
            return None
        return RowLocalTiler({self.data_input: 1})


#: The declaration of elementwise ops of every type (one output element per input element).
ROW_LOCAL = RowLocal()
#: SOFTMAX and LOG_SOFTMAX: normalised along the last axis, within a row.
ROW_NORMALISED = RowLocal(elementwise=False)
