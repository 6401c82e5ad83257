"""Speed of microinterp (optimized and reference kernels) against the TFLM wheel: same process, interleaved, medians.

One command runs the whole suite and rewrites docs/benchmarks.md::

    python benchmarks/bench_zoo.py                       # every zoo model + the generated ones, 15 rounds
    python benchmarks/bench_zoo.py --quick               # a few rounds, prints only: checks that the script works
    python benchmarks/bench_zoo.py --models person_detect,gen_demo_cnn --rounds 20 --output /tmp/bench.md
    python benchmarks/bench_zoo.py --list                # the model names

Models: every ``*.tflite`` in ../shared/models (skipped when absent) and int8 networks built in-process by
``microinterp.testing.models`` (demo CNN, AlexNet- and MobileNet-v1-shaped, at sizes that run in seconds).

Method, per model: build the three engines (microinterp ``optimized=True``, microinterp ``optimized=False``, the
``tflite-micro`` wheel), run each once on the same random input and check that all three outputs are bit-identical,
warm up, then pick for each engine a batch size (invokes per timed batch, so that a batch lasts a few milliseconds and
the clock's resolution does not matter for tiny graphs). Then ``--rounds`` rounds: in every round each engine runs one
batch, in rotating order, with the garbage collector off and one BLAS thread (unless the caller's environment says
otherwise). Per engine the median over rounds of (batch time / batch
size) is the time of one ``set_input`` + ``invoke``. Ratio = wheel time / microinterp time (> 1: microinterp faster).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")        # one BLAS thread, set before NumPy loads (the caller may override)

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import microinterp as mi
from microinterp.testing import models as netgen
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import TflmRunner

ZOO = ROOT.parent / "shared" / "models"
DEFAULT_OUTPUT = ROOT / "docs" / "benchmarks.md"
MIN_ROUNDS = 10

# The speed goals, as ratios wheel time / microinterp optimized time (so 0.2 = "at most 5x slower").
GOALS = {
    "mobilenet_v2_quantized_1x3x224x224": 10.0,
    "pretrainedResnet_quant": 8.0,
    "vww_96_int8": 4.0,
    "person_detect": 4.0,
    "kws_ref_model": 4.0,
    "ad01_int8": 1.0,
    "micro_speech_quantized": 1.0,
    "hello_world_int8": 0.2,    # tiny graphs: no worse than 5x slower
    "trained_lstm_int8": 0.2,
}
GEOMEAN_GOAL = 4.0  # over the zoo models


def alexnet_small(seed: int = 0) -> bytes:
    """AlexNet's layer sequence (5 conv, 3 max-pool, 3 FC, softmax) at half resolution, half width, 100 classes."""
    net = netgen.QuantNet((1, 115, 115, 3), seed=seed, name="AlexNet-shaped int8, small")
    net.conv(48, 11, stride=4, padding="VALID")
    net.pool("MAX", 3, 2)
    net.conv(128, 5)
    net.pool("MAX", 3, 2)
    for filters in (192, 192, 128):
        net.conv(filters, 3)
    net.pool("MAX", 3, 2)
    net.flatten()
    net.fc(1024)
    net.fc(1024)
    net.fc(100, act="NONE")
    net.softmax()
    return net.build()


GENERATED: dict[str, Callable[[], bytes]] = {
    "gen_demo_cnn": lambda: netgen.demo_cnn(0),
    "gen_alexnet_115": alexnet_small,
    "gen_mobilenet_v1_96": lambda: netgen.mobilenet_v1(0, input_size=96, classes=100),
}


@dataclass
class Case:
    name: str
    source: str                 # "zoo" or "generated"
    load: Callable[[], bytes]


@dataclass
class Result:
    name: str
    source: str
    wheel_ms: float
    optimized_ms: float
    reference_ms: float
    exact: bool
    batches: dict[str, int]

    @property
    def ratio_optimized(self) -> float:
        return self.wheel_ms / self.optimized_ms

    @property
    def ratio_reference(self) -> float:
        return self.wheel_ms / self.reference_ms

    @property
    def goal(self) -> float | None:
        return GOALS.get(self.name)


