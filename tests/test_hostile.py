"""Hostile models: one regression test per defect class the fuzzer found (issue 24), each model built in-process.

Every one ends in a typed MicroInterpError (or runs, where TFLM runs it), never in a bare Python exception or a hang.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from flatbuffers import flexbuffers

import microinterp
from microinterp import ConfigError, Interpreter, MicroInterpError
from microinterp.errors import HostMemoryError, InputError, ModelError, PrepareError, StorageError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.tflm import compare_with_tflm

from .control_flow_models import while_model


def _q(b, name, shape, type_name="INT8", scale=0.1, zp=0, **kw):
    return b.add_tensor(name, shape, type_name, scale=scale, zero_point=zp, **kw)


def test_a_constant_subgraph_input_cannot_be_set():
    b = ModelBuilder()
    x = _q(b, "x", (1, 4), data=np.arange(4))
    y = _q(b, "y", (1, 4))
    b.add_op("RELU", [x], [y])
    b.inputs, b.outputs = [x], [y]
    it = Interpreter(b.build())
    with pytest.raises(InputError, match="constant tensor"):
        it.set_input(np.zeros((1, 4), np.int8), 0)
    it.invoke()                                  # without set_input it runs on the constant, as TFLM does
    assert np.array_equal(it.get_output(0), np.arange(4, dtype=np.int8).reshape(1, 4))


def test_a_constant_op_output_is_refused_at_prepare():
    b = ModelBuilder()
    x = _q(b, "x", (1, 4))
    y = _q(b, "y", (1, 4), data=np.zeros(4))
    b.add_op("RELU", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(PrepareError, match="constant tensor"):
        Interpreter(b.build())


def test_a_while_copying_into_a_constant_is_refused():
    with pytest.raises(PrepareError, match="copy target .* is a constant"):
        Interpreter(while_model("LESS", 10, 1, constant_body_input=True))


@pytest.mark.parametrize("alpha", [float("nan"), float("inf")])
def test_a_nan_leaky_relu_alpha_is_a_prepare_error(alpha):
    b = ModelBuilder()
    x, y = _q(b, "x", (1, 4)), _q(b, "y", (1, 4))
    b.add_op("LEAKY_RELU", [x], [y], alpha=alpha)
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(PrepareError, match="not finite"):
        Interpreter(b.build())


def test_a_zero_output_scale_is_a_prepare_error():
    b = ModelBuilder()
    x = _q(b, "x", (1, 4))
    w = _q(b, "w", (2, 4), data=np.ones((2, 4)))
    y = _q(b, "y", (1, 2), scale=0.0)
    b.add_op("FULLY_CONNECTED", [x, w], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(PrepareError):
        Interpreter(b.build())


@pytest.mark.parametrize("scale", [1e-45, 1e-40, 1e-30])
@pytest.mark.parametrize("optimized", [True, False])
def test_a_denormal_output_scale_runs_as_the_wheel_computes_it(scale, optimized):
    """A multiplier beyond 2^31 makes TFLM's MBQM shift left by 32 or more: undefined in C, computed by x86-64 (the
    wheel) with the count modulo 32. microinterp does the same, bit for bit (it once gave 0 where the wheel saturated)."""
    b = ModelBuilder()
    x = _q(b, "x", (1, 4))
    w = _q(b, "w", (2, 4), data=np.arange(8).reshape(2, 4) - 3)
    y = _q(b, "y", (1, 2), scale=scale)
    b.add_op("FULLY_CONNECTED", [x, w], [y])
    b.inputs, b.outputs = [x], [y]
    rng = np.random.default_rng(2)
    for _ in range(4):
        result = compare_with_tflm(b.build(), [rng.integers(-128, 128, (1, 4)).astype(np.int8)], per_op=False,
                                   optimized=optimized)
        assert result.ok, result


def test_logistic_needs_matching_shapes():
    b = ModelBuilder()
    x, y = _q(b, "x", (1, 8)), _q(b, "y", (1, 4), scale=1 / 256, zp=-128)
    b.add_op("LOGISTIC", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(PrepareError, match="shape"):
        Interpreter(b.build())


def test_signal_options_that_decode_to_null_read_as_zero():
    """FlexBuffers null reads as 0 through TFLM's ElementAsInt32, so a SignalWindow with shift null runs with 0."""
    b = ModelBuilder()
    x = b.add_tensor("x", (8,), "INT16")
    wts = b.add_tensor("w", (8,), "INT16", data=np.full(8, 1 << 14, np.int16))
    y = b.add_tensor("y", (8,), "INT16")
    fbb = flexbuffers.Builder()
    with fbb.Map():
        fbb.Null("shift")
    b.add_op("CUSTOM", [x, wts], [y], custom_code="SignalWindow", custom_options=bytes(fbb.Finish()))
    b.inputs, b.outputs = [x], [y]
    it = Interpreter(b.build())
    it.set_input(np.arange(8, dtype=np.int16) * 100, 0)
    it.invoke()
    assert it.get_output(0).dtype == np.int16


