"""Arithmetic intensity per layer, from the model alone: is each layer compute-bound or IO-bound out of core?

For every op of the main subgraph (SwapNN's classification, shared/docs/out-of-core.md):

- **W** (MOps): multiply-accumulates for CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED / TRANSPOSE_CONV (and the
  other MAC ops of :func:`microinterp.mcu.op_class` ``conv``/``depthwise``/``fc``); compares or adds for pooling
  (output elements x filter area) and reductions (input elements); output elements for elementwise ops, activations,
  softmax and data movement (PAD, CONCATENATION, TRANSPOSE, ...); 0 for pure views (the kernels of the ``view`` cost family). The counts are
  :func:`microinterp.cost.work.op_work`'s, so the pager charges the same work.
- **Q** (MB, 1 MB = 10^6 bytes): bytes of the op's non-constant inputs + constant inputs (weights, biases, ...)
  + outputs, as stored (int8 activations: one byte per element).
- **N** = (W / S_cpu) / (Q / S_io): for the profile (S_cpu = :meth:`McuProfile.ops_per_second` of conv MACs with the
  chosen kernels, S_io = the SD card's read bandwidth) and as a range over SwapNN's S_cpu 64-480 MOPS and S_io
  10-40 MB/s (``n_min`` = fastest CPU with slowest IO, ``n_max`` = the reverse).
- **class**: a MAC op (op class conv / depthwise / fc) is ``compute-bound`` when N >= 1, else ``io-bound``. Any other
  op is ``negligible`` when it is a view (W = 0) or its W is below :data:`NEGLIGIBLE_SHARE` (10 %) of the whole
  model's W: pooling, activations, softmax, reshapes, residual ADDs work on a tile already in SRAM next to the MAC
  layer that produced it and cost next to nothing (SwapNN: "ReLU/pooling: negligible"); only a non-MAC op that does
  a real share of the work (e.g. in a model made of ADDs) is classified by its N like a MAC op.

Totals: counts per class, MOps, Q, feature-map MB (every distinct non-constant tensor once), weight MB (every distinct
constant tensor once), footprint MB (their sum), and the calibrated cost model's in-core prediction (cycles, seconds,
energy with the profile's active power). :func:`predict_cycles` is that cost model alone.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..model import Model, load_model
from ..resolver import declaration_of
from .mcu import McuProfile, get_profile, kernel_set, op_class
from .work import op_work

#: SwapNN's effective compute and IO speeds of MCUs (shared/docs/out-of-core.md).
S_CPU_RANGE = (64e6, 480e6)
S_IO_RANGE = (10e6, 40e6)
#: A non-MAC op whose W is below this share of the model's W is negligible.
NEGLIGIBLE_SHARE = 0.1
MAC_CLASSES = frozenset({"conv", "depthwise", "fc"})
CLASSES = ("compute-bound", "io-bound", "negligible")
MB = 1e6
#: How the kernel sets are called in reports (the issue's flavour names).
KERNEL_NAMES = {"optimized": "cmsis-nn", "reference": "reference"}


@dataclass(frozen=True)
class Layer:
    """One op's W, Q, N and class (``klass``; ``class`` in :meth:`as_dict`)."""

    index: int
    op: str
    op_class: str
    mops: float
    input_mb: float
    weight_mb: float
    output_mb: float
    io_mb: float
    n: float
    n_min: float
    n_max: float
    klass: str
    cycles: float           # the calibrated cost model's prediction for this op (in core)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``class`` for ``klass``, an infinite N (an op that moves no bytes) as None."""
        d = asdict(self)
        d["class"] = d.pop("klass")
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


