"""Sequence models against the TFLM wheel, and the float LSTM's floor in NumPy calls.

    python benchmarks/bench_sequence.py [--rounds 7] [--steps 150] [--states 64,128]

Models, built in-process as the tests build them (``tests/kernels/test_unidirectional_sequence_lstm.py``,
``tests/kernels/test_svdf.py``; seed 0): a float32 and an int8 UNIDIRECTIONAL_SEQUENCE_LSTM of ``--steps`` time steps
(16 inputs, 32 states, batch-major; the float one also with ``--states`` states: where the NumPy calls of a step
stop dominating), and SVDF layers (40 inputs, 64 units, rank 1, memory 10) in float32 and int8 with
an int16 state. Whole calls -- ``set_input`` + ``invoke`` + ``get_output`` -- on the wheel and on ``Interpreter(model)``,
interleaved, medians of ``--rounds`` batches (``_whole_calls.py``), one BLAS thread; every model's output is first checked bit for bit
against the wheel's.

The floor: the NumPy calls that any bit-exact float LSTM step makes on this machine, each timed alone on buffers of
the benchmark LSTM's shapes (minimum over repeats): TFLM's recurrent FC is a sequential float32 sum (an einsum into
kept totals -- BLAS sums in another order), its gate sum an add, the three sigmoid gates ``1 / (1 + expf(-x))`` an
``expf``, an add and a divide, with one comparison and count per saturation bound (TFLM's ``Logistic`` branches at
-9 and 16.62), the cell gate and the cell output a ``tanhf`` each (glibc's, as the wheel's), the cell update two
products and an add, the hidden state one product. Their sum times the steps bounds what a time loop of NumPy calls
can reach, whatever its arithmetic.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import sys
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _whole_calls import interleaved, per_call, whole_calls

import microinterp as mi
from microinterp import libm
from microinterp.kernels._float_dot import c_einsum
from microinterp.testing.tflm import TflmRunner
from tests.kernels.test_svdf import build as build_svdf
from tests.kernels.test_unidirectional_sequence_lstm import build as build_lstm


def models(steps: int, wider: list[int]) -> list[tuple[str, bytes, np.ndarray]]:
    """(name, model, input) of every benchmark model; ``wider``: float LSTMs of these state sizes too."""
    out = []
    for kind, n_state in [("FLOAT32", 32), ("INT8", 32)] + [("FLOAT32", n) for n in wider]:
        rng = np.random.default_rng(0)
        model, shape = build_lstm(rng, kind=kind, steps=steps, n_in=16, n_state=n_state)
        x = rng.normal(size=shape).astype(np.float32) if kind == "FLOAT32" else \
            rng.integers(-128, 128, shape).astype(np.int8)
        states = "" if n_state == 32 else f", {n_state} states"
        out.append((f"LSTM {kind.lower()}, {steps} steps{states}", model, x))
    for kind, state in (("FLOAT32", "FLOAT32"), ("INT8", "INT16")):
        rng = np.random.default_rng(0)
        model, shape = build_svdf(rng, kind=kind, state_type=state, input_size=40, units=64, rank=1, memory=10)
        x = rng.normal(size=shape).astype(np.float32) if kind == "FLOAT32" else \
            rng.integers(-100, 100, shape).astype(np.int8)
        out.append((f"SVDF {kind.lower()} ({state.lower()} state)", model, x))
    return out


def compare(name: str, model: bytes, x: np.ndarray, rounds: int) -> float:
    """Prints and returns the wheel's time over ours (whole calls, interleaved medians)."""
    wheel, ours = TflmRunner(model, preserve_all=False), mi.Interpreter(model)
    check_w, check_o = TflmRunner(model, preserve_all=False), mi.Interpreter(model)
    for _ in range(2):              # the second invoke runs from the states the first left
        check_w.run([x])
        check_o.set_input(x, 0)
        check_o.invoke()
        got, want = check_o.get_output(0), check_w.output(0)
        assert got.tobytes() == np.asarray(want, got.dtype).tobytes(), f"{name}: not the wheel's output"

    wheel_call, ours_call = whole_calls(wheel, ours, x)
    calls = max(1, int(0.02 / max(per_call(ours_call, 3), 1e-6)))      # batches of about 20 ms
    w_s, o_s = interleaved(wheel_call, ours_call, calls, rounds)
    print(f"| {name} | {w_s * 1e6:.1f} | {o_s * 1e6:.1f} | {w_s / o_s:.2f} | bit-exact |")
    return w_s


