"""Hostile models: a field-aware mutation fuzzer that runs every mutant in a child process.

A mutant is a real model with a few edits. Most edits are **field-aware**: :func:`field_slots` walks the flatbuffer
with the ``tflite`` accessors and lists the byte positions of the values TFLM interprets -- tensor shapes, types,
buffer indices, quantization scales, zero points and axes, operator opcode indices, inputs and outputs, every
builtin-options field, custom options, opcode builtin codes, subgraph inputs and outputs, buffer lengths -- and a
mutation overwrites one with a boundary value of its kind (0, -1, INT32_MAX, NaN, a denormal, a neighbour index
...). The rest are byte edits (flips, random bytes, truncation), which mostly exercise the loader.

Each mutant runs in a forked child (:func:`run_mutant`) under a memory limit (``RLIMIT_AS``) and a wall-clock limit:
load, build an ``Interpreter`` in memory and out of core (a small arena over a temporary SD image), with the phased
planner, or as each Cortex-M firmware build (``target=``), or rewrite it with ``optimize`` and run what it wrote
(:data:`MODES`); set seeded inputs, invoke, read the outputs. The outcome is ``ok``, ``typed`` (a
:class:`~microinterp.errors.MicroInterpError`:
the product's promise), ``untyped`` (any other exception: an escape), ``crash`` (the child died on a signal),
``hang`` (no answer in time, nor in ten times that), ``loop`` (a hang the TFLM wheel shows too on the same inputs:
a WHILE whose condition never turns false -- the model's own, not an escape) or ``slow`` (finished within ten times
the limit: a huge tensor at reference speed). :func:`campaign` runs many, counts outcomes and saves every escape, crash and hang as
a regression file (the mutant ``.tflite`` and a ``.json`` with the seed, the edits and the traceback).

``python -m microinterp.apps.fuzz --mutants N --out DIR [SEED.tflite ...]`` runs a campaign from the command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import select
import signal
import struct
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: Values tried per kind of field.
INT32_VALUES = (0, 1, -1, 2, 3, 4, 7, 8, 16, 255, 256, 65535, 65536, 2 ** 31 - 1, -2 ** 31, 2 ** 30, -7)
UINT32_VALUES = (0, 1, 2, 3, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 1000, 65535)
FLOAT_VALUES = (0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-45, 1e-40, 1e38, -1.0, 1e-30, 3.4e38)
INT64_VALUES = (0, -1, 1, 2 ** 31, -2 ** 31 - 1, 2 ** 62, -128, 127, 255)
INT8_VALUES = (0, 1, -1, 2, 3, 7, 9, 13, 17, 127, -128)

#: Arena of the out-of-core run (small enough that any model of some size pages).
OOC_ARENA = 32 * 1024


@dataclass(frozen=True)
class Slot:
    """A field's value in the file: byte position, C type (``i32``, ``u32``, ``f32``, ``i64``, ``i8``, ``u8``) and
    what it is (``tensor 3 shape[1]``)."""

    pos: int
    ctype: str
    what: str


_FMT = {"i32": "<i", "u32": "<I", "f32": "<f", "i64": "<q", "i8": "<b", "u8": "<B"}
_VALUES = {"i32": INT32_VALUES, "u32": UINT32_VALUES, "f32": FLOAT_VALUES, "i64": INT64_VALUES,
           "i8": INT8_VALUES, "u8": (0, 1, 2, 3, 255, 17, 9)}


def _field(tab: Any, slot: int) -> int:
    """Absolute position of field ``slot`` of a table, 0 when absent."""
    off = tab.Offset(4 + 2 * slot)
    return tab.Pos + off if off else 0


def _vector(tab: Any, slot: int) -> tuple[int, int]:
    """(first element's position, length) of vector field ``slot``, (0, 0) when absent."""
    off = tab.Offset(4 + 2 * slot)
    if not off:
        return 0, 0
    return tab.Vector(off), tab.VectorLen(off)


#: (vector | scalar, field slot in the schema, C type, name) of the fields :func:`field_slots` lists per table.
_TENSOR_FIELDS = (("vector", 0, "i32", "shape"), ("scalar", 1, "i8", "type"), ("scalar", 2, "u32", "buffer"),
                  ("scalar", 5, "u8", "is_variable"))
_QUANT_FIELDS = (("vector", 2, "f32", "scale"), ("vector", 3, "i64", "zero_point"),
                 ("scalar", 6, "i32", "quantized_dimension"))
_OP_FIELDS = (("scalar", 0, "u32", "opcode_index"), ("vector", 1, "i32", "inputs"), ("vector", 2, "i32", "outputs"),
              ("vector", 8, "i32", "intermediates"), ("scalar", 3, "u8", "builtin_options_type"))


def field_slots(data: bytes) -> list[Slot]:
    """Every interpreted value of a model with its position (see the module docstring). Tolerates a model the
    accessors cannot walk completely: it lists what it reached."""
    import tflite

    slots: list[Slot] = []

    def vec(tab, slot, ctype, what, size=4, limit=64):
        start, n = _vector(tab, slot)
        for i in range(min(n, limit)):
            slots.append(Slot(start + i * size, ctype, f"{what}[{i}]"))
        if start:
            slots.append(Slot(start - 4, "u32", f"{what}.length"))

    def scalar(tab, slot, ctype, what):
        pos = _field(tab, slot)
        if pos:
            slots.append(Slot(pos, ctype, what))

    def fields(tab, table, where):
        for kind, slot, ctype, name in table:
            if kind == "vector":
                vec(tab, slot, ctype, f"{where} {name}", size=struct.calcsize(_FMT[ctype]))
            else:
                scalar(tab, slot, ctype, f"{where} {name}")

    try:
        m = tflite.Model.GetRootAs(data, 0)
        for ci in range(min(m.OperatorCodesLength(), 256)):
            c = m.OperatorCodes(ci)._tab
            scalar(c, 0, "i8", f"opcode {ci} deprecated_builtin_code")
            scalar(c, 2, "i32", f"opcode {ci} version")
            scalar(c, 3, "i32", f"opcode {ci} builtin_code")
        for bi in range(min(m.BuffersLength(), 4096)):
            start, n = _vector(m.Buffers(bi)._tab, 0)
            if start:
                slots.append(Slot(start - 4, "u32", f"buffer {bi}.length"))
        for si in range(min(m.SubgraphsLength(), 64)):
            sg = m.Subgraphs(si)
            st = sg._tab
            vec(st, 1, "i32", f"subgraph {si} inputs")
            vec(st, 2, "i32", f"subgraph {si} outputs")
            for ti in range(min(sg.TensorsLength(), 4096)):
                t = sg.Tensors(ti)
                where = f"subgraph {si} tensor {ti}"
                fields(t._tab, _TENSOR_FIELDS, where)
                q = t.Quantization()
                if q is not None:
                    fields(q._tab, _QUANT_FIELDS, where)
            for oi in range(min(sg.OperatorsLength(), 4096)):
                op = sg.Operators(oi)
                ot = op._tab
                where = f"subgraph {si} op {oi}"
                fields(ot, _OP_FIELDS, where)
                start, n = _vector(ot, 5)
                for k in range(min(n, 64)):
                    slots.append(Slot(start + k, "u8", f"{where} custom_options[{k}]"))
                opt = ot.Offset(4 + 2 * 4)
                if opt:
                    table = ot.Indirect(ot.Pos + opt)
                    vt = table - struct.unpack_from("<i", data, table)[0]
                    vt_len = struct.unpack_from("<H", data, vt)[0]
                    for f in range((vt_len - 4) // 2):
                        foff = struct.unpack_from("<H", data, vt + 4 + 2 * f)[0]
                        if foff:
                            pos = table + foff
                            ctype = "i32" if pos + 4 <= len(data) and pos % 4 == 0 else "i8"
                            slots.append(Slot(pos, ctype, f"{where} option field {f}"))
    except Exception:           # a corrupted model: the slots reached so far
        pass
    return [s for s in slots if 0 <= s.pos and s.pos + struct.calcsize(_FMT[s.ctype]) <= len(data)]


@dataclass(frozen=True)
class Mutant:
    seed: str
    data: bytes = field(repr=False)
    edits: tuple[str, ...]

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()[:16]


def mutate(seed: str, data: bytes, rng: np.random.Generator, slots: Sequence[Slot] | None = None) -> Mutant:
    """One mutant of ``data``: 1-3 edits, field-aware 85 % of the time (see the module docstring)."""
    buf = bytearray(data)
    edits = []
    slots = field_slots(data) if slots is None else slots
    for _ in range(int(rng.integers(1, 4))):
        r = rng.random()
        if slots and r < 0.85:
            s = slots[int(rng.integers(len(slots)))]
            fmt = _FMT[s.ctype]
            old = struct.unpack_from(fmt, buf, s.pos)[0]
            choices = list(_VALUES[s.ctype])
            if s.ctype in ("i32", "u32", "i64", "i8", "u8") and not isinstance(old, float):
                choices += [old + 1, old - 1, old * 2]
            value = choices[int(rng.integers(len(choices)))]
            try:
                struct.pack_into(fmt, buf, s.pos, value)
            except struct.error:                      # out of the C type's range: wrap it
                bits = struct.calcsize(fmt) * 8
                struct.pack_into(fmt.replace("i", "I").replace("q", "Q").replace("b", "B"), buf, s.pos,
                                 int(value) % (1 << bits))
            edits.append(f"{s.what} {old!r} -> {value!r}")
        elif r < 0.95 and buf:
            pos = int(rng.integers(len(buf)))
            bit = int(rng.integers(8))
            buf[pos] ^= 1 << bit
            edits.append(f"flip byte {pos} bit {bit}")
        elif buf:
            n = int(rng.integers(len(buf)))
            del buf[n:]
            edits.append(f"truncate to {n} bytes")
            break
    return Mutant(seed, bytes(buf), tuple(edits))


@dataclass(frozen=True)
class Outcome:
    """``kind`` is ok / typed / untyped / crash / hang; ``error`` the exception class, ``detail`` its message or
    the signal, ``trace`` the last frames of an untyped exception, ``mode`` memory / out-of-core."""

    kind: str
    mode: str = ""
    error: str = ""
    detail: str = ""
    trace: str = ""

    @property
    def escaped(self) -> bool:
        return self.kind in ("untyped", "crash", "hang")


def _input_value(d: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    dtype, shape = d["dtype"], tuple(d["shape"])
    if dtype is None or np.dtype(dtype).kind not in "biuf":
        return np.zeros(shape, dtype=dtype if dtype is not None else np.uint8)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-1, 1, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -128), min(info.max, 127) + 1, shape).astype(dtype)


def _inputs(it: Any, rng: np.random.Generator) -> None:
    for i, d in enumerate(it.get_input_details()):
        it.set_input(_input_value(d, rng), i)


#: Every mode :func:`run_mutant` knows: in memory, out of core, with the phased planner, as each firmware build
#: (``target:CORE/KERNELS``), and ``optimize`` (the rewriter, then the written model run in memory).
TARGET_MODES = tuple(f"target:{core}/{kernels}" for core in ("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33",
                                                             "cortex-m55") for kernels in ("cmsis-nn", "reference"))
MODES = ("memory", "out-of-core", "phased", *TARGET_MODES, "optimize", "rewrite")


def _exercise(data: bytes, mode: str, tmp: str) -> None:
    """What a user does with a model: load, build, set inputs, invoke twice, read every output -- in memory, out of
    core, with the phased planner or as a firmware build; or ``optimize`` it (the plan only, or ``rewrite``: patches
    and the plan) and run what it wrote (which must load, or be refused with a typed error)."""
    from microinterp import Interpreter, load_model

    rng = np.random.default_rng(0)
    model = load_model(data)
    if mode == "optimize":
        from microinterp.apps.optimize import optimize

        model = load_model(optimize(model, budget_s=0.2).data)
        kwargs: dict[str, Any] = {}
    elif mode == "rewrite":
        from microinterp.apps.optimize import rewrite

        model = load_model(rewrite(model, budget_s=0.2, quick=True).data)
        kwargs = {}
    elif mode.startswith("target:"):
        core, _, kernels = mode[len("target:"):].partition("/")
        kwargs = {"target": core, "kernels": kernels or "cmsis-nn"}
    elif mode == "phased":
        kwargs = {"planner": "phased"}
    else:
        kwargs = {} if mode == "memory" else {"arena": OOC_ARENA, "backing": os.path.join(tmp, "sd.img")}
    with Interpreter(model, **kwargs) as it:
        for _ in range(2):
            _inputs(it, rng)
            it.invoke()
            for o in range(it.num_outputs):
                it.get_output(o)


def _wheel(data: bytes) -> None:
    """The same run in the TFLM wheel (the oracle of the host build): is a loop that never ends the model's own?"""
    from tflite_micro.python.tflite_micro import runtime

    from microinterp import load_model

    rng = np.random.default_rng(0)
    sg = load_model(data).main
    interp = runtime.Interpreter.from_bytes(bytes(data), arena_size=64 << 20)
    for _ in range(2):
        for i, ti in enumerate(sg.inputs):
            t = sg.tensors[ti]
            details = {"dtype": t.dtype, "shape": t.shape}
            interp.set_input(_input_value(details, rng), i)
        interp.invoke()


def _child(data: bytes, mode: str, mem_bytes: int, wfd: int) -> None:
    from microinterp.errors import MicroInterpError

    try:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    except (ValueError, OSError):
        pass
    result: dict[str, Any]
    try:
        if mode == "wheel":
            _wheel(data)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                _exercise(data, mode, tmp)
        result = {"kind": "ok"}
    except MicroInterpError as e:
        result = {"kind": "typed", "error": type(e).__name__, "detail": str(e)[:300]}
    except BaseException as e:                          # noqa: BLE001 -- classifying every escape is the point
        result = {"kind": "untyped", "error": type(e).__name__, "detail": str(e)[:300],
                  "trace": "".join(traceback.format_tb(e.__traceback__)[-4:])}
    os.write(wfd, json.dumps(result).encode())
    os.close(wfd)
    os._exit(0)


def run_mutant(data: bytes, mode: str = "memory", time_limit: float = 20.0, mem_bytes: int = 3 << 30) -> Outcome:
    """Run one model in a forked child with ``mem_bytes`` of address space and ``time_limit`` seconds."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:                                        # the child never returns
        os.close(rfd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _child(data, mode, mem_bytes, wfd)
    os.close(wfd)
    chunks, deadline = [], time.monotonic() + time_limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Outcome("hang", mode, detail=f"no answer within {time_limit} s")
            ready, _, _ = select.select([rfd], [], [], left)
            if ready:
                chunk = os.read(rfd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(rfd)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return Outcome("crash", mode, detail=signal.Signals(os.WTERMSIG(status)).name)
    if not chunks:
        return Outcome("crash", mode, detail=f"exit status {os.WEXITSTATUS(status)} without a result")
    r = json.loads(b"".join(chunks))
    return Outcome(r["kind"], mode, r.get("error", ""), r.get("detail", ""), r.get("trace", ""))


#: A run that exceeds the time limit is given this many times longer before it counts as a hang.
SLOW_FACTOR = 10


def classify(data: bytes, mode: str = "memory", time_limit: float = 20.0) -> Outcome:
    """:func:`run_mutant`, and for a hang the same run in the TFLM wheel: a hang it shows too is ``loop`` (the
    model's own); otherwise the run gets :data:`SLOW_FACTOR` times the limit, and what finishes then is ``slow``
    (a large tensor computed at reference speed, not a hang), with the outcome it reached in its detail."""
    o = run_mutant(data, mode, time_limit)
    if o.kind != "hang":
        return o
    if run_mutant(data, "wheel", time_limit).kind == "hang":
        return Outcome("loop", mode, detail="the TFLM wheel does not finish this model either")
    long = run_mutant(data, mode, time_limit * SLOW_FACTOR)
    if long.kind in ("ok", "typed"):
        return Outcome("slow", mode, long.error, f"finished ({long.kind}) within {time_limit * SLOW_FACTOR:g} s")
    return long


@dataclass
class Report:
    """A campaign's counts: per outcome (``memory typed``, ``out-of-core untyped`` ...) and per escape class."""

    mutants: int = 0
    outcomes: Counter = field(default_factory=Counter)
    escapes: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{self.mutants} mutants"]
        lines += [f"  {k:<28} {v}" for k, v in sorted(self.outcomes.items())]
        classes = Counter(f"{e['mode']} {e['kind']} {e['error']}: {e['detail'][:80]}" for e in self.escapes)
        lines += ["escapes:"] + [f"  {n:5d}  {c}" for c, n in classes.most_common()]
        return "\n".join(lines)


def campaign(seeds: dict[str, bytes], mutants: int, out: str | os.PathLike | None = None, rng_seed: int = 0,
             modes: Iterable[str] = ("memory", "out-of-core"), time_limit: float = 20.0,
             progress: bool = False) -> Report:
    """``mutants`` mutants spread over ``seeds`` (name -> model bytes), each run in every mode; escapes are saved
    under ``out`` (when given) as regression files."""
    rng = np.random.default_rng(rng_seed)
    names = sorted(seeds)
    slots = {n: field_slots(seeds[n]) for n in names}
    report = Report()
    outdir = Path(out) if out is not None else None
    for k in range(mutants):
        name = names[k % len(names)]
        mutant = mutate(name, seeds[name], rng, slots[name])
        report.mutants += 1
        for mode in modes:
            o = classify(mutant.data, mode, time_limit)
            report.outcomes[f"{mode} {o.kind}"] += 1
            if o.escaped:
                entry = {"seed": name, "edits": list(mutant.edits), "mode": mode, "kind": o.kind, "error": o.error,
                         "detail": o.detail, "trace": o.trace, "digest": mutant.digest}
                report.escapes.append(entry)
                if outdir is not None:
                    outdir.mkdir(parents=True, exist_ok=True)
                    (outdir / f"{mutant.digest}.tflite").write_bytes(mutant.data)
                    tag = mode.replace(":", "-").replace("/", "-")
                    (outdir / f"{mutant.digest}.{tag}.json").write_text(json.dumps(entry, indent=1) + "\n")
        if progress and (k + 1) % 100 == 0:
            print(f"{k + 1}/{mutants}: {dict(report.outcomes)}", file=sys.stderr, flush=True)
    return report


def _main(argv: Sequence[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m microinterp.apps.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("seeds", nargs="+", help=".tflite seed models")
    p.add_argument("--mutants", type=int, default=1000)
    p.add_argument("--out", default="fuzz-escapes", help="folder for the regression files of escapes")
    p.add_argument("--rng-seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=20.0)
    p.add_argument("--modes", default="memory,out-of-core",
                   help=f"comma-separated: {', '.join(MODES)}, or 'all'")
    args = p.parse_args(argv)
    seeds = {Path(s).stem: Path(s).read_bytes() for s in args.seeds}
    modes = MODES if args.modes == "all" else args.modes.split(",")
    unknown = sorted(set(modes) - set(MODES) - {"wheel"})
    if unknown:
        p.error(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(MODES)}")
    r = campaign(seeds, args.mutants, args.out, args.rng_seed, modes, args.time_limit,
                 progress=True)
    print(r.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
