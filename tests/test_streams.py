"""Streams (microinterp/streams.py): S independent streams of a model in lockstep equal S interpreters fed one stream
each, step by step, bit for bit -- the zoo's audio front ends (every signal kernel's stream declaration, the noise
estimate per stream), elementwise ops with constants and broadcasting, a stateless op run stream by stream -- and
stateful ops without a declaration are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from flatbuffers import flexbuffers

import microinterp as mi
from microinterp.errors import ConfigError, InputError
from microinterp.streams import Streams, run_streams
from microinterp.testing.builder import ModelBuilder

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def _one_by_one(model, sequences: np.ndarray) -> np.ndarray:
    """Each sequence through its own interpreter, from the initial state."""
    rows = []
    for seq in sequences:
        it = mi.Interpreter(model)
        outs = []
        for x in seq:
            it.set_input(x, 0)
            it.invoke()
            outs.append(it.get_output(0))
        rows.append(np.stack(outs))
    return np.stack(rows)


def _clips(rng, streams: int, steps: int) -> np.ndarray:
    """Windows of int16 audio at different loudness per stream; some samples at -32768 (the auto-scale's wrap)."""
    loud = 10.0 ** rng.uniform(1, 4.5, size=(streams, 1, 1))
    x = np.clip(rng.normal(size=(streams, steps, 480)) * loud, -32768, 32767).astype(np.int16)
    x[0, 1, 7] = -32768
    x[-1, :, :] = 0                     # a silent stream
    return x.reshape(streams, steps, 1, 480)


@pytest.mark.parametrize("name", ["audio_preprocessor_int8", "audio_preprocessor_float"])
def test_audio_front_ends_as_streams_equal_one_interpreter_per_clip(name):
    path = MODELS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} not available")
    model = path.read_bytes()
    clips = _clips(np.random.default_rng(3), 5, 6)
    expected = _one_by_one(model, clips)
    runner = Streams(model, 5)
    got = np.stack([runner.run(clips[:, t])[0] for t in range(clips.shape[1])], axis=1)
    assert np.array_equal(got.view(np.uint8), expected.view(np.uint8))
    runner.reset()                      # every stream's noise estimate back to zero: the same again
    again = np.stack([runner.run(clips[:, t])[0] for t in range(clips.shape[1])], axis=1)
    assert np.array_equal(again.view(np.uint8), expected.view(np.uint8))
    chunked = run_streams(model, clips, streams=2)      # chunks of 2, 2 and 1 streams
    assert np.array_equal(chunked.view(np.uint8), expected.view(np.uint8))


ELEMENTWISE = [("ADD", "FLOAT32"), ("SUB", "FLOAT32"), ("MUL", "FLOAT32"), ("DIV", "FLOAT32"), ("MAXIMUM", "FLOAT32"),
               ("MINIMUM", "FLOAT32"), ("ADD", "INT32"), ("MUL", "INT32"), ("MINIMUM", "INT32"), ("DIV", "INT32"),
               ("ADD", "INT8"), ("MUL", "INT8"), ("MAXIMUM", "INT8"), ("SQUARED_DIFFERENCE", "FLOAT32")]


@pytest.mark.parametrize("op,type_name", ELEMENTWISE)
@pytest.mark.parametrize("other", [(), (4,), (3, 4), (3, 1)])
def test_elementwise_ops_with_constants_and_broadcasting(op, type_name, other):
    """x (an input, [3, 4]) op c (a constant of shape ``other``) -> CAST or ABS -> out, three streams, two steps."""
    rng = np.random.default_rng(len(other))
    q = {"scale": 0.1, "zero_point": 2} if type_name == "INT8" else {}
    dtype = {"FLOAT32": np.float32, "INT32": np.int32, "INT8": np.int8}[type_name]
    data = (rng.integers(1, 9, other) if type_name != "FLOAT32" else rng.normal(size=other)).astype(dtype)
    b = ModelBuilder()
    x = b.add_tensor("x", (3, 4), type_name, **q)
    c = b.add_tensor("c", other, type_name, data=data, **q)
    y = b.add_tensor("y", (3, 4), type_name, **q)
    options = {"fused_activation_function": "NONE"} if op in ("ADD", "SUB", "MUL", "DIV") else {}
    b.add_op(op, [x, c], [y], **options)
    z = b.add_tensor("z", (3, 4), "FLOAT32" if type_name != "INT8" else "INT8", **q)
    b.add_op("CAST" if type_name == "INT32" else "ABS", [y], [z])
    b.inputs, b.outputs = [x], [z]
    model = b.build()
    if type_name == "FLOAT32":
        seqs = rng.normal(size=(3, 2, 3, 4)).astype(np.float32)
    else:
        seqs = rng.integers(1, 100 if type_name == "INT32" else 120, (3, 2, 3, 4)).astype(dtype)
    got = run_streams(model, seqs, streams=3)
    assert np.array_equal(got.view(np.uint8), _one_by_one(model, seqs).view(np.uint8))