def floor(steps: int, wheel_s: float, state: int = 32) -> None:
    """The float LSTM step's unavoidable NumPy calls, timed alone (module docstring)."""
    rng = np.random.default_rng(0)
    gates, sig = 4 * state, 3 * state
    h, w = rng.normal(size=(state, 1)).astype(np.float32), rng.normal(size=(state, gates)).astype(np.float32)
    totals, g, pre = (np.empty((1, gates), np.float32), rng.normal(size=gates).astype(np.float32),
                      np.empty(gates, np.float32))
    a, b = rng.normal(size=sig).astype(np.float32), np.empty(sig, np.float32)
    c, d = rng.normal(size=2 * state).astype(np.float32), np.empty(2 * state, np.float32)
    s, t = rng.normal(size=state).astype(np.float32), np.empty(state, np.float32)
    one, bound, mask = np.array(1.0, np.float32), np.array(-9.0, np.float32), np.empty(sig, bool)
    expf, tanhf = libm.into("expf"), libm.into("tanhf")
    calls = [
        ("recurrent FC: sequential float32 sums (einsum into kept totals)", lambda: c_einsum("kn,kc->nc", h, w,
                                                                                             out=totals)),
        ("gate sum: input FC + recurrent FC", lambda: np.add(g, pre, pre)),
        ("sigmoid gates: expf", lambda: expf(a, b)),
        ("sigmoid gates: 1 +", lambda: np.add(one, a, b)),
        ("sigmoid gates: 1 /", lambda: np.divide(one, a, b)),
        ("sigmoid gates: saturation below -9 (compare, count)", lambda: np.count_nonzero(np.less(a, bound, mask))),
        ("sigmoid gates: saturation above 16.62 (compare, count)",
         lambda: np.count_nonzero(np.greater(a, bound, mask))),
        ("cell gate: tanhf", lambda: tanhf(s, t)),
        ("cell: [i f] * [g c]", lambda: np.multiply(c, c, d)),
        ("cell: i g + f c", lambda: np.add(s, s, t)),
        ("hidden: tanhf(cell)", lambda: tanhf(s, t)),
        ("hidden: o * tanh(cell)", lambda: np.multiply(s, s, t)),
    ]
    print("\n| call of a float LSTM step | us |\n|---|---|")
    total = checks = 0.0
    with np.errstate(all="ignore"):
        for name, fn in calls:
            us = min(timeit.repeat(fn, number=20000, repeat=5)) / 20000 * 1e6
            total += us
            checks += us if "saturation" in name else 0.0
            print(f"| {name} | {us:.2f} |")
    print(f"| **sum: one step** | **{total:.2f}** |")
    ms, bare = total * steps / 1e3, (total - checks) * steps / 1e3
    print(f"\nfloor: {steps} steps x {total:.2f} us = {ms:.2f} ms before any Python between the calls, a saturated "
          f"gate's repair or the input FC; the wheel {wheel_s * 1e3:.2f} ms ({wheel_s * 1e6 / steps:.2f} us a step): "
          f"at best {wheel_s * 1e3 / ms:.2f}x the wheel ({wheel_s * 1e3 / bare:.2f}x even without the saturation "
          "tests)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--states", default="64,128", help="state sizes of further float LSTMs (comma-separated)")
    args = ap.parse_args(argv)
    wider = [int(v) for v in args.states.split(",") if v]
    print("| model | wheel us | microinterp us | ratio (wheel / ours) | output |\n|---|---|---|---|---|")
    wheel_times = {name: compare(name, model, x, args.rounds) for name, model, x in models(args.steps, wider)}
    floor(args.steps, wheel_times[f"LSTM float32, {args.steps} steps"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
