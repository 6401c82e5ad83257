"""What goes into the firmware: ``microinterp deploy MODEL [--mcu NAME] [--json]``.

* **The op resolver.** TFLM applications register exactly the ops a model uses with a
  ``tflite::MicroMutableOpResolver<N>``; :data:`RESOLVER_METHODS` maps every builtin and custom op TFLM registers to
  its ``Add...()`` method (read off ``micro_mutable_op_resolver.h`` of the pinned TFLM), and the snippet lists one
  call per distinct op of the model, ``N`` their count.
* **The arena of the firmware**: :func:`~microinterp.memory32.estimate_arena` for a target build
  (:mod:`microinterp.targets`: the core, by default the MCU profile's, and the kernel set; head as TFLM's greedy
  planner lays out the tensors and that build's scratch buffers, tail as TFLM's 32-bit structs and that build's
  kernel data take it), which is ``MicroInterpreter::arena_used_bytes()`` of that firmware to the byte (checked
  against TFLM's own Cortex-M builds in QEMU); ``kTensorArenaSize`` is it rounded up to the next KiB, for an arena
  declared ``alignas(16)``.
* **Cycles and latency** per op and in total from the cost model (:func:`~microinterp.analysis.predict_cycles`), for
  the MCU profile and kernel set.
* **Memory against the part**: weights (flash) and arena (SRAM) against the profile's flash and SRAM; when either
  does not fit, the out-of-core settings that run it (``arena=`` the largest arena the SRAM allows,
  ``backing="sd.img"``, ``flash=`` the profile's flash), checked by building the pager and simulating it when the model
  is given a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cost.analysis import predict_cycles
from ..cost.mcu import McuProfile, kernel_set
from ..errors import ArenaOverflowError, MicroInterpError, UnsupportedOpError
from ..memory32 import estimate_arena
from ..model import Model, load_model
from ..tflm.ops import ACCELERATOR_OPS, RESOLVER_METHODS
from .pricing import board_for

KIB = 1024


@dataclass(frozen=True)
class Deployment:
    """The report (:func:`deploy`); :meth:`as_dict` is the JSON document."""

    model: str
    mcu: McuProfile
    kernels: str
    ops: tuple[str, ...]                   # distinct ops, in first-use order
    resolver: str                          # the C++ snippet
    arena_bytes: int                       # the firmware's arena_used_bytes(), exact
    arena_size: int                        # rounded up to the next KiB (kTensorArenaSize)
    head_bytes: int
    tail_bytes: int
    weights_bytes: int
    per_op: tuple[tuple[int, str, float], ...]      # (index, op, cycles)
    out_of_core: dict[str, Any] | None
    target: dict[str, str] | None = None    # the firmware build the arena figures are for
    unmodelled_ops: tuple[str, ...] = ()    # ops whose device Prepare is not modelled (their figures are reference)
    calibrated_cycles: float | None = None  # the board's published build (None: the board has none)
    optimized: dict[str, Any] | None = None  # the arena after ``microinterp optimize`` (when it does not fit)

    @property
    def unsupported(self) -> tuple[str, ...]:
        """Ops TFLM registers no kernel for: a firmware cannot run the model (builtins such as GELU, custom codes
        other than TFLM's own)."""
        return tuple(op for op in self.ops if op not in RESOLVER_METHODS)

    @property
    def needs_accelerator(self) -> dict[str, str]:
        """Ops that run on an accelerator this board lacks (an Ethos-U command stream on a plain Cortex-M), with
        what would run each."""
        return {op: ACCELERATOR_OPS[op] for op in self.ops
                if op in ACCELERATOR_OPS and op not in self.mcu.accelerators}

    @property
    def deployable(self) -> bool:
        return not self.unsupported and not self.needs_accelerator

    @property
    def why_not(self) -> str:
        """Why the model cannot run on this board ("" when it can)."""
        parts = []
        if self.unsupported:
            parts.append(f"TFLM has no kernel for {', '.join(self.unsupported)} (register your own "
                         "TFLMRegistration for it)")
        for op, what in self.needs_accelerator.items():
            parts.append(f"{op} needs {what}; {self.mcu.name} has none")
        return "; ".join(parts)

    @property
    def cycles(self) -> float | None:
        """Predicted cycles of one invoke; None when the board cannot run the model."""
        return sum(c for _, _, c in self.per_op) if self.deployable else None

    @property
    def latency_ms(self) -> float | None:
        return None if self.cycles is None else self.cycles / self.mcu.clock_hz * 1e3

    @property
    def calibrated_latency_ms(self) -> float | None:
        if self.calibrated_cycles is None or not self.deployable:
            return None
        return self.calibrated_cycles / self.mcu.clock_hz * 1e3

    @property
    def fits(self) -> bool:
        return self.arena_size <= self.mcu.sram_bytes and self.weights_bytes <= self.mcu.flash_bytes

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "mcu": self.mcu.name, "core": self.mcu.core_key, "clock_hz": self.mcu.clock_hz,
                "board_assumptions": self.mcu.assumed or None, "kernels": self.kernels,
                "ops": list(self.ops), "resolver": self.resolver, "arena_bytes": self.arena_bytes,
                "arena_size": self.arena_size, "head_bytes": self.head_bytes, "tail_bytes": self.tail_bytes,
                "weights_bytes": self.weights_bytes, "sram_bytes": self.mcu.sram_bytes,
                "flash_bytes": self.mcu.flash_bytes, "fits": self.fits, "cycles": self.cycles,
                "latency_ms": self.latency_ms, "cost_build": self.mcu.figure_note(self.kernels),
                "calibrated": None if self.calibrated_latency_ms is None else {
                    "cycles": self.calibrated_cycles, "latency_ms": self.calibrated_latency_ms,
                    "build": self.mcu.calibration_note(self.kernels)},
                "per_op": [{"index": i, "op": op, "cycles": c} for i, op, c in self.per_op],
                "out_of_core": self.out_of_core, "arena_used_bytes": self.arena_bytes,
                "kTensorArenaSize": self.arena_size, "target": self.target,
                "unmodelled_ops": list(self.unmodelled_ops), "unsupported_ops": list(self.unsupported),
                "needs_accelerator": self.needs_accelerator, "deployable": self.deployable,
                "why_not": self.why_not or None, "optimized": self.optimized}


