"""The loader: what it reads (tensors, quantization, options, metadata, signatures, op names), that weights are
zero-copy read-only views of the file, and that every inconsistency is a ModelError naming what and where.

Corruptions are made by patching single fields of a ModelBuilder model in place: ``field_pos`` finds a field's
absolute position through the flatbuffer accessors (``slot`` = 4 + 2 * field id in the schema), so no test depends
on byte offsets that a builder change would move. The fuzz tests live in ``test_model_fuzz.py``.
"""

from __future__ import annotations

import dataclasses
import mmap
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import tflite

from microinterp import Model, ModelError, load_model
from microinterp.model import MAX_PLANNED_BYTES
from microinterp.testing.builder import ModelBuilder

# -- helpers -----------------------------------------------------------------------------------------------------------


def field_pos(table, slot: int) -> int:
    """Absolute position of a field (by vtable slot) of a flatbuffer table accessor; the field must be stored."""
    o = table._tab.Offset(slot)
    assert o, f"field at slot {slot} is not stored (it has its default value)"
    return table._tab.Pos + o


def vector_pos(table, slot: int, k: int = 0, elem: int = 4) -> int:
    """Absolute position of element ``k`` of a vector field."""
    o = table._tab.Offset(slot)
    assert o
    return table._tab.Vector(o) + k * elem


def patched(data: bytes, pos: int, fmt: str, value) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, pos, value)
    return bytes(buf)


def root(data: bytes) -> tflite.Model:
    return tflite.Model.GetRootAs(data, 0)


def conv_model(**extra) -> ModelBuilder:
    """x -> CONV_2D (per-channel weights) -> y -> RESHAPE -> z, plus a CUSTOM op and metadata."""
    rng = np.random.default_rng(0)
    b = ModelBuilder(description="conv test")
    x = b.add_tensor("x", (1, 8, 8, 3), "INT8", scale=0.05, zero_point=-3)
    w = b.add_tensor("w", (4, 3, 3, 3), "INT8", data=rng.integers(-127, 128, (4, 3, 3, 3)),
                     scale=[0.01, 0.02, 0.03, 0.04], zero_point=0, axis=0)
    bias = b.add_tensor("b", (4,), "INT32", data=np.array([1, -2, 3, -4]), scale=[5e-4, 1e-3, 1.5e-3, 2e-3])
    y = b.add_tensor("y", (1, 4, 4, 4), "INT8", scale=0.1, zero_point=2)
    z = b.add_tensor("z", (1, 64), "INT8", scale=0.1, zero_point=2)
    c = b.add_tensor("c", (1, 64), "INT8", scale=0.1, zero_point=2)
    b.add_op("CONV_2D", [x, w, bias], [y], padding="SAME", stride_w=2, stride_h=2,
             fused_activation_function="RELU6", dilation_w_factor=1, dilation_h_factor=1)
    b.add_op("RESHAPE", [y], [z], new_shape=[1, 64])
    b.add_op("CUSTOM", [z], [c], custom_code="MyCustomOp", custom_options=b"\x01\x02\x03")
    b.inputs, b.outputs = [x], [c]
    for k, v in extra.items():
        setattr(b, k, v)
    return b


@pytest.fixture(scope="module")
def conv_bytes() -> bytes:
    return conv_model().build()


