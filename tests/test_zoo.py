"""Integration: every real model in ../shared/models runs bit-exact against the TFLM wheel, and the planned arena
head equals the wheel's "Arena allocation head". Skips cleanly when the zoo is absent."""

from __future__ import annotations

import numpy as np
import pytest

import microinterp as mi
from microinterp.testing.single_op import random_tensor
from microinterp.testing.tflm import TflmRunner, compare_with_tflm, tflm_arena_head

from .conftest import DATA_DIR, zoo_model

pytest.importorskip("tflite_micro")

#: The wheel's "Arena allocation head" per model (../shared/models/README.md).
HEADS = {
    "person_detect.tflite": 55296,
    "vww_96_int8.tflite": 73728,
    "kws_ref_model.tflite": 16000,
    "pretrainedResnet_quant.tflite": 49152,
    "ad01_int8.tflite": 768,
    "micro_speech_quantized.tflite": 5968,
    "hello_world_int8.tflite": 32,
    "trained_lstm_int8.tflite": 1536,
    "mobilenet_v2_quantized_1x3x224x224.tflite": 2451840,
}
RANDOM_INPUTS = 10  # per model; person_detect gets twice as many (issue 2 asks for 20)


def _interpreter(path, **kwargs) -> mi.Interpreter:
    """Build the interpreter; a model whose kernels do not all exist yet is skipped, naming the missing ops."""
    try:
        return mi.Interpreter(path, **kwargs)
    except mi.UnsupportedOpError as e:
        pytest.skip(f"kernels not available yet: {sorted({name for _, name in e.missing})}")


def _inputs(it: mi.Interpreter, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for i in range(it.num_inputs):
        d = it.get_input_details(i)
        type_name = {np.int8: "INT8", np.int16: "INT16", np.uint8: "UINT8", np.float32: "FLOAT32"}[d["dtype"]]
        out.append(random_tensor(rng, d["shape"], type_name))
    return out


@pytest.mark.parametrize("name", sorted(HEADS))
def test_planned_head_equals_tflm(name):
    path = zoo_model(name)
    it = _interpreter(path)
    assert it.head_bytes == HEADS[name]
    assert it.head_bytes == tflm_arena_head(path)


@pytest.mark.parametrize("optimized", [False, True], ids=["reference", "optimized"])
@pytest.mark.parametrize("name", sorted(HEADS))
def test_bit_exact_on_random_inputs(name, optimized):
    path = zoo_model(name)
    model = mi.load_model(path)
    it = _interpreter(model, optimized=optimized, preserve_all_tensors=True)
    ref = TflmRunner(model)
    rng = np.random.default_rng(sum(map(ord, name)))
    for k in range(RANDOM_INPUTS * (2 if name == "person_detect.tflite" else 1)):
        it.reset()
        ref.interpreter.reset()
        result = compare_with_tflm(model, _inputs(it, rng), interpreter=it, tflm=ref)
        assert result.ok, f"{name}, input {k}: {result}"


def _bmp_gray(path) -> np.ndarray:
    raw = path.read_bytes()
    offset = int.from_bytes(raw[10:14], "little")
    width = int.from_bytes(raw[18:22], "little", signed=True)
    height = int.from_bytes(raw[22:26], "little", signed=True)
    row = (width + 3) // 4 * 4
    pixels = np.frombuffer(raw, np.uint8, count=row * abs(height), offset=offset).reshape(abs(height), row)[:, :width]
    return pixels[::-1] if height > 0 else pixels  # BMP rows are stored bottom-up


@pytest.mark.parametrize("image", ["person.bmp", "no_person.bmp"])
def test_person_detect_real_images(image):
    path = zoo_model("person_detect.tflite")
    bmp = DATA_DIR / image
    if not bmp.exists():
        pytest.skip(f"{bmp} not available")
    # The 8-bit pixels, top row first, reinterpreted as int8: the input TFLM's example scores 113/-113 and 57/-57.
    x = _bmp_gray(bmp).view(np.int8).reshape(1, 96, 96, 1)
    _interpreter(path)
    result = compare_with_tflm(path, [x])
    assert result.ok, str(result)
    no_person, person = result.outputs[0].reshape(-1).astype(int)
    assert (no_person, person) == ((-113, 113) if image == "person.bmp" else (57, -57))