@pytest.mark.parametrize("type_name", ["FLOAT32", "INT32", "INT8"])
@pytest.mark.parametrize("divisor", ["constant", "input"])
def test_div_binds_on_views_of_one_rank_more(type_name, divisor):
    """DIV declares its bound call for streams: an input of lower rank than the output (``[4]`` against ``[3, 4]``)
    still broadcasts within each stream, and where the bind declines (int8, a divisor given at invoke) the invoke
    runs on the same padded views."""
    rng = np.random.default_rng(7)
    q = {"scale": 0.1, "zero_point": 2} if type_name == "INT8" else {}
    dtype = {"FLOAT32": np.float32, "INT32": np.int32, "INT8": np.int8}[type_name]
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), type_name, **q)
    if divisor == "constant":
        data = rng.normal(size=(3, 4)) if type_name == "FLOAT32" else rng.integers(3, 9, (3, 4))
        c = b.add_tensor("c", (3, 4), type_name, data=data.astype(dtype), **q)
    else:
        c = b.add_tensor("c", (3, 4), type_name, **q)
    y = b.add_tensor("y", (3, 4), type_name, **q)
    b.add_op("DIV", [x, c], [y], fused_activation_function="NONE")
    b.inputs, b.outputs = [x] if divisor == "constant" else [x, c], [y]
    model = b.build()
    if type_name == "FLOAT32":
        xs, cs = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 2, 3, 4))
    else:
        xs, cs = rng.integers(-100, 100, (3, 2, 4)), rng.integers(3, 9, (3, 2, 3, 4))
    xs, cs = xs.astype(dtype), cs.astype(dtype)
    runner = Streams(model, 3)
    for t in range(2):
        got = runner.run(xs[:, t]) if divisor == "constant" else runner.run(xs[:, t], cs[:, t])
        for s in range(3):
            it = mi.Interpreter(model)         # DIV keeps no state: the step's inputs alone decide it
            it.set_input(xs[s, t], 0)
            if divisor == "input":
                it.set_input(cs[s, t], 1)
            it.invoke()
            assert np.array_equal(got[0][s].view(np.uint8), it.get_output(0).view(np.uint8))


def test_a_stateless_op_without_a_declaration_runs_stream_by_stream():
    """SOFTMAX declares nothing for streams: it runs once per stream through the single-stream views."""
    b = ModelBuilder()
    x = b.add_tensor("x", (2, 5), "FLOAT32")
    y = b.add_tensor("y", (2, 5), "FLOAT32")
    b.add_op("SOFTMAX", [x], [y], beta=1.0)
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    seqs = np.random.default_rng(1).normal(size=(4, 3, 2, 5)).astype(np.float32)
    assert np.array_equal(run_streams(model, seqs, streams=4).view(np.uint32),
                          _one_by_one(model, seqs).view(np.uint32))


def test_stateful_ops_without_a_declaration_are_refused():
    b = ModelBuilder()
    x = b.add_tensor("x", (4,), "INT16")
    y = b.add_tensor("y", (4,), "INT16")
    b.add_op("CUSTOM", [x], [y], custom_code="SignalDelay", custom_options=flexbuffers.Dumps({"delay_length": 2}))
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(ConfigError, match="op 0 SignalDelay"):
        Streams(b.build(), 3)


def test_bad_arguments_are_typed_errors():
    b = ModelBuilder()
    x = b.add_tensor("x", (2,), "FLOAT32")
    y = b.add_tensor("y", (2,), "FLOAT32")
    b.add_op("ABS", [x], [y])
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    with pytest.raises(ConfigError, match="streams must be a positive number"):
        Streams(model, 0)
    runner = Streams(model, 2)
    with pytest.raises(InputError, match=r"expected float32 \(2, 2\)"):
        runner.run(np.zeros((3, 2), np.float32))
    with pytest.raises(InputError, match="takes 1 input"):
        runner.run()


def test_run_streams_refuses_steps_of_the_wrong_size():
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 4), "FLOAT32")
    y = b.add_tensor("y", (1, 4), "FLOAT32")
    b.add_op("ABS", [x], [y])
    b.inputs, b.outputs = [x], [y]
    with pytest.raises(InputError, match="must hold 4 values"):
        run_streams(b.build(), np.zeros((2, 3, 5), np.float32))
    with pytest.raises(InputError, match=r"\[N, steps"):
        run_streams(b.build(), np.zeros(4, np.float32))
    with pytest.raises(InputError, match="expected float32"):
        run_streams(b.build(), np.zeros((2, 3, 1, 4), np.float64))
    with pytest.raises(ConfigError, match="streams must be a positive number"):
        run_streams(b.build(), np.zeros((2, 3, 1, 4), np.float32), streams=0)