def expect_error(data: bytes, *fragments: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        load_model(data)
    msg = str(info.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return info.value


# -- reading -----------------------------------------------------------------------------------------------------------


def test_tensors_and_structure(conv_bytes):
    m = load_model(conv_bytes)
    assert isinstance(m, Model) and m.version == 3 and m.description == "conv test"
    assert len(m.subgraphs) == 1 and m.main is m.subgraphs[0] and m.main.name == "main"
    sg = m.main
    assert [t.name for t in sg.tensors] == ["x", "w", "b", "y", "z", "c"]
    assert sg.inputs == (0,) and sg.outputs == (5,)
    x, w, bias = sg.tensors[:3]
    assert x.shape == (1, 8, 8, 3) and x.type_name == "INT8" and x.dtype == np.int8 and x.data is None
    assert not x.is_constant and x.nbytes == 192 and x.num_elements == 192
    assert w.is_constant and w.data.shape == (4, 3, 3, 3) and w.data.dtype == np.int8
    assert bias.data.dtype == np.dtype("<i4") and bias.data.tolist() == [1, -2, 3, -4]
    assert x.quantization.scale == pytest.approx(0.05) and x.quantization.zero_point == -3
    assert not x.quantization.per_channel
    assert [op.name for op in sg.operators] == ["CONV_2D", "RESHAPE", "CUSTOM"]
    assert sg.operators[0].inputs == (0, 1, 2) and sg.operators[0].outputs == (3,)
    assert m.op_names() == ["CONV_2D", "MyCustomOp", "RESHAPE"]
    assert m.weight_bytes() == 108 + 16
    assert m.nbytes == len(conv_bytes) and m.source is None


def test_per_channel_quantization_axis(conv_bytes):
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4, 4, 8), "INT8", scale=0.1, zero_point=1)
    dw = b.add_tensor("dw", (1, 3, 3, 8), "INT8", data=np.ones((1, 3, 3, 8)), scale=np.linspace(0.01, 0.08, 8),
                      zero_point=0, axis=3)
    y = b.add_tensor("y", (1, 4, 4, 8), "INT8", scale=0.1, zero_point=1)
    b.add_op("DEPTHWISE_CONV_2D", [x, dw, -1], [y], padding="SAME", depth_multiplier=1)
    b.inputs, b.outputs = [x], [y]
    q = load_model(b.build()).main.tensors[dw].quantization
    assert q.per_channel and q.axis == 3 and q.scales.size == 8
    np.testing.assert_allclose(q.scales, np.linspace(0.01, 0.08, 8).astype(np.float32))
    assert q.scales.dtype == np.float32 and q.zero_points.dtype == np.int64 and q.zero_points.tolist() == [0] * 8
    assert not q.scales.flags.writeable and not q.zero_points.flags.writeable
    conv = load_model(conv_bytes)
    wq = conv.main.tensors[1].quantization
    assert wq.axis == 0 and wq.scales.size == 4 and wq.scale == pytest.approx(0.01)
    assert conv.main.tensors[2].quantization.per_channel  # per-channel bias, 1-D


@pytest.mark.parametrize("scales,axis", [(3, 0), (4, 1), (4, 4), (2, 3)])
def test_per_channel_scale_count_must_match_quantized_dimension(scales, axis):
    b = ModelBuilder()
    b.add_tensor("w", (4, 3, 3, 3), "INT8", data=np.zeros((4, 3, 3, 3)), scale=[0.1] * scales, axis=axis)
    b.inputs, b.outputs = [], []
    expect_error(b.build(), "subgraph 0 tensor 0", f"{scales} per-channel scales", "quantized_dimension")


def test_zero_point_count_must_match_scales():
    b = ModelBuilder()
    b.add_tensor("w", (4, 2), "INT8", data=np.zeros((4, 2)), scale=[0.1] * 4, zero_point=[0, 0], axis=0)
    expect_error(b.build(), "subgraph 0 tensor 0", "2 zero points for 4 scales")


