"""Load a ``.tflite`` flatbuffer into frozen dataclasses, validating it on the way.

Algorithm: the file is memory-mapped read-only (or a bytes/memoryview is wrapped without copying); the flatbuffer is
walked once with the accessors of the ``tflite`` package. Before any vector is iterated its length is checked against
the bytes left in the file, so a corrupted length can neither hang the loader nor allocate absurd amounts of memory.
Every index (buffers, tensors, opcodes, subgraphs) is range-checked, every constant buffer's size is checked against
its tensor's shape and dtype. Values no TFLM model can hold are refused too: negative or absurd shapes, non-constant
tensors of 2 GiB or more (TFLM's planner sizes are 32-bit), scales that are not finite and >= 0, zero points outside
int32, per-channel counts that do not match ``quantized_dimension``, an options table of the wrong type, offline
offsets below -1. Constant tensor data are read-only numpy views into the mapping (zero copy, aligned or not).
Anything that does not hold raises :class:`ModelError` naming the subgraph/tensor/op concerned; low-level decoding
errors from the flatbuffers runtime (struct.error, IndexError, ...) are converted to :class:`ModelError` as well
(``tests/test_model_fuzz.py`` holds the loader to that on corrupted zoo and builder models).

Op names follow TFLM's ``GetBuiltinCode``: ``max(builtin_code, deprecated_builtin_code)`` of the raw fields.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import flatbuffers
import numpy as np
import tflite

from .errors import ModelError
from .model_types import Model, Operator, Quantization, SignatureDef, Subgraph, Tensor
from .tflm.options import ACTIVATIONS, OP_OPTIONS, OPTION_FIELDS, PADDINGS, SUBGRAPH_OPTION_FIELDS

#: TensorType enum value -> (name, numpy dtype or None). INT4 is stored packed (2 per byte).
TENSOR_TYPES: dict[int, tuple[str, np.dtype | None]] = {
    0: ("FLOAT32", np.dtype("<f4")), 1: ("FLOAT16", np.dtype("<f2")), 2: ("INT32", np.dtype("<i4")),
    3: ("UINT8", np.dtype("u1")), 4: ("INT64", np.dtype("<i8")), 5: ("STRING", None),
    6: ("BOOL", np.dtype("?")), 7: ("INT16", np.dtype("<i2")), 8: ("COMPLEX64", np.dtype("<c8")),
    9: ("INT8", np.dtype("i1")), 10: ("FLOAT64", np.dtype("<f8")), 11: ("COMPLEX128", np.dtype("<c16")),
    12: ("UINT64", np.dtype("<u8")), 13: ("RESOURCE", np.dtype("<i4")), 14: ("VARIANT", None),
    15: ("UINT32", np.dtype("<u4")), 16: ("UINT16", np.dtype("<u2")), 17: ("INT4", np.dtype("i1")),
    18: ("BFLOAT16", None),
}

BUILTIN_OP_NAMES: dict[int, str] = {
    v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)
}
_OPTION_TYPE_NAMES: dict[int, str] = {
    v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_") and isinstance(v, int)
}


def _empty_table() -> tuple[bytes, int]:
    """A flatbuffer holding one table with no fields: options read from it are the schema defaults."""
    b = flatbuffers.Builder(16)
    b.StartObject(0)
    b.Finish(b.EndObject())
    buf = bytes(b.Output())
    return buf, struct.unpack_from("<I", buf, 0)[0]


_EMPTY_TABLE, _EMPTY_TABLE_POS = _empty_table()

#: Largest tensor we accept (bytes). Anything larger is certainly a corrupted shape.
MAX_TENSOR_BYTES = 1 << 34
#: Largest non-constant tensor: TFLM's memory planner takes buffer sizes as 32-bit ``int``.
MAX_PLANNED_BYTES = (1 << 31) - 1
MAX_RANK = 16


def load_model(source: str | os.PathLike | bytes | bytearray | memoryview | Model) -> Model:
    """Load and validate a model from a path (memory-mapped), bytes, bytearray or memoryview."""
    if isinstance(source, Model):
        return source
    path = None
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size == 0:
                    raise ModelError(f"{path}: empty file")
                raw: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise ModelError(f"cannot read model file {path!r}: {e}") from e
    elif isinstance(source, (bytes, bytearray, memoryview)):
        raw = source if isinstance(source, bytes) else bytes(source) if isinstance(source, bytearray) else source
        if isinstance(raw, memoryview):
            raw = raw.cast("B") if raw.format != "B" or raw.ndim != 1 else raw
    else:
        raise ModelError(f"cannot load a model from {type(source).__name__}; give a path, bytes or memoryview")
    try:
        return _Parser(raw, path).parse()
    except ModelError:
        raise
    except (IndexError, struct.error, ValueError, TypeError, OverflowError, MemoryError,
            UnicodeDecodeError, RecursionError) as e:
        raise ModelError(_malformed(path, len(raw), e)) from e


def _malformed(path: str | None, size: int, e: Exception) -> str:
    """The message for a flatbuffer the accessors could not decode: the file, and "truncated" when a reference
    points past its end (the usual cause: an interrupted download or copy)."""
    where = path or "<bytes>"
    import re

    m = re.search(r"at offset (\d+)", str(e))
    if m and int(m.group(1)) >= size - 8 or "buffer of at least" in str(e):
        return (f"{where}: the file looks truncated ({size} bytes, and the flatbuffer refers past its end); "
                "download or copy it again")
    return f"{where}: malformed flatbuffer ({type(e).__name__}: {e}); is it a .tflite model?"


class _Parser:
    def __init__(self, raw: Any, path: str | None):
        self.raw = raw
        self.size = len(raw)
        self.path = path
        self.where = path or "<bytes>"

    # -- helpers -------------------------------------------------------------------------------------------------
    def fail(self, msg: str) -> ModelError:
        return ModelError(f"{self.where}: {msg}")

    def count(self, n: int, elem_size: int, what: str) -> int:
        """Check a vector length read from the file before iterating it."""
        if n < 0 or n * elem_size > self.size:
            raise self.fail(f"{what}: vector length {n} exceeds the file size ({self.size} bytes)")
        return n

    def ints(self, obj: Any, name: str, what: str) -> tuple[int, ...]:
        n = self.count(getattr(obj, name + "Length")(), 4, what)
        if n == 0:
            return ()
        return tuple(int(v) for v in getattr(obj, name + "AsNumpy")())

    # -- parse ---------------------------------------------------------------------------------------------------
    def parse(self) -> Model:
        if self.size < 8:
            raise self.fail(f"file too short to be a TFLite model ({self.size} bytes)")
        if bytes(self.raw[4:8]) != b"TFL3":
            raise self.fail(f"missing TFLite file identifier 'TFL3' (found {bytes(self.raw[4:8])!r})")
        root = struct.unpack_from("<I", self.raw, 0)[0]
        if root + 4 > self.size:
            raise self.fail("root table offset points outside the file")
        m = tflite.Model.GetRootAs(self.raw, 0)
        version = m.Version()
        if version != 3:
            raise self.fail(f"unsupported schema version {version} (expected 3)")

        n_buf = self.count(m.BuffersLength(), 4, "buffers")
        buffers = tuple(self._buffer(m.Buffers(i), i) for i in range(n_buf))
        n_codes = self.count(m.OperatorCodesLength(), 4, "operator_codes")
        codes = [self._opcode(m.OperatorCodes(i), i) for i in range(n_codes)]
        n_sg = self.count(m.SubgraphsLength(), 4, "subgraphs")
        if n_sg == 0:
            raise self.fail("model has no subgraph")
        subgraphs = tuple(self._subgraph(m.Subgraphs(i), i, buffers, codes, n_sg) for i in range(n_sg))

        metadata: dict[str, bytes] = {}
        for i in range(self.count(m.MetadataLength(), 4, "metadata")):
            md = m.Metadata(i)
            name = (md.Name() or b"").decode("utf-8", "replace")
            b = md.Buffer()
            if not 0 <= b < n_buf:
                raise self.fail(f"metadata {i} ({name!r}): buffer index {b} out of range [0, {n_buf})")
            data = buffers[b]
            metadata[name] = bytes(data) if data is not None else b""
        offline = self._offline_offsets(metadata, subgraphs)

        sigs = []
        for i in range(self.count(m.SignatureDefsLength(), 4, "signature_defs")):
            s = m.SignatureDefs(i)
            sg = s.SubgraphIndex()
            if not 0 <= sg < n_sg:
                raise self.fail(f"signature_def {i}: subgraph index {sg} out of range")
            nt = len(subgraphs[sg].tensors)
            maps = []
            for getter in ("Inputs", "Outputs"):
                d = {}
                for j in range(self.count(getattr(s, getter + "Length")(), 4, "signature tensors")):
                    tm = getattr(s, getter)(j)
                    ti = tm.TensorIndex()
                    if not 0 <= ti < nt:
                        raise self.fail(f"signature_def {i}: tensor index {ti} out of range")
                    d[(tm.Name() or b"").decode("utf-8", "replace")] = ti
                maps.append(MappingProxyType(d))
            sigs.append(SignatureDef((s.SignatureKey() or b"").decode("utf-8", "replace"), sg, *maps))

        desc = m.Description()
        return Model(
            version=version,
            description=desc.decode("utf-8", "replace") if desc else "",
            subgraphs=subgraphs,
            buffers=buffers,
            metadata=MappingProxyType(metadata),
            signature_defs=tuple(sigs),
            offline_offsets=offline,
            source=self.path,
            nbytes=self.size,
            _raw=self.raw,
        )

    def _buffer(self, b: Any, i: int) -> np.ndarray | None:
        off, size = b.Offset(), b.Size()
        if off > 1:  # data stored outside the flatbuffer, after it (models > 2 GB)
            if off + size > self.size:
                raise self.fail(f"buffer {i}: external data [{off}, {off + size}) exceeds the file")
            arr = np.frombuffer(self.raw, dtype=np.uint8, count=size, offset=off)
        else:
            n = self.count(b.DataLength(), 1, f"buffer {i}")
            if n == 0:
                return None
            arr = b.DataAsNumpy()
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
        return arr

    def _opcode(self, c: Any, i: int) -> tuple[str, str | None, int]:
        # TFLM's GetBuiltinCode: max(builtin_code, deprecated_builtin_code), on the raw fields. (The ``tflite``
        # package's BuiltinCode() substitutes the deprecated code whenever builtin_code < 127, which would turn
        # builtin_code=22, deprecated=0 into ADD instead of RESHAPE.)
        slot = c._tab.Offset(10)
        builtin = c._tab.Get(flatbuffers.number_types.Int32Flags, c._tab.Pos + slot) if slot else 0
        code = max(builtin, c.DeprecatedBuiltinCode())
        name = BUILTIN_OP_NAMES.get(code)
        if name is None:
            name = f"BUILTIN_{code}"
        custom = c.CustomCode()
        return name, custom.decode("utf-8", "replace") if custom is not None else None, c.Version()

    def _subgraph(self, s: Any, si: int, buffers, codes, n_sg: int) -> Subgraph:
        n_t = self.count(s.TensorsLength(), 4, f"subgraph {si} tensors")
        tensors = tuple(self._tensor(s.Tensors(i), si, i, buffers) for i in range(n_t))

        def check(idx: tuple[int, ...], what: str, allow_missing: bool) -> tuple[int, ...]:
            for t in idx:
                if not (0 <= t < n_t or (allow_missing and t == -1)):
                    raise self.fail(f"subgraph {si}: {what} refers to tensor {t}, out of range [0, {n_t})")
            return idx

        inputs = check(self.ints(s, "Inputs", f"subgraph {si} inputs"), "inputs", False)
        outputs = check(self.ints(s, "Outputs", f"subgraph {si} outputs"), "outputs", False)
        ops = []
        for oi in range(self.count(s.OperatorsLength(), 4, f"subgraph {si} operators")):
            o = s.Operators(oi)
            where = f"subgraph {si} op {oi}"
            ci = o.OpcodeIndex()
            if not 0 <= ci < len(codes):
                raise self.fail(f"{where}: opcode index {ci} out of range [0, {len(codes)})")
            name, custom, version = codes[ci]
            o_in = check(self.ints(o, "Inputs", where), f"op {oi} ({name}) inputs", True)
            o_out = check(self.ints(o, "Outputs", where), f"op {oi} ({name}) outputs", True)
            o_int = check(self.ints(o, "Intermediates", where), f"op {oi} ({name}) intermediates", True)
            options = self._options(o, name, where)
            for k in SUBGRAPH_OPTION_FIELDS.get(name, ()):
                if not 0 <= options[k] < n_sg:
                    raise self.fail(f"{where} ({name}): {k} {options[k]} out of range [0, {n_sg})")
            n_co = self.count(o.CustomOptionsLength(), 1, f"{where} custom options")
            custom_options = o.CustomOptionsAsNumpy().tobytes() if n_co else None
            ops.append(Operator(oi, name, custom, o_in, o_out, o_int, options, custom_options, version))
        name = s.Name()
        return Subgraph(si, name.decode("utf-8", "replace") if name else "", tensors, inputs, outputs, tuple(ops))

    def _tensor(self, t: Any, si: int, ti: int, buffers) -> Tensor:
        where = f"subgraph {si} tensor {ti}"
        shape = self.ints(t, "Shape", where)
        if len(shape) > MAX_RANK:
            raise self.fail(f"{where}: rank {len(shape)} is absurd (max {MAX_RANK})")
        if any(d < 0 for d in shape):
            raise self.fail(f"{where}: negative dimension in shape {shape}")
        ttype = t.Type()
        if ttype not in TENSOR_TYPES:
            raise self.fail(f"{where}: unknown tensor type {ttype}")
        type_name, dtype = TENSOR_TYPES[ttype]
        raw_name = t.Name()
        name = raw_name.decode("utf-8", "replace") if raw_name else ""
        n_elem = 1
        for d in shape:
            n_elem *= d
        if dtype is not None and n_elem * dtype.itemsize > MAX_TENSOR_BYTES:
            raise self.fail(f"{where} ({name!r}): shape {shape} is absurdly large")
        bi = t.Buffer()
        if not 0 <= bi < len(buffers):
            raise self.fail(f"{where} ({name!r}): buffer index {bi} out of range [0, {len(buffers)})")
        quant = self._quant(t.Quantization(), where, shape)
        is_variable = bool(t.IsVariable())
        # a variable tensor's buffer is ignored: TFLM's AllocateVariables points it at its own arena memory and
        # ResetVariableTensors fills that with the zero point
        raw = None if is_variable else buffers[bi]
        data = None
        if raw is None and dtype is not None and n_elem * dtype.itemsize > MAX_PLANNED_BYTES:
            raise self.fail(f"{where} ({name!r}): non-constant tensor of shape {shape} needs "
                            f"{n_elem * dtype.itemsize} bytes; TFLM plans at most {MAX_PLANNED_BYTES} (32-bit sizes)")
        if raw is not None:
            if dtype is None:
                data = raw  # strings/resources: keep the bytes
            else:
                expected = (n_elem + 1) // 2 if type_name == "INT4" else n_elem * dtype.itemsize
                if raw.nbytes != expected:
                    raise self.fail(f"{where} ({name!r}): constant buffer {bi} has {raw.nbytes} bytes, "
                                    f"shape {shape} of {type_name} needs {expected}")
                # Always a view, even when the data is not aligned to its dtype (numpy reads unaligned arrays
                # correctly): weights are never copied. INT4 stays packed, two values per byte.
                data = raw if type_name == "INT4" else raw.view(dtype).reshape(shape)
        return Tensor(ti, name, shape, type_name, dtype, bi, quant, is_variable, data)

    def _quant(self, q: Any, where: str, shape: tuple[int, ...]) -> Quantization | None:
        if q is None:
            return None
        n_s = self.count(q.ScaleLength(), 4, f"{where} scales")
        n_z = self.count(q.ZeroPointLength(), 8, f"{where} zero points")
        if n_s == 0:
            return None
        scales = q.ScaleAsNumpy().astype(np.float32)
        if not (np.isfinite(scales) & (scales >= 0)).all():
            bad = scales[~(np.isfinite(scales) & (scales >= 0))][0]
            raise self.fail(f"{where}: quantization scale {bad} is not a finite number >= 0")
        zps = q.ZeroPointAsNumpy().astype(np.int64) if n_z else np.zeros(n_s, np.int64)
        axis = q.QuantizedDimension()
        if n_s > 1:
            along_axis = 0 <= axis < len(shape) and shape[axis] == n_s
            if not along_axis and not (len(shape) == 1 and shape[0] == n_s):  # TFLM tolerates biases so
                raise self.fail(f"{where}: {n_s} per-channel scales do not match shape {shape} "
                                f"along quantized_dimension {axis}")
        if n_z not in (0, 1, n_s):
            raise self.fail(f"{where}: {n_z} zero points for {n_s} scales")
        if n_z and (zps.min() < -(1 << 31) or zps.max() >= 1 << 31):
            bad = zps[(zps < -(1 << 31)) | (zps >= 1 << 31)][0]
            raise self.fail(f"{where}: zero point {bad} does not fit TFLM's int32 zero_point")
        if n_z == 1 and n_s > 1:
            zps = np.repeat(zps, n_s)
        scales.flags.writeable = False
        zps.flags.writeable = False
        return Quantization(scales, zps, axis)

    def _options(self, o: Any, op_name: str, where: str) -> Mapping[str, Any]:
        """The op's builtin options as ``{key: value}``.

        For an op with a known options table (``OP_OPTIONS``) every key is always present: a model without the
        table gets the schema's defaults (what an absent flatbuffer field means; TFLM would zero-initialise its
        params struct, a case no converter produces), and a table of the wrong type is a ModelError (TFLM would
        read it as absent). Other ops get whatever known table they carry, or ``{}``.
        """
        otype = o.BuiltinOptionsType()
        tname = _OPTION_TYPE_NAMES.get(otype)
        expected = OP_OPTIONS.get(op_name)
        if expected is not None:
            if otype != 0 and tname != expected:
                raise self.fail(f"{where} ({op_name}): builtin options are {tname or f'type {otype}'}, "
                                f"expected {expected}")
            tname = expected
        elif otype == 0 or tname not in OPTION_FIELDS:
            return MappingProxyType({})
        table = o.BuiltinOptions() if otype != 0 else None
        obj = getattr(tflite, tname)()
        if table is None:
            obj.Init(_EMPTY_TABLE, _EMPTY_TABLE_POS)  # every getter returns the schema default
        else:
            obj.Init(table.Bytes, table.Pos)
        out: dict[str, Any] = {}
        for key, getter, kind in OPTION_FIELDS[tname]:
            if kind == "vector":
                n = self.count(getattr(obj, getter + "Length")(), 4, f"{where} option {key}")
                out[key] = tuple(int(v) for v in getattr(obj, getter + "AsNumpy")()) if n else ()
                continue
            value = getattr(obj, getter)()
            if kind == "string":
                value = value.decode("utf-8", "replace") if value is not None else None
            elif kind == "activation":
                value = ACTIVATIONS.get(value, f"UNKNOWN_{value}")
            elif kind == "padding":
                value = PADDINGS.get(value, f"UNKNOWN_{value}")
            elif kind == "float":
                value = float(np.float32(value))
            elif kind == "bool":
                value = bool(value)
            elif kind == "type":
                value = TENSOR_TYPES.get(value, (f"UNKNOWN_{value}", None))[0]
            out[key] = value
        return MappingProxyType(out)

    def _offline_offsets(self, metadata: Mapping[str, bytes], subgraphs) -> tuple[int, ...] | None:
        raw = metadata.get("OfflineMemoryAllocation")
        if raw is None:
            return None
        if len(raw) < 12 or len(raw) % 4:
            raise self.fail(f"OfflineMemoryAllocation metadata has {len(raw)} bytes; expected 12 + 4*N")
        words = np.frombuffer(raw, dtype="<i4")
        n = int(words[2])
        total = sum(len(sg.tensors) for sg in subgraphs)
        if n != total or len(words) != 3 + n:
            raise self.fail(f"Nbr of offline buffer offsets ({n}) in metadata not equal nbr tensors ({total})")
        offsets = tuple(int(v) for v in words[3:])
        flat = [(sg.index, t.index) for sg in subgraphs for t in sg.tensors]
        for (si, ti), v in zip(flat, offsets):
            if v < -1:
                raise self.fail(f"OfflineMemoryAllocation: subgraph {si} tensor {ti} has offset {v}; "
                                f"an offset must be >= 0, or -1 for an online-planned tensor")
        return offsets
