"""The report's first screen: what a person opening it wants to know -- does the model fit the board, how much RAM
and flash, how fast -- and, when it does not fit, the settings that would run it."""

from __future__ import annotations

import html
from typing import Any

from ...errors import MicroInterpError

KIB = 1024


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _kb(n: int) -> str:
    return f"{n / KIB:,.1f} KB"


def _phased(model: Any) -> int | None:
    """The arena of planner='phased' (row-band phases), None when it cannot plan the model."""
    from ...interpreter import Interpreter

    try:
        it = Interpreter(model, planner="phased")
    except MicroInterpError:
        return None
    return it.arena_used_bytes


def headline(model: Any, mcu: str | None, target: str | None) -> tuple[str, dict[str, Any]]:
    """The headline card's HTML and its figures (board, RAM, flash, latency, fits, and the settings that would make
    it fit)."""
    from ..deploy import deploy

    try:
        d = deploy(model, mcu, target=target)
    except MicroInterpError as e:
        doc = {"deployable": False, "why_not": f"{type(e).__name__}: {e}"}
        return (f'<div class="card card-bad"><div class="verdict bad" id="verdict">TFLM cannot run this model: {_e(doc["why_not"])}</div></div>', doc)
    p = d.mcu
    verdict = ("fits" if d.fits else "does NOT fit") if d.deployable else "is NOT deployable"
    cls = "ok" if d.fits and d.deployable else "bad"
    latency = f"{d.latency_ms:,.2f} ms" if d.latency_ms is not None else "none (cannot run)"
    doc = {"board": p.name, "core": d.target["core"], "kernels": d.kernels, "fits": d.fits,
           "deployable": d.deployable, "arena": d.arena_size, "sram": p.sram_bytes, "weights": d.weights_bytes,
           "flash": p.flash_bytes, "latency_ms": d.latency_ms}
    cells = [
        ("RAM (arena)", f"{_kb(d.arena_size)} of {_kb(p.sram_bytes)}",
         f"kTensorArenaSize {d.arena_size:,} for {d.target['core']} ({d.target['kernels']})"),
        ("Flash (weights)", f"{_kb(d.weights_bytes)} of {_kb(p.flash_bytes)}", "constant tensors"),
        ("Latency", latency, (f"{p.name} @ {p.clock_hz / 1e6:g} MHz, {'CMSIS-NN' if d.kernels == 'optimized' else 'reference'} "
                             "kernels (cost model)")),
    ]
    tiles = "".join(f'<div class="tile"><div class="what">{_e(a)}</div><div class="figure">{_e(b)}</div>'
                    f'<div class="note">{_e(c)}</div></div>' for a, b, c in cells)
    extra = []
    if not d.deployable:
        extra.append(f"<p class=bad>{_e(d.why_not)}</p>")
    elif not d.fits:
        o = d.out_of_core or {}
        if o.get("runs"):
            cmd = (f"microinterp run MODEL --arena {o['arena']} --backing sd.img --pools "
                   f"{':'.join(str(v) for v in o['pools'])} --mcu {p.name}")
            extra.append(f"<p>Out of core it runs on {_e(p.name)}: a {o['arena']:,}-byte arena with tensors and "
                         f"weights paged to an SD image, {o['latency_ms']:,.1f} ms per invoke "
                         f"(<code>{_e(cmd)}</code>).</p>")
            doc["out_of_core"] = {k: o[k] for k in ("arena", "pools", "latency_ms")}
        elif o:
            extra.append(f"<p>Out of core it needs at least {o.get('needed_arena') or '?'} bytes of arena: more "
                         f"than {_e(p.name)} has.</p>")
        phased = _phased(model)
        if phased is not None:
            fits = phased <= p.sram_bytes
            extra.append(f"<p>Row-band phases (<code>--planner phased</code>, in microinterp) need "
                         f"{_kb(phased)} of arena: {'within' if fits else 'above'} {_e(p.name)}'s SRAM.</p>")
            doc["phased_arena"] = phased
    if p.assumed:
        extra.append(f"<p class=note>{_e(p.assumed)}</p>")
    html_text = (f'<div class="card card-{cls}"><div id="verdict" class="verdict {cls}">{_e(d.model.split("/")[-1])} '
                 f'{verdict} on {_e(p.name)} ({_e(p.core)} @ {p.clock_hz / 1e6:g} MHz)</div>'
                 f'<div class="tiles">{tiles}</div>{"".join(extra)}</div>')
    return html_text, doc
