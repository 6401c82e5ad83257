"""Golden-output comparison against TFLM itself (the pinned ``tflite-micro`` wheel, a test dependency only).

:func:`compare_with_tflm` runs microinterp and the wheel on the same inputs with every intermediate tensor preserved
(microinterp: linear plan; wheel: ``kPreserveAllTensors``), walks the ops in order and reports the first op whose
output differs: op index and name, tensor, first differing element, both values, and the quantization parameters of
the op's inputs and outputs. :func:`tflm_arena_head` reads the wheel's "Arena allocation head".
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ModelError, TfliteMicroUnavailable
from ..interpreter import Interpreter
from ..model import Model, load_model


def _runtime():
    try:
        from tflite_micro import runtime
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise TfliteMicroUnavailable(
            "the TFLM oracle is not installed: pip install 'microinterp[test]' "
            "(tflite-micro==0.dev20261023182759)") from e
    return runtime


def model_bytes(model: Any) -> bytes:
    if isinstance(model, Model):
        return bytes(model._raw)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    with open(os.fspath(model), "rb") as f:
        return f.read()


@dataclass
class Mismatch:
    op_index: int
    op_name: str
    tensor_index: int
    tensor_name: str
    element: tuple[int, ...]
    microinterp_value: Any
    tflm_value: Any
    count: int
    quantization: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        q = "; ".join(f"{k}: {v}" for k, v in self.quantization.items())
        return (f"op {self.op_index} ({self.op_name}) output tensor {self.tensor_index} ({self.tensor_name!r}): "
                f"{self.count} element(s) differ, first at {self.element}: microinterp {self.microinterp_value} "
                f"vs TFLM {self.tflm_value} [{q}]")


@dataclass
class Comparison:
    outputs: list[np.ndarray]
    tflm_outputs: list[np.ndarray]
    mismatch: Mismatch | None

    @property
    def ok(self) -> bool:
        return self.mismatch is None and all(same_bits(a, b) for a, b in zip(self.outputs, self.tflm_outputs))

    def __str__(self) -> str:
        return "identical" if self.ok else str(self.mismatch or "outputs differ")


def _quant_summary(model: Model, tensor_ids: Sequence[int]) -> dict[str, Any]:
    out = {}
    for ti in tensor_ids:
        if ti < 0:
            continue
        t = model.main.tensors[ti]
        q = t.quantization
        if q is None:
            continue
        scales = q.scales if q.scales.size <= 4 else f"{q.scales.size} per-channel scales"
        out[f"t{ti} {t.type_name}"] = f"scale={scales} zp={q.zero_points[:4].tolist()}"
    return out


class TflmRunner:
    """The wheel's interpreter on a model, with every tensor preserved (for per-op comparisons)."""

    def __init__(self, model: Any, arena_size: int | None = None, preserve_all: bool = True):
        rt = _runtime()
        data = model_bytes(model)
        cfg = rt.InterpreterConfig.kPreserveAllTensors if preserve_all else rt.InterpreterConfig.kAllocationRecording
        size = arena_size or max(len(data) * 10, 1 << 20) + 4 * _planned_upper_bound(data)
        self.interpreter = rt.Interpreter.from_bytes(data, arena_size=size, intrepreter_config=cfg)

    def run(self, inputs: Sequence[np.ndarray]) -> None:
        for i, x in enumerate(inputs):
            self.interpreter.set_input(x, i)
        self.interpreter.invoke()

    def output(self, i: int) -> np.ndarray:
        return np.array(self.interpreter.get_output(i), copy=True)

    def tensor(self, ti: int) -> np.ndarray:
        got = self.interpreter.GetTensor(ti, 0)
        return np.array(got["tensor_data"] if isinstance(got, dict) else got, copy=True)

    get_tensor = tensor     # the name microinterp's Interpreter (and LiteRT) use


def _planned_upper_bound(data: bytes) -> int:
    """Bytes of all non-constant tensors (an arena upper bound); 0 for a model our loader refuses."""
    try:
        model = load_model(data)
    except ModelError:
        return 0
    return sum(t.nbytes + 16 for sg in model.subgraphs for t in sg.tensors if t.data is None)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-for-bit equality (NaN payloads and the sign of zero count; dtype and element count must agree)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.size == b.size and np.ascontiguousarray(a).tobytes() == \
        np.ascontiguousarray(b).tobytes()