def test_options_are_parsed(conv_bytes):
    ops = load_model(conv_bytes).main.operators
    assert dict(ops[0].options) == {"padding": "SAME", "stride_w": 2, "stride_h": 2,
                                    "fused_activation_function": "RELU6", "dilation_w_factor": 1,
                                    "dilation_h_factor": 1, "quantized_bias_type": 0}
    assert ops[1].options["new_shape"] == (1, 64)
    with pytest.raises(TypeError):
        ops[0].options["padding"] = "VALID"  # read-only mapping
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 10), "INT8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 10), "INT8", scale=1 / 256, zero_point=-128)
    s = b.add_tensor("s", (2,), "INT32")
    b.add_op("SOFTMAX", [x], [y], beta=0.5)
    b.add_op("FULLY_CONNECTED", [x, x], [y], keep_num_dims=True, fused_activation_function="RELU")
    b.add_op("SHAPE", [x], [s], out_type="INT32")
    b.add_op("MEAN", [x, s], [y], keep_dims=True)
    b.add_op("LOGISTIC", [x], [y])
    ops = load_model(b.build()).main.operators
    assert ops[0].options == {"beta": 0.5}
    assert ops[1].options["keep_num_dims"] is True and ops[1].options["fused_activation_function"] == "RELU"
    assert ops[2].options == {"out_type": "INT32"}
    assert ops[3].options == {"keep_dims": True}
    assert ops[4].options == {}


def test_unknown_enum_values_are_named_not_fatal(conv_bytes):
    conv = root(conv_bytes).Subgraphs(0).Operators(0)
    table = conv.BuiltinOptions()
    opts = tflite.Conv2DOptions()
    opts.Init(table.Bytes, table.Pos)
    data = patched(conv_bytes, field_pos(opts, 10), "<b", 42)  # fused_activation_function (field 3)
    assert load_model(data).main.operators[0].options["fused_activation_function"] == "UNKNOWN_42"


def test_control_flow_subgraph_refs():
    b = ModelBuilder()
    c = b.add_tensor("c", (1,), "BOOL")
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (1, 4), "INT8", scale=0.1, zero_point=0)
    b.add_op("IF", [c, x], [y], then_subgraph_index=2, else_subgraph_index=1)
    b.inputs, b.outputs = [c, x], [y]
    for name in ("else", "then"):
        sg = b.add_subgraph(name)
        i = sg.add_tensor("i", (1, 4), "INT8", scale=0.1, zero_point=0)
        sg.inputs, sg.outputs = [i], [i]
    m = load_model(b.build())
    assert [sg.name for sg in m.subgraphs] == ["main", "else", "then"]
    assert m.main.operators[0].subgraph_refs == (2, 1)
    b.ops[0].options["else_subgraph_index"] = 3
    expect_error(b.build(), "subgraph 0 op 0 (IF)", "else_subgraph_index 3 out of range [0, 3)")
    b.ops[0].options["else_subgraph_index"] = -1
    expect_error(b.build(), "else_subgraph_index -1 out of range")


def test_custom_op_keyed_by_custom_code(conv_bytes):
    op = load_model(conv_bytes).main.operators[2]
    assert op.name == "CUSTOM" and op.custom_code == "MyCustomOp" and op.key == "MyCustomOp"
    assert op.custom_options == b"\x01\x02\x03"
    assert load_model(conv_bytes).main.operators[0].custom_options is None


def reshape_model(op: str = "RESHAPE") -> bytes:
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (4,), "INT8", scale=0.1, zero_point=0)
    b.add_op(op, [x], [y])
    b.inputs, b.outputs = [x], [y]
    return b.build()


def test_op_name_is_max_of_builtin_and_deprecated_code():
    data = reshape_model()
    code = root(data).OperatorCodes(0)
    assert code.BuiltinCode() == code.DeprecatedBuiltinCode() == tflite.BuiltinOperator.RESHAPE
    old_style = patched(data, field_pos(code, 10), "<i", 0)  # builtin_code = 0 (ADD): a pre-2.4 converter
    assert load_model(old_style).main.operators[0].name == "RESHAPE"
    new_style = patched(data, field_pos(code, 4), "<b", 0)
    assert load_model(new_style).main.operators[0].name == "RESHAPE"
    # codes > 127 live only in builtin_code; deprecated_builtin_code holds 127 (PLACEHOLDER_FOR_GREATER_OP_CODES)
    big = reshape_model("BROADCAST_TO")
    code = root(big).OperatorCodes(0)
    assert code.DeprecatedBuiltinCode() == 127 and code.BuiltinCode() == 130
    assert load_model(big).main.operators[0].name == "BROADCAST_TO"
    unknown = patched(big, field_pos(code, 10), "<i", 4000)
    assert load_model(unknown).main.operators[0].name == "BUILTIN_4000"


