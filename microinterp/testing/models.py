"""Int8 networks built in-process (random weights, calibrated scales), for demos, tests and benchmarks.

:class:`QuantNet` adds layers one at a time to a :class:`~microinterp.testing.builder.ModelBuilder`, keeping track of
the current tensor and of an estimate of its real-valued spread. Weights are uniform int8 with per-channel scales from
He initialisation; each output scale is chosen from the propagated spread so that activations use the int8 range
without saturating. Architectures: :func:`demo_cnn` (small), :func:`vgg16`, :func:`alexnet`, :func:`mobilenet_v1`,
:func:`mobilenet_v2`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .builder import ModelBuilder


class QuantNet:
    """Sequential int8 network builder. Every method returns the new current tensor index."""

    def __init__(self, input_shape: Sequence[int], seed: int = 0, name: str = "net"):
        self.rng = np.random.default_rng(seed)
        self.b = ModelBuilder(description=name)
        self.shape = tuple(int(d) for d in input_shape)
        self.scale, self.zp = 1.0 / 64, 0          # input: real values in about [-2, 2)
        self.std = 74 * self.scale                  # spread of uniform int8 inputs, in real units
        #: True: every conv / depthwise / FC sees an input spread of 1, as batch normalisation keeps it
        self.batch_norm = False
        self.x = self._tensor("input", self.shape)
        self.b.inputs = [self.x]
        self.n = 0

    # -- helpers ---------------------------------------------------------------------------------------------------
    def _tensor(self, name: str, shape: Sequence[int]) -> int:
        return self.b.add_tensor(name, shape, "INT8", scale=self.scale, zero_point=self.zp)

    @property
    def _in_std(self) -> float:
        """The spread a layer's scales are chosen from: the tracked one, or 1 under :attr:`batch_norm`."""
        return 1.0 if self.batch_norm else self.std

    def _out_quant(self, std: float, act: str) -> None:
        if act in ("RELU", "RELU6"):
            hi = 6.0 if act == "RELU6" else 4.0 * std
            self.scale, self.zp = max(hi, 1e-6) / 255.0, -128
        else:
            self.scale, self.zp = max(8.0 * std, 1e-6) / 255.0, 0
        self.std = std

    def _weights(self, shape: tuple[int, ...], fan_in: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
        channels = shape[axis]
        w = self.rng.integers(-127, 128, size=shape, dtype=np.int8)
        w_std = math.sqrt(2.0 / fan_in)
        scales = np.full(channels, w_std / 73.0, dtype=np.float32) * self.rng.uniform(0.8, 1.2, channels)
        return w, scales.astype(np.float32)

    def _bias(self, channels: int, w_scales: np.ndarray) -> int:
        bias_scales = (self.scale * w_scales.astype(np.float64)).astype(np.float32)
        bias = self.rng.integers(-1000, 1000, size=channels).astype(np.int32)
        self.n += 1
        return self.b.add_tensor(f"b{self.n}", (channels,), "INT32", data=bias, scale=bias_scales, zero_point=0)

    # -- layers ------------------------------------------------------------------------------------------------------
    def conv(self, filters: int, kernel: int = 3, stride: int = 1, padding: str = "SAME", act: str = "RELU") -> int:
        n, h, w, c = self.shape
        wt, ws = self._weights((filters, kernel, kernel, c), kernel * kernel * c, 0)
        w_idx = self.b.add_tensor(f"w{self.n + 1}", wt.shape, "INT8", data=wt, scale=ws, zero_point=0, axis=0)
        b_idx = self._bias(filters, ws)
        oh, ow = _out_size(h, kernel, stride, padding), _out_size(w, kernel, stride, padding)
        self._out_quant(self._in_std * math.sqrt(2.0), act)
        y = self._tensor(f"conv{self.n}", (n, oh, ow, filters))
        self.b.add_op("CONV_2D", [self.x, w_idx, b_idx], [y], padding=padding, stride_w=stride, stride_h=stride,
                      fused_activation_function=act)
        self.x, self.shape = y, (n, oh, ow, filters)
        return y

    def depthwise(self, kernel: int = 3, stride: int = 1, padding: str = "SAME", act: str = "RELU6",
                  multiplier: int = 1, dilation: int = 1) -> int:
        n, h, w, c = self.shape
        oc = c * multiplier
        wt, ws = self._weights((1, kernel, kernel, oc), kernel * kernel, 3)
        w_idx = self.b.add_tensor(f"w{self.n + 1}", wt.shape, "INT8", data=wt, scale=ws, zero_point=0, axis=3)
        b_idx = self._bias(oc, ws)
        reach = (kernel - 1) * dilation + 1
        oh, ow = _out_size(h, reach, stride, padding), _out_size(w, reach, stride, padding)
        self._out_quant(self._in_std * math.sqrt(2.0), act)
        y = self._tensor(f"dw{self.n}", (n, oh, ow, oc))
        dilated = {"dilation_w_factor": dilation, "dilation_h_factor": dilation} if dilation != 1 else {}
        self.b.add_op("DEPTHWISE_CONV_2D", [self.x, w_idx, b_idx], [y], padding=padding, stride_w=stride,
                      stride_h=stride, depth_multiplier=multiplier, fused_activation_function=act, **dilated)
        self.x, self.shape = y, (n, oh, ow, oc)
        return y

    def pool(self, kind: str = "MAX", size: int = 2, stride: int = 2, padding: str = "VALID") -> int:
        n, h, w, c = self.shape
        oh, ow = _out_size(h, size, stride, padding), _out_size(w, size, stride, padding)
        self.n += 1
        y = self._tensor(f"pool{self.n}", (n, oh, ow, c))
        self.b.add_op(f"{kind}_POOL_2D", [self.x], [y], padding=padding, stride_w=stride, stride_h=stride,
                      filter_width=size, filter_height=size)
        self.x, self.shape = y, (n, oh, ow, c)
        return y

    def pad(self, top: int, bottom: int, left: int, right: int) -> int:
        """Explicit zero-point PAD of rows and columns (as converters emit before strided VALID convolutions)."""
        n, h, w, c = self.shape
        pads = self.b.add_tensor(f"pads{self.n}", (4, 2), "INT32",
                                 data=np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))
        self.n += 1
        shape = (n, h + top + bottom, w + left + right, c)
        y = self._tensor(f"pad{self.n}", shape)
        self.b.add_op("PAD", [self.x, pads], [y])
        self.x, self.shape = y, shape
        return y

    def mark(self) -> tuple:
        """The current tensor and its quantization, for a later :meth:`add` (a residual connection)."""
        return self.x, self.scale, self.zp, self.std, self.shape

    def resume(self, mark: tuple) -> None:
        """Continue from a marked tensor: a second branch reading it (e.g. a residual block's shortcut conv)."""
        self.x, self.scale, self.zp, self.std, self.shape = mark

    def add(self, mark: tuple, act: str = "NONE") -> int:
        """ADD the current tensor and the marked one (same shape): a residual connection."""
        other, _, _, other_std, shape = mark
        if shape != self.shape:
            raise ValueError(f"cannot add shapes {shape} and {self.shape}")
        self._out_quant(math.hypot(self.std, other_std), act)
        self.n += 1
        y = self._tensor(f"add{self.n}", self.shape)
        self.b.add_op("ADD", [other, self.x], [y], fused_activation_function=act)
        self.x = y
        return y

    def flatten(self) -> int:
        n = self.shape[0]
        flat = (n, int(np.prod(self.shape[1:])))
        shape_t = self.b.add_tensor(f"shape{self.n}", (2,), "INT32", data=np.array(flat, np.int32))
        self.n += 1
        y = self._tensor(f"flat{self.n}", flat)
        self.b.add_op("RESHAPE", [self.x, shape_t], [y], new_shape=list(flat))
        self.x, self.shape = y, flat
        return y

    def fc(self, units: int, act: str = "RELU") -> int:
        n, k = self.shape
        wt, ws = self._weights((units, k), k, 0)
        ws = np.full(units, ws.mean(), dtype=np.float32)  # per-tensor, as the converter emits for FC
        w_idx = self.b.add_tensor(f"w{self.n + 1}", wt.shape, "INT8", data=wt, scale=ws[:1], zero_point=0)
        b_idx = self._bias(units, ws[:1].repeat(units))
        self._out_quant(self._in_std * math.sqrt(2.0), act)
        y = self._tensor(f"fc{self.n}", (n, units))
        self.b.add_op("FULLY_CONNECTED", [self.x, w_idx, b_idx], [y], fused_activation_function=act)
        self.x, self.shape = y, (n, units)
        return y

    def op(self, name: str, extra_inputs: Sequence[int] = (), shape: Sequence[int] | None = None,
           quant: tuple[float, int] | None = None, **options) -> int:
        """Any one-output op on the current tensor (first input) and ``extra_inputs`` (tensor indices, e.g.
        constants made with ``self.b.add_tensor``); the output keeps the current shape and quantization unless
        ``shape`` / ``quant`` say otherwise."""
        if quant is not None:
            self.scale, self.zp = quant
        self.shape = tuple(shape) if shape is not None else self.shape
        self.n += 1
        y = self._tensor(f"{name.lower()}{self.n}", self.shape)
        self.b.add_op(name, [self.x, *extra_inputs], [y], **options)
        self.x = y
        return y

    def softmax(self) -> int:
        self.scale, self.zp = 1.0 / 256, -128
        self.n += 1
        y = self._tensor(f"softmax{self.n}", self.shape)
        self.b.add_op("SOFTMAX", [self.x], [y], beta=1.0)
        self.x = y
        return y

    def build(self) -> bytes:
        self.b.outputs = [self.x]
        return self.b.build()


