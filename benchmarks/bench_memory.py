"""Memory below TFLM's plan, per strategy, in the format of the CSDF paper's Table III (memory reduction against
throughput decrease), for every zoo model and the networks built in-process.

    python benchmarks/bench_memory.py                 # prints the markdown table (paste into docs/memory.md)
    python benchmarks/bench_memory.py --rounds 0      # heads and cycles only, no host timing

Per model: TFLM's head (its greedy plan), the lower bound of those lifetimes, the optimal search, reordered ops, and
``planner="phased"`` (microinterp/planner/phased.py) with its cost: extra kernel calls, line-buffer bytes moved, the
MCU cycles from the cost model (stm32f746, CMSIS-NN) and, with ``--rounds``, the host time of one set_input + invoke
+ get_output of the phased interpreter against the default one (optimized kernels, in memory, whole tensors):
interleaved, medians, one BLAS thread. Phased outputs are checked equal to the default ones first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import microinterp as mi
from microinterp.cost.analysis import predict_cycles
from microinterp.cost.mcu import get_profile
from microinterp.planner.greedy import plan_greedy, plan_size
from microinterp.planner.optimal import lower_bound, plan_optimal
from microinterp.planner.reorder import best_order, requests_for_order
from microinterp.testing import models as netgen

ZOO = ROOT.parent / "shared" / "models"


def models() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [(p.name, p) for p in sorted(ZOO.glob("*.tflite"))]
    out += [("demo_cnn (built)", netgen.demo_cnn()), ("mobilenet_v1 224 (built)", netgen.mobilenet_v1()),
            ("vgg16 224 (built)", netgen.vgg16())]
    return out


def _inputs(it: mi.Interpreter, rng: np.random.Generator) -> list[np.ndarray]:
    xs = []
    for _, dtype, shape in it._input_slots:
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            xs.append(rng.integers(info.min, info.max + 1, size=shape).astype(dtype))
        else:
            xs.append(rng.standard_normal(shape).astype(dtype))
    return xs


def _call(it: mi.Interpreter, xs: list[np.ndarray]) -> list[np.ndarray]:
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    return [it.get_output(o) for o in range(it.num_outputs)]


def _last_input(it: mi.Interpreter, xs: list[np.ndarray]) -> np.ndarray:
    try:
        _call(it, xs)
    except RuntimeError:
        pass
    return it.get_tensor(it.operators[-1].inputs[0])


def host_ratio(default: mi.Interpreter, phased: mi.Interpreter, xs: list[np.ndarray], rounds: int) -> float:
    """Median phased time / median default time of whole calls, interleaved."""
    times: dict[str, list[float]] = {"default": [], "phased": []}
    engines = [("default", default), ("phased", phased)]
    for r in range(rounds):
        for name, it in engines[r % 2:] + engines[:r % 2]:
            t0 = time.perf_counter()
            _timed(it, xs)
            times[name].append(time.perf_counter() - t0)
    return statistics.median(times["phased"]) / statistics.median(times["default"])


def _timed(it: mi.Interpreter, xs: list[np.ndarray]) -> None:
    try:
        _call(it, xs)
    except RuntimeError:        # the softmax check of a random built network: the same work was done
        pass


def row(name: str, model: object, rounds: int, mcu: str) -> dict:
    it = mi.Interpreter(model)
    req = it.runtime.plan["requests"]
    tflm = plan_size(req, plan_greedy(req))
    order, _ = best_order(it.model, it.runtime.plan["scratch"], it.runtime.plan["unplanned"])
    reordered = requests_for_order(it.model, order, it.runtime.plan["scratch"], it.runtime.plan["unplanned"])
    t0 = time.perf_counter()
    ph = mi.Interpreter(it.model, planner="phased")
    plan_s = time.perf_counter() - t0
    xs = _inputs(it, np.random.default_rng(0))
    try:
        exact = all(np.array_equal(a, b) for a, b in zip(_call(it, xs), _call(ph, xs)))
    except RuntimeError:        # random weights can trip TFLM's softmax check: compare the last op's input
        exact = np.array_equal(*(_last_input(e, xs) for e in (it, ph)))
    profile = get_profile(mcu)
    base = sum(predict_cycles(it.model, profile, "optimized"))
    extra = ph.runtime.phased.extra_cycles(profile, "optimized")
    return {"name": name, "tflm": tflm, "bound": lower_bound(req), "optimal": plan_size(req, plan_optimal(req)),
            "reordered": plan_size(reordered, plan_optimal(reordered)), "phased": ph.head_bytes,
            "segments": len(ph.runtime.phased.segments), "calls": ph.runtime.phased.extra_calls(),
            "moved": ph.runtime.phased.moved_bytes(), "cycles": base, "extra": extra, "exact": exact, "plan_s": plan_s,
            "host": host_ratio(it, ph, xs, rounds) if rounds else None}


def pct(new: float, old: float) -> str:
    return f"{100 * (old - new) / old:.1f} %" if old else "0.0 %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9, help="host timing rounds (0: none)")
    ap.add_argument("--mcu", default="stm32f746")
    ap.add_argument("--models", default=None, help="comma-separated substrings of model names")
    args = ap.parse_args()
    wanted = args.models.split(",") if args.models else None
    print(f"| model | TFLM head | optimal | reordered | phased | memory reduction | throughput decrease "
          f"({args.mcu}, cycles) | extra kernel calls | host time phased / default | exact |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, model in models():
        if wanted and not any(w in name for w in wanted):
            continue
        r = row(name, model, args.rounds, args.mcu)
        decrease = 100 * r["extra"] / (r["cycles"] + r["extra"]) if r["cycles"] else 0.0
        host = f"{r['host']:.2f}x" if r["host"] is not None else "-"
        print(f"| {name} | {r['tflm']:,} | {r['optimal']:,} | {r['reordered']:,} | {r['phased']:,} | "
              f"{pct(r['phased'], r['tflm'])} | {decrease:.1f} % | {r['calls']:,} | {host} | "
              f"{'yes' if r['exact'] else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
