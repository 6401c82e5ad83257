"""One scheduling run: a model on an SRAM size and tile size, simulated, next to its baselines.

:func:`open_records` builds the pager for a configuration and returns its records (``simulate()``, no kernels, no
IO). A model whose constant bytes exceed the flash budget runs out of core even when its activations would fit the
SRAM (the interpreter only pages when the activations do not fit; weights that cannot live in flash must come from
the card all the same): the pager is then built directly. :func:`evaluate` simulates one frame (latency) and ``F``
consecutive frames (throughput) and reports them against three baselines of the same records:

- **compute-only** (an ideal MCU with infinite SRAM): the sum of the compute tasks' cycles (kernels, flash reads and
  software checksums; no SD traffic);
- **IO-only**: the sum of the IO tasks' cycles (compute free);
- **sequential**: every task one after the other (the pager's own ``total_cycles``).

Overheads are SwapNN's: latency ``latency / compute-only - 1``, throughput ``1 - throughput / compute-only
throughput``.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..cost.mcu import McuProfile, get_profile, kernel_set
from ..model import load_model
from .simulator import Schedule, simulate
from .taskgraph import build_graph
from .tasks import TaskGraph
from .wear import energy, wear


@dataclass
class Config:
    """One point of a sweep (sizes in bytes; ``flash=None`` is the profile's flash)."""

    sram: int
    tile: int | None
    frames: int = 4
    flash: int | None = None               # None: the profile's flash; 0: every weight on the card (SwapNN)
    mcu: str = "stm32f746"
    kernels: str = "optimized"             # kernel set whose cycle coefficients the compute tasks use (or reference)
    pools: tuple[float, float, float] = (1.0, 2.0, 1.0)
    checksum: str = "crc32"
    input_reuse: bool = True
    double_buffer: bool = False
    preempt: bool = False                  # priority-preemptive CPU across frames
    single_buffer_io_bound: bool = False   # no weight-tile prefetch for IO-bound ops (frees half the pool for frames)
    sd_read_mb_s: float | None = None      # override the profile's SD bandwidths (MB/s, 1 MB = 10^6 bytes)
    sd_write_mb_s: float | None = None
    fps: float | None = None               # frame rate for the wear figures (default: the simulated throughput)


@dataclass
class Opened:
    """A built configuration: the records, the pager (None when the model runs in core) and the profile."""

    records: list[Any]
    pager: Any
    mcu: McuProfile
    out_of_core: bool
    closer: Any = None
    tile: int | None = None

    def close(self) -> None:
        if self.closer is not None:
            self.closer()
            self.closer = None


def profile_for(cfg: Config) -> McuProfile:
    mcu = get_profile(cfg.mcu)
    changes = {}
    if cfg.sd_read_mb_s:
        changes["sd_read_bytes_per_s"] = cfg.sd_read_mb_s * 1e6
    if cfg.sd_write_mb_s:
        changes["sd_write_bytes_per_s"] = cfg.sd_write_mb_s * 1e6
    return mcu.replace(**changes) if changes else mcu


def open_records(model: Any, cfg: Config, backing: str | os.PathLike | None = None) -> Opened:
    """Build the pager (or an in-core interpreter) for ``cfg`` and return the records of one invoke."""
    from ..interpreter import Interpreter
    from ..pager import Pager
    from ..resolver import default_resolver
    from ..runtime import OutOfCore

    mcu = profile_for(cfg)
    m = load_model(model)
    tmp = None
    if backing is None:
        tmp = tempfile.TemporaryDirectory(prefix="microinterp-sched-")
        backing = os.path.join(tmp.name, "sd.img")
    flash = mcu.flash_bytes if cfg.flash is None else int(cfg.flash)
    tile = cfg.tile

    def build(tile_cap: int | None) -> Opened:
        if m.weight_bytes() > flash:
            ooc = OutOfCore(backing, pools=cfg.pools, flash=flash, tile=tile_cap, checksum=cfg.checksum)
            pager = Pager(m, default_resolver(), cfg.sram, ooc, mcu=mcu, cost_kernels=kernel_set(cfg.kernels))
            return Opened(pager.simulate(), pager, mcu, True, pager.close, tile_cap)
        it = Interpreter(m, arena=cfg.sram, backing=backing, pools=cfg.pools, flash=flash, mcu=mcu, tile=tile_cap,
                         checksum=cfg.checksum, cost_kernels=cfg.kernels)
        if it.out_of_core:
            return Opened(it.simulate(), it.runtime, mcu, True, it.close, tile_cap)
        return Opened(it.profile, None, mcu, False, it.close, tile_cap)

    try:
        opened = build(tile)
        if cfg.double_buffer and opened.pager is not None:
            p = opened.pager.pools
            half = min(p.input, p.output) // 2
            if tile is None or half < tile:
                opened.close()
                opened = build(half)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        raise
    if tmp is not None:
        inner = opened.closer

        def closer() -> None:
            if inner is not None:
                inner()
            tmp.cleanup()

        opened.closer = closer
    return opened


@dataclass
class Result:
    """What one configuration gives (times in seconds; ``status`` is ``ok`` or why it did not run)."""

    model: str
    sram: int
    tile: int | None
    frames: int
    status: str = "ok"
    out_of_core: bool = True
    tile_used: int | None = None
    pools: dict[str, int] = field(default_factory=dict)
    tiles: int = 0
    io_tasks: int = 0
    compute_tasks: int = 0
    read_tasks: int = 0
    write_tasks: int = 0
    sd_read_bytes: int = 0
    sd_write_bytes: int = 0
    compute_only_s: float = 0.0
    io_only_s: float = 0.0
    sequential_s: float = 0.0
    latency_s: float = 0.0
    period_s: float = 0.0          # makespan / F of F pipelined frames
    latency_overhead: float = 0.0  # latency / compute-only - 1
    throughput_overhead: float = 0.0   # 1 - compute-only / period
    cpu_utilisation: float = 0.0
    io_utilisation: float = 0.0
    precise: bool = True
    host_s: float = 0.0
    wear: dict[str, Any] = field(default_factory=dict)
    energy: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate(opened: Opened, cfg: Config, name: str = "model", *, keep: bool = False
             ) -> tuple[Result, Schedule | None, Schedule | None]:
    """Simulate one frame and ``cfg.frames`` frames of ``opened``; returns the result and (with ``keep``) the two
    schedules."""
    t0 = time.perf_counter()
    mcu = opened.mcu
    pools = ({"input": opened.pager.pools.input, "weights": opened.pager.pools.weights,
              "output": opened.pager.pools.output} if opened.pager is not None else {})
    kw = {"pager": opened.pager, "mcu": mcu, "checksum": cfg.checksum, "input_reuse": cfg.input_reuse,
          "single_buffer_io_bound": cfg.single_buffer_io_bound}
    g1 = build_graph(opened.records, frames=1, **kw)
    s1 = simulate(g1, record_pools=keep, preempt=cfg.preempt)
    sf = s1
    if cfg.frames > 1:
        gf = build_graph(opened.records, frames=cfg.frames, **kw)
        sf = simulate(gf, record_pools=keep, preempt=cfg.preempt)
    tot = g1.totals(0)
    hz = mcu.clock_hz
    comp, io = tot["compute_cycles"], tot["io_cycles"]
    latency, period = s1.latency_cycles, sf.period_cycles
    r = Result(name, cfg.sram, cfg.tile, cfg.frames, out_of_core=opened.out_of_core, tile_used=opened.tile,
               pools=pools, tiles=tot["tiles"], io_tasks=tot["io_tasks"], compute_tasks=tot["compute_tasks"],
               read_tasks=tot["sd_read_commands"], write_tasks=tot["sd_write_commands"],
               sd_read_bytes=tot["sd_read_bytes"], sd_write_bytes=tot["sd_write_bytes"],
               compute_only_s=comp / hz, io_only_s=io / hz, sequential_s=tot["total_cycles"] / hz,
               latency_s=latency / hz, period_s=period / hz,
               latency_overhead=latency / comp - 1 if comp else 0.0,
               throughput_overhead=1 - comp / period if period else 0.0,
               cpu_utilisation=sf.busy["cpu"] / sf.makespan if sf.makespan else 0.0,
               io_utilisation=sf.busy["io"] / sf.makespan if sf.makespan else 0.0,
               precise=g1.precise,
               options={"input_reuse": cfg.input_reuse, "double_buffer": cfg.double_buffer, "preempt": cfg.preempt,
                        "single_buffer_io_bound": cfg.single_buffer_io_bound, "flash": cfg.flash,
                        "pools": list(cfg.pools), "checksum": cfg.checksum, "mcu": mcu.name,
                        "kernels": kernel_set(cfg.kernels), "cost_build": mcu.figure_note(cfg.kernels),
                        "sd_read_mb_s": mcu.sd_read_bytes_per_s / 1e6,
                        "sd_write_mb_s": mcu.sd_write_bytes_per_s / 1e6, "hash_on_cpu": g1.hash_on_cpu})
    fps = cfg.fps if cfg.fps else (1.0 / r.period_s if r.period_s else 0.0)
    r.wear = wear(tot["sd_write_bytes"], fps).as_dict()
    r.energy = energy(mcu, s1, comp).as_dict()
    r.host_s = time.perf_counter() - t0
    return r, (s1 if keep else None), (sf if keep else None)


def run(model: Any, cfg: Config, name: str | None = None, backing: str | os.PathLike | None = None,
        keep: bool = False) -> tuple[Result, Schedule | None, Schedule | None]:
    """Open ``model`` for ``cfg``, evaluate it and close it. An ArenaOverflowError (the pager cannot tile some op
    into these pools) gives a result with ``status`` saying so instead of raising."""
    from ..errors import ArenaOverflowError

    name = name or (os.path.basename(os.fspath(model)) if isinstance(model, (str, os.PathLike)) else "model")
    try:
        opened = open_records(model, cfg, backing)
    except ArenaOverflowError as e:
        return Result(name, cfg.sram, cfg.tile, cfg.frames, status=f"does not fit: {e}"), None, None
    try:
        return evaluate(opened, cfg, name, keep=keep)
    finally:
        opened.close()


def graph_for(opened: Opened, cfg: Config, frames: int = 1) -> TaskGraph:
    return build_graph(opened.records, pager=opened.pager, mcu=opened.mcu, checksum=cfg.checksum, frames=frames,
                       input_reuse=cfg.input_reuse, single_buffer_io_bound=cfg.single_buffer_io_bound)
