"""The 32-bit memory model: struct sizes, the replay checked against the wheel (LP64), and person_detect on a
Cortex-M against the TFLM paper's figures."""

from __future__ import annotations

import re

import numpy as np
import pytest

from microinterp import Interpreter, load_model
from microinterp.errors import ConfigError, MicroInterpError
from microinterp.kernels.registry import declaration_of
from microinterp.memory32 import CATEGORIES, estimate_arena
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.models import demo_cnn
from microinterp.tflm.structs32 import (
    AFFINE_QUANTIZATION,
    ILP32,
    LP64,
    NODE_AND_REGISTRATION,
    TFLITE_EVAL_TENSOR,
    TFLITE_TENSOR,
    opdata_bytes,
)

ZOO = ["person_detect", "vww_96_int8", "kws_ref_model", "pretrainedResnet_quant", "ad01_int8",
       "micro_speech_quantized", "hello_world_int8", "trained_lstm_int8", "mobilenet_v2_quantized_1x3x224x224"]

#: The wheel's RecordingMicroAllocator category -> our categories.
WHEEL_CATEGORIES = {
    "TfLiteEvalTensor data": ("eval_tensors",),
    "Persistent TfLiteTensor data": ("io_tensors",),
    "Persistent TfLiteTensor quantization data": ("io_quantization",),
    "Persistent buffer data": ("op_data", "kernel_arrays", "io_pointer_arrays"),
    "TfLiteTensor variable buffer data": ("variables",),
    "NodeAndRegistration struct": ("nodes",),
}


def test_struct_sizes_follow_c_layout():
    # TF_LITE_STATIC_MEMORY TfLiteTensor: 64 bytes on x86-64 (the wheel reports 128 for 2), 32 on Cortex-M, where
    # arm-none-eabi-gcc's short enums make TfLiteType and TfLiteAllocationType one byte each (the device build's
    # RecordingMicroAllocator reports 64 for 2).
    assert (LP64.sizeof(TFLITE_TENSOR), ILP32.sizeof(TFLITE_TENSOR)) == (64, 32)
    assert (LP64.sizeof("eebbe"), ILP32.sizeof("eebbe"), ILP32.alignof("eebbe")) == (16, 5, 1)
    assert (LP64.sizeof(TFLITE_EVAL_TENSOR), ILP32.sizeof(TFLITE_EVAL_TENSOR)) == (24, 12)
    assert (LP64.sizeof(NODE_AND_REGISTRATION), ILP32.sizeof(NODE_AND_REGISTRATION)) == (64, 32)
    assert (LP64.sizeof(AFFINE_QUANTIZATION), ILP32.sizeof(AFFINE_QUANTIZATION)) == (24, 12)
    assert LP64.sizeof("b d") == 16 and ILP32.sizeof("b d") == 16        # AAPCS aligns double to 8 too
    assert LP64.sizeof("i p") == 16 and ILP32.sizeof("i p") == 8
    assert ILP32.alignof("b h") == 2 and LP64.alignof("i p") == 8


def _opdata(op: str, abi=ILP32, compression: bool = False) -> int | None:
    decl = declaration_of(op)
    return opdata_bytes(decl.opdata, abi, decl.opdata_compression if compression else "")


def test_opdata_sizes():
    # The LP64 figures are what the wheel (built with USE_TFLM_COMPRESSION) allocates per op.
    assert _opdata("CONV_2D", LP64, compression=True) == 80
    assert _opdata("FULLY_CONNECTED", LP64, compression=True) == 72
    assert _opdata("SOFTMAX", LP64) == 80 and _opdata("SOFTMAX", ILP32) == 56
    assert _opdata("CONV_2D", ILP32) == 56 and _opdata("DEPTHWISE_CONV_2D", ILP32) == 56
    assert _opdata("FULLY_CONNECTED", ILP32) == 48
    assert _opdata("AVERAGE_POOL_2D", ILP32) == _opdata("AVERAGE_POOL_2D", LP64) == 32
    assert _opdata("RESHAPE") == 0 and _opdata("NO_SUCH_OP") is None


