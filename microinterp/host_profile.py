"""Host time of an invoke: time per op, time in kernels, and the interpreter's own overhead.

:func:`measure` runs ``rounds`` invokes of an in-memory interpreter through a timing copy of its invoke loop: the same
prebuilt calls in the same order, with a clock reading right before and right after each kernel call and around the
whole loop, every round starting from the inputs the interpreter held when ``measure`` was called (an invoke may
overwrite its inputs: planned tensors share memory). An op's *kernel time* is the time between those two readings;
the *interpreter overhead* is ``1 - sum(kernel times) / total`` per invoke — everything the interpreter does besides running kernels (the loop, the
dispatch, and the profiler's own clock readings, so the figure errs on the high side). Medians over the rounds are
reported. The default ``invoke`` reads the clock once per op (its per-op host time includes the op's dispatch); this
measurement is separate so that ordinary invokes do not pay for the second reading.

Out of core an op is a sequence of tiles with their SD reads and writes: there ``measure`` reports each op's host
time as the pager records it (kernels *and* its tiles' IO) and the overhead is the time outside the ops (the pager's
per-invoke bookkeeping); the split between kernel and IO time is what ``benchmarks/bench_pager.py`` measures.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from .runtime.memory import quiet_floats


@dataclass(frozen=True)
class HostProfile:
    """Medians over ``rounds`` invokes (seconds)."""

    rounds: int
    total_seconds: float                 # one invoke, loop included
    kernel_seconds: float                # the sum of the ops' kernel times
    overhead: float                      # 1 - kernel / total (median of the per-invoke ratios)
    op_seconds: list[float] = field(default_factory=list)   # per op, in op order
    out_of_core: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "total_seconds": self.total_seconds, "kernel_seconds": self.kernel_seconds,
                "overhead": self.overhead, "op_seconds": list(self.op_seconds), "out_of_core": self.out_of_core}

    def summary(self) -> str:
        what = "ops (kernels + tile IO)" if self.out_of_core else "kernels"
        return (f"host: {_duration(self.total_seconds)} per invoke (median of {self.rounds}), "
                f"{what} {_duration(self.kernel_seconds)}, interpreter overhead {self.overhead * 100:.2f} %")


def _duration(seconds: float) -> str:
    return f"{seconds * 1e6:.2f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def measure(interp: Any, rounds: int = 20, warmup: int = 2) -> HostProfile:
    """Time ``rounds`` invokes of ``interp`` (after ``warmup`` untimed ones) on the inputs it holds now — set them
    after the last invoke, which may have overwritten them."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    # planned tensors share memory: an invoke may overwrite its inputs, so every round starts from a copy of them
    inputs = [interp.get_tensor(t) for t in interp._subgraph.inputs]

    def restore() -> None:
        for i, x in enumerate(inputs):
            interp.set_input(x, i)

    for _ in range(warmup):
        restore()
        interp.invoke()
    if interp.out_of_core:
        return _measure_paged(interp, rounds, restore)
    calls = [call for call, _ in interp.runtime.calls]
    n = len(calls)
    clock = time.perf_counter
    per_op: list[list[float]] = [[] for _ in range(n)]
    totals, kernels, overheads = [], [], []
    for _ in range(rounds):
        restore()
        spent = [0.0] * n
        start = clock()
        with quiet_floats():        # what the runtime's invoke runs its calls under
            for j, call in enumerate(calls):
                t0 = clock()
                call()
                spent[j] = clock() - t0
        total = clock() - start
        k = sum(spent)
        totals.append(total)
        kernels.append(k)
        overheads.append(1.0 - k / total if total > 0 else 0.0)
        for j in range(n):
            per_op[j].append(spent[j])
    return HostProfile(rounds, statistics.median(totals), statistics.median(kernels), statistics.median(overheads),
                       [statistics.median(v) for v in per_op])


def _measure_paged(interp: Any, rounds: int, restore: Any) -> HostProfile:
    clock = time.perf_counter
    totals, inside, overheads, per_op = [], [], [], []
    for _ in range(rounds):
        restore()
        start = clock()
        interp.invoke()
        total = clock() - start
        ops = [r.host_seconds for r in interp.profile]
        per_op.append(ops)
        k = sum(ops)
        totals.append(total)
        inside.append(k)
        overheads.append(1.0 - k / total if total > 0 else 0.0)
    return HostProfile(rounds, statistics.median(totals), statistics.median(inside), statistics.median(overheads),
                       [statistics.median(v) for v in zip(*per_op)], out_of_core=True)
