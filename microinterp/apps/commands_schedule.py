"""``microinterp schedule`` and ``microinterp sweep``: the out-of-core task schedule of a model, one configuration or
a grid of SRAM and tile sizes (parallel processes), with CSV/JSON and optional plots.

MODEL is a ``.tflite`` path or ``gen:NAME`` for a model built in-process (``gen:vgg16``, ``gen:alexnet``,
``gen:mobilenet_v1``, ``gen:demo_cnn``): it is written once to a temporary file.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from ..sizes import size_argument as _size
from .options import (
    add_json,
    add_kernels,
    count_argument,
    output_file,
    output_folder,
    pools_argument,
    sizes_argument,
)

GENERATED = ("vgg16", "alexnet", "mobilenet_v1", "demo_cnn")
#: What a sweep varies besides SRAM and tile size (``--variants``): name -> Config changes.
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "double-buffer": {"double_buffer": True},
    "no-input-reuse": {"input_reuse": False},
    "pipeline": {"preempt": True, "single_buffer_io_bound": True},
    "all": {"double_buffer": True, "preempt": True, "single_buffer_io_bound": True},
}
CSV_FIELDS = ("model", "variant", "sram", "tile", "tile_used", "frames", "status", "out_of_core", "tiles",
              "io_tasks", "compute_tasks", "read_tasks", "write_tasks", "sd_read_bytes", "sd_write_bytes",
              "compute_only_s", "io_only_s", "sequential_s", "latency_s", "period_s", "latency_overhead",
              "throughput_overhead", "cpu_utilisation", "io_utilisation", "gb_per_day", "lifetime_years",
              "energy_j", "energy_overhead", "host_s")


def resolve_model(spec: str, workdir: str) -> tuple[str, str]:
    """(path, display name) of MODEL: an existing file, or ``gen:NAME`` written to ``workdir``."""
    if spec.startswith("gen:"):
        name = spec[4:]
        if name not in GENERATED:
            raise SystemExit(f"microinterp: unknown generated model {name!r}; known: {', '.join(GENERATED)}")
        from ..testing import models

        path = os.path.join(workdir, f"{name}.tflite")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(getattr(models, name)())
        return path, name
    if not os.path.exists(spec):
        raise SystemExit(f"microinterp: no such model file: {spec} (or use gen:{'|'.join(GENERATED)})")
    from ..model import load_model

    load_model(spec)            # a ModelError now, not one per grid point
    return spec, os.path.basename(spec)


def _flash(text: str) -> int | None:
    if text.lower() in ("none", "profile", "default"):
        return None
    return _size(text, "flash")


def _config(args: argparse.Namespace, sram: int, tile: int | None, variant: str = "base") -> Any:
    from ..schedule.run import Config

    kw = {"sram": sram, "tile": tile, "frames": args.frames, "flash": args.flash, "mcu": args.mcu,
          "kernels": args.kernels, "pools": args.pools, "checksum": args.checksum,
          "input_reuse": not args.no_input_reuse,
          "double_buffer": args.double_buffer, "preempt": args.preempt,
          "single_buffer_io_bound": args.single_buffer_io_bound, "sd_read_mb_s": args.sd_read,
          "sd_write_mb_s": args.sd_write,
          "fps": args.fps}
    kw.update(VARIANTS[variant])
    return Config(**kw)


def _row(r: Any, variant: str) -> dict[str, Any]:
    d = r.as_dict()
    d["variant"] = variant
    d["gb_per_day"] = r.wear.get("gb_per_day")
    d["lifetime_years"] = r.wear.get("lifetime_years")
    d["energy_j"] = r.energy.get("joules")
    d["energy_overhead"] = r.energy.get("overhead")
    return d


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def format_result(r: Any) -> str:
    """A readable summary of one :class:`~microinterp.schedule.run.Result`."""
    if r.status != "ok":
        return f"{r.model}: SRAM {r.sram} tile {r.tile}: {r.status}"
    mb = 1e6
    o = r.options
    lines = [
        f"model {r.model}: SRAM {r.sram} B, tile {r.tile} B (used {r.tile_used}), {o['mcu']}, SD "
        f"{o['sd_read_mb_s']:g}/{o['sd_write_mb_s']:g} MB/s read/write, flash "
        f"{'the profile' + chr(39) + 's' if o['flash'] is None else o['flash']}, pools "
        f"{':'.join(f'{v:g}' for v in o['pools'])} = {r.pools}, checksum {o['checksum']} "
        f"({'CPU' if o['hash_on_cpu'] else 'hash engine'})" + ("" if r.out_of_core else "  [runs in core]"),
        f"tasks per frame: {r.tiles} tiles, {r.io_tasks} IO ({r.read_tasks} reads, {r.write_tasks} writes), "
        f"{r.compute_tasks} compute; SD {r.sd_read_bytes / mb:.2f} MB read, {r.sd_write_bytes / mb:.2f} MB written"
        + ("" if r.precise or not r.out_of_core else "  (per-layer dependencies: the plan did not match the records)"),
        (f"compute-only (infinite SRAM) {r.compute_only_s * 1e3:.1f} ms | IO-only {r.io_only_s * 1e3:.1f} ms | "
         f"sequential IO+compute {r.sequential_s * 1e3:.1f} ms"),
        f"per-frame latency   {r.latency_s * 1e3:10.1f} ms  overhead {_pct(r.latency_overhead)} vs compute-only",
        (f"throughput, {r.frames} frames {1 / r.period_s:10.4f} fps  ({r.period_s * 1e3:.1f} ms/frame), "
         f"{r.throughput_overhead * 100:.1f}% below compute-only; CPU busy {r.cpu_utilisation:.0%}, SD busy {r.io_utilisation:.0%}"),
    ]
    w, e = r.wear, r.energy
    life = "forever" if w["lifetime_years"] is None else f"{w['lifetime_years']:.1f} years"
    lines.append(f"wear: {w['bytes_per_inference'] / mb:.2f} MB written per inference, {w['gb_per_day']:.1f} GB/day "
                 f"at {w['fps']:.3g} fps; {w['capacity_gb']:g} GB card, {w['pe_cycles']} P/E cycles, write "
                 f"amplification {w['write_amplification']:g}: {w['endurance_tb']:.0f} TB endurance, {life}")
    lines.append(f"energy per inference: {e['joules'] * 1e3:.1f} mJ vs {e['ideal_joules'] * 1e3:.1f} mJ on an "
                 f"infinite-SRAM MCU ({_pct(e['overhead'])})")
    if o.get("cost_build"):
        lines.append(f"cycles model {o['cost_build']}")
    return "\n".join(lines)


# -- schedule ----------------------------------------------------------------------------------------------------------
def cmd_schedule(args: argparse.Namespace) -> int:
    from ..schedule.run import evaluate, open_records

    with tempfile.TemporaryDirectory(prefix="microinterp-schedule-") as work:
        path, name = resolve_model(args.model, work)
        cfg = _config(args, args.sram, args.tile)
        backing = args.backing or os.path.join(work, "sd.img")
        keep = bool(args.gantt or args.memory)
        opened = open_records(path, cfg, backing)
        try:
            r, s1, sf = evaluate(opened, cfg, name, keep=keep)
            tail = opened.pager.tail_bytes if opened.pager is not None else 0
            scratch = opened.pager.scratch_bytes if opened.pager is not None else 0
        finally:
            opened.close()
        if args.json:
            json.dump(_row(r, "base"), sys.stdout, indent=2, default=str)
            sys.stdout.write("\n")
        else:
            print(format_result(r))
        if keep and r.out_of_core:
            from ..schedule import plots

            what = f"{name}, SRAM {args.sram // 1024} KB, tile {(r.tile_used or 0) // 1024} KB"
            if args.gantt:
                plots.plot_gantt(s1, args.gantt, f"{what}, one frame")
                print(f"wrote {args.gantt}", file=sys.stderr)
                if sf is not s1 and sf is not None:
                    root, ext = os.path.splitext(args.gantt)
                    plots.plot_gantt(sf, f"{root}-frames{ext}", f"{what}, {args.frames} frames")
                    print(f"wrote {root}-frames{ext}", file=sys.stderr)
            if args.memory:
                plots.plot_memory(s1, args.memory, f"{what}: arena over one frame", tail=tail, scratch=scratch)
                print(f"wrote {args.memory}", file=sys.stderr)
    return 0


# -- sweep -------------------------------------------------------------------------------------------------------------
def _sweep_one(job: tuple[str, str, Any, str, str]) -> dict[str, Any]:
    path, name, cfg, variant, workdir = job
    from ..schedule.run import run

    backing = os.path.join(workdir, f"sd-{os.getpid()}.img")     # one image per worker process, reused
    try:
        r, _, _ = run(path, cfg, name, backing=backing)
    except Exception as e:  # noqa: BLE001 - one failing point must not lose the sweep
        from ..schedule.run import Result

        r = Result(name, cfg.sram, cfg.tile, cfg.frames, status=f"error: {type(e).__name__}: {e}")
    return _row(r, variant)


def _progress(done: int, total: int, row: dict[str, Any]) -> None:
    """One line per grid point on stderr (a sweep takes minutes; the table comes at the end)."""
    print(f"sweep [{done}/{total}] {row['variant']} SRAM {row['sram'] // 1024}K tile {row['tile'] // 1024}K: "
          f"{row['status']}", file=sys.stderr, flush=True)


def cmd_sweep(args: argparse.Namespace) -> int:
    srams, tiles = args.sram, args.tile
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"microinterp sweep: unknown variant {v!r}; known: {', '.join(VARIANTS)}")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="microinterp-sweep-") as work:
        path, name = resolve_model(args.model, work)
        jobs = [(path, name, _config(args, s, t, v), v, work) for v in variants for s in srams for t in tiles]
        if args.ray is not None:       # grid points as Ray tasks (workers share this machine's filesystem)
            from .scaleout import ray_map

            rows = ray_map(_sweep_one, [(j,) for j in jobs], args.ray)
        elif args.jobs > 1:
            with ProcessPoolExecutor(max_workers=args.jobs) as ex:
                rows = []
                for r in ex.map(_sweep_one, jobs):
                    rows.append(r)
                    _progress(len(rows), len(jobs), r)
        else:
            rows = []
            for j in jobs:
                rows.append(_sweep_one(j))
                _progress(len(rows), len(jobs), rows[-1])
    csv_path = os.path.join(args.out, f"{name}-sweep.csv")
    json_path = os.path.join(args.out, f"{name}-sweep.json")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow(row)
    doc = {"schema": "microinterp.sweep/1", "model": name, "results": rows}
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=2, default=str)
    if args.json:
        json.dump({**doc, "csv": csv_path, "json": json_path}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    print("lat +: latency above compute-only (infinite SRAM); fps -: throughput below it (both: lower is better)")
    print(f"{'variant':<15} {'SRAM':>6} {'tile':>6} {'tiles':>6} {'IO':>7} {'comp':>6} {'latency s':>10} "
          f"{'lat +':>8} {'fps':>8} {'fps -':>8}  status")
    for r in rows:
        if r["status"] == "ok":
            print(f"{r['variant']:<15} {r['sram'] // 1024:>5}K {r['tile'] // 1024:>5}K {r['tiles']:>6} "
                  f"{r['io_tasks']:>7} {r['compute_tasks']:>6} {r['latency_s']:>10.3f} "
                  f"{_pct(r['latency_overhead']):>8} {1 / r['period_s']:>8.4f} {_pct(r['throughput_overhead']):>8}"
                  f"  ok")
        else:
            print(f"{r['variant']:<15} {r['sram'] // 1024:>5}K {r['tile'] // 1024:>5}K  {r['status'][:90]}")
    print(f"wrote {csv_path} and {json_path}")
    if args.plots:
        from ..schedule import plots

        p1 = plots.plot_sweep(rows, os.path.join(args.out, f"{name}-latency-throughput.png"),
                              f"{name}: out-of-core latency and throughput")
        p2 = plots.plot_tasks(rows, os.path.join(args.out, f"{name}-tasks.png"), f"{name}: tasks per frame")
        print(f"wrote {p1} and {p2}")
    return 0


# -- parsers -----------------------------------------------------------------------------------------------------------
def _common(s: argparse.ArgumentParser) -> None:
    s.add_argument("--frames", type=count_argument(1), default=4,
                   help="consecutive frames for the throughput run (default 4)")
    s.add_argument("--flash", type=_flash, default=None,
                   help="flash budget for weights in bytes (default: the profile's, 1 MB on the stm32f746); 0 puts "
                        "every weight on the SD card, as SwapNN pre-stores them")
    s.add_argument("--mcu", default="stm32f746", help="board: a profile name (default stm32f746) or CORE@CLOCK")
    add_kernels(s, what=": the compute tasks' cycle figures")
    s.add_argument("--pools", type=pools_argument, default=(1.0, 2.0, 1.0),
                   help="input:weights:output shares of the arena (default 1:2:1)")
    s.add_argument("--checksum", default="crc32", help="checksum of SD records (default crc32)")
    s.add_argument("--sd-read", type=float, default=None, help="SD read bandwidth in MB/s (default: the profile's)")
    s.add_argument("--sd-write", type=float, default=None, help="SD write bandwidth in MB/s (default: the profile's)")
    s.add_argument("--fps", type=float, default=None, help="frame rate for the wear figures (default: throughput)")
    s.add_argument("--no-input-reuse", action="store_true",
                   help="SwapNN's graph: re-read the input tile for every weight tile (more bytes than the pager)")
    s.add_argument("--double-buffer", action="store_true",
                   help="cap tile buffers at half the input/output pools so the next tile loads during compute")
    s.add_argument("--preempt", action="store_true",
                   help="priority-preemptive CPU: an earlier frame's compute suspends a later frame's")
    s.add_argument("--single-buffer-io-bound", action="store_true",
                   help="no weight-tile prefetch for IO-bound ops (leaves half the weights pool to the next frame)")


def add_parsers(sub: Any, size: Callable[[str], int]) -> None:
    """Register ``schedule`` and ``sweep`` on the main parser's subparsers."""
    s = sub.add_parser("schedule", help="simulate the out-of-core task schedule: latency, throughput, wear, energy")
    s.add_argument("model", help="a .tflite file or gen:vgg16 / gen:alexnet / gen:mobilenet_v1 / gen:demo_cnn")
    s.add_argument("--arena", "--sram", dest="sram", type=size, default=512 * 1024,
                   help="arena (SRAM) size, e.g. 512K (default; --sram is the old name)")
    s.add_argument("--tile", type=size, default=128 * 1024, help="tile buffer cap, e.g. 128K (default)")
    s.add_argument("--backing", type=output_file, default=None, help="SD image path (default: a temporary file)")
    add_json(s)
    s.add_argument("--gantt", type=output_file, default=None,
                   help="write a Gantt chart of the CPU and SD timelines (PNG)")
    s.add_argument("--memory", type=output_file, default=None, help="write the arena over time as rectangles (PNG)")
    _common(s)
    s.set_defaults(fn=cmd_schedule)

    s = sub.add_parser("sweep", help="the schedule over a grid of SRAM and tile sizes (CSV/JSON, plots)")
    s.add_argument("model", help="a .tflite file or gen:vgg16 / gen:alexnet / gen:mobilenet_v1 / gen:demo_cnn")
    s.add_argument("--arena", "--sram", dest="sram", type=sizes_argument,
                   default=[512 << 10, 1 << 20, 4 << 20, 8 << 20],
                   help="comma-separated arena (SRAM) sizes (default 512K,1M,4M,8M; --sram is the old name)")
    s.add_argument("--tile", type=sizes_argument, default=[k << 10 for k in (16, 32, 64, 128, 256, 512)],
                   help="comma-separated tile sizes (default 16K,32K,64K,128K,256K,512K)")
    s.add_argument("--jobs", type=count_argument(1), default=1, help="parallel processes (default 1)")
    s.add_argument("--ray", nargs="?", const="local", default=None,
                   help="run the grid points as Ray tasks ('local' starts an instance; workers must see the model "
                        "and output paths)")
    s.add_argument("--out", type=output_folder, default=".",
                   help="directory for MODEL-sweep.csv/.json and the plots (default .)")
    add_json(s)
    s.add_argument("--plots", action="store_true", help="also draw latency/throughput and task-count plots")
    s.add_argument("--variants", default="base",
                   help=f"comma-separated scheduling variants to run: {', '.join(VARIANTS)} (default base)")
    _common(s)
    s.set_defaults(fn=cmd_sweep)