def compare_with_tflm(model: Any, inputs: Sequence[np.ndarray] | np.ndarray, *, optimized: bool = True,
                      per_op: bool = True, interpreter: Interpreter | None = None,
                      tflm: TflmRunner | None = None) -> Comparison:
    """Run microinterp and the TFLM wheel on ``inputs``; on a mismatch name the first op whose output differs.

    Pass ``interpreter``/``tflm`` to reuse built interpreters across many inputs (microinterp must then have been
    built with ``preserve_all_tensors=True`` for the per-op walk).
    """
    m = load_model(model) if not isinstance(model, Model) else model
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    mi = interpreter or Interpreter(m, optimized=optimized, preserve_all_tensors=per_op)
    ref = tflm or TflmRunner(m, preserve_all=per_op)
    for i, x in enumerate(inputs):
        mi.set_input(x, i)
    mi.invoke()
    ref.run(inputs)
    outs = [mi.get_output(i) for i in range(mi.num_outputs)]
    ref_outs = [ref.output(i) for i in range(mi.num_outputs)]
    mismatch = None
    if per_op and mi.preserve_all_tensors:
        mismatch = _first_op_mismatch(m, mi, ref)
    if mismatch is None:
        for i, (a, b) in enumerate(zip(outs, ref_outs)):
            if a.shape != b.shape or not same_bits(a, b):
                ti = m.main.outputs[i]
                mismatch = _describe(m, None, ti, a, b)
                break
    return Comparison(outs, ref_outs, mismatch)


def compare_optimized(model: Any, inputs: Sequence[np.ndarray] | np.ndarray) -> Comparison:
    """Run ``model`` with optimized kernels and with reference kernels only, every tensor preserved; name the first
    op whose output differs (the reference plays TFLM's part in the returned :class:`Comparison`)."""
    m = load_model(model) if not isinstance(model, Model) else model
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    opt = Interpreter(m, optimized=True, preserve_all_tensors=True)
    ref = Interpreter(m, optimized=False, preserve_all_tensors=True)
    for mi in (opt, ref):
        for i, x in enumerate(inputs):
            mi.set_input(x, i)
        mi.invoke()
    outs = [opt.get_output(i) for i in range(opt.num_outputs)]
    ref_outs = [ref.get_output(i) for i in range(ref.num_outputs)]
    return Comparison(outs, ref_outs, _first_op_mismatch(m, opt, ref))


def uses_optimized(model: Any) -> bool:
    """True when some op of ``model`` resolves to a different kernel with the optimized layer on."""
    from ..resolver import default_resolver

    m = load_model(model) if not isinstance(model, Model) else model
    r = default_resolver()
    return any(r.find(op.key, True) is not r.find(op.key, False) for sg in m.subgraphs for op in sg.operators)


def _first_op_mismatch(m: Model, mi: Interpreter, ref: Any) -> Mismatch | None:
    for op in m.main.operators:
        for ti in op.outputs:
            if ti < 0 or m.main.tensors[ti].dtype is None:
                continue
            a, b = mi.get_tensor(ti), ref.get_tensor(ti)
            if not same_bits(a, b):
                return _describe(m, op, ti, a, b)
    return None


def _describe(m: Model, op, ti: int, a: np.ndarray, b: np.ndarray) -> Mismatch:
    t = m.main.tensors[ti]
    if a.size != b.size:
        return Mismatch(op.index if op else -1, op.key if op else "graph output", ti, t.name, (), a.shape, b.shape,
                        -1, {})
    b = b.reshape(a.shape)
    if a.dtype != b.dtype:
        return Mismatch(op.index if op else -1, op.key if op else "graph output", ti, t.name, (), a.dtype, b.dtype,
                        -1, {})
    diff = np.argwhere(a.view(f"u{a.itemsize}") != b.view(f"u{b.itemsize}")) if a.dtype.kind == "f" \
        else np.argwhere(a != b)
    first = tuple(int(v) for v in diff[0])
    ids = list(op.inputs) + list(op.outputs) if op else [ti]
    return Mismatch(op.index if op else -1, op.key if op else "graph output", ti, t.name, first,
                    a[first].item(), b[first].item(), len(diff), _quant_summary(m, ids))


def tflm_arena_head(model: Any, arena_size: int | None = None) -> int:
    """The wheel's "Arena allocation head" (its greedy plan size) for ``model``."""
    return tflm_allocations(model, arena_size)["head"]


def tflm_allocations(model: Any, arena_size: int | None = None) -> dict[str, int]:
    """The wheel's RecordingMicroAllocator summary: ``{"total", "head", "tail"}`` in bytes."""
    runner = TflmRunner(model, arena_size=arena_size, preserve_all=False)
    text = _capture_fd2(runner.interpreter.print_allocations)
    found = {k: int(v) for k, v in re.findall(r"Arena allocation (total|head|tail) (\d+) bytes", text)}
    if "head" not in found:
        raise RuntimeError(f"could not read the wheel's allocation report: {text[:200]!r}")
    return found


_FITS_PROBE = """
import sys
import numpy as np
from microinterp.testing.tflm import TflmRunner
data = open(sys.argv[1], "rb").read()
inputs = list(np.load(sys.argv[2]).values())
try:
    TflmRunner(data, arena_size=int(sys.argv[3]), preserve_all=False).run(inputs)
except (RuntimeError, ValueError):
    sys.exit(1)
"""


