"""Exact batch evaluation speed: per-sample time of ``Interpreter.invoke_batch`` (batch 64, optimized kernels) against
the TFLM wheel's single invokes (set_input + invoke + get_output per sample) and microinterp's own single invokes.
Same process, interleaved rounds, medians, one BLAS thread; the outputs are checked equal to the wheel's.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_batch.py [--rounds N] [--batch 64]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

import microinterp as mi

ZOO = Path(__file__).resolve().parents[2] / "shared" / "models"
MODELS = ("vww_96_int8.tflite", "person_detect.tflite", "kws_ref_model.tflite", "micro_speech_quantized.tflite")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    from tflite_micro import runtime

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}; one BLAS thread; batch "
          f"{args.batch}, {args.rounds} rounds, medians per sample")
    print(f"{'model':32s} {'wheel ms':>9s} {'single ms':>10s} {'batch ms':>9s} {'vs wheel':>9s} {'vs single':>9s}")
    for name in MODELS:
        path = ZOO / name
        if not path.exists():
            continue
        it = mi.Interpreter(path)
        d = it.get_input_details(0)
        x = np.random.default_rng(0).integers(-128, 128, size=(args.batch, *d["shape"][1:])).astype(d["dtype"])
        wheel = runtime.Interpreter.from_bytes(path.read_bytes(), arena_size=4 << 20)
        ys = it.invoke_batch(x, args.batch)      # builds and checks the batch-64 interpreter once
        t_w, t_s, t_b = [], [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for k in range(args.batch):
                wheel.reset()
                wheel.set_input(x[k:k + 1], 0)
                wheel.invoke()
                w = wheel.get_output(0)
            t_w.append((time.perf_counter() - t0) / args.batch)
            assert np.array_equal(w, ys[-1:])
            t0 = time.perf_counter()
            for k in range(args.batch):
                it.reset()
                it.set_input(x[k:k + 1])
                it.invoke()
                it.get_output()
            t_s.append((time.perf_counter() - t0) / args.batch)
            t0 = time.perf_counter()
            ys = it.invoke_batch(x, args.batch)
            t_b.append((time.perf_counter() - t0) / args.batch)
        w, s, b = (float(np.median(v)) * 1e3 for v in (t_w, t_s, t_b))
        print(f"{name:32s} {w:9.3f} {s:10.3f} {b:9.3f} {w / b:8.1f}x {s / b:8.1f}x", flush=True)


if __name__ == "__main__":
    main()