def resolver_snippet(ops: list[str]) -> str:
    """``tflite::MicroMutableOpResolver<N> resolver;`` and one ``Add...()`` per op. An op TFLM does not ship gets an
    ``AddCustom`` with a placeholder for a registration of your own, and a comment saying TFLM has no kernel for
    it (a builtin such as GELU included: the firmware cannot run the model until you write one)."""
    lines = [f"static tflite::MicroMutableOpResolver<{len(ops)}> op_resolver;"]
    for op in ops:
        method = RESOLVER_METHODS.get(op)
        lines.append(f"op_resolver.{method}();" if method else
                     f'op_resolver.AddCustom("{op}", /* TFLM has no kernel for {op}: your TFLMRegistration */ '
                     'nullptr);')
    return "\n".join(lines)


def deploy(model: Any, mcu: str | McuProfile | None = None, kernels: str = "optimized",
           target: str | None = None) -> Deployment:
    """The deployment report for ``model`` on ``mcu`` (see the module docstring). ``target`` (a core such as
    ``"cortex-m55"``) is the core the firmware is built for: the arena figures are that build's, and without
    ``mcu`` a board of that core is priced (:func:`~microinterp.apps.pricing.board_for`); ``kernels`` picks CMSIS-NN (``optimized``) or the
    reference kernels for both the arena and the cost model."""
    from ..targets import get_target, target_of_core

    m: Model = load_model(model)
    p = board_for(mcu, target)
    ks = kernel_set(kernels)
    device = get_target(target, ks) if target is not None else target_of_core(p.core, ks)
    ops: list[str] = []
    for sg in m.subgraphs:
        for op in sg.operators:
            if op.key not in ops:
                ops.append(op.key)
    est = estimate_arena(m, target=device)
    arena = est.total_bytes
    size = -(-arena // KIB) * KIB
    weights = m.weight_bytes()
    cycles = predict_cycles(m, p, ks)
    per_op = tuple((op.index, op.key, c) for op, c in zip(m.main.operators, cycles))
    calibrated = sum(predict_cycles(m, p, ks, calibrated=True)) if p.calibration.get(ks) else None
    ooc = optimized = None
    if (size > p.sram_bytes or weights > p.flash_bytes) and not any(op in ACCELERATOR_OPS for op in ops):
        ooc = _out_of_core(m, p)
        if size > p.sram_bytes:
            optimized = _optimized(m, p, device)
    return Deployment(m.source or m.description or "model", p, ks, tuple(ops), resolver_snippet(ops), arena, size,
                      est.head_bytes, est.persistent_bytes, weights, per_op, ooc, device.describe(),
                      est.unmodelled_ops, calibrated, optimized)


def _optimized(m: Model, p: McuProfile, device: Any) -> dict[str, Any] | None:
    """What ``microinterp optimize --target CORE`` achieves for this build: the firmware arena after the graph
    rewrite, whether it then fits, its price in MACs and cycles, and the command that writes it (None when the
    rewrite finds nothing to cut)."""
    from ..targets import CORES, get_target
    from .optimize import rewrite

    try:
        w = rewrite(m, target=device, mcu=p, budget_s=0.3, check_seeds=(), quick=True)
    except MicroInterpError:
        return None
    if not w.cuts or w.target_arena_after is None:
        return None
    size = -(-w.target_arena_after // KIB) * KIB
    per_core = {}
    for core in CORES:
        try:
            per_core[core] = estimate_arena(w.data, target=get_target(core, device.kernels)).total_bytes
        except MicroInterpError:
            continue
    return {"arena_bytes": w.target_arena_after, "arena_size": size, "fits": size <= p.sram_bytes,
            "extra_macs": w.extra_macs, "extra_cycles": w.extra_cycles, "cycles": w.cycles_after,
            "per_core": per_core, "kernels": device.kernels, "command": optimize_command(device.core.name)}


def optimize_command(core: str) -> str:
    """The command line that writes the rewritten model for ``core``."""
    return f"microinterp optimize MODEL -o MODEL_optimized.tflite --target {core}"


def out_of_core_command(settings: dict[str, Any]) -> str:
    """The command line that runs a model with the out-of-core settings :func:`deploy` found."""
    pools = settings.get("pools")
    shares = f" --pools {':'.join(str(v) for v in pools)}" if pools is not None else ""
    return (f"microinterp run MODEL --arena {settings['arena']} --backing {settings['backing']}{shares} "
            f"--mcu {settings['mcu']}")


#: Pool splits (input : weights : output) tried out of core, the pager's default first; None last: no pools=, the
#: pools sized to what the ops need when the default shares do not fit (the smallest arena of all).
POOL_SPLITS = ((1, 2, 1), (2, 1, 1), (1, 1, 1), (3, 1, 1), None)


def _out_of_core(m: Model, p: McuProfile) -> dict[str, Any]:
    """Settings that run the model on this part out of core: the arena 3/4 of the SRAM (the rest for the
    application and TFLM's structs), or the smallest arena the pager names when that is too small and still fits
    the SRAM, for the first pool split of :data:`POOL_SPLITS` that works; with the pager's dry-run cycles and SD
    traffic. ``runs: False`` with the smallest arena any split needs when none fits the part."""
    import os
    import tempfile

    from ..interpreter import Interpreter

    settings: dict[str, Any] = {"backing": "sd.img", "flash": p.flash_bytes, "mcu": p.name}
    smallest, last_error = None, ""
    with tempfile.TemporaryDirectory() as tmp:
        for pools in POOL_SPLITS:
            arena = int(p.sram_bytes * 0.75) // KIB * KIB
            for _ in range(2):
                try:
                    with Interpreter(m, arena=arena, backing=os.path.join(tmp, "sd.img"), flash=p.flash_bytes,
                                     mcu=p, pools=pools) as it:
                        records = it.simulate()
                except (ArenaOverflowError, UnsupportedOpError) as e:
                    needed, last_error = getattr(e, "needed_arena", None), str(e)
                    if needed:
                        smallest = needed if smallest is None else min(smallest, needed)
                    if needed and arena < needed <= p.sram_bytes:
                        arena = -(-needed // KIB) * KIB
                        continue
                    break
                total = sum(r.total_cycles for r in records)
                settings.update(arena=arena, pools=pools, runs=True, cycles=total,
                                latency_ms=total / p.clock_hz * 1e3,
                                sd_read_bytes=sum(r.sd_read_bytes for r in records),
                                sd_write_bytes=sum(r.sd_write_bytes for r in records))
                return settings
    settings.update(runs=False, needed_arena=smallest, error=last_error)
    return settings
