"""Helium's arm_convolve_1_x_n_s8 under target=: the firmware's windows, derived by hand for small cases."""

from __future__ import annotations

import numpy as np

from microinterp import Interpreter
from microinterp.kernels.cmsis_nn.device_image import DeviceImage
from microinterp.model_writer import ModelBuilder


def conv_1xn(width: int, kernel: int, stride: int, padding: str, channels: int = 4, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 1, width, channels), scale=0.05, zero_point=3)
    w = b.add_tensor("w", (2, 1, kernel, channels), data=rng.integers(-127, 128, (2, 1, kernel, channels)),
                     scale=[0.01, 0.02], zero_point=[0, 0], axis=0)
    bias = b.add_tensor("b", (2,), "INT32", data=np.array([100, -50], np.int32), scale=[0.0005, 0.001],
                        zero_point=[0, 0])
    out_w = -(-width // stride) if padding == "SAME" else (width - kernel) // stride + 1
    y = b.add_tensor("y", (1, 1, out_w, 2), scale=0.1, zero_point=-2)
    b.add_op("CONV_2D", [x, w, bias], [y], padding=padding, stride_h=1, stride_w=stride,
             fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    return b.build()


def run(it: Interpreter, x: np.ndarray) -> np.ndarray:
    it.set_input(x, 0)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"]).copy()


def test_valid_with_an_odd_total_drops_the_last_tap_of_the_last_position():
    # width 8, kernel 5, stride 2: outputs at 0 and 2; (2 - 1) * 2 + 5 - 8 = -1, odd
    model = conv_1xn(8, 5, 2, "VALID")
    x = np.random.default_rng(1).integers(-128, 128, (1, 1, 8, 4), dtype=np.int8)
    host, m55 = run(Interpreter(model), x), run(Interpreter(model, target="cortex-m55"), x)
    assert np.array_equal(host[0, 0, 0], m55[0, 0, 0])
    # the firmware's last position: input column 6 (the window's last tap) read as the zero point
    cut = x.copy()
    cut[0, 0, 6] = 3
    assert np.array_equal(run(Interpreter(model), cut)[0, 0, 1], m55[0, 0, 1])
    assert not np.array_equal(host[0, 0, 1], m55[0, 0, 1])
    assert np.array_equal(run(Interpreter(model, target="cortex-m4"), x), host)      # DSP: arm_convolve_s8


def test_an_even_total_padding_runs_the_reference_arithmetic():
    model = conv_1xn(12, 3, 1, "SAME")      # total 2, pad 1 each side: every window as the reference's
    it = Interpreter(model, target="cortex-m55")
    assert it.runtime.op_data[0].helium_1xn is None
    x = np.random.default_rng(2).integers(-128, 128, (1, 1, 12, 4), dtype=np.int8)
    assert np.array_equal(run(it, x), run(Interpreter(model), x))


def test_the_image_copies_in_forward_16_byte_chunks():
    img = DeviceImage(64, {}, {})
    img.bytes[:40] = np.arange(40, dtype=np.uint8)
    img.copy(8, 0, 32)       # destination 8 bytes ahead: the second chunk reads what the first stored
    assert list(img.bytes[8:24]) == list(range(16))
    # its source bytes 16-23 were already overwritten with 8-15; memmove would give 16-31
    assert list(img.bytes[24:40]) == [*range(8, 16), *range(24, 32)]
