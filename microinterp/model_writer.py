"""The model writer: valid ``.tflite`` flatbuffers from a small Python description. Production code writes models with
it (:mod:`microinterp.rewrite`: offline plans, op orders, batch sizes; the demo networks) and the tests build every
model they run with it, in process.

Example::

    b = ModelBuilder()
    x = b.add_tensor("x", (1, 8, 8, 3), "INT8", scale=0.05, zero_point=-3)
    w = b.add_tensor("w", (4, 3, 3, 3), "INT8", data=weights, scale=w_scales, zero_point=0, axis=0)
    bias = b.add_tensor("b", (4,), "INT32", data=bias_values, scale=bias_scales, zero_point=0)
    y = b.add_tensor("y", (1, 8, 8, 4), "INT8", scale=0.1, zero_point=2)
    b.add_op("CONV_2D", [x, w, bias], [y], padding="SAME", stride_w=1, stride_h=1)
    b.inputs, b.outputs = [x], [y]
    data = b.build()          # bytes of a .tflite file

Options are given with the same snake_case keys the loader produces (``fused_activation_function="RELU6"``,
``padding="VALID"``); unspecified fields take the schema's defaults. Sub-graphs can be added with
:meth:`ModelBuilder.add_subgraph` for control-flow ops; metadata (e.g. ``OfflineMemoryAllocation``) with
:meth:`ModelBuilder.add_metadata`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import tflite

from .model import TENSOR_TYPES
from .tflm.options import ACTIVATIONS, EMPTY_OPTIONS, OP_OPTIONS, OPTION_DEFAULTS, OPTION_FIELDS, PADDINGS

_TYPE_CODES = {name: code for code, (name, _) in TENSOR_TYPES.items()}
_OP_CODES = {k: v for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}
_OPTION_CODES = {k: v for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_") and isinstance(v, int)}
_ACT_CODES = {v: k for k, v in ACTIVATIONS.items()}
_PAD_CODES = {v: k for k, v in PADDINGS.items()}

@dataclass
class _TensorSpec:
    name: str
    shape: tuple[int, ...]
    type_name: str
    data: bytes | None
    scales: list[float] | None
    zero_points: list[int] | None
    axis: int
    is_variable: bool


@dataclass
class _OpSpec:
    name: str
    inputs: list[int]
    outputs: list[int]
    options: dict[str, Any]
    custom_code: str | None
    custom_options: bytes | None
    intermediates: list[int]


@dataclass
class SubgraphBuilder:
    """Tensors and ops of one subgraph; :class:`ModelBuilder` is itself the builder of subgraph 0."""

    name: str = ""
    tensors: list[_TensorSpec] = field(default_factory=list)
    ops: list[_OpSpec] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def add_tensor(self, name: str, shape: Sequence[int], type_name: str = "INT8", *, data: Any = None,
                   scale: float | Sequence[float] | None = None, zero_point: int | Sequence[int] | None = None,
                   axis: int = 0, is_variable: bool = False) -> int:
        """Add a tensor and return its index. ``data`` (array-like) makes it constant."""
        type_name = type_name.upper()
        if type_name not in _TYPE_CODES:
            raise ValueError(f"unknown tensor type {type_name!r}")
        raw = None
        if data is not None:
            if isinstance(data, (bytes, bytearray)):
                raw = bytes(data)
            else:
                dtype = TENSOR_TYPES[_TYPE_CODES[type_name]][1]
                raw = np.ascontiguousarray(np.asarray(data), dtype=dtype).tobytes()
        scales = None if scale is None else [float(s) for s in np.atleast_1d(scale)]
        zps = None
        if scales is not None:
            zps = [int(z) for z in np.atleast_1d(0 if zero_point is None else zero_point)]
            if len(zps) == 1 and len(scales) > 1:
                zps = zps * len(scales)
        self.tensors.append(_TensorSpec(name, tuple(int(d) for d in shape), type_name, raw, scales, zps,
                                        axis, is_variable))
        return len(self.tensors) - 1

    def add_op(self, name: str, inputs: Sequence[int], outputs: Sequence[int], *, custom_code: str | None = None,
               custom_options: bytes | None = None, intermediates: Sequence[int] = (), **options: Any) -> int:
        """Add an operator (builtin name, or ``"CUSTOM"`` with ``custom_code``) and return its index."""
        name = name.upper()
        if name not in _OP_CODES:
            raise ValueError(f"unknown builtin op {name!r}")
        self.ops.append(_OpSpec(name, list(inputs), list(outputs), dict(options), custom_code, custom_options,
                                list(intermediates)))
        return len(self.ops) - 1


class ModelBuilder(SubgraphBuilder):
    """Builds a whole model: subgraph 0 (this object), extra subgraphs, metadata."""

    def __init__(self, description: str = "microinterp.testing.ModelBuilder"):
        super().__init__(name="main")
        self.description = description
        self.subgraphs: list[SubgraphBuilder] = [self]
        self.metadata: list[tuple[str, bytes]] = []
        self.signatures: list[tuple[str, int, dict[str, int], dict[str, int]]] = []

    def add_subgraph(self, name: str = "") -> SubgraphBuilder:
        sg = SubgraphBuilder(name=name)
        self.subgraphs.append(sg)
        return sg

    def add_metadata(self, name: str, data: bytes) -> None:
        self.metadata.append((name, bytes(data)))

    def add_signature(self, key: str, inputs: dict[str, int], outputs: dict[str, int], subgraph: int = 0) -> None:
        """A SignatureDef: names for tensors of ``subgraph`` (LiteRT's signature runners use them)."""
        self.signatures.append((key, subgraph, dict(inputs), dict(outputs)))

    def add_offline_plan(self, offsets: Sequence[int]) -> None:
        """Attach ``OfflineMemoryAllocation`` metadata: one byte offset (or -1) per tensor of all subgraphs."""
        words = np.array([0, len(self.subgraphs), len(offsets), *offsets], dtype="<i4")
        self.add_metadata("OfflineMemoryAllocation", words.tobytes())

    # -- serialisation ---------------------------------------------------------------------------------------------
    def build(self) -> bytes:
        """Serialise to the bytes of a ``.tflite`` file (schema version 3, identifier ``TFL3``)."""
        b = flatbuffers.Builder(1024 + sum(len(t.data or b"") for sg in self.subgraphs for t in sg.tensors))
        buffers: list[bytes | None] = [None]  # buffer 0 is the empty sentinel, as the converter writes it
        opcodes: list[tuple[str, str | None]] = []
        tensor_buffer: dict[tuple[int, int], int] = {}
        for si, sg in enumerate(self.subgraphs):
            for ti, t in enumerate(sg.tensors):
                if t.data is not None:
                    buffers.append(t.data)
                    tensor_buffer[(si, ti)] = len(buffers) - 1
            for op in sg.ops:
                key = (op.name, op.custom_code)
                if key not in opcodes:
                    opcodes.append(key)
        meta_buffers = []
        for _, data in self.metadata:
            buffers.append(data)
            meta_buffers.append(len(buffers) - 1)

        buf_offs = []
        for data in buffers:
            vec = None
            if data:
                b.StartVector(1, len(data), 16)
                b.head = b.head - len(data)
                b.Bytes[b.head:b.head + len(data)] = data
                vec = b.EndVector()
            tflite.BufferStart(b)
            if vec is not None:
                tflite.BufferAddData(b, vec)
            buf_offs.append(tflite.BufferEnd(b))

        code_offs = []
        for name, custom in opcodes:
            cc = b.CreateString(custom) if custom is not None else None
            tflite.OperatorCodeStart(b)
            code = _OP_CODES[name]
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddVersion(b, 1)
            if cc is not None:
                tflite.OperatorCodeAddCustomCode(b, cc)
            code_offs.append(tflite.OperatorCodeEnd(b))

        sg_offs = [self._subgraph(b, si, sg, tensor_buffer, opcodes) for si, sg in enumerate(self.subgraphs)]

        meta_offs = []
        for (name, _), bi in zip(self.metadata, meta_buffers):
            n = b.CreateString(name)
            tflite.MetadataStart(b)
            tflite.MetadataAddName(b, n)
            tflite.MetadataAddBuffer(b, bi)
            meta_offs.append(tflite.MetadataEnd(b))

        sig_offs = []
        for key, subgraph, ins, outs in self.signatures:
            maps = []
            for group in (ins, outs):
                offs = []
                for name, ti in group.items():
                    n = b.CreateString(name)
                    tflite.TensorMapStart(b)
                    tflite.TensorMapAddName(b, n)
                    tflite.TensorMapAddTensorIndex(b, ti)
                    offs.append(tflite.TensorMapEnd(b))
                maps.append(_vector_of_offsets(b, offs))
            k = b.CreateString(key)
            tflite.SignatureDefStart(b)
            tflite.SignatureDefAddInputs(b, maps[0])
            tflite.SignatureDefAddOutputs(b, maps[1])
            tflite.SignatureDefAddSignatureKey(b, k)
            tflite.SignatureDefAddSubgraphIndex(b, subgraph)
            sig_offs.append(tflite.SignatureDefEnd(b))
        sig_vec = _vector_of_offsets(b, sig_offs) if sig_offs else None
        desc = b.CreateString(self.description)
        codes_vec = _vector_of_offsets(b, code_offs)
        sg_vec = _vector_of_offsets(b, sg_offs)
        buf_vec = _vector_of_offsets(b, buf_offs)
        meta_vec = _vector_of_offsets(b, meta_offs) if meta_offs else None
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, codes_vec)
        tflite.ModelAddSubgraphs(b, sg_vec)
        tflite.ModelAddDescription(b, desc)
        tflite.ModelAddBuffers(b, buf_vec)
        if meta_vec is not None:
            tflite.ModelAddMetadata(b, meta_vec)
        if sig_vec is not None:
            tflite.ModelAddSignatureDefs(b, sig_vec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _subgraph(self, b: flatbuffers.Builder, si: int, sg: SubgraphBuilder, tensor_buffer, opcodes) -> int:
        t_offs = []
        for ti, t in enumerate(sg.tensors):
            name = b.CreateString(t.name)
            shape = _int_vector(b, t.shape)
            q = None
            if t.scales is not None:
                scale_vec = b.CreateNumpyVector(np.asarray(t.scales, np.float32))
                zp_vec = b.CreateNumpyVector(np.asarray(t.zero_points, np.int64))
                tflite.QuantizationParametersStart(b)
                tflite.QuantizationParametersAddScale(b, scale_vec)
                tflite.QuantizationParametersAddZeroPoint(b, zp_vec)
                tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
                q = tflite.QuantizationParametersEnd(b)
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, _TYPE_CODES[t.type_name])
            tflite.TensorAddBuffer(b, tensor_buffer.get((si, ti), 0))
            tflite.TensorAddName(b, name)
            if q is not None:
                tflite.TensorAddQuantization(b, q)
            if t.is_variable:
                tflite.TensorAddIsVariable(b, True)
            t_offs.append(tflite.TensorEnd(b))
        op_offs = []
        for op in sg.ops:
            ins = _int_vector(b, op.inputs)
            outs = _int_vector(b, op.outputs)
            inter = _int_vector(b, op.intermediates) if op.intermediates else None
            copts = b.CreateNumpyVector(np.frombuffer(op.custom_options, np.uint8)) if op.custom_options else None
            opt_type, opt_off = _options(b, op)
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, opcodes.index((op.name, op.custom_code)))
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if inter is not None:
                tflite.OperatorAddIntermediates(b, inter)
            if opt_off is not None:
                tflite.OperatorAddBuiltinOptionsType(b, opt_type)
                tflite.OperatorAddBuiltinOptions(b, opt_off)
            if copts is not None:
                tflite.OperatorAddCustomOptions(b, copts)
            op_offs.append(tflite.OperatorEnd(b))
        t_vec = _vector_of_offsets(b, t_offs)
        in_vec = _int_vector(b, sg.inputs)
        out_vec = _int_vector(b, sg.outputs)
        op_vec = _vector_of_offsets(b, op_offs)
        name = b.CreateString(sg.name)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, t_vec)
        tflite.SubGraphAddInputs(b, in_vec)
        tflite.SubGraphAddOutputs(b, out_vec)
        tflite.SubGraphAddOperators(b, op_vec)
        tflite.SubGraphAddName(b, name)
        return tflite.SubGraphEnd(b)