def test_metadata_and_offline_plan():
    b = conv_model()
    b.add_metadata("min_runtime_version", b"1.5.0\0")
    b.add_offline_plan([-1, -1, -1, 0, 256, -1])
    m = load_model(b.build())
    assert m.metadata["min_runtime_version"] == b"1.5.0\0"
    assert m.offline_offsets == (-1, -1, -1, 0, 256, -1)
    assert conv_model().build() and load_model(conv_model().build()).offline_offsets is None


@pytest.mark.parametrize("words,fragment", [
    ([0, 1], "has 8 bytes; expected 12 + 4*N"),
    ([0, 1, 5, -1, -1, -1, -1, -1], "(5) in metadata not equal nbr tensors (6)"),
    ([0, 1, 6, -1, -1, -1, -1, -1], "(6) in metadata not equal nbr tensors (6)"),  # one word short
    ([0, 1, 6, -1, -1, -1, -2, -1, -1], "subgraph 0 tensor 3 has offset -2"),
])
def test_offline_plan_validation(words, fragment):
    b = conv_model()
    b.add_metadata("OfflineMemoryAllocation", np.array(words, "<i4").tobytes())
    expect_error(b.build(), fragment)


def test_offline_plan_names_tensor_in_later_subgraph():
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "INT8")
    b.inputs, b.outputs = [x], [x]
    sg = b.add_subgraph("second")
    t = sg.add_tensor("a", (4,), "INT8")
    sg.add_tensor("b", (4,), "INT8")
    sg.inputs, sg.outputs = [t], [t]
    b.add_offline_plan([0, 16, -7])
    expect_error(b.build(), "subgraph 1 tensor 1 has offset -7")


def test_signature_defs_from_zoo(zoo):
    m = load_model(zoo("hello_world_int8.tflite"))
    (sig,) = m.signature_defs
    assert sig.key == "serving_default" and sig.subgraph_index == 0
    assert dict(sig.inputs) == {"dense_input": 0} and dict(sig.outputs) == {"dense_2": 9}


def _with_object_api(data: bytes, edit) -> bytes:
    """Edit a model through the object API of the wheel's schema (the builder has no signature defs)."""
    runtime = pytest.importorskip("tflite_micro").runtime
    import flatbuffers

    obj = runtime.convert_bytearray_to_object(bytearray(data))
    edit(obj, runtime.schema_fb)
    fb = flatbuffers.Builder(1024)
    fb.Finish(obj.Pack(fb), file_identifier=b"TFL3")
    return bytes(fb.Output())


def _signature(sg: int, tin: int, tout: int):
    def edit(obj, S):
        sig = S.SignatureDefT()
        sig.signatureKey, sig.subgraphIndex = "serving", sg
        sig.inputs, sig.outputs = [S.TensorMapT(), S.TensorMapT()], [S.TensorMapT()]
        for tm, (name, ti) in zip(sig.inputs + sig.outputs, [("in", tin), ("in2", tin), ("out", tout)]):
            tm.name, tm.tensorIndex = name, ti
        obj.signatureDefs = [sig]
    return edit


def test_signature_defs_built():
    m = load_model(_with_object_api(reshape_model(), _signature(0, 0, 1)))
    (sig,) = m.signature_defs
    assert (sig.key, sig.subgraph_index, dict(sig.inputs), dict(sig.outputs)) == (
        "serving", 0, {"in": 0, "in2": 0}, {"out": 1})
    expect_error(_with_object_api(reshape_model(), _signature(1, 0, 1)), "signature_def 0: subgraph index 1")
    expect_error(_with_object_api(reshape_model(), _signature(0, 0, 9)), "signature_def 0: tensor index 9")


