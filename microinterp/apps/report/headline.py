"""The report's first screen: what a person opening it wants to know -- does the model fit the board, how much RAM
and flash, how fast -- and, when it does not fit, the settings that would run it."""

from __future__ import annotations

from typing import Any

from ..deploy import out_of_core_command
from .markup import escape as _e

KIB = 1024


def _kb(n: int) -> str:
    return f"{n / KIB:,.1f} KB"


def headline(d: Any, phased_arena: int | None) -> str:
    """The headline card of a :class:`~microinterp.apps.deploy.Deployment` (or of the error that stopped one):
    board, RAM, flash, latency, fits, and when it does not fit the out-of-core settings and the arena of
    ``planner='phased'`` (``phased_arena``, None when that planner cannot plan the model)."""
    if isinstance(d, Exception):
        return (f'<div class="card card-bad"><div class="verdict bad" id="verdict">TFLM cannot run this model: '
                f'{_e(type(d).__name__)}: {_e(d)}</div></div>')
    p = d.mcu
    verdict = ("fits" if d.fits else "does NOT fit") if d.deployable else "is NOT deployable"
    cls = "ok" if d.fits and d.deployable else "bad"
    latency = f"{d.latency_ms:,.2f} ms" if d.latency_ms is not None else "none (cannot run)"
    cells = [
        ("RAM (arena)", f"{_kb(d.arena_size)} of {_kb(p.sram_bytes)}",
         f"kTensorArenaSize {d.arena_size:,} for {d.target['core']} ({d.target['kernels']})"),
        ("Flash (weights)", f"{_kb(d.weights_bytes)} of {_kb(p.flash_bytes)}", "constant tensors"),
        ("Latency", latency, (f"{p.name} @ {p.clock_hz / 1e6:g} MHz, "
                              f"{'CMSIS-NN' if d.kernels == 'optimized' else 'reference'} kernels (cost model)")),
    ]
    tiles = "".join(f'<div class="tile"><div class="what">{_e(a)}</div><div class="figure">{_e(b)}</div>'
                    f'<div class="note">{_e(c)}</div></div>' for a, b, c in cells)
    extra = []
    if not d.deployable:
        extra.append(f"<p class=bad>{_e(d.why_not)}</p>")
    elif not d.fits:
        o = d.out_of_core or {}
        if o.get("runs"):
            extra.append(f"<p>Out of core it runs on {_e(p.name)}: a {o['arena']:,}-byte arena with tensors and "
                         f"weights paged to an SD image, {o['latency_ms']:,.1f} ms per invoke "
                         f"(<code>{_e(out_of_core_command(o))}</code>).</p>")
        elif o:
            extra.append(f"<p>Out of core it needs at least {o.get('needed_arena') or '?'} bytes of arena: more "
                         f"than {_e(p.name)} has.</p>")
        z = d.optimized
        if z is not None:
            extra.append(f"<p>After <code>microinterp optimize</code> (a graph stock TFLM runs, outputs identical) "
                         f"the arena is {_kb(z['arena_size'])}: {'within' if z['fits'] else 'above'} "
                         f"{_e(p.name)}'s SRAM, for {z['extra_macs']:+.1%} MACs and {z['extra_cycles']:+.1%} cycles "
                         f"(<code>{_e(z['command'])}</code>).</p>")
        if phased_arena is not None:
            fits = phased_arena <= p.sram_bytes
            extra.append(f"<p>Row-band phases (<code>--planner phased</code>, in microinterp) need "
                         f"{_kb(phased_arena)} of arena: {'within' if fits else 'above'} {_e(p.name)}'s SRAM.</p>")
    if p.assumed:
        extra.append(f"<p class=note>{_e(p.assumed)}</p>")
    return (f'<div class="card card-{cls}"><div id="verdict" class="verdict {cls}">{_e(d.model.split("/")[-1])} '
            f'{verdict} on {_e(p.name)} ({_e(p.core)} @ {p.clock_hz / 1e6:g} MHz)</div>'
            f'<div class="tiles">{tiles}</div>{"".join(extra)}</div>')
