"""SignalFilterBank: triangular mel channels over a power spectrum (``signal/src/filter_bank.cc``,
``signal/micro/kernels/filter_bank.cc``).

Options: ``num_channels``. Inputs (TFLM's Prepare): the 1-D UINT32 spectrum and five 1-D INT16 tensors -- weights,
unweights, channel frequency starts, channel weight starts, channel widths (``num_channels + 1`` entries); output
1-D UINT64. Eval (``FilterbankAccumulateChannels``) walks channels 0..num_channels: for each, over its width,
``w += weight * spectrum`` and ``u += unweight * spectrum`` in uint64 (an int16 weight converted to uint64, so a
negative one wraps), then ``work[i] = w``, ``w = u``, ``u = 0``; the output is ``work[1:]`` (a persistent work area
of ``num_channels + 1`` uint64 in the tail). Index ranges are checked here (TFLM would read out of bounds).

With constant tables (the usual case) the walk is vectorized: every (channel, tap) pair's spectrum and weight
positions are laid out once, and an invoke forms all products in uint64 (NumPy wraps them modulo 2^64 as C does),
running sums of them, and each channel's sum as a difference of two running sums -- modular sums do not depend on
the order. ``work[i]`` is then channel ``i``'s weighted sum plus channel ``i - 1``'s unweighted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._common import U64, options


@dataclass(frozen=True)
class FilterBankData:
    channels: int
    work: np.ndarray = field(repr=False)
    taps: Taps | None = field(default=None, repr=False)      # constant tables: the vectorized walk


@dataclass(frozen=True)
class Taps:
    """Every (channel, tap) pair of constant tables, channel by channel: its spectrum position, its weight and
    unweight (int16 converted to uint64, as C converts them), and where each channel's pairs start and end."""

    spectrum: np.ndarray
    weights: np.ndarray
    unweights: np.ndarray
    bounds: np.ndarray          # [channels + 2]: channel i's pairs are [bounds[i], bounds[i + 1])

    @classmethod
    def build(cls, weights, unweights, starts, wstarts, widths, channels: int) -> Taps:
        spec, wpos, bounds = [], [], [0]
        for i in range(channels + 1):
            width = max(int(widths[i]), 0)
            spec.append(np.arange(width) + int(starts[i]))
            wpos.append(np.arange(width) + int(wstarts[i]))
            bounds.append(bounds[-1] + width)
        spec, wpos = np.concatenate(spec).astype(np.intp), np.concatenate(wpos).astype(np.intp)
        u64 = (lambda t: np.asarray(t, np.int64)[wpos].astype(np.uint64))
        return cls(spec, u64(weights), u64(unweights), np.array(bounds, np.intp))

    def sums(self, spectrum: np.ndarray, work: np.ndarray) -> None:
        """``work[i]`` = channel i's weighted sum + channel i - 1's unweighted sum, modulo 2^64."""
        s = spectrum.astype(np.uint64)[self.spectrum]
        running = np.zeros((2, s.size + 1), np.uint64)
        np.cumsum(self.weights * s, out=running[0, 1:])
        np.cumsum(self.unweights * s, out=running[1, 1:])
        per_channel = running[:, self.bounds[1:]] - running[:, self.bounds[:-1]]
        work[...] = per_channel[0]
        work[1:] += per_channel[1, :-1]


class FilterBank:
    def prepare(self, ctx, op) -> FilterBankData:
        n = int(options(ctx, op, ("num_channels",))["num_channels"])
        ctx.check_io_count(op, 6, 1)
        ts = [ctx.require_input(op, k) for k in range(6)]
        y = ctx.output(op, 0)
        if any(len(t.shape) != 1 for t in ts) or len(y.shape) != 1:
            raise ctx.fail(op, "every input and the output must be 1-D")
        if ts[0].type_name != "UINT32" or any(t.type_name != "INT16" for t in ts[1:]) or y.type_name != "UINT64":
            raise ctx.fail(op, "UINT32 spectrum, INT16 tables, UINT64 output")
        if n < 0 or any(t.num_elements < n + 1 for t in ts[3:]) or y.num_elements > n:
            # TFLM's Eval copies the output from work_area + 1, which holds n channels: a longer output would read
            # past the work area
            raise ctx.fail(op, f"{n} channels do not fit the channel tables / output of {y.num_elements}")
        work = ctx.arena.allocate_persistent(8 * (n + 1)).view(np.uint64) if n + 1 else np.zeros(0, np.uint64)
        if all(t.data is not None for t in ts[1:]):
            starts, wstarts, widths = (np.asarray(t.data, np.int64) for t in ts[3:])
            for i in range(n + 1):
                if widths[i] > 0 and (starts[i] < 0 or wstarts[i] < 0 or starts[i] + widths[i] > ts[0].num_elements
                                      or wstarts[i] + widths[i] > min(ts[1].num_elements, ts[2].num_elements)):
                    raise ctx.fail(op, f"channel {i} reads outside the spectrum or the weights")
            return FilterBankData(n, work, Taps.build(*(t.data for t in ts[1:]), n))
        return FilterBankData(n, work)

    def invoke(self, ctx, op, data: FilterBankData) -> None:
        if data.taps is not None:
            data.taps.sums(ctx.input(op, 0), data.work)
            out = ctx.output(op, 0)
            out[...] = data.work[1:1 + out.shape[0]]
            return
        spectrum = [int(v) for v in ctx.input(op, 0)]
        weights, unweights, starts, wstarts, widths = ([int(v) for v in ctx.input(op, k)] for k in range(1, 6))
        w = u = 0
        work = data.work
        for i in range(data.channels + 1):
            f0, w0 = starts[i], wstarts[i]
            for j in range(widths[i]):
                s = spectrum[f0 + j]
                w = (w + (weights[w0 + j] & U64) * s) & U64
                u = (u + (unweights[w0 + j] & U64) * s) & U64
            work[i] = w
            w, u = u, 0
        out = ctx.output(op, 0)
        out[...] = work[1:1 + out.shape[0]]


KERNEL = FilterBank()