def test_single_zero_point_broadcast_to_all_channels():
    def edit(obj, S):
        q = obj.subgraphs[0].tensors[1].quantization
        q.zeroPoint = [0]

    b = conv_model()
    q = load_model(_with_object_api(b.build(), edit)).main.tensors[1].quantization
    assert q.zero_points.tolist() == [0, 0, 0, 0] and q.scales.size == 4


def test_model_sources(tmp_path, conv_bytes):
    path = tmp_path / "m.tflite"
    path.write_bytes(conv_bytes)
    from_path = load_model(path)
    assert from_path.source == str(path) and isinstance(from_path._raw, mmap.mmap)
    assert load_model(str(path)).fingerprint == from_path.fingerprint == load_model(conv_bytes).fingerprint
    assert load_model(bytearray(conv_bytes)).main.tensors[1].data.tolist() == from_path.main.tensors[1].data.tolist()
    view = memoryview(conv_bytes)
    assert np.shares_memory(load_model(view).main.tensors[1].data, np.frombuffer(conv_bytes, np.uint8))
    assert load_model(from_path) is from_path
    assert len(from_path.fingerprint) == 32
    with pytest.raises(ModelError, match="cannot load a model from int"):
        load_model(42)
    with pytest.raises(ModelError, match="cannot read model file"):
        load_model(tmp_path / "missing.tflite")
    (tmp_path / "empty.tflite").write_bytes(b"")
    with pytest.raises(ModelError, match="empty file"):
        load_model(tmp_path / "empty.tflite")


def test_parsed_model_is_frozen(conv_bytes):
    m = load_model(conv_bytes)
    for obj, attr in [(m, "version"), (m.main, "tensors"), (m.main.tensors[0], "shape"), (m.main.operators[0], "name")]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, attr, None)


# -- zero copy ---------------------------------------------------------------------------------------------------------


def _file_array(m: Model) -> np.ndarray:
    return np.frombuffer(m._raw, dtype=np.uint8)


def _assert_zero_copy_read_only(m: Model) -> int:
    raw = _file_array(m)
    n = 0
    for sg in m.subgraphs:
        for t in sg.tensors:
            if t.data is None:
                continue
            n += 1
            assert np.shares_memory(t.data, raw), f"tensor {t.name!r} was copied"
            assert not t.data.flags.writeable, f"tensor {t.name!r} is writable"
            base = t.data
            while isinstance(base, np.ndarray) and base.base is not None:
                base = base.base
            assert base is m._raw or isinstance(base, (mmap.mmap, bytes, memoryview)), type(base)
            with pytest.raises(ValueError):
                t.data.reshape(-1)[:1] = 0
    return n


def test_builder_weights_are_zero_copy(tmp_path, conv_bytes):
    assert _assert_zero_copy_read_only(load_model(conv_bytes)) == 2
    path = tmp_path / "m.tflite"
    path.write_bytes(conv_bytes)
    m = load_model(path)
    assert _assert_zero_copy_read_only(m) == 2
    offset = m.main.tensors[1].data.ctypes.data - _file_array(m).ctypes.data
    assert conv_bytes[offset:offset + 108] == m.main.tensors[1].data.tobytes()


def test_unaligned_constants_are_still_views():
    data = reshape_model()
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "INT32", data=np.arange(4))
    b.inputs, b.outputs = [], [x]
    data = b.build()
    shifted = memoryview(b"\0" + data)[1:]  # every address moves by one byte
    m = load_model(shifted)
    t = m.main.tensors[0].data
    assert t.tolist() == [0, 1, 2, 3] and np.shares_memory(t, np.frombuffer(shifted, np.uint8))


@pytest.mark.parametrize("name", ["person_detect.tflite", "vww_96_int8.tflite", "kws_ref_model.tflite",
                                  "pretrainedResnet_quant.tflite", "ad01_int8.tflite",
                                  "micro_speech_quantized.tflite", "hello_world_int8.tflite",
                                  "trained_lstm_int8.tflite", "mobilenet_v2_quantized_1x3x224x224.tflite"])