def tflm_smallest_arena(model: Any, inputs: Sequence[np.ndarray], step: int = 16) -> int:
    """The smallest ``arena_size`` (a multiple of ``step``) with which the wheel allocates ``model`` and invokes it on
    ``inputs``: what a user would set ``kTensorArenaSize`` to. Bisection below the wheel's own reported total, each
    smaller size tried in a child process: TFLM's STRIDED_SLICE ``Prepare`` dereferences the temporary tensors it
    could not allocate when the arena runs out (``strided_slice_common.cc``), which ends the process."""
    import subprocess
    import sys

    data = model_bytes(model)
    with tempfile.TemporaryDirectory() as tmp:
        path, arrays = os.path.join(tmp, "m.tflite"), os.path.join(tmp, "x.npz")
        with open(path, "wb") as f:
            f.write(data)
        np.savez(arrays, *inputs)

        def fits(size: int) -> bool:
            run = subprocess.run([sys.executable, "-c", _FITS_PROBE, path, arrays, str(size)], capture_output=True)
            return run.returncode == 0

        hi = -(-tflm_allocations(data)["total"] // step) * step
        while not fits(hi):
            hi += 64 * step
        lo = hi - 64 * step
        while lo > 0 and fits(lo):
            hi, lo = lo, max(0, lo - 1024 * step)
        while hi - lo > step:
            mid = (lo + hi) // 2 // step * step
            lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def _capture_fd2(fn) -> str:
    """Capture what C code writes to file descriptor 2 while ``fn`` runs."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode("utf-8", "replace")


#: Builtin codes that are not operators a kernel can implement (placeholders of the schema).
_NOT_OPERATORS = frozenset({"CUSTOM", "DELEGATE", "PLACEHOLDER_FOR_GREATER_OP_CODES"})

_PROBE = """
import ctypes
import sys
from microinterp.testing.tflm import TflmRunner
from microinterp.testing.builder import ModelBuilder
libc = ctypes.CDLL(None)
custom = sys.argv[1] == "custom"
for name in sys.argv[2:]:
    print("probing", name, flush=True)
    b = ModelBuilder()
    x, y = b.add_tensor("x", (1, 4), "FLOAT32"), b.add_tensor("y", (1, 4), "FLOAT32")
    if custom:
        b.add_op("CUSTOM", [x], [y], custom_code=name)
    else:
        b.add_op(name, [x], [y])
    b.inputs, b.outputs = [x], [y]
    try:
        TflmRunner(b.build(), arena_size=1 << 16, preserve_all=False)
    except Exception:
        pass
    sys.stdout.flush()
    libc.fflush(None)
"""

#: What TFLM logs when it has no kernel for a builtin code / a custom name.
_MISSING = {"builtin": "Didn't find op for builtin opcode", "custom": "Failed to get registration"}


def wheel_builtin_ops() -> frozenset[str]:
    """The builtin operators for which the pinned wheel finds a kernel, derived mechanically.

    For every code of the schema's ``BuiltinOperator`` enum a one-op model (one float32 input and output, the op's
    options table when it has one) is handed to the wheel in a child process. TFLM looks every op's registration up
    before it prepares any op, and logs "Didn't find op for builtin opcode" when it has none; any other outcome
    (prepared, refused by the kernel's own Prepare for the made-up tensors, or the child crashing inside that
    Prepare -- some kernels read inputs the made-up model lacks) means the wheel registers the op.
    """
    import tflite

    names = sorted(n for n in vars(tflite.BuiltinOperator) if not n.startswith("_") and n not in _NOT_OPERATORS)
    return _probe("builtin", names)


def wheel_custom_ops(candidates: Sequence[str]) -> frozenset[str]:
    """Which of the custom op names ``candidates`` the wheel registers (custom codes cannot be enumerated: the
    candidates are names TFLM's sources define). As :func:`wheel_builtin_ops`; without a registration TFLM logs
    "Failed to get registration" before preparing anything, while a registered kernel goes on to Init (the made-up
    model has no options, so some crash there)."""
    return _probe("custom", sorted(candidates))


def _probe(kind: str, pending: list[str]) -> frozenset[str]:
    """Run the probe child over ``pending`` names; its merged output is cut at each "probing NAME" marker (Python
    and C output are flushed after every name) and a name is missing when its block holds TFLM's missing-kernel
    message. A crashed child is restarted with the names it had not reached."""
    import subprocess
    import sys

    found: set[str] = set()
    while pending:
        run = subprocess.run([sys.executable, "-c", _PROBE, kind, *pending], check=False, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace", timeout=600)
        blocks = re.split(r"^probing (\w+)\n", run.stdout, flags=re.MULTILINE)[1:]
        reached = blocks[0::2]
        for name, text in zip(reached, blocks[1::2]):
            if _MISSING[kind] not in text:
                found.add(name)
        left = [n for n in pending if n not in reached]
        if run.returncode == 0 or len(left) == len(pending):
            if left:
                raise RuntimeError(f"the wheel probe stopped before {left[0]}: {run.stdout[-300:]!r}")
            break
        pending = left
    return frozenset(found)
