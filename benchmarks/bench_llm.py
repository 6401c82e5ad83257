"""The tiny Llama's autoregressive step (hidden 64, 8 layers, FFN 256, vocabulary 512, 64 cache rows): host time
per token of microinterp (optimized and reference kernels, in memory) and of the TFLM wheel, whole calls
(set_input of the token, the position and the 16 cache tensors + invoke + get_output of the logits, the token and
the 16 updated caches), interleaved, medians, one BLAS thread; then out of core. Every runner steps through the
same sequence, and the outputs are checked equal.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_llm.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from microinterp import Interpreter
from microinterp.apps.lm import generate
from microinterp.testing.llm import tiny_llama

PROMPT = [1, 2, 3, 4, 5]


def whole_step(it, token: int, position: int, caches: list[np.ndarray], n_caches: int) -> tuple[np.ndarray, list]:
    it.set_input(np.array([[token]], np.int32), 0)
    it.set_input(np.array([position], np.int32), 1)
    for i, c in enumerate(caches):
        it.set_input(c, 2 + i)
    it.invoke()
    logits = np.array(it.get_output(0), copy=True)
    int(np.asarray(it.get_output(1)).reshape(-1)[0])
    return logits, [np.array(it.get_output(2 + i), copy=True) for i in range(n_caches)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=32, help="steps timed per runner (default 32)")
    args = p.parse_args()
    from tflite_micro import runtime

    llm = tiny_llama(0)
    c = llm.config
    ref = generate(Interpreter(llm.prefill), Interpreter(llm.step), PROMPT, args.rounds + 1, c)
    pre = Interpreter(llm.prefill)
    tokens = np.zeros((1, c.prompt), np.int32)
    tokens[0, :len(PROMPT)] = PROMPT
    pre.set_input(tokens, 0)
    pre.set_input(np.array([len(PROMPT)], np.int32), 1)
    pre.invoke()
    start = [pre.get_output(2 + i).copy() for i in range(c.caches)]
    with tempfile.TemporaryDirectory() as tmp:
        runners = {"optimized": Interpreter(llm.step), "reference": Interpreter(llm.step, optimized=False),
                   "wheel": runtime.Interpreter.from_bytes(llm.step, arena_size=1 << 20),
                   "out of core 64 KB": Interpreter(llm.step, arena=64_000, backing=os.path.join(tmp, "s.img"),
                                                    flash=100_000)}
        caches = {k: [x.copy() for x in start] for k in runners}
        times: dict[str, list[float]] = {k: [] for k in runners}
        for k in range(args.rounds):
            token, position = ref.tokens[k], len(PROMPT) + k
            for name, it in runners.items():
                t = time.perf_counter()
                logits, caches[name] = whole_step(it, token, position, caches[name], c.caches)
                times[name].append(time.perf_counter() - t)
                assert np.array_equal(logits.reshape(-1), ref.logits[k + 1]), (name, k)
        runners["out of core 64 KB"].close()
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}; one BLAS thread; {args.rounds} steps each, interleaved")
    print(f"{'runner':20s} {'ms/token':>9s} {'tokens/s':>9s} {'vs wheel':>9s}")
    for name, ms in med.items():
        print(f"{name:20s} {ms:9.2f} {1e3 / ms:9.0f} {med['wheel'] / ms:9.2f}x")


if __name__ == "__main__":
    main()