def test_string_tensors_are_refused_as_tflm_refuses_them():
    b = ModelBuilder()
    x = b.add_tensor("x", (2,), "STRING")
    y = b.add_tensor("y", (2,), "STRING")
    b.add_op("RESHAPE", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(ModelError, match="cannot allocate .*STRING"):
        Interpreter(b.build())


def _depthwise(stride_w: int) -> bytes:
    b = ModelBuilder()
    x = _q(b, "x", (1, 8, 8, 4), scale=0.1, zp=-2)
    w = b.add_tensor("w", (1, 3, 3, 4), "INT8", data=np.arange(36).reshape(1, 3, 3, 4) - 18, scale=[0.05] * 4,
                     zero_point=0, axis=3)
    bias = b.add_tensor("b", (4,), "INT32", data=np.arange(4) * 10, scale=[0.005] * 4)
    y = _q(b, "y", (1, 6, 1, 4), scale=0.2, zp=1)
    b.add_op("DEPTHWISE_CONV_2D", [x, w, bias], [y], padding="VALID", stride_w=stride_w, stride_h=1,
             depth_multiplier=1)
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.parametrize("stride", [2 ** 31 - 1, 1 << 16, 1 << 20, 65535])
@pytest.mark.parametrize("optimized", [True, False])
def test_a_huge_depthwise_stride_runs_quickly_and_exactly(stride, optimized, tmp_path):
    """The optimized depthwise once looped over every column phase of a 2^31-1 stride in prepare (a hang). TFLM
    keeps strides as int16 in Eval (2^31-1 runs as -1, 2^16 as 0), which microinterp now does too, bit for bit."""
    model = _depthwise(stride)
    x = np.random.default_rng(0).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    result = compare_with_tflm(model, [x], per_op=False, optimized=optimized)
    assert result.ok, result
    with Interpreter(model, arena=1024, backing=str(tmp_path / "sd.img")) as it:     # out of core: whole
        it.set_input(x, 0)
        it.invoke()
        assert np.array_equal(it.get_output(0), result.outputs[0])


def test_a_huge_conv_stride_gathers_its_taps():
    """A convolution whose stride spans gigabytes of padding takes the memory of its windows, not of the padding."""
    b = ModelBuilder()
    x = _q(b, "x", (1, 6, 6, 2))
    w = b.add_tensor("w", (3, 2, 2, 2), "INT8", data=np.arange(24).reshape(3, 2, 2, 2) - 12, scale=[0.1] * 3,
                     zero_point=0, axis=0)
    y = _q(b, "y", (1, 2, 2, 3), scale=0.5)
    b.add_op("CONV_2D", [x, w], [y], padding="VALID", stride_w=(1 << 30) + 3, stride_h=1 << 30)
    b.inputs, b.outputs = [x], [y]
    x_val = np.random.default_rng(1).integers(-128, 128, (1, 6, 6, 2)).astype(np.int8)
    result = compare_with_tflm(b.build(), [x_val], per_op=False)
    assert result.ok, result


def test_a_tensor_read_before_anything_writes_it_has_a_home_out_of_core(tmp_path):
    b = ModelBuilder()
    x = _q(b, "x", (1, 64, 64, 4))
    ghost = _q(b, "ghost", (1, 64, 64, 4))               # read by the ADD, written by nobody, not an input
    y = _q(b, "y", (1, 64, 64, 4))
    b.add_op("ADD", [x, ghost], [y])
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    x_val = np.random.default_rng(2).integers(-128, 128, (1, 64, 64, 4)).astype(np.int8)
    ref = Interpreter(model)
    ref.set_input(x_val, 0)
    ref.invoke()
    with Interpreter(model, arena=8 * 1024, backing=str(tmp_path / "sd.img")) as it:
        assert it.out_of_core
        for _ in range(2):                      # the ghost holds a fresh arena's zeros, as in memory
            it.set_input(x_val, 0)
            it.invoke()
            assert np.array_equal(it.get_output(0), ref.get_output(0))


def test_an_op_writing_over_its_own_input_runs_in_place_out_of_core(tmp_path):
    """An ADD whose output is its own input tensor (LiteRT's add_shared_tensors does this to the model input): TFLM
    runs it in place; out of core, in row bands, the next op reads the doubled values, as in memory."""
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 64, 64, 4), "FLOAT32")
    y = b.add_tensor("y", (1, 64, 64, 4), "FLOAT32")
    b.add_op("ADD", [x, x], [x], fused_activation_function="NONE")
    b.add_op("ADD", [x, x], [y], fused_activation_function="NONE")
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    x_val = np.random.default_rng(3).standard_normal((1, 64, 64, 4)).astype(np.float32)
    ref = Interpreter(model)
    ref.set_input(x_val, 0)
    ref.invoke()
    assert np.array_equal(ref.get_output(0), 4 * x_val)
    with Interpreter(model, arena=24 * 1024, backing=str(tmp_path / "sd.img")) as it:
        assert it.out_of_core and {r.mode for r in it.profile} <= {"rows", "chain"}
        for _ in range(2):
            it.set_input(x_val, 0)
            it.invoke()
            assert np.array_equal(it.get_output(0), ref.get_output(0))


