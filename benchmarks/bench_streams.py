"""The audio front end per window: the TFLM wheel, one microinterp interpreter, and many clips as streams.

    python benchmarks/bench_streams.py [--rounds 7] [--streams 16,64,256] [--clips 64,512]

For each zoo audio preprocessor (``../shared/models/audio_preprocessor_*.tflite``): whole calls -- set the window,
invoke, read the features -- on the wheel and on ``Interpreter(model)``, interleaved, medians of ``--rounds`` batches;
then :class:`microinterp.streams.Streams` with S streams, one step (a window of every stream) per call, reported per
window and stream; and ``features_batch`` (its default streams) over ``--clips`` one-second clips (49 windows
each), per window, after one run that checks it and warms the allocator (each run builds its streams). Each of these
is timed interleaved with a batch of the wheel's windows, round after round (``--rounds``; ``features_batch``: at
least five), and the ratio is the wheel's median over its own: the machine's speed moves by up to 10 % within
minutes, and a wheel figure taken minutes earlier moved the ratio as much. Every streams output is checked bit for
bit against the single interpreter first, and the last clip's features against ``features``. One BLAS thread.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _whole_calls import interleaved, whole_calls

import microinterp as mi
from microinterp.apps.audio import features, features_batch
from microinterp.streams import Streams

MODELS = HERE.parents[1] / "shared" / "models"


def bench(name: str, rounds: int, counts: list[int], clip_counts: list[int]) -> None:
    from microinterp.testing.tflm import TflmRunner

    path = MODELS / f"{name}.tflite"
    model = path.read_bytes()
    rng = np.random.default_rng(0)
    window = (rng.normal(size=(1, 480)) * 3000).astype(np.int16)
    wheel_call, ours_call = whole_calls(TflmRunner(model, preserve_all=False), mi.Interpreter(model), window)
    w_s, o_s = interleaved(wheel_call, ours_call, 20, rounds)
    print(f"{name}: wheel {w_s * 1e6:.1f} us per window; Interpreter {o_s * 1e6:.1f} us (x{w_s / o_s:.3f})")
    for s in counts:
        runner = Streams(model, s)
        xs = (rng.normal(size=(s, 1, 480)) * 3000).astype(np.int16)
        single = mi.Interpreter(model)
        got = runner.run(xs)[0]
        single.set_input(xs[-1], 0)
        single.invoke()
        assert np.array_equal(got[-1], single.get_output(0)), "streams differ from one interpreter"
        w_t, t = interleaved(wheel_call, lambda r=runner, x=xs: r.run(x), max(2, 200 // s), rounds)
        t /= s
        print(f"  streams S={s}: {t * 1e6:.1f} us per window and stream (x{w_t / t:.3f} the wheel's "
              f"{w_t * 1e6:.1f} us)")
    for n in clip_counts:       # features_batch with its default streams: a dataset's clips, chunk by chunk
        clips = [(rng.normal(size=16000) * 10.0 ** rng.uniform(2, 4)).astype(np.int16) for _ in range(n)]
        expected = features(mi.Interpreter(model), clips[-1])
        feats = features_batch(model, clips)
        assert np.array_equal(feats[-1], expected), "features_batch differs from features"
        w_t, t = interleaved(wheel_call, lambda c=clips: features_batch(model, c), 1, max(5, rounds))
        t /= n * feats.shape[1]
        print(f"  features_batch, {n} clips: {t * 1e6:.1f} us per window (x{w_t / t:.3f} the wheel's "
              f"{w_t * 1e6:.1f} us)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--streams", default="16,64,256")
    ap.add_argument("--clips", default="64,512")
    args = ap.parse_args(argv)
    counts = [int(v) for v in args.streams.split(",") if v]
    clip_counts = [int(v) for v in args.clips.split(",") if v]
    for name in ("audio_preprocessor_int8", "audio_preprocessor_float"):
        bench(name, args.rounds, counts, clip_counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
