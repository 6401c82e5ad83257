"""Override FULLY_CONNECTED with a kernel of your own, and run the model in memory and out of core.

The override counts its calls and delegates the arithmetic to microinterp's reference kernel. It declares no band
capability, so it keeps the one of the kernel it replaces: out of core its filter streams through the arena in
output-channel groups, exactly as the built-in kernel's does. (An override whose ``invoke`` computes something else
than the kernel it replaces says ``bands = None``: its op then runs whole.) Run from the repository root::

    python examples/kernel_override/fc_override.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import microinterp as mi
from microinterp.kernels import REFERENCE_KERNELS
from microinterp.testing.models import QuantNet

REFERENCE_FC = REFERENCE_KERNELS["FULLY_CONNECTED"]


class CountingFullyConnected(mi.Kernel):
    """A FULLY_CONNECTED kernel: ``prepare(ctx, op)`` once per op, ``invoke(ctx, op, data)`` per run.

    - ``op`` is the operator (:class:`microinterp.model.Operator`): ``op.index``, ``op.key`` ("FULLY_CONNECTED"),
      ``op.inputs`` / ``op.outputs`` (tensor indices, -1 for an absent optional input) and ``op.options`` (the
      builtin options, e.g. ``op.options["fused_activation_function"]``).
    - ``ctx`` at prepare is a :class:`microinterp.kernels.base.PrepareContext`: ``ctx.input(op, k)`` /
      ``ctx.output(op, k)`` give the tensors (shape, type, quantization), ``ctx.constant(op, k)`` a constant's data,
      ``ctx.request_scratch(op, nbytes)`` a planned scratch buffer, ``ctx.fail(op, rule)`` refuses the op as TFLM's
      Prepare would.
    - ``data`` is whatever ``prepare`` returned (TFLM's OpData: multipliers, shifts, shapes), passed back to every
      ``invoke``; here the reference kernel's own.
    - ``ctx`` at invoke is a :class:`microinterp.kernels.base.InvokeContext`: ``ctx.input(op, k)`` and
      ``ctx.output(op, k)`` are NumPy views of the arena (write the result into the output view).
    """

    def __init__(self) -> None:
        self.calls = 0

    def prepare(self, ctx, op):
        return REFERENCE_FC.prepare(ctx, op)

    def invoke(self, ctx, op, data):
        self.calls += 1
        REFERENCE_FC.invoke(ctx, op, data)


ARENA = 40_000


def small_classifier() -> bytes:
    """An int8 classifier built in-process: three strided 3x3 convolutions (64x64x3 -> 8x8x128), then FC 8192 -> 256
    (a 2 MB filter), FC 256 -> 10 and SOFTMAX. In memory its plan needs about 50 KB of arena."""
    net = QuantNet((1, 64, 64, 3), seed=0, name="small classifier")
    for filters in (32, 64, 128):
        net.conv(filters, 3, stride=2)
    net.flatten()
    net.fc(256)
    net.fc(10, act="NONE")
    net.softmax()
    return net.build()


def main() -> dict:
    model = small_classifier()
    x = np.random.default_rng(0).integers(-128, 128, (1, 64, 64, 3), dtype=np.int8)
    fc = CountingFullyConnected()
    resolver = mi.OpResolver()
    resolver.register("FULLY_CONNECTED", fc, replace=True)

    memory = mi.Interpreter(model, resolver=resolver)
    memory.set_input(x)
    memory.invoke()
    print(f"in memory: {memory.arena_used_bytes:,} bytes of arena, FC calls {fc.calls}")

    # out of core in 40 KB, every weight on the SD image (flash=0): the 2 MB filter streams in channel groups
    with tempfile.TemporaryDirectory() as tmp, mi.Interpreter(model, arena=ARENA, backing=Path(tmp) / "sd.img",
                                                              flash=0, resolver=resolver) as it:
        it.set_input(x)
        it.invoke()
        fc_record = next(r for r in it.profile if r.op == "FULLY_CONNECTED")
        same = np.array_equal(it.get_output(), memory.get_output())
        print(f"out of core in {ARENA:,} bytes: the 2 MB FULLY_CONNECTED runs in {fc_record.mode} mode, "
              f"{fc_record.sd_read_bytes:,} bytes read from the SD image; outputs "
              f"{'identical' if same else 'DIFFER'}: {it.get_output().reshape(-1).tolist()}")
        return {"same": same, "mode": fc_record.mode, "out_of_core": it.out_of_core, "calls": fc.calls}


if __name__ == "__main__":
    main()