def test_zoo_weights_are_zero_copy(zoo, name):
    m = load_model(zoo(name))
    assert isinstance(m._raw, mmap.mmap)
    assert _assert_zero_copy_read_only(m) > 0
    assert m.weight_bytes() <= m.nbytes


def test_zoo_person_detect_structure(zoo):
    m = load_model(zoo("person_detect.tflite"))
    sg = m.main
    assert len(m.subgraphs) == 1 and len(sg.tensors) == 89 and len(sg.operators) == 31
    (inp,), (out,) = sg.inputs, sg.outputs
    assert sg.tensors[inp].shape == (1, 96, 96, 1) and sg.tensors[inp].type_name == "INT8"
    assert sg.tensors[out].shape == (1, 2)
    assert m.op_names() == ["AVERAGE_POOL_2D", "CONV_2D", "DEPTHWISE_CONV_2D", "RESHAPE", "SOFTMAX"]
    dw = next(op for op in sg.operators if op.name == "DEPTHWISE_CONV_2D")
    w = sg.tensors[dw.inputs[1]]
    assert w.quantization.axis == 3 and w.quantization.scales.size == w.shape[3]
    conv = next(op for op in sg.operators if op.name == "CONV_2D")
    assert conv.options["padding"] in ("SAME", "VALID") and conv.options["stride_w"] >= 1
    assert sg.tensors[conv.inputs[1]].quantization.scales.size == sg.tensors[conv.inputs[1]].shape[0]


# -- memory: loading a big model reads (almost) nothing -----------------------------------------------------------------


