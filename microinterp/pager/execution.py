"""What an out-of-core invoke does with the bytes: the live execution, or the counting one of a dry run.

The :class:`~.engine.Engine` does every piece of bookkeeping itself -- which tiles run, which records each reads
and writes, the typed IO steps, the work and the MCU cycles -- and hands the effects to an execution:

- :class:`LiveExecution` reads and writes the records on the storage image (checksums verified, a failure raised
  for the engine's recovery), runs the kernels on the band views, starts and finishes banded reductions and moves
  the line buffers of fused chains.
- :class:`CountingExecution` does none of it. :meth:`~microinterp.pager.Pager.simulate` runs the engine with it:
  the records are exactly those of an invoke (same tiles, same IO counts, same cycles), no byte moves and no
  kernel runs, whatever the backing (an SD image or :class:`~microinterp.storage.null.NullStorage`).

Both have the same methods, so the engine has no dry-run branch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..bands.op_plan import OpPlan
from ..bands.tiling import BandViews
from ..storage.format import RecordRun


class LiveExecution:
    """The effects of an invoke: storage IO on ``image``, kernels on the engine's ``views`` with ``ctx``."""

    def __init__(self, image: Any, ctx: Any, views: list[Any]):
        self.image, self.ctx, self.views = image, ctx, views

    def read(self, area: str, offset: int, run: RecordRun, out: np.ndarray) -> None:
        self.image.read_run(area, offset, run, out)

    def write(self, area: str, offset: int, run: RecordRun, data: np.ndarray) -> None:
        self.image.write_run(area, offset, run, data)

    def compute(self, plan: OpPlan, band: BandViews) -> None:
        """One band (or the whole op): a whole op reads its inputs from the views bound to ``band.inputs``."""
        op = plan.op
        if plan.mode == "whole":
            for k, ti in enumerate(op.inputs):
                if ti >= 0 and k in band.inputs:
                    self.views[ti] = band.inputs[k]
            plan.kernel.invoke(self.ctx, op, plan.data)
            return
        band.out = self.views[op.outputs[0]]
        plan.tiler.compute(plan.kernel, op, plan.data, band)

    def keep(self, line: Any, row: int) -> None:
        """A fused chain's line buffer drops the rows before ``row``; the rows it keeps move to the front."""
        line.keep(row)

    def start_reduction(self, plan: OpPlan) -> None:
        """The running totals of a ``reduce`` plan, before its first band."""
        plan.tiler.start(plan.data)

    def finish_reduction(self, plan: OpPlan) -> None:
        """A ``reduce`` plan's totals folded into its output view, after its last band."""
        plan.tiler.finish(plan.data, self.views[plan.op.outputs[0]])


class CountingExecution:
    """No effect at all: the engine only counts (see the module docstring)."""

    def read(self, area: str, offset: int, run: RecordRun, out: np.ndarray) -> None:
        """Nothing read: ``out`` keeps what it holds."""

    def write(self, area: str, offset: int, run: RecordRun, data: np.ndarray) -> None:
        """Nothing written."""

    def compute(self, plan: OpPlan, band: BandViews) -> None:
        """No kernel runs."""

    def keep(self, line: Any, row: int) -> None:
        """The line buffer's bookkeeping only: no row moves."""
        line.keep(row, move=False)

    def start_reduction(self, plan: OpPlan) -> None:
        """No totals."""

    def finish_reduction(self, plan: OpPlan) -> None:
        """No totals."""


COUNTING = CountingExecution()
