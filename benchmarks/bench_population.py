"""Speed on the models people have: every ``.tflite`` of ../shared/population (and ../shared/models with ``--zoo``)
that the TFLM wheel runs, microinterp's default ``Interpreter(model)`` against the wheel.

    python benchmarks/bench_population.py                      # all, writes docs/population-benchmarks.md
    python benchmarks/bench_population.py --models tinymaix    # names containing any of these words; prints only
    python benchmarks/bench_population.py --rounds 5 --output /tmp/pop.md

Method, per model, in a process of its own (the wheel aborts the process on some models): build both interpreters,
feed the device oracle's seeded inputs (zeros when the wheel fails its invoke on them), check that every output is
bit-identical, then time whole calls -- ``set_input`` for every input + ``invoke`` + ``get_output`` for every output
-- in batches that last a few milliseconds, ``--rounds`` rounds alternating the two engines (rotating who goes first),
garbage collector off, one BLAS thread (``OPENBLAS_NUM_THREADS=1`` and friends are set before NumPy loads). Per engine
the median of (batch time / batch size). Ratio = wheel time / microinterp time (> 1: microinterp is faster).

Summary: the geometric mean of the ratios, the same over the models where the wheel takes at
least 1 ms, the lowest ratio and how many models are below 0.25x.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_zoo import _batch_size, geomean, machine_info

SHARED = HERE.parents[1] / "shared"
DEFAULT_OUTPUT = HERE.parent / "docs" / "population-benchmarks.md"
TIMEOUT_S = 600
SLOW_MS = 1.0           # "where the wheel takes >= 1 ms"
FLOOR = 0.25            # no model below this ratio (the goal)


# -- one model (child process) ---------------------------------------------------------------------------------------
def measure_one(path: str, rounds: int, target_s: float) -> dict:
    warnings.simplefilter("ignore")
    from microinterp import Interpreter
    from microinterp.errors import MicroInterpError
    from microinterp.testing.device import seeded_inputs
    from microinterp.testing.tflm import TflmRunner, same_bits

    try:
        wheel = TflmRunner(path, preserve_all=False)
    except Exception as e:      # noqa: BLE001 - the wheel refuses the model: not in the population it runs
        return {"status": "wheel refuses", "why": f"{type(e).__name__}: {str(e)[:120]}"}
    try:
        mine = Interpreter(path)
    except MicroInterpError as e:
        return {"status": "microinterp refuses", "why": f"{type(e).__name__}: {str(e)[:120]}"}
    inputs = seeded_inputs(mine, 0)
    try:
        wheel.run(inputs)
        seed = "seeded"
    except Exception:       # noqa: BLE001 - the wheel's invoke fails on random values (e.g. gather indices)
        inputs = [np.zeros_like(x) for x in inputs]
        try:
            wheel.run(inputs)
            seed = "zeros"
        except Exception as e:      # noqa: BLE001
            return {"status": "wheel fails invoke", "why": f"{type(e).__name__}: {str(e)[:120]}"}
    n_in, n_out = len(inputs), mine.num_outputs
    wi = wheel.interpreter

    def run_wheel() -> None:
        for i, x in enumerate(inputs):
            wi.set_input(x, i)
        wi.invoke()
        for k in range(n_out):
            wi.get_output(k)

    def run_mine() -> None:
        for i, x in enumerate(inputs):
            mine.set_input(x, i)
        mine.invoke()
        for k in range(n_out):
            mine.get_output(k)

    for i, x in enumerate(inputs):
        mine.set_input(x, i)
    mine.invoke()
    exact = all(same_bits(mine.get_output(k), wheel.output(k)) for k in range(n_out))
    engines = {"wheel": run_wheel, "microinterp": run_mine}
    batches = {k: _batch_size(fn, target_s) for k, fn in engines.items()}
    times: dict[str, list[float]] = {k: [] for k in engines}
    order = list(engines)
    gc.disable()
    for r in range(rounds):
        for k in order[r % 2:] + order[:r % 2]:
            fn, n = engines[k], batches[k]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[k].append((time.perf_counter() - t0) / n)
    gc.enable()
    ops = sorted({op.key for op in mine.model.main.operators})
    types = sorted({mine.model.main.tensors[t].type_name for t in mine.model.main.inputs})
    return {"status": "measured", "inputs": seed, "exact": exact, "n_inputs": n_in,
            "wheel_ms": statistics.median(times["wheel"]) * 1e3,
            "microinterp_ms": statistics.median(times["microinterp"]) * 1e3,
            "ops": len(mine.model.main.operators), "op_names": ops, "input_types": types}


# -- the population (parent) ------------------------------------------------------------------------------------------
def model_paths(zoo: bool, wanted: list[str]) -> list[Path]:
    paths = sorted((SHARED / "population").glob("*.tflite"))
    if zoo:
        paths += sorted((SHARED / "models").glob("*.tflite"))
    if wanted:
        paths = [p for p in paths if any(w in p.stem for w in wanted)]
    return paths


def run_child(path: Path, rounds: int, target_s: float) -> dict:
    cmd = [sys.executable, __file__, "--one", str(path), "--rounds", str(rounds), "--target", str(target_s)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "why": f"over {TIMEOUT_S} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"status": "process died", "why": f"exit {proc.returncode} (the wheel aborts on this model)"
                if proc.returncode < 0 else (proc.stderr.strip().splitlines() or ["?"])[-1][:160]}
    return json.loads(lines[-1])


def summary(results: dict[str, dict]) -> dict:
    measured = {k: r for k, r in results.items() if r["status"] == "measured"}
    ratios = {k: r["wheel_ms"] / r["microinterp_ms"] for k, r in measured.items()}
    slow = [ratios[k] for k, r in measured.items() if r["wheel_ms"] >= SLOW_MS]
    low = min(ratios, key=ratios.get) if ratios else None
    return {"measured": len(measured), "exact": sum(r["exact"] for r in measured.values()),
            "geomean": geomean(list(ratios.values())), "slow_count": len(slow), "geomean_slow": geomean(slow),
            "lowest": (low, ratios[low]) if low else None, "below_floor": sorted(k for k, v in ratios.items()
                                                                                  if v < FLOOR)}


def markdown(results: dict[str, dict], s: dict, machine: dict, rounds: int) -> str:
    lines = ["# Speed on the population", "",
             "`python benchmarks/bench_population.py` (method in its docstring: whole calls -- set_input + invoke + "
             "get_output --, interleaved, medians, one BLAS thread; ratio = wheel time / microinterp time, > 1 is "
             f"faster). {rounds} rounds per model.", "", "Machine:", ""]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    low = f"{s['lowest'][1]:.2f} (`{s['lowest'][0]}`)" if s["lowest"] else "n/a"
    lines += ["", "## Summary", "", "| measure | value | goal |", "|---|---|---|",
              f"| models measured (the wheel runs them) | {s['measured']} | |",
              f"| bit-exact with the wheel | {s['exact']} of {s['measured']} | all |",
              f"| geometric mean of the ratios | {s['geomean']:.2f} | ≥ 1.0 |",
              f"| geometric mean where the wheel takes ≥ 1 ms ({s['slow_count']} models) | {s['geomean_slow']:.2f} "
              "| ≥ 3 |",
              f"| lowest ratio | {low} | ≥ 0.25 |",
              f"| models below 0.25 | {len(s['below_floor'])} | 0 |", "",
              "## Per model", "",
              "| model | ops | wheel ms | microinterp ms | ratio | exact | inputs |", "|---|---|---|---|---|---|---|"]
    measured = sorted(((k, r) for k, r in results.items() if r["status"] == "measured"),
                      key=lambda kr: kr[1]["wheel_ms"] / kr[1]["microinterp_ms"])
    for k, r in measured:
        lines.append(f"| {k} | {r['ops']} | {r['wheel_ms']:.4f} | {r['microinterp_ms']:.4f} | "
                     f"{r['wheel_ms'] / r['microinterp_ms']:.2f} | {'yes' if r['exact'] else 'NO'} | {r['inputs']} |")
    others = sorted((k, r) for k, r in results.items() if r["status"] != "measured")
    if others:
        lines += ["", "## Not measured", "", "| model | status | why |", "|---|---|---|"]
        lines += [f"| {k} | {r['status']} | {r.get('why', '').replace('|', '/')} |" for k, r in others]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--target", type=float, default=0.004, help="seconds per timed batch (default 0.004)")
    ap.add_argument("--models", default="", help="comma-separated words; models whose name contains one")
    ap.add_argument("--zoo", action="store_true", help="also ../shared/models")
    ap.add_argument("--output", default=None, help=f"markdown file (default {DEFAULT_OUTPUT} for a full run)")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure_one(args.one, args.rounds, args.target)))
        return 0
    if not (SHARED / "population").is_dir():
        raise SystemExit(f"no population at {SHARED / 'population'}")
    wanted = [w for w in args.models.split(",") if w]
    machine = machine_info()
    results = {}
    for path in model_paths(args.zoo, wanted):
        r = results[path.stem] = run_child(path, args.rounds, args.target)
        if r["status"] == "measured":
            print(f"{path.stem:55s} wheel {r['wheel_ms']:9.4f} ms  microinterp {r['microinterp_ms']:9.4f} ms  "
                  f"ratio {r['wheel_ms'] / r['microinterp_ms']:6.2f}  exact {r['exact']}", flush=True)
        else:
            print(f"{path.stem:55s} {r['status']}: {r.get('why', '')[:70]}", flush=True)
    s = summary(results)
    print(f"\n{s['measured']} measured, {s['exact']} bit-exact; geometric mean {s['geomean']:.2f}; "
          f"where the wheel takes >= 1 ms ({s['slow_count']}): {s['geomean_slow']:.2f}; lowest "
          f"{s['lowest'][1]:.2f} ({s['lowest'][0]}); below {FLOOR}: {len(s['below_floor'])}" if s["lowest"] else
          "nothing measured")
    output = args.output or (None if wanted else str(DEFAULT_OUTPUT))
    if output:
        Path(output).write_text(markdown(results, s, machine, args.rounds))
        print(f"wrote {output}")
    raw = Path(output).with_suffix(".json") if output else None
    if raw:
        raw.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
