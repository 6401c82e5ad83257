"""Shape sweeps for the instruction model: int8 models of many independent instances of one op, each with its own
input, so that one run of the device oracle records one instruction count per instance.

Every sweep is deterministic (its name seeds the shapes and the weights). :data:`SWEEPS` maps a sweep name to its
builder; :func:`build` returns the model bytes. The instruction model (:mod:`microinterp.cost.instructions`) is
fitted on the oracle's counts for these models (``tests/goldens/device/sweep/``) and checked on the zoo and the
population, which it never sees while fitting.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable

import numpy as np

from .models import QuantNet, _out_size

#: Instances per sweep (the largest tensors are kept small so that every sweep fits a 4 MB arena at once).
INSTANCES = 48


class _Bag(QuantNet):
    """A model of independent instances: :meth:`fresh` starts a new one from its own input tensor."""

    def __init__(self, name: str):
        super().__init__((1, 1, 1, 1), seed=zlib.crc32(name.encode()), name=name)
        self.b.inputs, self.outs = [], []

    def fresh(self, shape: tuple[int, ...], type_name: str = "INT8", zp: int | None = None) -> int:
        if zp is None:      # a new scale as converters produce (not a power of two: soft float has shortcuts)
            self.scale, self.zp = float(self.rng.uniform(0.004, 0.05)), int(self.rng.integers(-20, 20))
        else:               # the current scale, with zero point ``zp``
            self.zp = zp
        self.std = 74 * self.scale
        self.n += 1
        if type_name == "INT8":
            self.x = self._tensor(f"in{self.n}", shape)
        else:
            self.x = self.b.add_tensor(f"in{self.n}", shape, type_name)
        self.shape = tuple(shape)
        self.b.inputs.append(self.x)
        return self.x

    def done(self) -> None:
        self.outs.append(self.x)

    def build(self) -> bytes:
        self.b.outputs = list(self.outs)
        return self.b.build()


def _sweep(name: str, count: int, one: Callable[[_Bag, np.random.Generator, int], None]) -> bytes:
    """A model of ``count`` instances, the ``i``-th added by ``one(bag, rng, i)``, each output kept."""
    bag = _Bag(name)
    for i in range(count):
        one(bag, bag.rng, i)
        bag.done()
    return bag.build()


def _pick(rng: np.random.Generator, values) -> int:
    return values[int(rng.integers(len(values)))]


def _log(rng: np.random.Generator, low: int, high: int) -> int:
    """Log-uniform in [low, high]: as many small sizes (a 2-class head) as large ones (a 1000-class one)."""
    return round(float(np.exp(rng.uniform(np.log(low), np.log(high)))))


def _conv(name: str, kind: str) -> bytes:
    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        while True:
            ic, oc = _log(rng, 1, 256), _log(rng, 1, 512)
            stride, pad = _pick(rng, (1, 1, 2)), _pick(rng, ("SAME", "VALID"))
            if kind == "small":         # first layers of small models: one to four channels, tall kernels
                ic, oc = int(rng.integers(1, 5)), int(rng.integers(1, 5))
            if kind == "1x1":
                kh = kw = 1
                stride = _pick(rng, (1, 2))
                h, w = _log(rng, 1, 32), _log(rng, 1, 32)
                if rng.integers(3) == 0:        # a classifier head: one to three positions, many channels
                    h, w, ic, oc = 1, int(rng.integers(1, 4)), _log(rng, 16, 512), _log(rng, 2, 1000)
            elif kind == "1xn":
                kh, kw, h, w = 1, int(rng.integers(2, 9)), 1, int(rng.integers(4, 97))
                ic = 4 * int(rng.integers(1, 13))
            else:
                kh, kw = _pick(rng, (3, 3, 3, 2, 5, 7, 9, 15, 1)), _pick(rng, (3, 3, 3, 2, 5, 7, 1))
                h, w = int(rng.integers(max(kh, 2), 29)), int(rng.integers(max(kw, 2), 29))
            oh, ow = _out_size(h, kh, stride, pad), _out_size(w, kw, stride, pad)
            if oh >= 1 and ow >= 1 and h * w * max(ic, oc) <= 24_000 and ic * oc * kh * kw <= 65_536:
                break
        bag.fresh((1, h, w, ic))
        c = bag.shape[3]
        wt, ws = bag._weights((oc, kh, kw, c), kh * kw * c, 0)
        w_idx = bag.b.add_tensor(f"w{bag.n}", wt.shape, "INT8", data=wt, scale=ws, zero_point=0, axis=0)
        b_idx = bag._bias(oc, ws)
        act = _pick(rng, ("NONE", "RELU", "RELU6"))
        bag._out_quant(bag._in_std * math.sqrt(2.0), act)
        y = bag._tensor(f"conv{bag.n}", (1, oh, ow, oc))
        bag.b.add_op("CONV_2D", [bag.x, w_idx, b_idx], [y], padding=pad, stride_w=stride, stride_h=stride,
                     fused_activation_function=act)
        bag.x = y

    return _sweep(name, INSTANCES * (1 if kind == "1xn" else 2), one)


def _depthwise(name: str, kind: str) -> bytes:
    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        while True:
            c = _log(rng, 1, 384)
            mult = 1 if kind != "mult" else _pick(rng, (2, 3, 4, 8))
            if kind == "mult" and rng.integers(2):
                c = 1
            k = 3 if kind == "3x3" else _pick(rng, (2, 3, 5, 7))
            stride, pad = _pick(rng, (1, 1, 2)), _pick(rng, ("SAME", "VALID"))
            h, w = max(k, 2, _log(rng, 1, 40)), max(k, 2, _log(rng, 1, 40))
            oh, ow = _out_size(h, k, stride, pad), _out_size(w, k, stride, pad)
            if oh >= 1 and ow >= 1 and h * w * c * mult <= 12_000:
                break
        bag.fresh((1, h, w, c))
        bag.depthwise(kernel=k, stride=stride, padding=pad, act=_pick(rng, ("NONE", "RELU", "RELU6")),
                      multiplier=mult)

    return _sweep(name, INSTANCES * (1 if kind == "3x3" else 2), one)


def _fc(name: str) -> bytes:
    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        batch, k, units = _pick(rng, (1, 1, 1, 2, 3)), _log(rng, 1, 2048), _log(rng, 1, 1024)
        while k * units > 300_000:
            k //= 2
        bag.fresh((batch, k))
        bag.fc(units, act=_pick(rng, ("NONE", "RELU")))

    return _sweep(name, INSTANCES, one)


def _pool(name: str) -> bytes:
    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        while True:
            c, size = int(rng.integers(1, 65)), _pick(rng, (2, 2, 3, 5, 7))
            stride, pad = _pick(rng, (1, 2, 2)), _pick(rng, ("SAME", "VALID"))
            h, w = int(rng.integers(size, 33)), int(rng.integers(size, 33))
            if h * w * c <= 12_000:
                break
        bag.fresh((1, h, w, c))
        bag.pool(("MAX", "AVERAGE")[i % 2], size=size, stride=stride, padding=pad)

    return _sweep(name, INSTANCES * 2, one)


def _elementwise(name: str) -> bytes:
    """ADD and MUL (same shapes, and a broadcast of one row), QUANTIZE (requantize), RELU-free activations."""
    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        shape = (1, int(rng.integers(1, 17)), int(rng.integers(1, 17)), int(rng.integers(1, 33)))
        op = ("ADD", "MUL", "QUANTIZE", "LOGISTIC", "TANH", "MAXIMUM", "MINIMUM", "RELU")[i % 8]
        a = bag.fresh(shape)
        if op == "ADD":
            mark = bag.mark()
            bag.fresh(shape)
            bag.add(mark, act=_pick(rng, ("NONE", "RELU")))
        elif op in ("MUL", "MAXIMUM", "MINIMUM"):
            other = shape if op != "MUL" or rng.integers(2) else (1, 1, 1, shape[3])
            b_in = bag.fresh(other)
            bag.x, bag.shape = a, shape
            bag.op(op, [b_in], quant=(bag.scale * 4, 0) if op == "MUL" else None)
        elif op == "QUANTIZE":
            bag.op("QUANTIZE", quant=(bag.scale * float(rng.uniform(0.5, 2)), int(rng.integers(-10, 10))))
        elif op in ("LOGISTIC", "TANH"):
            bag.op(op, quant=(1 / 256, -128) if op == "LOGISTIC" else (1 / 128, 0))
        else:
            bag.op(op)

    return _sweep(name, INSTANCES * 4, one)


def _softmax(name: str) -> bytes:
    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        bag.fresh((int(rng.integers(1, 9)), _log(rng, 2, 1024)))
        # logits' scales span two decades: the kernel takes exponentials only within diff_min of the row maximum
        bag.b.tensors[bag.x].scales = [float(np.exp(rng.uniform(np.log(0.004), np.log(0.5))))]
        bag.softmax()

    return _sweep(name, INSTANCES, one)


def _movement(name: str) -> bytes:
    """PAD, MEAN over (1, 2), RESHAPE, CONCATENATION, TRANSPOSE, STRIDED_SLICE, DEQUANTIZE, QUANTIZE from float."""
    kinds = ("PAD", "MEAN", "RESHAPE", "CONCATENATION", "TRANSPOSE", "STRIDED_SLICE", "DEQUANTIZE", "FQUANTIZE")

    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        kind = kinds[i % len(kinds)]
        shape = (1, int(rng.integers(1, 17)), int(rng.integers(1, 17)), int(rng.integers(1, 33)))
        n, h, w, c = shape
        if kind == "FQUANTIZE":
            bag.fresh(shape, "FLOAT32")
            bag.scale, bag.zp = float(rng.uniform(0.003, 0.03)), int(rng.integers(-10, 10))
            bag.op("QUANTIZE")
        else:
            x = bag.fresh(shape)
        if kind == "PAD":
            t, b_, l_, r_ = (int(v) for v in rng.integers(0, 3, 4))
            bag.pad(t, b_, l_, r_)
        elif kind == "MEAN":
            axes = bag.b.add_tensor(f"axes{bag.n}", (2,), "INT32", data=np.array([1, 2], np.int32))
            bag.op("MEAN", [axes], shape=(n, 1, 1, c), keep_dims=True)
        elif kind == "RESHAPE":
            bag.flatten()
        elif kind == "CONCATENATION":
            parts = [x]
            for _ in range(int(rng.integers(1, 3))):
                parts.append(bag.fresh((n, h, w, int(rng.integers(1, 33))), zp=bag.zp))
            bag.x = parts[0]
            total = sum(bag.b.tensors[p].shape[3] for p in parts)
            bag.n += 1
            y = bag._tensor(f"concat{bag.n}", (n, h, w, total))
            bag.b.add_op("CONCATENATION", parts, [y], axis=3)
            bag.x = y
        elif kind == "TRANSPOSE":
            order = ((0, 2, 1, 3), (0, 2, 3, 1), (0, 3, 1, 2), (0, 1, 3, 2))[int(rng.integers(4))]
            perm = bag.b.add_tensor(f"perm{bag.n}", (4,), "INT32", data=np.array(order, np.int32))
            bag.op("TRANSPOSE", [perm], shape=tuple(shape[a] for a in order))
        elif kind == "STRIDED_SLICE":
            begin = [0, int(rng.integers(0, h)), 0, int(rng.integers(0, c))]
            end = [n, h, w, c]
            strides = [1, 1, int(_pick(rng, (1, 2))), 1]
            t = [bag.b.add_tensor(f"ss{bag.n}_{j}", (4,), "INT32", data=np.array(v, np.int32))
                 for j, v in enumerate((begin, end, strides))]
            out = tuple(-(-(e - b_) // s) for b_, e, s in zip(begin, end, strides))
            bag.op("STRIDED_SLICE", t, shape=out)
        elif kind == "DEQUANTIZE":
            bag.n += 1
            y = bag.b.add_tensor(f"deq{bag.n}", shape, "FLOAT32")
            bag.b.add_op("DEQUANTIZE", [bag.x], [y])
            bag.x = y

    return _sweep(name, INSTANCES * 4, one)


def _pad(name: str) -> bytes:
    """PAD of rows from 3 to 4000 bytes (memcpy's cost depends on the row's length and alignment)."""

    def one(bag: _Bag, rng: np.random.Generator, i: int) -> None:
        while True:
            c, w, h = _log(rng, 1, 960), _log(rng, 1, 224), _log(rng, 1, 8)
            if h * w * c <= 16_000:
                break
        bag.fresh((1, h, w, c))
        t, l_ = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        bag.pad(t, int(rng.integers(0, 3)) if rng.integers(2) else t, l_,
                int(rng.integers(0, 3)) if rng.integers(2) else l_)

    return _sweep(name, INSTANCES, one)


#: sweep name -> builder of its model bytes.
SWEEPS: dict[str, Callable[[], bytes]] = {
    "sweep_conv_generic": lambda: _conv("sweep_conv_generic", "generic"),
    "sweep_conv_small": lambda: _conv("sweep_conv_small", "small"),
    "sweep_conv_1x1": lambda: _conv("sweep_conv_1x1", "1x1"),
    "sweep_conv_1xn": lambda: _conv("sweep_conv_1xn", "1xn"),
    "sweep_dw_3x3": lambda: _depthwise("sweep_dw_3x3", "3x3"),
    "sweep_dw_kxk": lambda: _depthwise("sweep_dw_kxk", "kxk"),
    "sweep_dw_mult": lambda: _depthwise("sweep_dw_mult", "mult"),
    "sweep_fc": lambda: _fc("sweep_fc"),
    "sweep_pool": lambda: _pool("sweep_pool"),
    "sweep_elementwise": lambda: _elementwise("sweep_elementwise"),
    "sweep_softmax": lambda: _softmax("sweep_softmax"),
    "sweep_movement": lambda: _movement("sweep_movement"),
    "sweep_pad": lambda: _pad("sweep_pad"),
}


@functools.cache
def build(name: str) -> bytes:
    """The model bytes of sweep ``name`` (a key of :data:`SWEEPS`), built once per process (deterministic)."""
    return SWEEPS[name]()