def test_person_detect_matches_the_tflm_paper(zoo):
    """TFLM paper (Sparkfun Edge, 32-bit): persistent 26.50 kB, non-persistent 55.30 kB, total 81.79 kB."""
    e = estimate_arena(zoo("person_detect.tflite"))
    assert e.abi == "ilp32" and e.unknown_ops == ()
    assert e.head_bytes == 55296                                         # the paper's 55.30 kB, exactly
    assert e.persistent_bytes == pytest.approx(26_500, rel=0.15)
    assert e.total_bytes == pytest.approx(81_790, rel=0.15)
    # the per-channel multiplier/shift arrays are most of it: 2738 channels x 8 bytes (+ 16-byte alignment)
    assert e.requested["kernel_arrays"] == 2738 * 8
    assert sum(e.categories.values()) == e.persistent_bytes
    assert set(e.categories) == set(CATEGORIES)


@pytest.mark.parametrize("name", ZOO)
def test_lp64_replay_reproduces_the_wheel(zoo, name):
    """Replayed with x86-64 sizes, every category of the wheel's RecordingMicroAllocator matches to the byte (as
    requested and counted); the rest of the tail differs only by the recording allocators' own counters (constant)."""
    pytest.importorskip("tflite_micro")
    from microinterp.testing.tflm import TflmRunner, _capture_fd2

    path = zoo(f"{name}.tflite")
    e = estimate_arena(path, "lp64", compression=True)
    text = _capture_fd2(TflmRunner(path, preserve_all=False).interpreter.print_allocations)
    seen = set()
    for cat, used, req, n in re.findall(r"'([^']+)' used (\d+) bytes with alignment overhead "
                                        r"\(requested (\d+) bytes for (\d+)", text):
        ours = WHEEL_CATEGORIES[cat]
        assert sum(e.requested[k] for k in ours) == int(req), cat
        assert sum(e.counts[k] for k in ours) == int(n), cat
        # with padding: the first 16-aligned allocation absorbs whatever the arena end and the recording
        # allocators' sizes leave, so "used" agrees to within one alignment step
        assert abs(sum(e.categories[k] for k in ours) - int(used)) < 16, cat
        seen.update(ours)
    assert {"eval_tensors", "nodes", "op_data"} <= seen
    head = int(re.search(r"allocation head (\d+)", text).group(1))
    tail = int(re.search(r"allocation tail (\d+)", text).group(1))
    assert e.head_bytes == head
    assert 240 <= tail - e.persistent_bytes <= 248


def test_interpreter_model_path_and_bytes_agree(tmp_path):
    data = demo_cnn(seed=1)
    path = tmp_path / "demo.tflite"
    path.write_bytes(data)
    it = Interpreter(data)
    estimates = [estimate_arena(x) for x in (it, load_model(data), data, path, str(path))]
    assert len({(e.persistent_bytes, e.head_bytes) for e in estimates}) == 1
    e = estimates[0]
    assert e.head_bytes == it.head_bytes
    # a 32-bit target needs less than the 64-bit host for the same model
    assert e.persistent_bytes < estimate_arena(it, LP64).persistent_bytes
    per_op = {row["op"] for row in e.per_op}
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX"} <= per_op
    assert e.as_dict()["total_bytes"] == e.total_bytes


def test_unknown_op_is_listed_and_unknown_abi_refused():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    begin = b.add_tensor("begin", (2,), "INT32", data=np.array([0, 1], np.int32))
    size = b.add_tensor("size", (2,), "INT32", data=np.array([1, 2], np.int32))
    y = b.add_tensor("y", (1, 2), "INT8", scale=0.1, zero_point=0)
    b.add_op("SLICE", [x, begin, size], [y])
    b.inputs, b.outputs = [x], [y]
    e = estimate_arena(b.build())
    assert e.unknown_ops == ("SLICE",)
    with pytest.raises(ConfigError, match="unknown ABI 'risc-v'"):
        estimate_arena(b.build(), "risc-v")
    assert issubclass(ConfigError, MicroInterpError) and issubclass(ConfigError, ValueError)
