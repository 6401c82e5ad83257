"""Host speed of out-of-core execution against the default (optimized) in-memory interpreter.

    python benchmarks/bench_pager.py [--rounds N] [--models mobilenet_v2,vgg16,alexnet,mobilenet_v2_built]
                                     [--arena 512000] [--output FILE]

For each model: one in-memory interpreter (default optimized kernels, exact arena) and one out-of-core interpreter
(``arena=512_000``, or half the in-memory plan when that is smaller, ``backing=<temp file>``: optimized band
functions, fused chains), the same random input, outputs checked bit for bit, then ``--rounds`` interleaved whole
calls (set_input + invoke + get_output) of each after a warm-up, one BLAS thread; the medians, their ratio and the SD
traffic of one out-of-core invoke are printed and (with ``--output``) appended as a markdown table.

Then (after the timed rounds, so the timers do not touch them) where an out-of-core invoke's host time goes, as
medians over ``--rounds`` more invokes: ``kernels`` (the band functions on the tiles), ``SD read`` / ``SD write``
(``SdImage.read_run`` / ``write_run``: table checks, the IO through the page cache, a crc32 per record) and
``engine`` (the rest: reading plans, pool views, fused-PAD bands, the counters).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import microinterp as mi
from microinterp.testing.models import alexnet, mobilenet_v2, vgg16

MODELS_DIR = ROOT.parent / "shared" / "models"


#: ImageNet-size networks built in-process (random int8 weights). The built MobileNet v1 is left out: with random
#: weights its 1000 logits come out nearly equal and its softmax stops on TFLM's reciprocal-exponent check.
BUILT = {"vgg16": vgg16, "alexnet": alexnet, "mobilenet_v2_built": mobilenet_v2}


def _model(name: str, tmp: str) -> str:
    if name == "mobilenet_v2":
        return str(MODELS_DIR / "mobilenet_v2_quantized_1x3x224x224.tflite")
    if name in BUILT:
        path = os.path.join(tmp, f"{name}.tflite")
        with open(path, "wb") as f:
            f.write(BUILT[name]())
        return path
    return name


def bench(name: str, rounds: int, arena: int, tmp: str) -> dict:
    path = _model(name, tmp)
    mem = mi.Interpreter(path)
    arena = min(arena, mem.arena_used_bytes // 2)       # a model that fits the arena pages at half its plan
    ooc = mi.Interpreter(path, arena=arena, backing=os.path.join(tmp, f"{Path(path).stem}.img"))
    d = mem.get_input_details(0)
    x = np.random.default_rng(0).integers(-128, 128, size=tuple(d["shape"]), dtype=np.int8)
    for it in (mem, ooc):
        it.set_input(x)
        it.invoke()
    exact = np.array_equal(mem.get_output(), ooc.get_output())
    times = {"mem": [], "ooc": []}
    for r in range(rounds):
        for key in (("mem", "ooc") if r % 2 == 0 else ("ooc", "mem")):
            it = mem if key == "mem" else ooc
            t0 = time.perf_counter()        # a whole call: set_input + invoke + get_output
            it.set_input(x)
            it.invoke()
            it.get_output()
            times[key].append(time.perf_counter() - t0)
    totals = ooc.profile_json(tiles=False)["totals"]
    parts = breakdown(ooc, rounds)
    ooc.close()
    m, o = statistics.median(times["mem"]), statistics.median(times["ooc"])
    return {"model": name, "in_memory_ms": m * 1e3, "out_of_core_ms": o * 1e3, "ratio": o / m, "exact": exact,
            "arena": arena, "in_memory_arena": mem.arena_used_bytes, "tiles": totals["tiles"],
            "sd_read_mb": totals["sd_read_bytes"] / 1e6, "sd_write_mb": totals["sd_write_bytes"] / 1e6,
            "sd_commands": totals["sd_read_commands"] + totals["sd_write_commands"],
            "flash_mb": totals["flash_read_bytes"] / 1e6, "parts_ms": parts}


def breakdown(ooc, rounds: int) -> dict[str, float]:
    """Median milliseconds per out-of-core invoke in the kernels, SD reads, SD writes and the rest (engine)."""
    pager = ooc.runtime
    spent = {"kernels": 0.0, "SD read": 0.0, "SD write": 0.0}

    def timed(fn, part):
        def call(*args):
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                spent[part] += time.perf_counter() - t0
        return call

    targets = ((pager.engine.execution, "compute", "kernels"), (pager.sd, "read_run", "SD read"),
               (pager.sd, "write_run", "SD write"))
    for obj, attr, part in targets:
        setattr(obj, attr, timed(getattr(obj, attr), part))
    samples = []
    try:
        for _ in range(rounds):
            for k in spent:
                spent[k] = 0.0
            t0 = time.perf_counter()
            ooc.invoke()
            total = time.perf_counter() - t0
            samples.append({**spent, "engine": total - sum(spent.values()), "total": total})
    finally:
        for obj, attr, _ in targets:
            delattr(obj, attr)          # back to the class's method
    return {k: statistics.median(s[k] for s in samples) * 1e3 for k in samples[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--models", default="mobilenet_v2,vgg16,alexnet,mobilenet_v2_built")
    ap.add_argument("--arena", type=int, default=512_000)
    ap.add_argument("--output", help="append the markdown table to this file")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            rows.append(bench(name.strip(), args.rounds, args.arena, tmp))
            r = rows[-1]
            print(f"{r['model']:<14} in-memory {r['in_memory_ms']:9.1f} ms  out-of-core {r['out_of_core_ms']:9.1f} ms  "
                  f"ratio {r['ratio']:.2f}  exact {r['exact']}  tiles {r['tiles']}  SD read {r['sd_read_mb']:.1f} MB "
                  f"write {r['sd_write_mb']:.1f} MB ({r['sd_commands']} commands)  flash {r['flash_mb']:.1f} MB",
                  flush=True)
            print(f"{'':<14} out-of-core invoke: " + ", ".join(f"{k} {v:.1f} ms" for k, v in r["parts_ms"].items()),
                  flush=True)
    if args.output:
        machine = platform.processor() or platform.machine()
        title = (f"\n### Out-of-core host speed ({time.strftime('%Y-%m-%d')}, {machine}, {os.cpu_count()} cores, "
                 f"{args.rounds} interleaved rounds, medians)\n")
        head = ("| model | arena | in-memory arena | in-memory ms | out-of-core ms | ratio | tiles | SD read MB | "
                "SD write MB | SD commands | flash MB | exact |")
        lines = [title, head, "|---" * 12 + "|"]
        for r in rows:
            lines.append(f"| {r['model']} | {r['arena']} | {r['in_memory_arena']} | {r['in_memory_ms']:.1f} | "
                         f"{r['out_of_core_ms']:.1f} | {r['ratio']:.2f} | {r['tiles']} | {r['sd_read_mb']:.1f} | "
                         f"{r['sd_write_mb']:.1f} | {r['sd_commands']} | {r['flash_mb']:.1f} | {r['exact']} |")
        parts = list(rows[0]["parts_ms"])
        lines += ["", "Where an out-of-core invoke's host time goes (ms, medians):", "",
                  "| model | " + " | ".join(parts) + " |", "|---" * (len(parts) + 1) + "|"]
        for r in rows:
            lines.append(f"| {r['model']} | " + " | ".join(f"{r['parts_ms'][k]:.1f}" for k in parts) + " |")
        with open(args.output, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
