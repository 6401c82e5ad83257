"""``microinterp demo``: build a VGG16-shaped int8 model in-process, run it out of core in a 512 KB arena with its
tensors and weights paged to a file-backed SD image, check it against an in-memory run, and show the per-op profile
(cycles on an MCU, SD traffic, compute- vs IO-bound).

Needs no downloaded file. ``--small`` runs the quick in-memory demo instead (a small CNN checked against TFLM when the
optional oracle ``tflite-micro`` is installed).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..interpreter import Interpreter
from ..pager import format_table
from ..testing.models import demo_cnn, vgg16


def _bar(done: int, total: int, record, started: float, stream=None) -> None:
    stream = sys.stderr if stream is None else stream      # looked up per call: stderr may have been replaced
    width = 30
    filled = int(width * done / total)
    elapsed = time.perf_counter() - started
    stream.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} ops  {elapsed:5.1f} s  "
                 f"{record.op[:18]:<18}")
    if done == total:
        stream.write("\n")
    stream.flush()


def run_demo(seed: int = 0, workdir: str | None = None, small: bool = False, size: int = 224,
             arena: int = 512_000, mcu: str = "stm32f746", summary: dict | None = None) -> int:
    """The demo; its figures also go into ``summary`` when given (``microinterp demo --json``). Exit status 0 when
    the out-of-core outputs equal the in-memory ones (the small demo: when TFLM's agree too)."""
    summary = {} if summary is None else summary
    if small:
        return run_small_demo(seed, workdir, summary)
    with tempfile.TemporaryDirectory(prefix="microinterp-demo-") as tmp:
        folder = Path(workdir or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path, image = folder / "vgg16.tflite", folder / "sd.img"
        t0 = time.perf_counter()
        path.write_bytes(vgg16(seed, input_size=size))
        print(f"built {path.name} in {time.perf_counter() - t0:.1f} s: VGG16-shaped int8, {size}x{size}x3 input, "
              f"{path.stat().st_size / 1e6:.1f} MB")
        rng = np.random.default_rng(seed)
        with Interpreter(path, arena=arena, backing=image, mcu=mcu) as it:
            p = it.runtime
            print(f"out of core in a {arena}-byte arena: pools input {p.pools.input} / weights {p.pools.weights} / "
                  f"output {p.pools.output} bytes, tail {it.tail_bytes}; {p.flash} bytes of weights in flash, "
                  f"{p.sd.weights_bytes / 1e6:.1f} MB on the SD image {image.name} ({p.sd.action})")
            x = rng.integers(-128, 128, size=tuple(it.get_input_details(0)["shape"]), dtype=np.int8)
            it.set_input(x)
            started = time.perf_counter()
            it.invoke(progress=lambda d, n, r: _bar(d, n, r, started))
            t_ooc = time.perf_counter() - started
            y = it.get_output()
            records = it.profile
        print(f"invoke out of core: {t_ooc:.2f} s on this host")
        mem = Interpreter(path)
        mem.set_input(x)
        t0 = time.perf_counter()
        mem.invoke()
        t_mem = time.perf_counter() - t0
        same = np.array_equal(y, mem.get_output())
        summary.update(demo="vgg16", input_size=size, arena=arena, out_of_core_seconds=t_ooc,
                       in_memory_seconds=t_mem, in_memory_arena=mem.arena_used_bytes, identical=bool(same),
                       top_class=int(np.argmax(y)), mcu=it.mcu.name,
                       mcu_cycles=sum(r.total_cycles for r in records))
        print(f"invoke in memory ({mem.arena_used_bytes} bytes of arena): {t_mem:.2f} s; outputs "
              f"{'identical' if same else 'DIFFER'} (top class {int(np.argmax(y))})")
        print()
        print(format_table(records, it.mcu.clock_hz))
        return 0 if same else 1


def run_small_demo(seed: int = 0, workdir: str | None = None, summary: dict | None = None) -> int:
    summary = {} if summary is None else summary
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
        summary.update(demo="demo_cnn", arena=it.arena_used_bytes, head=it.head_bytes, tail=it.tail_bytes,
                       output=y.reshape(-1).tolist(), seconds=dt)
        print(f"invoke: {dt * 1e3:.2f} ms on this host; output {y.dtype}{list(y.shape)} = {y.reshape(-1).tolist()}")
        try:
            from ..testing.tflm import compare_with_tflm, tflm_arena_head

            result = compare_with_tflm(path, [x])
            head = tflm_arena_head(path)
        except ImportError:
            print("TFLM check skipped: install the oracle with pip install 'microinterp[test]'")
            return 0
        summary.update(tflm_identical=bool(result.ok), tflm_head=head)
        print(f"TFLM (tflite-micro wheel): outputs {'identical' if result.ok else 'DIFFER: ' + str(result)}; "
              f"arena head {head} bytes ({'same' if head == it.head_bytes else 'DIFFERENT'})")
        return 0 if result.ok and head == it.head_bytes else 1
