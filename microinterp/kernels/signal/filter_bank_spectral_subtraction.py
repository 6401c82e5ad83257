"""SignalFilterBankSpectralSubtraction: noise reduction with a running noise estimate per channel
(``signal/src/filter_bank_spectral_subtraction.cc``, ``signal/micro/kernels/filter_bank_spectral_subtraction.cc``).

Options: ``alternate_one_minus_smoothing``, ``alternate_smoothing``, ``clamping``, ``min_signal_remaining``,
``num_channels``, ``one_minus_smoothing``, ``smoothing``, ``smoothing_bits``, ``spectral_subtraction_bits``.
Inputs/outputs (TFLM's Prepare): 1-D UINT32 in; 1-D UINT32 output and a copy of the noise estimate. State: the noise
estimate, ``num_channels`` uint32 in the tail, zeroed at prepare and by ``reset()``; it carries across invokes.
Per channel (even channels use ``smoothing``, odd ones the ``alternate_`` pair), in uint32/uint64 arithmetic:
``s = x << smoothing_bits``; ``noise = (s * smoothing + noise * one_minus) >> spectral_subtraction_bits``;
``e = min(noise, s)`` (with ``clamping`` the estimate itself is clamped); ``floor = (x * min_signal_remaining) >>
spectral_subtraction_bits``; ``out = max((s - e) >> smoothing_bits, floor)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._qutil import copyto
from ..contract import STATEFUL, Kernel
from ._common import U32, options

KEYS = ("alternate_one_minus_smoothing", "alternate_smoothing", "clamping", "min_signal_remaining", "num_channels",
        "one_minus_smoothing", "smoothing", "smoothing_bits", "spectral_subtraction_bits")


@dataclass(frozen=True)
class SpectralSubtractionData:
    config: dict
    noise: np.ndarray = field(repr=False)      # uint32 state in the tail
    smoothing: tuple[np.ndarray, np.ndarray] = field(repr=False, default=())     # :func:`_alternating`, once


class FilterBankSpectralSubtraction(Kernel):
    ops = ("SignalFilterBankSpectralSubtraction",)
    traits = STATEFUL
    def prepare(self, ctx, op) -> SpectralSubtractionData:
        o = options(ctx, op, KEYS)
        ctx.check_io_count(op, 1, 2)
        x, y, ne = ctx.require_input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        if any(len(t.shape) != 1 or t.type_name != "UINT32" for t in (x, y, ne)):
            raise ctx.fail(op, "1-D UINT32 input, output and noise estimate")
        n = int(o["num_channels"])
        if n < 0 or x.num_elements < n or y.num_elements < n or ne.num_elements < n:
            raise ctx.fail(op, f"{n} channels do not fit the tensors")
        cfg = {k: int(v) for k, v in o.items()}
        if not (0 <= cfg["smoothing_bits"] < 32 and 0 <= cfg["spectral_subtraction_bits"] < 64):
            raise ctx.fail(op, "shift amounts out of range")
        noise = ctx.arena.allocate_persistent(4 * n).view(np.uint32) if n else np.zeros(0, np.uint32)
        noise[...] = 0
        return SpectralSubtractionData(cfg, noise, _alternating(cfg, n))

    def reset(self, ctx, op, data: SpectralSubtractionData) -> None:
        data.noise[...] = 0

    def bind(self, ctx, op, data: SpectralSubtractionData):
        """On fixed views: :meth:`invoke_streams`'s arithmetic for the one noise estimate on kept uint64 buffers (no
        temporaries, constants as 0-d arrays)."""
        c, n = data.config, data.config["num_channels"]
        x, out, ne = ctx.input(op, 0)[:n], ctx.output(op, 0)[:n], ctx.output(op, 1)[:n]
        noise, (smoothing, one_minus) = data.noise, data.smoothing
        sb, ssb = np.array(c["smoothing_bits"], np.uint64), np.array(c["spectral_subtraction_bits"], np.uint64)
        remaining, clamping = np.array(c["min_signal_remaining"] & U32, np.uint64), bool(c["clamping"])
        v, sv, a, b = (np.empty(n, np.uint64) for _ in range(4))
        u32 = np.array(U32, np.uint64)

        def call() -> None:
            copyto(v, x)
            np.left_shift(v, sb, sv)
            np.bitwise_and(sv, u32, sv)                  # s
            np.multiply(sv, smoothing, a)
            copyto(b, noise)
            np.multiply(b, one_minus, b)
            np.add(a, b, a)                              # uint64, wrapping as C's
            np.right_shift(a, ssb, a)
            np.bitwise_and(a, u32, a)                    # the new estimate
            if clamping:                                     # the estimate clamped to s, and kept so
                np.minimum(a, sv, out=a)
                copyto(noise, a, casting="unsafe")
            else:
                copyto(noise, a, casting="unsafe")
                np.minimum(a, sv, out=a)                     # min(estimate, s)
            np.multiply(v, remaining, b)
            np.right_shift(b, ssb, b)
            np.bitwise_and(b, u32, b)                    # the floor
            np.subtract(sv, a, a)                        # s - min(estimate, s): no wrap to cut
            np.right_shift(a, sb, a)
            np.maximum(b, a, out=a)
            copyto(out, a, casting="unsafe")
            copyto(ne, noise)
        return call

    def invoke(self, ctx, op, data: SpectralSubtractionData) -> None:
        self.invoke_streams(ctx, op, data, data.noise)

    def stream_state(self, data: SpectralSubtractionData, streams: int) -> np.ndarray:
        """Streams (:mod:`..streams`): a noise estimate per stream, zeroed as prepare zeroes the one."""
        return np.zeros((streams, data.config["num_channels"]), np.uint32)

    def reset_streams(self, data: SpectralSubtractionData, state: np.ndarray) -> None:
        state[...] = 0

    def invoke_streams(self, ctx, op, data: SpectralSubtractionData, noise: np.ndarray) -> None:
        """Every channel (and stream) at once -- they are independent --, in uint64 as the C code computes: products
        of uint32 values and their uint64 sum wrap modulo 2^64, each result is cut to uint32. ``noise`` is the
        state: the tail buffer of one stream, or one row per stream."""
        c = data.config
        n = c["num_channels"]
        x, out, ne = ctx.input(op, 0), ctx.output(op, 0), ctx.output(op, 1)
        sb, ssb = np.uint64(c["smoothing_bits"]), np.uint64(c["spectral_subtraction_bits"])
        smoothing, one_minus = data.smoothing
        v = x[..., :n].astype(np.uint64)
        s = (v << sb) & _U32
        est = ((s * smoothing + noise.astype(np.uint64) * one_minus) >> ssb) & _U32
        over = est > s
        noise[...] = np.where(over, s, est) if c["clamping"] else est
        est = np.where(over, s, est)
        floor = ((v * np.uint64(c["min_signal_remaining"] & U32)) >> ssb) & _U32
        out[..., :n] = np.maximum(floor, ((s - est) & _U32) >> sb)
        ne[..., :n] = noise


_U32 = np.uint64(U32)


def _alternating(c: dict, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per channel: ``smoothing`` and ``one_minus_smoothing`` (even channels) or their ``alternate_`` pair (odd)."""
    even = (np.arange(n) & 1) == 0
    pick = (lambda a, b: np.where(even, np.uint64(c[a] & U32), np.uint64(c[b] & U32)))
    return (pick("smoothing", "alternate_smoothing"),
            pick("one_minus_smoothing", "alternate_one_minus_smoothing"))


KERNEL = FilterBankSpectralSubtraction()