def _big_model(path: Path, megabytes: int) -> None:
    b = ModelBuilder()
    chunk = np.arange(4 << 20, dtype=np.uint8).view(np.int8)  # 4 MiB per tensor
    x = b.add_tensor("x", (1, 16), "INT8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", (16,), "INT8", scale=0.1, zero_point=0)
    for k in range(megabytes // 4):
        b.add_tensor(f"w{k}", (1024, 4096), "INT8", data=chunk, scale=0.01, zero_point=0)
    b.add_op("RESHAPE", [x], [y], new_shape=[16])
    b.inputs, b.outputs = [x], [y]
    path.write_bytes(b.build())


def _load_peak(path: Path) -> tuple[Model, int]:
    tracemalloc.start()
    try:
        m = load_model(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return m, peak


@pytest.mark.parametrize("megabytes", [20, pytest.param(140, marks=pytest.mark.slow)])
def test_loading_a_big_model_maps_instead_of_reading(tmp_path, megabytes):
    path = tmp_path / "big.tflite"
    _big_model(path, megabytes)
    assert path.stat().st_size > megabytes << 20
    m, peak = _load_peak(path)
    assert m.weight_bytes() == megabytes << 20
    assert peak < 1 << 20, f"loading a {megabytes} MiB model allocated {peak} bytes"
    w = m.main.tensors[-1].data
    assert w.shape == (1024, 4096) and w[0, :4].tolist() == [0, 1, 2, 3]
    _assert_zero_copy_read_only(m)


# -- validation --------------------------------------------------------------------------------------------------------


def test_bad_identifier(conv_bytes):
    expect_error(conv_bytes[:4] + b"TFL2" + conv_bytes[8:], "missing TFLite file identifier 'TFL3'", "b'TFL2'")
    expect_error(b"\x00" * 7, "file too short")
    expect_error(b"\xff\xff\xff\x7fTFL3" + b"\0" * 8, "root table offset points outside the file")


def test_wrong_version(conv_bytes):
    data = patched(conv_bytes, field_pos(root(conv_bytes), 4), "<I", 2)
    expect_error(data, "unsupported schema version 2 (expected 3)")


def test_buffer_index_out_of_range(conv_bytes):
    w = root(conv_bytes).Subgraphs(0).Tensors(1)
    data = patched(conv_bytes, field_pos(w, 8), "<I", 999)
    n_buf = root(conv_bytes).BuffersLength()
    expect_error(data, "subgraph 0 tensor 1 ('w')", f"buffer index 999 out of range [0, {n_buf})")


def test_opcode_index_out_of_range(conv_bytes):
    op = root(conv_bytes).Subgraphs(0).Operators(1)
    assert op.OpcodeIndex() == 1
    expect_error(patched(conv_bytes, field_pos(op, 4), "<I", 50), "subgraph 0 op 1: opcode index 50 out of range [0, 3)")


@pytest.mark.parametrize("value", [6, 1000, -2, -(1 << 31)])
def test_op_tensor_index_out_of_range(conv_bytes, value):
    op = root(conv_bytes).Subgraphs(0).Operators(0)
    expect_error(patched(conv_bytes, vector_pos(op, 6, 1), "<i", value),
                 f"op 0 (CONV_2D) inputs refers to tensor {value}, out of range [0, 6)")
    expect_error(patched(conv_bytes, vector_pos(op, 8, 0), "<i", value), "op 0 (CONV_2D) outputs refers to tensor")


def test_optional_input_minus_one_is_allowed(conv_bytes):
    op = root(conv_bytes).Subgraphs(0).Operators(0)
    m = load_model(patched(conv_bytes, vector_pos(op, 6, 2), "<i", -1))
    assert m.main.operators[0].inputs == (0, 1, -1)


@pytest.mark.parametrize("slot,what", [(6, "inputs"), (8, "outputs")])
@pytest.mark.parametrize("value", [6, -1, 77])
def test_subgraph_io_index_out_of_range(conv_bytes, slot, what, value):
    sg = root(conv_bytes).Subgraphs(0)
    expect_error(patched(conv_bytes, vector_pos(sg, slot), "<i", value),
                 f"subgraph 0: {what} refers to tensor {value}, out of range [0, 6)")


def test_intermediates_out_of_range():
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "INT8")
    b.add_op("RESHAPE", [x], [x], intermediates=[5])
    expect_error(b.build(), "op 0 (RESHAPE) intermediates refers to tensor 5")


def test_metadata_buffer_out_of_range():
    b = conv_model()
    b.add_metadata("note", b"hello")
    data = b.build()
    md = root(data).Metadata(0)
    expect_error(patched(data, field_pos(md, 6), "<I", 12345), "metadata 0 ('note'): buffer index 12345 out of range")


def test_constant_buffer_size_must_match_shape_and_dtype():
    for shape, type_name, nbytes, need in [((4,), "INT32", 12, 16), ((2, 3), "INT8", 7, 6), ((3,), "FLOAT32", 16, 12),
                                           ((5,), "INT4", 2, 3), ((), "INT16", 4, 2)]:
        b = ModelBuilder()
        b.add_tensor("k", shape, type_name, data=b"\1" * nbytes)
        expect_error(b.build(), "subgraph 0 tensor 0 ('k')", f"constant buffer 1 has {nbytes} bytes",
                     f"shape {shape} of {type_name} needs {need}")


def test_int4_constants_are_packed():
    b = ModelBuilder()
    b.add_tensor("k", (5,), "INT4", data=b"\x12\x34\x05")
    t = load_model(b.build()).main.tensors[0]
    assert t.data.nbytes == 3 and t.nbytes == 5  # TFLM's allocator counts a byte per int4 element


def test_negative_shapes():
    b = ModelBuilder()
    b.add_tensor("neg", (1, -3), "INT8")
    expect_error(b.build(), "subgraph 0 tensor 0", "negative dimension in shape (1, -3)")


def test_absurd_shapes():
    b = ModelBuilder()
    b.add_tensor("x", (1,), "INT8")
    b.add_tensor("huge", (1 << 20, 1 << 20, 1 << 10), "INT8")
    expect_error(b.build(), "subgraph 0 tensor 1 ('huge')", "absurdly large")
    b = ModelBuilder()
    b.add_tensor("big", (1 << 16, 1 << 15), "INT8")  # 2 GiB: more than TFLM's planner can place
    expect_error(b.build(), "subgraph 0 tensor 0 ('big')", f"TFLM plans at most {MAX_PLANNED_BYTES}")
    b = ModelBuilder()
    b.add_tensor("deep", (1,) * 17, "INT8")
    expect_error(b.build(), "subgraph 0 tensor 0", "rank 17 is absurd")


def test_unknown_tensor_type(conv_bytes):
    t = root(conv_bytes).Subgraphs(0).Tensors(0)
    expect_error(patched(conv_bytes, field_pos(t, 6), "<b", 99), "subgraph 0 tensor 0: unknown tensor type 99")


def test_vector_lengths_are_checked_before_use(conv_bytes):
    sg = root(conv_bytes).Subgraphs(0)
    length_pos = vector_pos(sg, 4) - 4  # the length word precedes a vector's elements
    expect_error(patched(conv_bytes, length_pos, "<I", 0x7FFFFFFF), "subgraph 0 tensors: vector length 2147483647")
    op = sg.Operators(0)
    expect_error(patched(conv_bytes, vector_pos(op, 6) - 4, "<I", 1 << 30), "vector length 1073741824 exceeds")


def test_no_subgraph(conv_bytes):
    m = root(conv_bytes)
    expect_error(patched(conv_bytes, vector_pos(m, 8) - 4, "<I", 0), "model has no subgraph")


def test_external_buffer_outside_file():
    def edit(obj, S):
        obj.buffers[1].data = None
        obj.buffers[1].offset, obj.buffers[1].size = 1 << 40, 16

    expect_error(_with_object_api(conv_model().build(), edit), "buffer 1: external data", "exceeds the file")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), -0.5])
