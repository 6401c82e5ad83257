"""Start-up time and host memory of an in-memory Interpreter on ImageNet-size int8 networks built in-process
(issue 28: construction <= 1 s, peak resident memory <= 3 x (model file + arena) + 300 MB).

    python benchmarks/bench_startup.py                    # vgg16 and alexnet, prints a markdown table
    python benchmarks/bench_startup.py --models alexnet

Per model, in a fresh process (so the peak is this model's): write the model to a temporary file, then time
``Interpreter(path)`` (the model memory-mapped, every op prepared, the arena planned), run one invoke on a random
input, and read the process's peak resident set (VmHWM) after each. The TFLM wheel's construction of the same
file is timed too, for reference. One BLAS thread.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

MODELS = ("vgg16", "alexnet")


def _peak_mb() -> float:
    """This process's peak resident set: VmHWM (per address space, so a child does not inherit its parent's, as
    ``ru_maxrss`` does across fork and exec), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(name: str, path: str) -> dict:
    import numpy as np

    import microinterp as mi

    base = _peak_mb()
    t0 = time.perf_counter()
    it = mi.Interpreter(path)
    built = time.perf_counter() - t0
    peak_build = _peak_mb()
    d = it.get_input_details()[0]
    it.set_input(np.random.default_rng(0).integers(-128, 128, d["shape"]).astype(d["dtype"]))
    t0 = time.perf_counter()
    it.invoke()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    it.invoke()
    second = time.perf_counter() - t0
    file_mb = os.path.getsize(path) / 2**20
    arena_mb = it.arena_size / 2**20
    return {"model": name, "file_mb": file_mb, "arena_mb": arena_mb, "build_s": built, "first_invoke_s": first,
            "invoke_s": second, "baseline_mb": base, "peak_build_mb": peak_build, "peak_mb": _peak_mb(),
            "goal_mb": 3 * (file_mb + arena_mb) + 300}


def wheel_build(path: str) -> float | None:
    try:
        from microinterp.testing.tflm import TflmRunner
    except ImportError:
        return None
    t0 = time.perf_counter()
    TflmRunner(path, preserve_all=False)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        name, path = args.one
        result = measure(name, path)
        result["wheel_build_s"] = wheel_build(path)
        print(json.dumps(result))
        return 0
    from microinterp.testing import models as netgen

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in [m for m in args.models.split(",") if m]:
            path = os.path.join(tmp, f"{name}.tflite")
            Path(path).write_bytes(getattr(netgen, name)(0))
            proc = subprocess.run([sys.executable, __file__, "--one", name, path], capture_output=True, text=True,
                                  check=False)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                print(f"{name}: failed: {proc.stderr.strip()[-300:]}")
                continue
            rows.append(json.loads(lines[-1]))
    print("| model | file MB | arena MB | Interpreter() s | wheel build s | first invoke s | invoke s | peak RSS MB "
          "(after build / after invoke) | goal MB | within |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        wheel = f"{r['wheel_build_s']:.2f}" if r.get("wheel_build_s") is not None else "n/a"
        print(f"| {r['model']} | {r['file_mb']:.0f} | {r['arena_mb']:.1f} | {r['build_s']:.2f} | {wheel} | "
              f"{r['first_invoke_s']:.2f} | {r['invoke_s']:.2f} | {r['peak_build_mb']:.0f} / {r['peak_mb']:.0f} | "
              f"{r['goal_mb']:.0f} | {'yes' if r['peak_mb'] <= r['goal_mb'] and r['build_s'] <= 1 else 'no'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
