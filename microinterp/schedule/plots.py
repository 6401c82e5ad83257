"""Pictures of schedules and sweeps (matplotlib, the ``plot`` extra: ``pip install 'microinterp[plot]'``).

- :func:`plot_sweep`: per-frame latency and throughput vs tile size, one line per SRAM size, with the compute-only
  (infinite SRAM) reference;
- :func:`plot_tasks`: number of IO and compute tasks of one frame vs tile size, one line per SRAM size;
- :func:`plot_gantt`: the CPU and SD timelines of a schedule (one frame, or the first frames of a pipelined run);
- :func:`plot_memory`: the arena over time as rectangles (time x address), as in the TFLM paper's memory-plan
  picture: every pool buffer of the schedule is drawn where and while it lives. The simulator allocates bytes per
  pool; addresses inside a pool are assigned afterwards like TFLM's greedy planner (largest first, first fit), so a
  rectangle that has to go past its pool's end (fragmentation the byte count does not see) is drawn hatched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import MicroInterpError

COLORS = {"read input": "#4C72B0", "read weights": "#DD8452", "write": "#55A868", "compute": "#C44E52",
          "input": "#4C72B0", "weights": "#DD8452", "output": "#55A868"}


class PlotError(MicroInterpError):
    """matplotlib is missing (install the ``plot`` extra)."""


def _plt() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotError("plots need matplotlib: pip install 'microinterp[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _kb(n: float) -> str:
    return f"{n / 1024:g}K" if n < 1 << 20 else f"{n / (1 << 20):g}M"


def _tile_axis(ax: Any, results: Sequence[dict[str, Any]]) -> None:
    ticks = sorted({r["tile"] for r in results if r.get("status") == "ok" and r.get("tile")})
    ax.set_xscale("log", base=2)
    if ticks:
        ax.set_xticks([t / 1024 for t in ticks])
        ax.set_xticklabels([_kb(t) for t in ticks])
        ax.minorticks_off()
    ax.set_xlabel("tile size")


def _by_sram(results: Sequence[dict[str, Any]], variant: str | None = None) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for r in results:
        if r.get("status") != "ok" or r.get("tile") is None:
            continue
        if variant is not None and r.get("variant", "base") != variant:
            continue
        out.setdefault(r["sram"], []).append(r)
    for v in out.values():
        v.sort(key=lambda r: r["tile"])
    return dict(sorted(out.items()))


def plot_sweep(results: Sequence[dict[str, Any]], path: str, title: str = "") -> str:
    """Latency and throughput vs tile size, one line per SRAM size (and per variant, dashed after the first)."""
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.6))
    variants = list(dict.fromkeys(r.get("variant", "base") for r in results if r.get("status") == "ok"))
    styles = ["-", "--", ":", "-."]
    cmap = plt.get_cmap("viridis")
    srams = sorted({r["sram"] for r in results if r.get("status") == "ok"})
    comp = None
    for vi, variant in enumerate(variants):
        for si, (sram, rows) in enumerate(_by_sram(results, variant).items()):
            x = [r["tile"] / 1024 for r in rows]
            color = cmap(si / max(1, len(srams) - 1) * 0.85)
            label = f"SRAM {_kb(sram)}" + (f" ({variant})" if len(variants) > 1 else "")
            a1.plot(x, [r["latency_s"] for r in rows], styles[vi % 4], marker="o", color=color, label=label)
            a2.plot(x, [1 / r["period_s"] for r in rows], styles[vi % 4], marker="o", color=color, label=label)
            comp = rows[0]["compute_only_s"]
    if comp:
        a1.axhline(comp, color="k", lw=1, ls=":", label="compute-only (infinite SRAM)")
        a2.axhline(1 / comp, color="k", lw=1, ls=":", label="compute-only (infinite SRAM)")
    frames = next((r["frames"] for r in results if r.get("status") == "ok"), 1)
    for ax, yl in ((a1, "per-frame latency (s), lower is better"),
                   (a2, f"throughput of {frames} frames (frames/s), higher is better")):
        _tile_axis(ax, results)
        ax.set_ylabel(yl)
        ax.set_ylim(bottom=0)       # from zero: a few percent must not look like a factor
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    a1.set_title("latency vs tile size")
    a2.set_title("throughput vs tile size")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_tasks(results: Sequence[dict[str, Any]], path: str, title: str = "") -> str:
    """IO tasks and compute tasks of one frame vs tile size, per SRAM size (log scale)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.6))
    cmap = plt.get_cmap("viridis")
    groups = _by_sram(results, "base") or _by_sram(results)
    for si, (sram, rows) in enumerate(groups.items()):
        x = [r["tile"] / 1024 for r in rows]
        color = cmap(si / max(1, len(groups) - 1) * 0.85)
        ax.plot(x, [r["io_tasks"] for r in rows], "-o", color=color, label=f"IO tasks, SRAM {_kb(sram)}")
        ax.plot(x, [r["compute_tasks"] for r in rows], "--s", color=color, label=f"compute tasks, SRAM {_kb(sram)}")
    _tile_axis(ax, results)
    ax.set_yscale("log")
    ax.set_ylabel("tasks per frame")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title(title or "tasks vs tile size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _label(t: Any) -> str:
    if t.kind == "read":
        return f"read {t.pool}"
    return t.kind


def plot_gantt(schedule: Any, path: str, title: str = "", frames: int | None = None) -> str:
    """CPU and SD timelines: one bar per task (reads by pool, writes, computes); layer boundaries of frame 0 are
    marked on top; with several frames the frame number is the bar's shade."""
    plt = _plt()
    from matplotlib.patches import Patch

    hz = schedule.clock_hz
    tasks = [t for t in schedule.tasks() if frames is None or t.frame < frames]
    nframes = max((t.frame for t in tasks), default=0) + 1
    fig, ax = plt.subplots(figsize=(14, 4.4 + 0.3 * min(nframes, 4)))
    rows = {"cpu": 1, "io": 0}
    bars: dict[tuple[str, str], list[tuple[float, float]]] = {}
    shade: dict[tuple[str, str], list[float]] = {}
    for t in tasks:
        key = (t.resource, _label(t))
        for a, b in t.segments or [(t.start, t.end)]:
            bars.setdefault(key, []).append((a / hz, max(b - a, 0) / hz))
            shade.setdefault(key, []).append(1.0 - 0.45 * (t.frame % 2))
    for (res, lab), spans in bars.items():
        color = COLORS.get(lab, "#888888")
        alphas = shade[(res, lab)]
        for a in sorted(set(alphas)):
            sel = [s for s, al in zip(spans, alphas) if al == a]
            ax.broken_barh(sel, (rows[res] - 0.4, 0.8), facecolors=color, alpha=a, edgecolor="none")
    # layer boundaries of frame 0, each labelled with the op that starts there
    first: dict[int, tuple[float, int]] = {}
    for t in tasks:
        if t.frame == 0 and t.kind == "compute" and t.start / hz < first.get(t.layer, (math.inf, 0))[0]:
            first[t.layer] = (t.start / hz, t.op)
    names = {o["index"]: o.get("op", "") for o in getattr(schedule.graph, "ops", [])}
    step = max(1, math.ceil(len(first) / 40))          # at most ~40 labels
    for k, (_, (x, op)) in enumerate(sorted(first.items())):
        ax.axvline(x, color="k", lw=0.3, alpha=0.4)
        if k % step == 0:
            ax.text(x, 1.02, f"{op} {names.get(op, '')}", transform=ax.get_xaxis_transform(), rotation=60,
                    fontsize=6, ha="left", va="bottom")
    ax.set_yticks([0, 1])
    ax.set_yticklabels(["SD (DMA)", "CPU"])
    ax.set_xlabel("time (s)")
    ax.set_xlim(0, schedule.makespan / hz)
    util = (f"CPU busy {schedule.busy['cpu'] / schedule.makespan:.0%}, SD busy "
            f"{schedule.busy['io'] / schedule.makespan:.0%}" if schedule.makespan else "")
    fig.suptitle((title + "  " if title else "") + util, fontsize=10)
    handles = [Patch(color=COLORS[k], label=k) for k in ("compute", "read input", "read weights", "write")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=7, ncol=4)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def buffer_intervals(schedule: Any) -> list[dict[str, Any]]:
    """Every pool buffer of the schedule: pool, bytes, frame, alloc/free time (cycles) and an offset inside its pool,
    placed like TFLM's greedy planner (largest first, lowest offset not overlapping a placed buffer that lives at
    the same time); ``overflow`` marks a buffer that had to go past its pool's end."""
    open_: dict[int, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for t, pool, delta, bid, frame in schedule.pool_events:
        if delta > 0:
            iv = {"pool": pool, "bytes": delta, "frame": frame, "start": t, "end": None, "offset": 0,
                  "overflow": False}
            open_[bid] = iv
            out.append(iv)
        else:
            iv = open_.pop(bid, None)
            if iv is not None:
                iv["end"] = t
    for iv in open_.values():
        iv["end"] = schedule.makespan
    caps = schedule.graph.pools
    placed: dict[str, list[dict[str, Any]]] = {}
    for iv in sorted(out, key=lambda v: (-v["bytes"], v["start"])):
        others = sorted((o for o in placed.setdefault(iv["pool"], [])
                         if o["start"] < iv["end"] and iv["start"] < o["end"]), key=lambda o: o["offset"])
        at = 0
        for o in others:
            if at + iv["bytes"] <= o["offset"]:
                break
            at = max(at, o["offset"] + o["bytes"])
        iv["offset"] = at
        iv["overflow"] = at + iv["bytes"] > caps.get(iv["pool"], 0)
        placed[iv["pool"]].append(iv)
    return out


def plot_memory(schedule: Any, path: str, title: str = "", tail: int = 0, scratch: int = 0) -> str:
    """The arena over time: pools stacked by address (scratch, input, weights, output, then the tail), every buffer a
    rectangle from its allocation to its release."""
    plt = _plt()
    from matplotlib.patches import Patch, Rectangle

    hz = schedule.clock_hz
    caps = schedule.graph.pools
    base = {"input": scratch, "weights": scratch + caps["input"], "output": scratch + caps["input"] + caps["weights"]}
    top = base["output"] + caps["output"]
    fig, ax = plt.subplots(figsize=(14, 5))
    end = schedule.makespan / hz
    for iv in buffer_intervals(schedule):
        x0, x1 = iv["start"] / hz, iv["end"] / hz
        y0 = base[iv["pool"]] + iv["offset"]
        ax.add_patch(Rectangle((x0, y0 / 1024), max(x1 - x0, end * 1e-4), iv["bytes"] / 1024,
                               facecolor=COLORS[iv["pool"]], edgecolor="k", lw=0.2,
                               alpha=0.85 if iv["frame"] % 2 == 0 else 0.5,
                               hatch="//" if iv["overflow"] else None))
    for pool, at in base.items():
        ax.axhline(at / 1024, color="k", lw=0.6, ls="--")
        ax.text(end * 1.005, (at + caps[pool] / 2) / 1024, pool, va="center", fontsize=8)
    ax.axhline(top / 1024, color="k", lw=0.6, ls="--")
    if scratch:
        ax.text(end * 1.005, scratch / 2048, "scratch", va="center", fontsize=8)
    if tail:
        ax.add_patch(Rectangle((0, top / 1024), end, tail / 1024, facecolor="#999999", alpha=0.5))
        ax.text(end * 1.005, (top + tail / 2) / 1024, "tail", va="center", fontsize=8)
    ax.set_xlim(0, end * 1.06)
    ax.set_ylim(0, (top + tail) / 1024 * 1.02)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("arena address (KB)")
    handles = [Patch(color=COLORS[p], label=f"{p} pool buffer") for p in ("input", "weights", "output")]
    ax.legend(handles=handles, loc="upper left", fontsize=7, ncol=3)
    ax.set_title(title or "memory plan over time")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