def _out_size(size: int, kernel: int, stride: int, padding: str) -> int:
    if padding == "SAME":
        return (size + stride - 1) // stride
    return (size - kernel + stride) // stride


def demo_cnn(seed: int = 0) -> bytes:
    """A small person-detection-like CNN: 64x64x3 → conv/depthwise/pool/FC/softmax (about 30 K weights)."""
    net = QuantNet((1, 64, 64, 3), seed=seed, name="microinterp demo CNN")
    net.conv(16, 3, stride=2, act="RELU6")
    net.depthwise(3, act="RELU6")
    net.conv(32, 1, act="RELU6")
    net.depthwise(3, stride=2, act="RELU6")
    net.conv(64, 1, act="RELU6")
    net.pool("MAX", 2, 2)
    net.depthwise(3, act="RELU6")
    net.conv(64, 1, act="RELU6")
    net.pool("AVERAGE", 8, 8)
    net.flatten()
    net.fc(10, act="NONE")
    net.softmax()
    return net.build()


def vgg16(seed: int = 0, input_size: int = 224, classes: int = 1000) -> bytes:
    """VGG16-shaped int8 model: 13 conv + 5 max-pool + 3 FC (about 138 M weights at 224x224)."""
    net = QuantNet((1, input_size, input_size, 3), seed=seed, name="VGG16-shaped int8")
    for block, (filters, convs) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))):
        for _ in range(convs):
            net.conv(filters, 3)
        net.pool("MAX", 2, 2)
    net.flatten()
    net.fc(4096)
    net.fc(4096)
    net.fc(classes, act="NONE")
    net.softmax()
    return net.build()