def all_cases() -> list[Case]:
    cases = [Case(p.stem, "zoo", p.read_bytes) for p in sorted(ZOO.glob("*.tflite"))] if ZOO.is_dir() else []
    return cases + [Case(name, "generated", fn) for name, fn in GENERATED.items()]


def select_cases(cases: list[Case], wanted: str) -> list[Case]:
    """``wanted``: comma-separated names or name prefixes (``mobilenet_v2`` selects the zoo's MobileNet v2)."""
    names = [w.strip() for w in wanted.split(",") if w.strip()]
    if not names:
        return cases
    chosen = []
    for w in names:
        hits = [c for c in cases if c.name == w] or [c for c in cases if c.name.startswith(w)]
        if not hits:
            raise SystemExit(f"unknown model {w!r}; available: {', '.join(c.name for c in cases)}")
        chosen += [c for c in hits if c not in chosen]
    return chosen


# -- machine description ---------------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        desc = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except (KeyError, TypeError, ValueError):  # older NumPy: no dict mode
        desc = "unknown BLAS"
    threads = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
               if k in os.environ]
    return desc + (f" ({', '.join(threads)})" if threads else " (default threads)")


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], check=False,
                               cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + (" (uncommitted changes)" if dirty else "")) if head else "unknown"


def machine_info() -> dict[str, str]:
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return {
        "CPU": _cpu_model(),
        "cores": f"{cores} logical ({usable} usable by this process)",
        "load average at start (1, 5, 15 min)": load,
        "OS": f"{platform.system()} {platform.release()} {platform.machine()}",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "NumPy": f"{np.__version__}, BLAS: {_blas()}",
        "tflite-micro wheel": _version("tflite-micro"),
        "microinterp": f"{mi.__version__}, commit {_git_commit()}",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


# -- measuring -------------------------------------------------------------------------------------------------------


def _wheel(data: bytes, it: mi.Interpreter) -> TflmRunner:
    """The wheel's interpreter with an arena big enough: our plan plus room for TFLM's structs, doubled on refusal."""
    model = it.model
    tensors = sum(len(sg.tensors) for sg in model.subgraphs)
    ops = sum(len(sg.operators) for sg in model.subgraphs)
    size = it.arena_used_bytes + 256 * (tensors + ops) + (64 << 10)
    for _ in range(8):
        try:
            return TflmRunner(data, arena_size=size, preserve_all=False)
        except RuntimeError:
            size *= 2
    return TflmRunner(data, arena_size=size, preserve_all=False)


def _batch_size(fn: Callable[[], None], target_s: float) -> int:
    """Invokes per timed batch so that one batch lasts at least ``target_s`` (this also warms the engine up)."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= target_s or n >= 1 << 16:
            return n
        n = min(1 << 16, max(2 * n, math.ceil(n * target_s / max(elapsed, 1e-9))))


def bench(case: Case, rounds: int, warmup: int, target_s: float) -> Result:
    data = case.load()
    opt = mi.Interpreter(data, optimized=True)
    ref = mi.Interpreter(data, optimized=False)
    wheel = _wheel(data, opt)
    rng = np.random.default_rng(0)
    inputs = []
    for i in range(opt.num_inputs):
        d = opt.get_input_details(i)
        inputs.append(random_tensor(rng, d["shape"], np.dtype(d["dtype"]).name.upper()))

    def run_mi(it: mi.Interpreter) -> None:
        for i, x in enumerate(inputs):
            it.set_input(x, i)
        it.invoke()

    engines: dict[str, Callable[[], None]] = {
        "wheel": lambda: wheel.run(inputs),
        "optimized": lambda: run_mi(opt),
        "reference": lambda: run_mi(ref),
    }
    for fn in engines.values():
        fn()
    exact = all(
        np.array_equal(opt.get_output(i).view(np.uint8), wheel.output(i).view(np.uint8))
        and np.array_equal(ref.get_output(i).view(np.uint8), wheel.output(i).view(np.uint8))
        for i in range(opt.num_outputs))
    for _ in range(warmup):
        for fn in engines.values():
            fn()
    batches = {k: _batch_size(fn, target_s) for k, fn in engines.items()}
    times: dict[str, list[float]] = {k: [] for k in engines}
    order = list(engines)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            for k in order[r % 3:] + order[:r % 3]:
                fn, n = engines[k], batches[k]
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                times[k].append((time.perf_counter() - t0) / n)
    finally:
        if gc_was_enabled:
            gc.enable()
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return Result(case.name, case.source, med["wheel"], med["optimized"], med["reference"], exact, batches)


def geomean(values: list[float]) -> float:
    return float(math.exp(sum(math.log(v) for v in values) / len(values))) if values else float("nan")


# -- reporting -------------------------------------------------------------------------------------------------------


def fmt_ms(ms: float) -> str:
    return f"{ms:.4f}" if ms < 0.1 else f"{ms:.3f}"


def goal_cell(ratio: float, goal: float | None) -> str:
    if goal is None:
        return "—"
    return f"≥ {goal:g} / {'yes' if ratio >= goal else 'no'}"


def table_rows(results: list[Result]) -> list[list[str]]:
    rows = []
    for r in results:
        rows.append([r.name, r.source, fmt_ms(r.wheel_ms), fmt_ms(r.optimized_ms), fmt_ms(r.reference_ms),
                     f"{r.ratio_optimized:.2f}", f"{r.ratio_reference:.2f}", goal_cell(r.ratio_optimized, r.goal),
                     "yes" if r.exact else "NO"])
    zoo = [r for r in results if r.source == "zoo"]
    if zoo:
        rows.append(["geometric mean, zoo", "", "", "", "", f"{geomean([r.ratio_optimized for r in zoo]):.2f}",
                     f"{geomean([r.ratio_reference for r in zoo]):.2f}",
                     goal_cell(geomean([r.ratio_optimized for r in zoo]), GEOMEAN_GOAL), ""])
    if len(zoo) != len(results):
        rows.append(["geometric mean, all", "", "", "", "", f"{geomean([r.ratio_optimized for r in results]):.2f}",
                     f"{geomean([r.ratio_reference for r in results]):.2f}", "—", ""])
    return rows


HEADER = ["model", "source", "wheel ms", "optimized ms", "reference ms", "wheel/opt", "wheel/ref",
          "goal / met? (wheel/opt)", "bit-exact"]


def text_table(results: list[Result]) -> str:
    rows = [HEADER] + table_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(results: list[Result], info: dict[str, str], rounds: int, warmup: int, command: str) -> str:
    lines = [
        "# Benchmarks",
        "",
        ("microinterp with its optimized kernels (the default), microinterp with the reference kernels only "
         "(`optimized=False`) and the TFLM wheel (`tflite-micro`, TFLM's reference kernels compiled to native code), "
         "in one process on the same random input. Ratio = wheel time / microinterp time: above 1, microinterp is "
         "faster. The column *goal / met?* lists the project's speed goals for the optimized engine; *bit-exact* says whether "
         "all three engines produced identical outputs."),
        "",
        "Reproduce with one command (it rewrites this file; `--quick` only prints, `--help` lists the options):",
        "",
        "```bash",
        "python benchmarks/bench_zoo.py",
        "```",
        "",
        (f"This run: `{command}`. Method: per model, one checked invoke per engine, {warmup} warm-up invoke(s), a "
         "batch size per engine so that one timed batch lasts a few milliseconds, then "
         f"{rounds} rounds in which every engine runs one batch, in rotating order, garbage collector off; the time "
         "is the median over rounds of batch time / batch size (one `set_input` + `invoke`). Timings on a shared "
         "machine are noisy; the ratios, taken interleaved in one process, are what to read."),
        "",
        "| machine | |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in info.items()],
        "",
        "| " + " | ".join(HEADER) + " |",
        "|---|---|" + "---:|" * (len(HEADER) - 3) + "---|",
        *["| " + " | ".join(row) + " |" for row in table_rows(results)],
        "",
        ("Generated models (`microinterp.testing.models`, random int8 weights): `gen_demo_cnn` the demo CNN "
         "(64x64x3); `gen_alexnet_115` AlexNet's layer sequence at 115x115x3, half width, 100 classes; "
         "`gen_mobilenet_v1_96` MobileNet v1 (alpha 1) at 96x96x3, 100 classes."),
        "",
        ("Goals (ratio wheel/optimized): ≥ 10 mobilenet_v2; ≥ 8 pretrainedResnet_quant; ≥ 4 vww_96_int8, "
         "person_detect, kws_ref_model; ≥ 1 ad01_int8, micro_speech_quantized; tiny graphs (hello_world_int8, "
         "trained_lstm_int8) no worse than 5x slower (≥ 0.2); geometric mean over the zoo ≥ 4."),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:8]))
    p.add_argument("--rounds", type=int, default=None,
                   help=f"timed rounds per model after warm-up (default 15; at least {MIN_ROUNDS} unless --quick)")
    p.add_argument("--models", default="", help="comma-separated model names or prefixes (default: all)")
    p.add_argument("--output", type=Path, default=None,
                   help=f"markdown file to write (default {DEFAULT_OUTPUT.relative_to(ROOT)}; "
                        "with --quick nothing is written unless --output is given)")
    p.add_argument("--no-write", action="store_true", help="print only, write no file")
    p.add_argument("--quick", action="store_true",
                   help="3 rounds, 1 warm-up, short batches: checks that everything runs, numbers are rough")
    p.add_argument("--list", action="store_true", help="list the model names and exit")
    args = p.parse_args(argv)
    if args.rounds is None:
        args.rounds = 3 if args.quick else 15
    if args.rounds < 1 or (args.rounds < MIN_ROUNDS and not args.quick):
        p.error(f"--rounds must be at least {MIN_ROUNDS} for a result (use --quick for a smoke run)")
    if args.no_write or (args.quick and args.output is None):
        args.output = None
    elif args.output is None:
        args.output = DEFAULT_OUTPUT
    return args


def run(argv: list[str] | None = None) -> list[Result]:
    args = parse_args(argv)
    cases = all_cases()
    if args.list:
        for c in cases:
            print(f"{c.name}  ({c.source})")
        return []
    cases = select_cases(cases, args.models)
    if not ZOO.is_dir():
        print(f"note: {ZOO} not found; running the generated models only", file=sys.stderr)
    warmup, target_s = (1, 0.002) if args.quick else (2, 0.02)
    info = machine_info()
    print("\n".join(f"{k}: {v}" for k, v in info.items()), flush=True)
    results = []
    for case in cases:
        try:
            r = bench(case, args.rounds, warmup, target_s)
        except mi.UnsupportedOpError as e:       # e.g. the audio front end's signal-library ops
            print(f"{case.name:<36} skipped: {e}", flush=True)
            continue
        results.append(r)
        print(f"{r.name:<36} wheel {r.wheel_ms:9.3f} ms  opt {r.optimized_ms:9.3f} ms (x{r.ratio_optimized:.2f})  "
              f"ref {r.reference_ms:9.3f} ms (x{r.ratio_reference:.2f})  {'exact' if r.exact else 'NOT EXACT'}",
              flush=True)
    print()
    print(text_table(results))
    if args.output is not None:
        command = "python benchmarks/bench_zoo.py" + ("" if argv is None else " " + " ".join(argv))
        if argv is None and len(sys.argv) > 1:
            command += " " + " ".join(sys.argv[1:])
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(markdown(results, info, args.rounds, warmup, command))
        print(f"\nwrote {args.output}")
    return results


def main(argv: list[str] | None = None) -> int:
    results = run(argv)
    return 0 if all(r.exact for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
