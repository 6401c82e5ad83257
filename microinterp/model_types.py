"""The model's immutable description: :class:`Model`, its subgraphs, tensors, operators, quantization and
signatures (what :func:`microinterp.model.load_model` builds from a ``.tflite`` file)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .tflm.options import SUBGRAPH_OPTION_FIELDS


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = scale * (q - zero_point), per tensor or per channel along ``axis``."""

    scales: np.ndarray          # float32, read-only
    zero_points: np.ndarray     # int64, read-only
    axis: int = 0

    @property
    def per_channel(self) -> bool:
        return self.scales.size > 1

    @property
    def scale(self) -> float:
        return float(self.scales[0])

    @property
    def zero_point(self) -> int:
        return int(self.zero_points[0]) if self.zero_points.size else 0


@dataclass(frozen=True)
class Tensor:
    """One tensor of a subgraph. ``data`` is a read-only view into the model file for constants, else None."""

    index: int
    name: str
    shape: tuple[int, ...]
    type_name: str
    dtype: np.dtype | None
    buffer: int
    quantization: Quantization | None
    is_variable: bool
    data: np.ndarray | None = field(repr=False, compare=False)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        """Bytes TFLM allocates for this tensor (INT4 counts one byte per element, as TFLM's allocator does)."""
        itemsize = self.dtype.itemsize if self.dtype is not None else 0
        return self.num_elements * itemsize


@dataclass(frozen=True)
class Operator:
    """One operator. ``name`` is the builtin op name (``CONV_2D``) or ``CUSTOM``; ``key`` is what resolves it."""

    index: int
    name: str
    custom_code: str | None
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]
    options: Mapping[str, Any]
    custom_options: bytes | None = field(repr=False)
    version: int = 1

    @property
    def key(self) -> str:
        """Registry key: the builtin name, or the custom code for ``CUSTOM`` ops."""
        return self.custom_code if self.name == "CUSTOM" and self.custom_code else self.name

    @property
    def subgraph_refs(self) -> tuple[int, ...]:
        """Subgraphs this op runs (IF: then, else; WHILE: cond, body; CALL_ONCE: init), in TFLM's order."""
        return tuple(self.options[k] for k in SUBGRAPH_OPTION_FIELDS.get(self.name, ()))


@dataclass(frozen=True)
class Subgraph:
    index: int
    name: str
    tensors: tuple[Tensor, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[Operator, ...]

    def __repr__(self) -> str:
        return (f"Subgraph({self.index}, {self.name!r}: {len(self.operators)} ops, {len(self.tensors)} tensors, "
                f"inputs {list(self.inputs)}, outputs {list(self.outputs)})")


@dataclass(frozen=True)
class SignatureDef:
    key: str
    subgraph_index: int
    inputs: Mapping[str, int]
    outputs: Mapping[str, int]


@dataclass(frozen=True)
class Model:
    """An immutable, validated model. Weights are zero-copy read-only views of the file."""

    version: int
    description: str
    subgraphs: tuple[Subgraph, ...]
    buffers: tuple[np.ndarray | None, ...] = field(repr=False)
    metadata: Mapping[str, bytes] = field(repr=False)
    signature_defs: tuple[SignatureDef, ...]
    offline_offsets: tuple[int, ...] | None
    source: str | None
    nbytes: int
    _raw: Any = field(repr=False, compare=False)

    @property
    def main(self) -> Subgraph:
        return self.subgraphs[0]

    def __repr__(self) -> str:
        """One line (a model's full dataclass repr runs to megabytes): source, size, subgraphs, ops, weights."""
        where = self.source if isinstance(self.source, str) else f"<{self.nbytes:,} bytes>"
        ops = sum(len(sg.operators) for sg in self.subgraphs)
        return (f"Model({where!s}, {self.description!r}, {len(self.subgraphs)} subgraph(s), {ops} ops, "
                f"{self.weight_bytes():,} bytes of weights)")

    @property
    def fingerprint(self) -> str:
        """blake2b-128 of the flatbuffer bytes (identifies the model, e.g. in an SD image header)."""
        cached = getattr(self, "_fingerprint", None)
        if cached is None:
            h = hashlib.blake2b(digest_size=16)
            view = memoryview(self._raw)
            for start in range(0, len(view), 1 << 24):
                h.update(view[start:start + (1 << 24)])
            cached = h.hexdigest()
            object.__setattr__(self, "_fingerprint", cached)
        return cached

    def op_names(self) -> list[str]:
        """Distinct registry keys needed by all subgraphs, sorted."""
        return sorted({op.key for sg in self.subgraphs for op in sg.operators})

    def weight_bytes(self) -> int:
        return sum(t.data.nbytes for sg in self.subgraphs for t in sg.tensors if t.data is not None)