def alexnet(seed: int = 0, classes: int = 1000) -> bytes:
    """AlexNet-shaped int8 model (single tower): 5 conv + 3 max-pool + 3 FC on 227x227x3."""
    net = QuantNet((1, 227, 227, 3), seed=seed, name="AlexNet-shaped int8")
    net.conv(96, 11, stride=4, padding="VALID")
    net.pool("MAX", 3, 2)
    net.conv(256, 5)
    net.pool("MAX", 3, 2)
    net.conv(384, 3)
    net.conv(384, 3)
    net.conv(256, 3)
    net.pool("MAX", 3, 2)
    net.flatten()
    net.fc(4096)
    net.fc(4096)
    net.fc(classes, act="NONE")
    net.softmax()
    return net.build()


def mobilenet_v1(seed: int = 0, input_size: int = 224, classes: int = 1000) -> bytes:
    """MobileNet v1 (alpha 1.0) shaped int8 model: conv + 13 depthwise-separable blocks + avg-pool + FC."""
    net = QuantNet((1, input_size, input_size, 3), seed=seed, name="MobileNet-v1-shaped int8")
    net.conv(32, 3, stride=2, act="RELU6")
    for filters, stride in ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
                            (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)):
        net.depthwise(3, stride=stride, act="RELU6")
        net.conv(filters, 1, act="RELU6")
    net.pool("AVERAGE", net.shape[1], net.shape[1])
    net.flatten()
    net.fc(classes, act="NONE")
    net.softmax()
    return net.build()