def test_an_absurd_host_allocation_out_of_core_is_a_host_memory_error(tmp_path):
    b = ModelBuilder()
    x = _q(b, "x", (1, 32, 32, 8))
    w = b.add_tensor("w", (8, 3, 3, 8), "INT8", data=np.ones((8, 3, 3, 8)), scale=[0.1] * 8, zero_point=0, axis=0)
    y = _q(b, "y", (1, 32, 32, 8))
    b.add_op("CONV_2D", [x, w], [y], padding="SAME", stride_w=1, stride_h=1, dilation_w_factor=1 << 28)
    b.inputs, b.outputs = [x], [y]
    try:
        Interpreter(b.build(), arena=16 * 1024, backing=str(tmp_path / "sd.img")).invoke()
    except (HostMemoryError, MicroInterpError):
        pass


@pytest.mark.parametrize("backing", ["/dev/null", "DIR"])
def test_a_backing_that_is_not_a_file_is_a_storage_error(tmp_path, backing):
    path = str(tmp_path) if backing == "DIR" else backing
    b = ModelBuilder()
    x = _q(b, "x", (1, 64, 64, 4))
    y = _q(b, "y", (1, 64, 64, 4))
    b.add_op("RELU", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(StorageError):
        Interpreter(b.build(), arena=4096, backing=path)
    assert os.path.exists(path)


@pytest.mark.parametrize("backing", [42, b"sd.img", object()])
def test_a_backing_that_is_neither_a_path_nor_a_backend_is_a_config_error(backing):
    b = ModelBuilder()
    x = _q(b, "x", (1, 64, 64, 4))
    y = _q(b, "y", (1, 64, 64, 4))
    b.add_op("RELU", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(ConfigError, match="backing="):
        Interpreter(b.build(), arena=4096, backing=backing)


def test_an_encrypted_image_with_a_damaged_header_stays_refused_without_its_key(tmp_path):
    pytest.importorskip("cryptography")
    from microinterp.storage.sd import SdImage

    path = tmp_path / "sd.img"
    key = bytes(range(32))
    sizes = dict(fingerprint="f", weights_bytes=4096, activation_bytes=4096, table_entries=4)
    with SdImage.open(path, key=key, **sizes) as img:
        img.commit_weights()
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF                                     # inside the header, under its CRC
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    with pytest.raises(StorageError, match="encrypted .* damaged header"):
        SdImage.open(path, **sizes)
    assert path.read_bytes() == before
    with SdImage.open(path, key=key, **sizes) as img:     # its key may rebuild it
        assert img.action == "rebuilt"


def test_config_error_is_exported():
    assert microinterp.ConfigError is ConfigError and "ConfigError" in microinterp.__all__
    b = ModelBuilder()
    x, y = _q(b, "x", (1, 4)), _q(b, "y", (1, 4))
    b.add_op("RELU", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(microinterp.ConfigError, match="unknown planner"):
        Interpreter(b.build(), planner="magic")


def test_a_variable_tensors_buffer_is_ignored_as_tflm_ignores_it():
    """TFLM points a variable tensor at arena memory and resets it to its zero point, whatever its buffer holds;
    microinterp once wrote that reset into the read-only model mapping."""
    b = ModelBuilder()
    x = _q(b, "x", (1, 4))
    state = _q(b, "state", (1, 4), zp=3, data=np.full(4, 9), is_variable=True)
    y = _q(b, "y", (1, 4), zp=3)
    b.add_op("ADD", [x, state], [y])
    b.inputs, b.outputs = [x], [y]
    it = Interpreter(b.build())
    it.set_input(np.zeros((1, 4), np.int8), 0)
    it.invoke()
    it.reset()
    result = compare_with_tflm(b.build(), [np.zeros((1, 4), np.int8)], per_op=False)
    assert result.ok, result


@pytest.mark.parametrize("mid", [(1, 0, 32, 8), (1, 32, 0, 8)])
@pytest.mark.parametrize("filter_data", [True, False])
def test_an_empty_tensor_inside_a_fused_chain_out_of_core(tmp_path, mid, filter_data):
    """A conv -> conv chain whose middle tensor has no rows (or columns) once divided by a zero band height out of
    core (range() step 0); a second filter without data once reached the band code as None."""
    b = ModelBuilder()
    x = _q(b, "x", (1, 32, 32, 4))
    w1 = b.add_tensor("w1", (8, 3, 3, 4), "INT8", data=np.ones((8, 3, 3, 4)), scale=[0.1] * 8, zero_point=0, axis=0)
    m = _q(b, "m", mid)
    w2 = b.add_tensor("w2", (4, 3, 3, 8), "INT8", data=np.ones((4, 3, 3, 8)) if filter_data else None,
                      scale=[0.1] * 4, zero_point=0, axis=0)
    y = _q(b, "y", (1, mid[1], mid[2], 4))
    b.add_op("CONV_2D", [x, w1], [m], padding="SAME")
    b.add_op("CONV_2D", [m, w2], [y], padding="SAME")
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    ref = Interpreter(model)
    ref.set_input(np.ones((1, 32, 32, 4), np.int8), 0)
    ref.invoke()
    for arena in (4096, 16384):
        try:
            with Interpreter(model, arena=arena, backing=str(tmp_path / f"sd{arena}.img")) as it:
                it.set_input(np.ones((1, 32, 32, 4), np.int8), 0)
                it.invoke()
                assert np.array_equal(it.get_output(0), ref.get_output(0))
        except MicroInterpError:
            pass                      # typed: too small an arena


def test_an_lstm_cell_state_scale_beyond_int32_shifts_is_a_prepare_error(zoo):
    """A cell-state scale of 2^-149 (a denormal: still a power of two, as TFLM checks) makes TFLM shift an int32 by
    137 (undefined behaviour): a typed refusal, where the LUT once overflowed numpy's int64."""
    import tflite

    data = bytearray(zoo("trained_lstm_int8.tflite").read_bytes())
    m = tflite.Model.GetRootAs(data, 0)
    sg = m.Subgraphs(0)
    op = sg.Operators(0)
    cell = sg.Tensors(op.Inputs(19)).Quantization()
    pos = cell._tab.Vector(cell._tab.Offset(8))            # scale[0]
    data[pos:pos + 4] = np.array([1e-45], np.float32).tobytes()
    with pytest.raises(PrepareError, match="tanh input shift"):
        Interpreter(bytes(data))


def test_a_truncated_file_says_so_and_names_the_file(tmp_path, zoo):
    path = tmp_path / "cut.tflite"
    path.write_bytes(zoo("person_detect.tflite").read_bytes()[:100_000])
    with pytest.raises(ModelError, match=f"{path}: the file looks truncated"):
        Interpreter(str(path))


def test_several_samples_to_set_input_point_at_invoke_batch():
    b = ModelBuilder()
    x, y = _q(b, "x", (1, 4)), _q(b, "y", (1, 4))
    b.add_op("RELU", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(InputError, match="for 8 samples use invoke_batch"):
        Interpreter(b.build()).set_input(np.zeros((8, 4), np.int8), 0)


def test_an_absent_op_output_is_a_prepare_error():
    b = ModelBuilder()
    x = _q(b, "x", (1, 4))
    b.add_op("RELU", [x], [-1])
    b.inputs, b.outputs = [x], [x]
    with pytest.raises(PrepareError, match="output 0 is absent"):
        Interpreter(b.build())


def test_a_transpose_conv_stride_that_wraps_negative_is_refused():
    b = ModelBuilder()
    shape = b.add_tensor("shape", (4,), "INT32", data=np.array([1, 8, 8, 2], np.int32))
    w = b.add_tensor("w", (2, 3, 3, 2), "FLOAT32", data=np.ones((2, 3, 3, 2), np.float32))
    x = b.add_tensor("x", (1, 4, 4, 2), "FLOAT32")
    y = b.add_tensor("y", (1, 8, 8, 2), "FLOAT32")
    b.add_op("TRANSPOSE_CONV", [shape, w, x], [y], padding="SAME", stride_w=2 ** 31 - 1, stride_h=2)
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(PrepareError, match="int16 ConvParams"):
        Interpreter(b.build())


@pytest.mark.parametrize("rewire", ["written twice", "read before written"])
def test_out_of_core_refuses_a_graph_that_is_not_a_dataflow_and_memory_runs_it(tmp_path, rewire):
    b = ModelBuilder()
    x = _q(b, "x", (1, 64, 64, 4))
    m = _q(b, "m", (1, 64, 64, 4))
    y = _q(b, "y", (1, 64, 64, 4))
    if rewire == "written twice":
        b.add_op("RELU", [x], [m])
        b.add_op("RELU6", [x], [m])
        b.add_op("RELU", [m], [y])
    else:
        b.add_op("RELU", [m], [y])                     # reads m before the next op writes it
        b.add_op("RELU6", [x], [m])
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    it = Interpreter(model)                            # in memory: as TFLM runs it
    it.set_input(np.zeros((1, 64, 64, 4), np.int8), 0)
    it.invoke()
    with pytest.raises(ConfigError, match="out of core"):
        Interpreter(model, arena=8 * 1024, backing=str(tmp_path / "sd.img"))


def test_a_zero_mean_output_scale_is_a_prepare_error():
    b = ModelBuilder()
    x = _q(b, "x", (1, 4, 4, 2))
    axes = b.add_tensor("axes", (2,), "INT32", data=np.array([1, 2], np.int32))
    y = _q(b, "y", (1, 2), scale=-0.0)
    b.add_op("MEAN", [x, axes], [y], keep_dims=False)
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(PrepareError, match="positive quantization scale"):
        Interpreter(b.build())


def test_a_constant_main_input_of_a_banded_op_runs_whole_out_of_core(tmp_path):
    """A rewired model feeding a constant into a depthwise convolution: its rows live in flash, not on the card."""
    b = ModelBuilder()
    x = _q(b, "x", (1, 8, 8, 4))
    c = _q(b, "c", (1, 32, 32, 4), data=np.ones((1, 32, 32, 4)))
    w = b.add_tensor("w", (1, 3, 3, 4), "INT8", data=np.ones((1, 3, 3, 4)), scale=[0.1] * 4, zero_point=0, axis=3)
    y = _q(b, "y", (1, 32, 32, 4))
    z = _q(b, "z", (1, 8, 8, 4))
    b.add_op("DEPTHWISE_CONV_2D", [c, w], [y], padding="SAME", depth_multiplier=1)
    b.add_op("RELU", [x], [z])
    b.inputs, b.outputs = [x], [y, z]
    model = b.build()
    ref = Interpreter(model)
    ref.set_input(np.zeros((1, 8, 8, 4), np.int8), 0)
    ref.invoke()
    with Interpreter(model, arena=12 * 1024, backing=str(tmp_path / "sd.img"), flash=0) as it:
        it.set_input(np.zeros((1, 8, 8, 4), np.int8), 0)
        it.invoke()
        assert np.array_equal(it.get_output(0), ref.get_output(0))


# -- the newer paths: firmware builds (target=) and the rewriter (optimize) ---------------------------------------------
def _fc_model(outputs: bool = True, activation: object = "NONE") -> bytes:
    b = ModelBuilder()
    x = _q(b, "x", (1, 8))
    w = _q(b, "w", (4, 8), data=np.arange(32).reshape(4, 8) % 7 - 3)
    bias = b.add_tensor("b", (4,), "INT32", data=np.zeros(4, np.int32), scale=0.01, zero_point=0)
    y = _q(b, "y", (1, 4))
    b.add_op("FULLY_CONNECTED", [x, w, bias], [y] if outputs else [], fused_activation_function=activation)
    b.inputs, b.outputs = [x], [y]
    return b.build()


@pytest.mark.parametrize("core", ["cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55"])
def test_an_op_without_an_output_is_a_prepare_error_for_every_firmware_build(core):
    """The field-aware campaign's class on target=: an IndexError in the CMSIS-NN rules (kernels/cmsis_nn/_util)."""
    for kernels in ("cmsis-nn", "reference"):
        with pytest.raises(PrepareError, match="FULLY_CONNECTED"):
            Interpreter(_fc_model(outputs=False), target=core, kernels=kernels)


def test_optimize_writes_back_an_activation_code_the_schema_does_not_name():
    """A rewritten model keeps the option value it had (the writer raised KeyError: 'UNKNOWN_17'); what it wrote
    loads and behaves as the original."""
    from microinterp.apps.optimize import optimize

    model = microinterp.load_model(_fc_model(activation=17))
    assert model.main.operators[0].options["fused_activation_function"] == "UNKNOWN_17"
    written = microinterp.load_model(optimize(model, budget_s=0.2).data)
    assert written.main.operators[0].options["fused_activation_function"] == "UNKNOWN_17"
    for m in (model, written):
        it = Interpreter(m)
        it.set_input(np.arange(8, dtype=np.int8).reshape(1, 8))
        it.invoke()
    assert np.array_equal(it.get_output(0), _run(model, np.arange(8, dtype=np.int8).reshape(1, 8)))


def _run(model, x):
    it = Interpreter(model)
    it.set_input(x)
    it.invoke()
    return it.get_output(0)


def test_an_op_reading_a_tensor_written_later_is_not_reordered():
    """A file whose op reads a tensor a later op writes has no other order TFLM's run equals: the planners keep the
    file's order (the reorder search raised 'min() arg is an empty sequence')."""
    from microinterp.apps.optimize import optimize
    from microinterp.planner.reorder import best_order, reorderable

    b = ModelBuilder()
    x, t1, t2, y = (_q(b, n, (1, 8)) for n in ("x", "t1", "t2", "y"))
    b.add_op("ADD", [x, t2], [t1])                # reads t2 before op 1 writes it
    b.add_op("RELU", [t1], [t2])
    b.add_op("RELU", [t2], [y])
    b.inputs, b.outputs = [x], [y]
    model = microinterp.load_model(b.build())
    assert not reorderable(model)
    it = Interpreter(model)
    order, _ = best_order(model, it.runtime.plan["scratch"], it.runtime.plan["unplanned"])
    assert order == [0, 1, 2]
    written = optimize(model, budget_s=0.2)
    microinterp.load_model(written.data)


def test_a_report_of_a_model_tflm_refuses_renders(tmp_path):
    """A CONV_2D of 1-D operands (tflite__test_model in the population): TFLM's Prepare refuses it, and the report
    still renders -- the cost model prices the malformed op with its generic model instead of raising ValueError."""
    from microinterp.apps.report import render
    from microinterp.cost.mcu import get_profile

    b = ModelBuilder()
    x = b.add_tensor("x", (3,), "FLOAT32")
    w = b.add_tensor("w", (1,), "FLOAT32", data=np.ones(1, np.float32))
    y = b.add_tensor("y", (3,), "FLOAT32")
    b.add_op("CONV_2D", [x, w], [y], padding="SAME", stride_w=1, stride_h=1)
    b.inputs, b.outputs = [x], [y]
    model = microinterp.load_model(b.build())
    with pytest.raises(MicroInterpError):
        Interpreter(model)
    assert get_profile("stm32f746").op_cycles(model.main.operators[0], model.main.tensors) > 0
    text = render(model)
    assert "TFLM cannot run this model" in text


def test_optimize_writes_back_an_unset_string_option():
    """A VAR_HANDLE whose container string the model leaves unset (tflite__resource_vars_calibrated in the
    population) reads as None; the writer passed that None to the schema builder (TypeError)."""
    from microinterp.apps.optimize import optimize

    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "FLOAT32")
    h = b.add_tensor("h", (), "RESOURCE")
    v = b.add_tensor("v", (1, 4), "FLOAT32")
    y = b.add_tensor("y", (1, 4), "FLOAT32")
    b.add_op("VAR_HANDLE", [], [h], shared_name="acc")          # no container
    b.add_op("READ_VARIABLE", [h], [v])
    b.add_op("ADD", [v, x], [y])
    b.add_op("ASSIGN_VARIABLE", [h, y], [])
    b.inputs, b.outputs = [x], [y]
    model = microinterp.load_model(b.build())
    assert model.main.operators[0].options["container"] is None
    written = microinterp.load_model(optimize(model, budget_s=0.2).data)
    assert dict(written.main.operators[0].options) == dict(model.main.operators[0].options)
    for m in (model, written):
        it = Interpreter(m)
        for _ in range(2):
            it.set_input(np.ones((1, 4), np.float32))
            it.invoke()
        assert np.array_equal(it.get_output(0), np.full((1, 4), 2, np.float32))


def test_optimize_of_a_depthwise_writing_a_1d_constant_is_a_prepare_error():
    """The rewrite prices the original first: a depthwise convolution whose output is a 1-D bias constant must reach
    TFLM's refusal, not the cost model's 4-D loop arithmetic."""
    from microinterp.apps.optimize import rewrite

    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = _q(b, "x", (1, 4, 4, 2))
    w = _q(b, "w", (1, 3, 3, 2), data=rng.integers(-9, 9, (1, 3, 3, 2)))
    y = b.add_tensor("bias", (2,), "INT32", data=np.zeros(2, np.int32), scale=0.01, zero_point=0)
    b.add_op("DEPTHWISE_CONV_2D", [x, w, -1], [y], padding="SAME", stride_h=1, stride_w=1, depth_multiplier=1)
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(PrepareError):
        rewrite(b.build(), quick=True, check_seeds=())
