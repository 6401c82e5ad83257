"""``microinterp optimize`` measured by the pinned TFLM wheel: the smallest ``arena_size`` (16-byte steps) with which
the wheel allocates and invokes each model before and after the rewrite, its outputs on seeded inputs (identical or
not), the firmware arena of every Cortex-M core (CMSIS-NN builds, microinterp's byte-exact replay), and the price:
extra MACs and the cost model's extra cycles.

    python benchmarks/bench_optimize.py [--regroup SECONDS] [MODEL ...]  # default: the zoo's and population's CNNs

Prints one markdown row per model (``docs/optimize.md`` keeps the latest table). Models that stock TFLM cannot run,
or with nothing to split, get a row saying so.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import microinterp as mi
from microinterp.apps.optimize import rewrite
from microinterp.errors import MicroInterpError
from microinterp.memory32 import estimate_arena
from microinterp.targets import CORES
from microinterp.testing.device import seeded_inputs
from microinterp.testing.tflm import TflmRunner, tflm_smallest_arena

SHARED = Path(__file__).resolve().parents[2] / "shared"


def default_models() -> list[Path]:
    zoo = [SHARED / "models" / f"{n}.tflite" for n in ("person_detect", "vww_96_int8",
                                                          "mobilenet_v2_quantized_1x3x224x224")]
    population = []
    for p in sorted((SHARED / "population").glob("*.tflite")):
        try:
            m = mi.load_model(p)
        except MicroInterpError:
            continue
        names = {op.name for op in m.main.operators}
        if names & {"CONV_2D", "DEPTHWISE_CONV_2D"} and len(m.main.operators) >= 5:
            population.append(p)
    return [p for p in zoo if p.exists()] + population


def same_outputs(a: bytes, b: bytes, seeds=(0, 1)) -> bool:
    it = mi.Interpreter(a)
    for seed in seeds:
        xs = seeded_inputs(it, seed)
        ra, rb = TflmRunner(a, preserve_all=False), TflmRunner(b, preserve_all=False)
        ra.run(xs)
        rb.run(xs)
        if not all(np.array_equal(ra.output(k), rb.output(k)) for k in range(it.num_outputs)):
            return False
    return True


def row(path: Path, regroup_s: float = 0.0) -> str:
    data = path.read_bytes()
    t = time.perf_counter()
    try:
        w = rewrite(data, regroup_s=regroup_s)
    except MicroInterpError as e:           # TFLM cannot run it either (uint8 convolutions, unsupported types)
        return f"| {path.name} | not run: {type(e).__name__}: {str(e)[:80]} | | | | | | | |"
    seconds = time.perf_counter() - t
    xs = seeded_inputs(mi.Interpreter(data), 0)
    try:
        before = tflm_smallest_arena(data, xs)
    except RuntimeError:
        return f"| {path.name} | the wheel does not run it | | | | | |"
    after = tflm_smallest_arena(w.data, xs)       # with no cut, the written offline plan alone
    cores = []
    for core in CORES:
        try:
            cores.append(f"{core.removeprefix('cortex-')} {estimate_arena(data, target=core).total_bytes // 1024}"
                         f"→{estimate_arena(w.data, target=core).total_bytes // 1024}")
        except MicroInterpError:
            cores.append(f"{core.removeprefix('cortex-')} –")
    same = same_outputs(data, w.data)
    note = "; ".join(c.describe() for c in w.cuts) or w.message
    return (f"| {path.name} | {before:,} | {after:,} | {before / after:.2f}x | {'identical' if same else 'DIFFER'} | "
            f"{w.extra_macs:+.1%} / {w.extra_cycles:+.1%} | {', '.join(cores)} KB | {seconds:.0f} s | {note} |")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="microinterp optimize measured by the pinned TFLM wheel")
    p.add_argument("--regroup", type=float, default=0.0, help="seconds of optimize --regroup (default 0)")
    p.add_argument("models", nargs="*", type=Path, help="default: the zoo's CNNs and the population's")
    args = p.parse_args(argv)
    models = args.models or default_models()
    print("| model | wheel arena before | after | ratio | outputs | extra MACs / cycles | firmware arena per core "
          "(CMSIS-NN) | search | cuts |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in models:
        print(row(path, args.regroup), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