def _make_divisible(value: float, divisor: int = 8) -> int:
    """Keras' channel rounding for width multipliers: nearest multiple of ``divisor``, never below 90 %."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def mobilenet_v2(seed: int = 0, alpha: float = 1.0, input_size: int = 224, classes: int = 1000) -> bytes:
    """MobileNet v2 shaped int8 model (Keras' architecture: width multiplier ``alpha`` with its channel rounding,
    17 inverted-residual blocks with ADD shortcuts, a 1280-channel head, average pool, FC, softmax). After the stem
    every layer's input spread is 1 (:attr:`QuantNet.batch_norm`): the linear bottlenecks would otherwise grow the
    estimated spread without bound and saturate the logits (a 1000-way tie TFLM's softmax refuses)."""
    net = QuantNet((1, input_size, input_size, 3), seed=seed, name=f"MobileNet-v2-{alpha}-{input_size} int8")
    net.conv(_make_divisible(32 * alpha), 3, stride=2, act="RELU6")
    net.batch_norm = True
    # (expansion, output channels, repeats, first stride) of the Keras / paper table
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        filters = _make_divisible(c * alpha)
        for i in range(n):
            stride = s if i == 0 else 1
            shortcut = net.mark() if stride == 1 and net.shape[3] == filters else None
            if t != 1:
                net.conv(net.shape[3] * t, 1, act="RELU6")
            net.depthwise(3, stride=stride, act="RELU6")
            net.conv(filters, 1, act="NONE")
            if shortcut is not None:
                net.add(shortcut)
    net.conv(1280 if alpha <= 1.0 else _make_divisible(1280 * alpha), 1, act="RELU6")
    net.pool("AVERAGE", net.shape[1], net.shape[2])
    net.flatten()
    net.fc(classes, act="NONE")
    net.softmax()
    return net.build()


def vela_like(seed: int = 0) -> bytes:
    """A model as Arm's Vela compiler writes it for an Ethos-U NPU: the network is one ``ethos-u`` custom op whose
    inputs are the command stream, the weights, a scratch area and the input tensor (Vela keeps ops it cannot
    offload, here a final SOFTMAX, as TFLite ops for the CPU)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(description="vela_like")
    x = b.add_tensor("input", (1, 96, 96, 1), scale=1 / 128, zero_point=0)
    cms = b.add_tensor("command_stream", (256,), "UINT8", data=rng.integers(0, 256, 256, dtype=np.uint8))
    weights = b.add_tensor("weights", (4096,), "UINT8", data=rng.integers(0, 256, 4096, dtype=np.uint8))
    scratch = b.add_tensor("scratch", (16384,), "UINT8")
    logits = b.add_tensor("logits", (1, 2), scale=1 / 16, zero_point=0)
    out = b.add_tensor("output", (1, 2), scale=1 / 256, zero_point=-128)
    b.add_op("CUSTOM", [cms, weights, scratch, x], [logits], custom_code="ethos-u")
    b.add_op("SOFTMAX", [logits], [out], beta=1.0)
    b.inputs, b.outputs = [x], [out]
    return b.build()
