"""Whole calls against the TFLM wheel, timed interleaved (shared by ``bench_streams.py`` and ``bench_sequence.py``).

A whole call is what a user's loop does: ``set_input`` + ``invoke`` + ``get_output`` (on the wheel: ``run`` and
``output``). Two things are compared round after round, a batch of each, and each side's figure is the median of
its batches: the machine's speed moves by up to 10 % within minutes, so figures taken minutes apart do not compare.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np


def per_call(fn: Callable[[], object], calls: int, rounds: int = 1) -> float:
    """Median seconds per call over ``rounds`` batches of ``calls`` calls."""
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples)


def whole_calls(wheel, interpreter, x: np.ndarray) -> tuple[Callable[[], None], Callable[[], None]]:
    """The wheel's and the interpreter's whole call on the one input ``x``."""
    def wheel_call() -> None:
        wheel.run([x])
        wheel.output(0)

    def ours_call() -> None:
        interpreter.set_input(x, 0)
        interpreter.invoke()
        interpreter.get_output(0)
    return wheel_call, ours_call


def interleaved(wheel_call: Callable[[], object], fn: Callable[[], object], calls: int,
                rounds: int) -> tuple[float, float]:
    """Medians of ``rounds`` alternations of a batch of the wheel's calls (about as long as a batch of ``fn``) and
    a batch of ``calls`` calls of ``fn``, after one call of each: (seconds per wheel call, seconds per ``fn`` call)."""
    fn()
    wheel_call()
    probe = per_call(wheel_call, 50)
    batch = per_call(fn, calls)
    wheel_calls = max(50, int(batch * calls / probe))
    w, t = [], []
    for _ in range(rounds):
        w.append(per_call(wheel_call, wheel_calls))
        t.append(per_call(fn, calls))
    return statistics.median(w), statistics.median(t)
