"""Exact batch evaluation speed: per-sample time of ``Interpreter.invoke_batch`` (batch 64, optimized kernels) against
the TFLM wheel's single invokes (set_input + invoke + get_output per sample) and microinterp's own single invokes.
Same process, interleaved rounds, medians, one BLAS thread; the outputs are checked equal to the wheel's.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_batch.py [--rounds N] [--batch 64] [--threads 2]``
(``--threads N`` adds ``invoke_batch(threads=N)`` on N chunks of ``batch`` samples: one per thread).
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
MODELS = ("vww_96_int8.tflite", "person_detect.tflite", "kws_ref_model.tflite", "micro_speech_quantized.tflite",
          "trained_lstm_int8.tflite")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="also time invoke_batch(threads=N) on N chunks")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo files (default: all)")
    args = p.parse_args()
    from tflite_micro import runtime

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}; one BLAS thread; batch "
          f"{args.batch}, {args.rounds} rounds, medians per sample")
    threads = f" {f'{args.threads} thr ms':>9s} {'vs wheel':>9s}" if args.threads > 1 else ""
    print(f"{'model':32s} {'wheel ms':>9s} {'single ms':>10s} {'batch ms':>9s} {'vs wheel':>9s} {'vs single':>9s}"
          + threads)
    for name in args.models.split(","):
        path = ZOO / name
        if not path.exists():
            continue
        it = mi.Interpreter(path)
        d = it.get_input_details(0)
        x = np.random.default_rng(0).integers(-128, 128, size=(args.batch, *d["shape"][1:])).astype(d["dtype"])
        wheel = runtime.Interpreter.from_bytes(path.read_bytes(), arena_size=4 << 20)
        ys = it.invoke_batch(x, args.batch)      # builds and checks the batch-64 interpreter once
        xt = np.concatenate([x] * args.threads)
        if args.threads > 1:
            it.invoke_batch(xt, args.batch, threads=args.threads)    # and one per thread
        t_w, t_s, t_b, t_t = [], [], [], []
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
            if args.threads > 1:        # threads x batch samples, one chunk per thread
                t0 = time.perf_counter()
                yt = it.invoke_batch(xt, args.batch, threads=args.threads)
                t_t.append((time.perf_counter() - t0) / len(xt))
                assert np.array_equal(yt[:args.batch], ys)
        w, s, b = (float(np.median(v)) * 1e3 for v in (t_w, t_s, t_b))
        line = f"{name:32s} {w:9.3f} {s:10.3f} {b:9.3f} {w / b:8.1f}x {s / b:8.1f}x"
        if args.threads > 1:
            t = float(np.median(t_t)) * 1e3
            line += f" {t:9.3f} {w / t:8.1f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