def _int_vector(b: flatbuffers.Builder, values: Sequence[int]) -> int:
    return b.CreateNumpyVector(np.asarray(list(values), dtype=np.int32))


def _vector_of_offsets(b: flatbuffers.Builder, offs: list[int]) -> int:
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def _enum_code(value: Any, codes: dict[str, int]) -> int:
    """The schema code of an enum option: its name, an int, or the loader's ``UNKNOWN_<code>`` for a code the schema
    does not name (a rewritten model keeps the value it had, for TFLM to refuse as it would the original)."""
    if not isinstance(value, str):
        return int(value)
    if value in codes:
        return codes[value]
    if value.startswith("UNKNOWN_") and value[8:].lstrip("-").isdigit():
        return int(value[8:])
    raise ValueError(f"unknown enum value {value!r}; known: {sorted(codes)}")


def _options(b: flatbuffers.Builder, op: _OpSpec) -> tuple[int, int | None]:
    table = OP_OPTIONS.get(op.name)
    if table is None:
        empty = EMPTY_OPTIONS.get(op.name)
        if empty is None:
            if op.options:
                raise ValueError(f"{op.name}: the builder knows no options for this op, got {sorted(op.options)}")
            return 0, None
        getattr(tflite, empty + "Start")(b)
        return _OPTION_CODES[empty], getattr(tflite, empty + "End")(b)
    fields = OPTION_FIELDS[table]
    known = {k for k, _, _ in fields}
    unknown = set(op.options) - known
    if unknown:
        raise ValueError(f"{op.name}: unknown option(s) {sorted(unknown)}; known: {sorted(known)}")
    vectors = {}
    for key, getter, kind in fields:
        if kind == "vector" and key in op.options:
            vectors[key] = _int_vector(b, op.options[key])
        elif kind == "string" and op.options.get(key) is not None:
            vectors[key] = b.CreateString(op.options[key])
    getattr(tflite, table + "Start")(b)
    for key, getter, kind in fields:
        if key in vectors:
            getattr(tflite, f"{table}Add{getter}")(b, vectors[key])
            continue
        if kind in ("vector", "string"):        # absent (a string option the model left unset reads as None)
            continue
        if key not in op.options and key not in OPTION_DEFAULTS:
            continue
        value = op.options.get(key, OPTION_DEFAULTS.get(key))
        if kind in ("activation", "padding", "type"):
            value = _enum_code(value, {"activation": _ACT_CODES, "padding": _PAD_CODES, "type": _TYPE_CODES}[kind])
        getattr(tflite, f"{table}Add{getter}")(b, value)
    return _OPTION_CODES[table], getattr(tflite, table + "End")(b)
