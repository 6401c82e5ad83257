"""BATCH_MATMUL speed: microinterp optimized, microinterp reference and the TFLM wheel on attention-sized int8
products (Q K^T and scores V of 4 heads), whole calls (set_input + invoke + get_output), interleaved, medians.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_batch_matmul.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from microinterp import Interpreter
from microinterp.testing.builder import ModelBuilder

CASES = {  # name: (lhs shape, rhs shape, adj_y)
    "QK^T 4x64x16 . 4x64x16^T": ((1, 4, 64, 16), (1, 4, 64, 16), True),
    "scores.V 4x64x64 . 4x64x16": ((1, 4, 64, 64), (1, 4, 64, 16), False),
}


def model(lhs, rhs, adj_y):
    b = ModelBuilder()
    out = (*lhs[:-1], rhs[-2] if adj_y else rhs[-1])
    x = b.add_tensor("lhs", lhs, "INT8", scale=0.02, zero_point=3)
    y = b.add_tensor("rhs", rhs, "INT8", scale=0.03, zero_point=-2)
    z = b.add_tensor("out", out, "INT8", scale=0.5, zero_point=1)
    b.add_op("BATCH_MATMUL", [x, y], [z], adj_x=False, adj_y=adj_y)
    b.inputs, b.outputs = [x, y], [z]
    return b.build()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    from tflite_micro import runtime

    rng = np.random.default_rng(0)
    print(f"{'case':32s} {'optimized ms':>13s} {'reference ms':>13s} {'wheel ms':>9s} {'wheel/opt':>9s} {'wheel/ref':>9s}")
    for name, (lhs, rhs, adj_y) in CASES.items():
        data = model(lhs, rhs, adj_y)
        xs = [rng.integers(-128, 128, size=s).astype(np.int8) for s in (lhs, rhs)]
        runners = {"opt": Interpreter(data), "ref": Interpreter(data, optimized=False),
                   "wheel": runtime.Interpreter.from_bytes(data, arena_size=1 << 20)}
        times = {k: [] for k in runners}
        for _ in range(args.rounds):
            for key, it in runners.items():
                t = time.perf_counter()
                for i, x in enumerate(xs):
                    it.set_input(x, i)
                it.invoke()
                it.get_output(0)
                times[key].append(time.perf_counter() - t)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        print(f"{name:32s} {med['opt']:13.3f} {med['ref']:13.3f} {med['wheel']:9.3f} "
              f"{med['wheel'] / med['opt']:9.1f} {med['wheel'] / med['ref']:9.1f}")


if __name__ == "__main__":
    main()
