"""Run every ``*.tflite`` in a folder through microinterp and the TFLM wheel and print a table: the ops, whether the
wheel runs it, whether microinterp does, and whether every op's output is identical (several random inputs).

    python examples/keras_converter/check_converted.py /tmp/converted
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from microinterp import Interpreter, MicroInterpError, load_model
from microinterp.testing.tflm import TflmRunner, compare_with_tflm


def random_inputs(it: Interpreter, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for i in range(it.num_inputs):
        d = it.get_input_details(i)
        if np.issubdtype(d["dtype"], np.floating):
            out.append(rng.uniform(-2, 2, size=d["shape"]).astype(d["dtype"]))
        else:
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max, size=d["shape"], endpoint=True).astype(d["dtype"]))
    return out


def main(folder: str) -> None:
    rng = np.random.default_rng(0)
    for path in sorted(Path(folder).glob("*.tflite")):
        ops = sorted({op.key for sg in load_model(path).subgraphs for op in sg.operators})
        try:
            TflmRunner(path)
            wheel = "runs"
        except RuntimeError as e:
            wheel = f"refuses ({str(e)[:40]})"
        try:
            it = Interpreter(path)
        except MicroInterpError as e:
            print(f"{path.stem:30s} wheel {wheel}; microinterp: {type(e).__name__}: {e}\n    ops: {', '.join(ops)}")
            continue
        verdicts = []
        for _ in range(3):
            result = compare_with_tflm(path, random_inputs(it, rng))
            verdicts.append("identical" if result.ok else str(result))
        same = all(v == "identical" for v in verdicts)
        print(f"{path.stem:30s} wheel {wheel}; microinterp {'bit-exact' if same else 'DIFFERS: ' + verdicts[0]}"
              f"\n    ops: {', '.join(ops)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/converted")