@dataclass(frozen=True)
class Analysis:
    """:func:`analyze`'s result: the layers and the totals, with the speeds used."""

    model: str
    mcu: McuProfile
    kernels: str
    s_cpu: float
    s_io: float
    layers: tuple[Layer, ...]
    totals: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document (schema in docs/cost-model.md)."""
        return {"model": self.model, "mcu": self.mcu.name, "kernels": KERNEL_NAMES[self.kernels],
                "cost_build": self.mcu.figure_note(self.kernels),
                "s_cpu_mops": self.s_cpu / 1e6, "s_io_mb_per_s": self.s_io / MB,
                "range": {"s_cpu_mops": [x / 1e6 for x in S_CPU_RANGE], "s_io_mb_per_s": [x / MB for x in S_IO_RANGE]},
                "negligible_share": NEGLIGIBLE_SHARE,
                "layers": [layer.as_dict() for layer in self.layers], "totals": dict(self.totals)}

    def format_table(self) -> str:
        p, t = self.mcu, self.totals
        speeds = (f"S_cpu {self.s_cpu / 1e6:.0f} MOPS, S_io {self.s_io / MB:g} MB/s; range S_cpu "
                  f"{S_CPU_RANGE[0] / 1e6:g}-{S_CPU_RANGE[1] / 1e6:g} MOPS, S_io "
                  f"{S_IO_RANGE[0] / MB:g}-{S_IO_RANGE[1] / MB:g} MB/s")
        header = (f"{'op':>4}  {'name':<20} {'W MOps':>10} {'in MB':>8} {'wt MB':>8} {'out MB':>8} {'Q MB':>8} "
                  f"{'N':>8} {'N range':>17}  class")
        lines = [f"model: {self.model}  ({len(self.layers)} ops)",
                 f"MCU {p.name} ({p.core} @ {p.clock_hz / 1e6:g} MHz), {KERNEL_NAMES[self.kernels]} kernels: {speeds}",
                 "", header]
        for r in self.layers:
            rng = f"{_num(r.n_min)}-{_num(r.n_max)}"
            lines.append(f"{r.index:>4}  {r.op:<20} {r.mops:>10.3f} {r.input_mb:>8.3f} {r.weight_mb:>8.3f} "
                         f"{r.output_mb:>8.3f} {r.io_mb:>8.3f} {_num(r.n):>8} {rng:>17}  {r.klass}")
        counts = ", ".join(f"{t['counts'][c]} {c}" for c in CLASSES)
        sizes = (f"  W {t['mops']:.1f} MOps, Q {t['io_mb']:.2f} MB moved; feature maps {t['feature_map_mb']:.3f} MB, "
                 f"weights {t['weight_mb']:.3f} MB, footprint {t['footprint_mb']:.3f} MB")
        run = (f"  in core on {p.name}: {t['cycles'] / 1e6:.2f} M cycles = {t['seconds'] * 1e3:.1f} ms, "
               f"{t['energy_mj']:.2f} mJ")
        lines += ["", f"totals: {counts}", sizes, run, f"  cycles model {p.figure_note(self.kernels)}"]
        if t.get("calibrated_cycles") is not None:
            lines.append(f"  calibrated: {t['calibrated_cycles'] / 1e6:.2f} M cycles = "
                         f"{t['calibrated_cycles'] / p.clock_hz * 1e3:.1f} ms with {p.calibration_note(self.kernels)}")
        return "\n".join(lines)


def _num(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"


def _model(source: Any) -> Model:
    if isinstance(source, Model):
        return source
    if hasattr(source, "model") and isinstance(source.model, Model):       # an Interpreter
        return source.model
    return load_model(os.fspath(source) if isinstance(source, os.PathLike) else source)


def _profile(mcu: str | McuProfile) -> McuProfile:
    return mcu if isinstance(mcu, McuProfile) else get_profile(mcu)


def _n(w: float, q: float, s_cpu: float, s_io: float) -> float:
    if w == 0:
        return 0.0
    if q == 0:
        return math.inf
    return (w / s_cpu) / (q / s_io)


def predict_cycles(model: Any, mcu: str | McuProfile = "apollo3", kernels: str = "optimized", *,
                   calibrated: bool = False) -> list[float]:
    """The cost model: cycles of each op of the main subgraph when the whole model runs in core -- the op's
    instructions on the board's core x its cycles per instruction (:meth:`McuProfile.op_cycles`; today's build,
    or the board's published build with ``calibrated``), plus TFLM's per-op overhead."""
    m, p, ks = _model(model), _profile(mcu), kernel_set(kernels)
    tensors = m.main.tensors
    return [p.op_cycles(op, tensors, ks, calibrated=calibrated) + p.interpreter_cycles_per_op
            for op in m.main.operators]


def analyze(model: Any, mcu: str | McuProfile = "stm32f746", kernels: str = "optimized", *,
            negligible_share: float = NEGLIGIBLE_SHARE) -> Analysis:
    """W, Q, N and class of every op of ``model`` (a path, bytes, a Model or an Interpreter) for the MCU ``mcu``."""
    m, p, ks = _model(model), _profile(mcu), kernel_set(kernels)
    sg = m.main
    tensors = sg.tensors
    s_cpu, s_io = p.ops_per_second(ks), p.io_bytes_per_second
    cycles = predict_cycles(m, p, ks)
    rows = []
    for op, cyc in zip(sg.operators, cycles):
        macs, elements = op_work(op, tensors)
        w = 0 if declaration_of(op.key).cost_family == "view" else (macs or elements)
        ins = [tensors[i] for i in op.inputs if i >= 0]
        act_in = sum(t.nbytes for t in ins if t.data is None)
        weights = sum(t.nbytes for t in ins if t.data is not None)
        out = sum(tensors[i].nbytes for i in op.outputs if i >= 0)
        q = act_in + weights + out
        rows.append((op, w, act_in, weights, out, q, cyc))
    total_w = sum(r[1] for r in rows)
    layers = []
    for op, w, act_in, weights, out, q, cyc in rows:
        cls = op_class(op.key)
        n = _n(w, q, s_cpu, s_io)
        if cls not in MAC_CLASSES and (w == 0 or w < negligible_share * total_w):
            klass = "negligible"
        else:
            klass = "compute-bound" if n >= 1 else "io-bound"
        layers.append(Layer(op.index, op.key, cls, w / 1e6, act_in / MB, weights / MB, out / MB, q / MB, n,
                            _n(w, q, S_CPU_RANGE[1], S_IO_RANGE[0]), _n(w, q, S_CPU_RANGE[0], S_IO_RANGE[1]), klass,
                            cyc))
    used = {i for op in sg.operators for i in (*op.inputs, *op.outputs) if i >= 0}
    fmap = sum(tensors[i].nbytes for i in used if tensors[i].data is None)
    wts = sum(tensors[i].nbytes for i in used if tensors[i].data is not None)
    total_cycles = sum(cycles)
    seconds = p.seconds(total_cycles)
    totals = {"layers": len(layers), "counts": {c: sum(1 for r in layers if r.klass == c) for c in CLASSES},
              "mops": total_w / 1e6, "io_mb": sum(r.io_mb for r in layers), "feature_map_mb": fmap / MB,
              "weight_mb": wts / MB, "footprint_mb": (fmap + wts) / MB, "cycles": total_cycles, "seconds": seconds,
              "calibrated_cycles": sum(predict_cycles(m, p, ks, calibrated=True)) if p.calibration.get(ks) else None,
              "energy_mj": p.energy_joules(seconds) * 1e3}
    name = m.source if isinstance(getattr(m, "source", None), str) else (m.description or "model")
    return Analysis(name, p, ks, s_cpu, s_io, tuple(layers), totals)


def classes_of(analysis: Analysis, ops: Sequence[str] | None = None) -> dict[str, int]:
    """Class counts, optionally over the layers whose op name is in ``ops``."""
    rows = [r for r in analysis.layers if ops is None or r.op in ops]
    return {c: sum(1 for r in rows if r.klass == c) for c in CLASSES}