def test_non_finite_or_negative_scales(bad):
    b = ModelBuilder()
    b.add_tensor("x", (1, 4), "INT8", scale=[0.1, bad, 0.1, 0.1], axis=1)
    expect_error(b.build(), "subgraph 0 tensor 0: quantization scale", "is not a finite number >= 0")


def test_zero_points_must_fit_int32():
    b = ModelBuilder()
    b.add_tensor("x", (1, 4), "INT8", scale=0.1, zero_point=1 << 38)
    expect_error(b.build(), "subgraph 0 tensor 0: zero point 274877906944 does not fit TFLM's int32")


def test_options_table_must_match_the_op(conv_bytes):
    conv = root(conv_bytes).Subgraphs(0).Operators(0)
    type_pos = field_pos(conv, 10)  # builtin_options_type
    add_options = tflite.BuiltinOptions.AddOptions
    expect_error(patched(conv_bytes, type_pos, "<B", add_options),
                 "subgraph 0 op 0 (CONV_2D): builtin options are AddOptions, expected Conv2DOptions")
    expect_error(patched(conv_bytes, type_pos, "<B", 250), "builtin options are type 250, expected Conv2DOptions")


def test_missing_options_table_gives_schema_defaults(conv_bytes):
    conv = root(conv_bytes).Subgraphs(0).Operators(0)
    m = load_model(patched(conv_bytes, field_pos(conv, 10), "<B", 0))
    assert dict(m.main.operators[0].options) == {"padding": "SAME", "stride_w": 0, "stride_h": 0,
                                                 "fused_activation_function": "NONE", "dilation_w_factor": 1,
                                                 "dilation_h_factor": 1, "quantized_bias_type": 0}
    reshape = root(conv_bytes).Subgraphs(0).Operators(1)
    m = load_model(patched(conv_bytes, field_pos(reshape, 10), "<B", 0))
    assert m.main.operators[1].options == {"new_shape": ()}


def test_the_repr_of_a_large_model_is_one_line():
    """Issue 26: the repr of a built VGG-size model ran to millions of characters."""
    from microinterp.model import load_model
    from microinterp.testing.models import demo_cnn

    m = load_model(demo_cnn())
    text = repr(m)
    assert "\n" not in text and len(text) < 200 and "12 ops" in text and "bytes of weights" in text
    assert len(repr(m.main)) < 200 and "30 tensors" in repr(m.main)
