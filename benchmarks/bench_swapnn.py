"""Out-of-core overheads against SwapNN's published figures (issue 6's goals), for both kernel sets.

    python benchmarks/bench_swapnn.py [--models vgg16,alexnet,mobilenet_v1] [--sd 10,20,40]
                                      [--kernels reference,optimized] [--variants base,double-buffer,all]
                                      [--frames 4] [--output FILE]

The setting of the goals: the STM32F746 profile (Cortex-M7 @ 216 MHz), 512 KB of SRAM, 128 KB tiles, every weight on
the card (``flash=0``, as SwapNN pre-stores parameters), SD read bandwidth from ``--sd`` (MB/s, SwapNN's range is
10-40) with writes at half of it. The models are built in-process (``microinterp.testing.models``). For each kernel set
(the cycle coefficients of ``microinterp.cost.mcu``: TFLM's portable ``reference`` kernels or ``optimized`` = CMSIS-NN),
SD speed and scheduling variant (``microinterp.apps.commands_schedule.VARIANTS``) it runs the simulation and prints the per-frame
latency overhead and the throughput overhead against compute-only (an MCU with infinite SRAM), as a markdown table;
``--output`` also writes it to FILE. Nothing here runs kernels: ``simulate()`` uses the pager's tiles and cycle
annotations.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from microinterp.apps.commands_schedule import VARIANTS, resolve_model
from microinterp.cost.mcu import get_profile, kernel_set
from microinterp.schedule.run import Config, run

#: SwapNN's figures (512 KB SRAM, 128 KB tiles): per-frame latency overhead, throughput overhead.
SWAPNN = {"vgg16": (0.069, -0.03), "alexnet": (0.50, -0.157), "mobilenet_v1": (1.50, -0.464)}


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="vgg16,alexnet,mobilenet_v1")
    ap.add_argument("--sd", default="10,20,40", help="SD read MB/s values (writes at half)")
    ap.add_argument("--kernels", default="reference,optimized")
    ap.add_argument("--variants", default="base,double-buffer,all")
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--output", default=None, help="also write the markdown table here")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    sds = [float(s) for s in args.sd.split(",") if s]
    kernels = [kernel_set(k) for k in args.kernels.split(",") if k]
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"unknown variant {v!r}; known: {', '.join(VARIANTS)}")
    mcu = get_profile("stm32f746")
    lines = ["| model | kernels | compute-only s | SD read/write MB/s | "
             + " | ".join(variants) + " | SwapNN | latency goal met? |",
             "|---|---|---:|---|" + "---|" * len(variants) + "---|---|"]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="microinterp-swapnn-") as tmp:
        for name in models:
            path, _ = resolve_model(f"gen:{name}", tmp)
            for ks in kernels:
                for sd in sds:
                    cells, best, comp = [], None, 0.0
                    for v in variants:
                        cfg = Config(sram=512 * 1024, tile=128 * 1024, frames=args.frames, flash=0, mcu=mcu.name,
                                     kernels=ks, sd_read_mb_s=sd, sd_write_mb_s=sd / 2, **VARIANTS[v])
                        r, _, _ = run(path, cfg, name, Path(tmp) / "sd.img")
                        if r.status != "ok":
                            cells.append(r.status.split(":")[0])
                            continue
                        comp = r.compute_only_s
                        best = r.latency_overhead if best is None else min(best, r.latency_overhead)
                        cells.append(f"{_pct(r.latency_overhead)} / {_pct(-r.throughput_overhead)}")
                    lat, thr = SWAPNN.get(name, (None, None))
                    met = "—" if lat is None or best is None else ("yes" if best < lat else "no")
                    ref = "—" if lat is None else f"{_pct(lat)} / {_pct(thr)}"
                    lines.append(f"| {name} | {ks} | {comp:.2f} | {sd:g}/{sd / 2:g} | " + " | ".join(cells)
                                 + f" | {ref} | {met} |")
                    print(lines[-1], flush=True)
    head = (f"Cells: per-frame latency overhead / throughput change ({args.frames} pipelined frames) against "
            f"compute-only, SwapNN's signs; "
            f"{mcu.name} ({mcu.core} @ {mcu.clock_hz / 1e6:g} MHz), 512 KB SRAM, 128 KB tiles, flash 0, crc32 on the "
            f"hash engine. Host: {platform.python_implementation()} {platform.python_version()}, "
            f"{time.perf_counter() - t0:.0f} s.")
    table = head + "\n\n" + "\n".join(lines) + "\n"
    print()
    print(table)
    if args.output:
        Path(args.output).write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
