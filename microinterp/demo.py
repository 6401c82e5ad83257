"""``microinterp demo``: build a CNN in-process, run it, show the arena plan, and check it against TFLM.

Needs no downloaded file. The comparison with TFLM runs when the optional oracle (``tflite-micro``) is installed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from .interpreter import Interpreter
from .testing.models import demo_cnn


def run_demo(seed: int = 0, workdir: str | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="microinterp-demo-") as tmp:
        folder = Path(workdir or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "demo_cnn.tflite"
        path.write_bytes(demo_cnn(seed))
        it = Interpreter(path)
        ops = [op.key for op in it.operators]
        print(f"built {path.name}: {len(ops)} ops ({', '.join(sorted(set(ops)))}), "
              f"{it.model.weight_bytes()} bytes of weights")
        print(f"arena: {it.arena_used_bytes} bytes = head {it.head_bytes} (planned tensors, TFLM's greedy plan) "
              f"+ tail {it.tail_bytes} (persistent)")
        rng = np.random.default_rng(seed)
        x = rng.integers(-128, 128, size=tuple(it.get_input_details(0)["shape"]), dtype=np.int8)
        it.set_input(x, 0)
        t0 = time.perf_counter()
        it.invoke()
        dt = time.perf_counter() - t0
        y = it.get_output(0)
        print(f"invoke: {dt * 1e3:.2f} ms on this host; output {y.dtype}{list(y.shape)} = {y.reshape(-1).tolist()}")
        try:
            from .testing.tflm import compare_with_tflm, tflm_arena_head
        except ImportError:  # pragma: no cover
            compare_with_tflm = None
        try:
            result = compare_with_tflm(path, [x]) if compare_with_tflm else None
            head = tflm_arena_head(path) if compare_with_tflm else None
        except ImportError:
            result = head = None
        if result is None:
            print("TFLM check skipped: install the oracle with pip install 'microinterp[test]'")
            return 0
        print(f"TFLM (tflite-micro wheel): outputs {'identical' if result.ok else 'DIFFER: ' + str(result)}; "
              f"arena head {head} bytes ({'same' if head == it.head_bytes else 'DIFFERENT'})")
        return 0 if result.ok and head == it.head_bytes else 1
