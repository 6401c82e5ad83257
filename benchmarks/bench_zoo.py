"""Speed of microinterp (optimized and reference kernels) against the TFLM wheel, same process, interleaved.

For every model in ../shared/models (and a few generated ones): build the three interpreters, warm up, then run
``--rounds`` rounds; in each round every engine does one invoke on the same input, in rotating order. Reports median
times and the ratio wheel / microinterp (> 1 means microinterp is faster), and writes the table with the machine's
description to docs/benchmarks.md.

    python benchmarks/bench_zoo.py [--rounds 15] [--models person_detect,vww_96_int8] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import microinterp as mi
from microinterp.testing import models as netgen
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import TflmRunner

ZOO = ROOT.parent / "shared" / "models"
GENERATED = {"demo_cnn (generated)": lambda: netgen.demo_cnn(0)}


def machine() -> str:
    import numpy

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, NumPy {numpy.__version__}, "
            f"{platform.system()} {platform.release()}")


def bench(name: str, data: bytes, rounds: int) -> dict:
    engines = {
        "optimized": mi.Interpreter(data, optimized=True),
        "reference": mi.Interpreter(data, optimized=False),
    }
    tflm = TflmRunner(data, preserve_all=False)
    rng = np.random.default_rng(0)
    inputs = []
    for i in range(engines["optimized"].num_inputs):
        d = engines["optimized"].get_input_details(i)
        type_name = {np.int8: "INT8", np.int16: "INT16", np.uint8: "UINT8", np.float32: "FLOAT32"}[d["dtype"]]
        inputs.append(random_tensor(rng, d["shape"], type_name))

    def run_mi(it):
        for i, x in enumerate(inputs):
            it.set_input(x, i)
        it.invoke()

    runners = {k: (lambda it=it: run_mi(it)) for k, it in engines.items()}
    runners["tflm"] = lambda: tflm.run(inputs)
    times = {k: [] for k in runners}
    for fn in runners.values():  # warm-up
        fn()
        fn()
    order = list(runners)
    for r in range(rounds):
        for k in order[r % 3:] + order[:r % 3]:
            t0 = time.perf_counter()
            runners[k]()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"model": name, **{f"{k}_ms": v * 1e3 for k, v in med.items()},
            "speedup_optimized": med["tflm"] / med["optimized"], "speedup_reference": med["tflm"] / med["reference"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--models", default="", help="comma-separated model names (default: all)")
    p.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = p.parse_args(argv)
    wanted = {m.strip() for m in args.models.split(",") if m.strip()}
    cases = [(path.stem, path.read_bytes()) for path in sorted(ZOO.glob("*.tflite"))] if ZOO.exists() else []
    cases += [(name, fn()) for name, fn in GENERATED.items()]
    if wanted:
        cases = [c for c in cases if c[0] in wanted]
    rows = []
    for name, data in cases:
        row = bench(name, data, args.rounds)
        rows.append(row)
        print(f"{name:<42} tflm {row['tflm_ms']:9.3f} ms  optimized {row['optimized_ms']:9.3f} ms "
              f"(x{row['speedup_optimized']:.2f})  reference {row['reference_ms']:9.3f} ms "
              f"(x{row['speedup_reference']:.2f})", flush=True)
    geo_opt = float(np.exp(np.mean([np.log(r["speedup_optimized"]) for r in rows])))
    geo_ref = float(np.exp(np.mean([np.log(r["speedup_reference"]) for r in rows])))
    print(f"geometric mean speed-up: optimized x{geo_opt:.2f}, reference x{geo_ref:.2f}")
    if not args.no_write:
        write_doc(rows, geo_opt, geo_ref, args.rounds)
    return 0


def write_doc(rows, geo_opt, geo_ref, rounds) -> None:
    lines = [
        "# Benchmarks",
        "",
        ("Produced by `python benchmarks/bench_zoo.py` (same process, interleaved, rotating order, 2 warm-up "
         f"invokes, {rounds} rounds, medians). Ratio = TFLM wheel time / microinterp time: > 1 means microinterp is "
         "faster. Host timings on shared machines are noisy; the ratios are what to read."),
        "",
        f"Machine: {machine()}.",
        f"Date: {time.strftime('%Y-%m-%d')}.",
        "",
        "| model | TFLM wheel ms | microinterp optimized ms | ratio | microinterp reference ms | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['tflm_ms']:.3f} | {r['optimized_ms']:.3f} | {r['speedup_optimized']:.2f} "
                     f"| {r['reference_ms']:.3f} | {r['speedup_reference']:.2f} |")
    lines += ["", f"Geometric mean ratio: optimized {geo_opt:.2f}, reference {geo_ref:.2f}.", ""]
    (ROOT / "docs" / "benchmarks.md").write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
