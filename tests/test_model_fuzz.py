"""Fuzzing the loader: truncated and corrupted models must load or raise ModelError, nothing else, and never hang.

Seeds are the zoo models (when present) and ModelBuilder models (always), so the test also runs on a fresh clone.
Most bytes of a real model are weights, where a flipped bit changes nothing structural; 90% of the mutations therefore
hit the *structure* bytes (everything outside the buffers' data). Mutations: truncation, bit flips, random bytes,
and 32-bit words overwritten with boundary values (0, -1, INT_MAX, ...) or nudged by a small delta (offsets that
point slightly elsewhere). Each example has a wall-clock bound (SIGALRM): a hang fails the test.

When the loader accepts a mutated model, building an ``Interpreter`` on it must succeed or raise a
``MicroInterpError`` subclass.

Default: the hypothesis profile's examples per test. ``pytest -m slow`` adds the hard runs (thousands of examples).
"""

from __future__ import annotations

import functools
import signal
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tflite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from microinterp import Interpreter, MicroInterpError, ModelError, load_model
from microinterp.testing.builder import ModelBuilder

MODELS_DIR = Path(__file__).resolve().parents[2] / "shared" / "models"  # as tests/conftest.py
TIME_LIMIT_S = 5.0
INTERESTING_WORDS = [0, 1, 2, 3, 4, 7, 8, 16, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
                     0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFF0]


# -- seeds -------------------------------------------------------------------------------------------------------------


def _q(b, name, shape, scale=0.1, zp=0, **kw):
    return b.add_tensor(name, shape, "INT8", scale=scale, zero_point=zp, **kw)


def _cnn() -> bytes:
    """CONV_2D -> DEPTHWISE_CONV_2D -> AVERAGE_POOL_2D -> RESHAPE -> FULLY_CONNECTED, int8, per-channel weights."""
    rng = np.random.default_rng(1)
    b = ModelBuilder()
    x = _q(b, "x", (1, 8, 8, 3), 0.05, -3)
    w = b.add_tensor("w", (4, 3, 3, 3), "INT8", data=rng.integers(-127, 128, (4, 3, 3, 3)),
                     scale=[0.01, 0.02, 0.03, 0.04], zero_point=0, axis=0)
    wb = b.add_tensor("wb", (4,), "INT32", data=rng.integers(-500, 500, 4), scale=[5e-4, 1e-3, 1.5e-3, 2e-3])
    c = _q(b, "c", (1, 8, 8, 4), 0.1, 2)
    dw = b.add_tensor("dw", (1, 3, 3, 4), "INT8", data=rng.integers(-127, 128, (1, 3, 3, 4)), scale=[0.02] * 4,
                      zero_point=0, axis=3)
    dwb = b.add_tensor("dwb", (4,), "INT32", data=rng.integers(-500, 500, 4), scale=[2e-3] * 4)
    d = _q(b, "d", (1, 8, 8, 4), 0.1, 1)
    p = _q(b, "p", (1, 4, 4, 4), 0.1, 1)
    r = _q(b, "r", (1, 64), 0.1, 1)
    fw = b.add_tensor("fw", (10, 64), "INT8", data=rng.integers(-127, 128, (10, 64)), scale=0.01, zero_point=0)
    fb = b.add_tensor("fb", (10,), "INT32", data=rng.integers(-500, 500, 10), scale=1e-3)
    y = _q(b, "y", (1, 10), 0.2, -5)
    b.add_op("CONV_2D", [x, w, wb], [c], padding="SAME", fused_activation_function="RELU")
    b.add_op("DEPTHWISE_CONV_2D", [c, dw, dwb], [d], padding="SAME", depth_multiplier=1)
    b.add_op("AVERAGE_POOL_2D", [d], [p], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    b.add_op("RESHAPE", [p], [r], new_shape=[1, 64])
    b.add_op("FULLY_CONNECTED", [r, fw, fb], [y])
    b.inputs, b.outputs = [x], [y]
    b.add_metadata("min_runtime_version", b"1.14.0\0")
    return b.build()


def _reshapes_with_offline_plan() -> bytes:
    b = ModelBuilder()
    x = _q(b, "x", (1, 32))
    y = _q(b, "y", (32,))
    z = _q(b, "z", (4, 8))
    b.add_op("RESHAPE", [x], [y], new_shape=[32])
    b.add_op("RESHAPE", [y], [z], new_shape=[4, 8])
    b.inputs, b.outputs = [x], [z]
    b.add_offline_plan([0, 32, -1])
    return b.build()


def _control_flow() -> bytes:
    b = ModelBuilder()
    c = b.add_tensor("c", (1,), "BOOL")
    x = _q(b, "x", (1, 16))
    y = _q(b, "y", (1, 16))
    b.add_op("IF", [c, x], [y], then_subgraph_index=1, else_subgraph_index=2)
    b.inputs, b.outputs = [c, x], [y]
    for name in ("then", "else"):
        sg = b.add_subgraph(name)
        i, o = _q(sg, "i", (1, 16)), _q(sg, "o", (16,))
        sg.add_op("RESHAPE", [i], [o], new_shape=[16])
        sg.inputs, sg.outputs = [i], [o]
    return b.build()


def _custom_and_variables() -> bytes:
    b = ModelBuilder()
    x = _q(b, "x", (1, 8))
    v = _q(b, "state", (1, 8), is_variable=True)
    y = _q(b, "y", (1, 8))
    b.add_op("CUSTOM", [x, v], [y], custom_code="Fancy", custom_options=b"\x00\x01flexbuffer-ish")
    b.inputs, b.outputs = [x], [y]
    return b.build()


BUILDER_SEEDS = {"cnn": _cnn, "offline": _reshapes_with_offline_plan, "control_flow": _control_flow,
                 "custom": _custom_and_variables}
ZOO_SEEDS = ["person_detect.tflite", "vww_96_int8.tflite", "kws_ref_model.tflite", "pretrainedResnet_quant.tflite",
             "ad01_int8.tflite", "micro_speech_quantized.tflite", "hello_world_int8.tflite",
             "trained_lstm_int8.tflite", "mobilenet_v2_quantized_1x3x224x224.tflite"]


@functools.cache
def seed_bytes(name: str) -> bytes:
    if name in BUILDER_SEEDS:
        return BUILDER_SEEDS[name]()
    return (MODELS_DIR / name).read_bytes()


@functools.cache
def structure_positions(name: str) -> np.ndarray:
    """Every byte position of the model that is not inside a buffer's data."""
    data = seed_bytes(name)
    m = tflite.Model.GetRootAs(data, 0)
    mask = np.ones(len(data), bool)
    for i in range(m.BuffersLength()):
        buf = m.Buffers(i)
        o = buf._tab.Offset(4)
        if o:
            start = buf._tab.Vector(o)
            mask[start:start + buf.DataLength()] = False
    return np.flatnonzero(mask)


def available_seeds(include_zoo: bool = True) -> list[str]:
    zoo = [n for n in ZOO_SEEDS if (MODELS_DIR / n).exists()] if include_zoo else []
    return list(BUILDER_SEEDS) + zoo


# -- mutations ---------------------------------------------------------------------------------------------------------

MUTATION = st.tuples(st.sampled_from(["flip", "byte", "word", "nudge"]), st.integers(0, 1 << 30),
                     st.booleans(), st.integers(0, 0xFFFFFFFF))


@dataclass(frozen=True)
class Mutation:
    """A recipe (printed by hypothesis when an example fails): seed model, optional truncation, edits."""

    name: str
    truncate: int | None
    edits: tuple[tuple[str, int, bool, int], ...]

    def apply(self) -> bytes:
        data = bytearray(seed_bytes(self.name))
        if self.truncate is not None:
            return bytes(data[:self.truncate % len(data)])
        structure = structure_positions(self.name)
        for kind, where, anywhere, value in self.edits:
            pos = where % len(data) if anywhere else int(structure[where % len(structure)])
            if kind == "flip":
                data[pos] ^= 1 << (value % 8)
            elif kind == "byte":
                data[pos] = value & 0xFF
            else:
                pos &= ~3
                if pos + 4 > len(data):
                    continue
                if kind == "word":
                    word = INTERESTING_WORDS[value % len(INTERESTING_WORDS)] if value & 1 else value
                else:  # nudge: an offset or length that points slightly elsewhere
                    word = (struct.unpack_from("<I", data, pos)[0] + (value % 129) - 64) & 0xFFFFFFFF
                struct.pack_into("<I", data, pos, word)
        return bytes(data)


def mutations(seeds: list[str]):
    truncate = st.one_of(st.none(), st.none(), st.none(), st.none(), st.none(), st.none(), st.none(), st.none(),
                         st.none(), st.integers(0, 1 << 30))
    return st.builds(Mutation, st.sampled_from(seeds), truncate,
                     st.lists(MUTATION, min_size=1, max_size=8).map(tuple))


class Hang(Exception):
    pass


@contextmanager
def time_limit(seconds: float):
    def on_alarm(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_one(mutation: Mutation | SemanticMutation, interpreter: bool = True) -> None:
    """load_model: success or ModelError; then Interpreter: success or MicroInterpError. Anything else fails."""
    name, data = mutation.name, mutation.apply()
    with time_limit(TIME_LIMIT_S):
        try:
            model = load_model(data)
        except ModelError:
            return
        except Hang:
            pytest.fail(f"load_model hangs on a mutation of {name}")
        except BaseException as e:
            raise AssertionError(f"load_model raised {type(e).__name__} (not ModelError) on a mutation of "
                                 f"{name}: {e}") from e
        if not interpreter:
            return
        try:
            Interpreter(model)
        except MicroInterpError:
            pass
        except Hang:
            pytest.fail(f"Interpreter hangs on a mutation of {name}")
        except BaseException as e:
            raise AssertionError(f"Interpreter raised {type(e).__name__} (not a MicroInterpError) on a loadable "
                                 f"mutation of {name}: {e}") from e


# -- tests -------------------------------------------------------------------------------------------------------------


def test_seeds_load_cleanly():
    for name in available_seeds():
        load_model(seed_bytes(name))
    Interpreter(seed_bytes("cnn"))
    Interpreter(seed_bytes("offline"))


@pytest.mark.parametrize("name", available_seeds())
def test_every_truncation_of_the_structure_is_a_model_error(name):
    """Cut the file at every structure byte of a small builder model (sampled for big ones)."""
    data = seed_bytes(name)
    cuts = structure_positions(name)
    if len(cuts) > 400:
        cuts = cuts[np.linspace(0, len(cuts) - 1, 400).astype(int)]
    for cut in cuts:
        with time_limit(TIME_LIMIT_S):
            try:
                load_model(data[:cut])
            except ModelError:
                pass


@given(mutations(available_seeds()))
def test_fuzz_load_and_build(mutation):
    check_one(mutation)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutations(available_seeds()))
def test_fuzz_load_and_build_hard(mutation):
    check_one(mutation)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutations(available_seeds(include_zoo=False)))
def test_fuzz_builder_models_hard(mutation):
    check_one(mutation)


# -- semantic mutations: loadable models with odd shapes, types, quantization, wiring and options --------------------


_SCALES = [0.0, 1e-30, 1e-12, 1e-6, 0.5, 1.0, 3.0, 1e6, 1e30, 3e38]
_ZERO_POINTS = [-300, -129, -128, -1, 0, 1, 127, 128, 255, 32767, 40000, -(1 << 31)]
_TYPES = [0, 1, 2, 3, 4, 6, 7, 9, 17]  # FLOAT32, FLOAT16, INT32, UINT8, INT64, BOOL, INT16, INT8, INT4


@dataclass(frozen=True)
class SemanticMutation:
    """Edits through the object API of the wheel's schema; most results still load, so the Interpreter (resolve,
    every kernel's prepare, plan) sees shapes, dtypes, quantization, wiring and options no converter would write."""

    name: str
    seed: int

    def apply(self) -> bytes:
        import copy
        import random

        import flatbuffers

        schema = pytest.importorskip("tflite_micro").runtime.schema_fb
        m = copy.deepcopy(_object_model(self.name))
        rng = random.Random(self.seed)
        sg = m.subgraphs[0]
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            k = rng.random()
            if k < 0.35 and sg.tensors:
                t = sg.tensors[rng.randrange(len(sg.tensors))]
                if t.buffer and m.buffers[t.buffer].data is not None:
                    continue  # constants keep shape and type, or the loader rightly refuses them
                if k < 0.25:
                    shape = [int(d) for d in (t.shape if t.shape is not None else [])]
                    r = rng.random()
                    if r < 0.5 and shape:
                        shape[rng.randrange(len(shape))] = rng.choice([0, 1, 2, 3, 5, 7, 16, 33])
                    elif r < 0.75 and shape:
                        shape.pop(rng.randrange(len(shape)))
                    else:
                        shape.insert(rng.randrange(len(shape) + 1), rng.choice([1, 2, 3]))
                    t.shape = shape
                else:
                    t.type = rng.choice(_TYPES)
            elif k < 0.55 and sg.tensors:
                t = sg.tensors[rng.randrange(len(sg.tensors))]
                q = t.quantization
                if q is None or q.scale is None or len(q.scale) == 0:
                    q = schema.QuantizationParametersT()
                    q.scale, q.zeroPoint = [0.1], [0]
                    t.quantization = q
                r = rng.random()
                if r < 0.4:
                    q.scale = [rng.choice(_SCALES) for _ in q.scale]
                elif r < 0.8:
                    n = len(q.zeroPoint) if q.zeroPoint is not None and len(q.zeroPoint) else 1
                    q.zeroPoint = [rng.choice(_ZERO_POINTS) for _ in range(n)]
                else:
                    t.quantization = None
            elif k < 0.8 and sg.operators:
                op = sg.operators[rng.randrange(len(sg.operators))]
                field_name = rng.choice(["inputs", "outputs"])
                ids = [int(v) for v in (getattr(op, field_name) if getattr(op, field_name) is not None else [])]
                r = rng.random()
                if r < 0.6 and ids:
                    ids[rng.randrange(len(ids))] = rng.choice([-1, rng.randrange(len(sg.tensors))])
                elif r < 0.8 and ids:
                    ids.pop()
                else:
                    ids.append(rng.randrange(len(sg.tensors)))
                setattr(op, field_name, ids)
            elif k < 0.95 and sg.operators:
                opts = sg.operators[rng.randrange(len(sg.operators))].builtinOptions
                names = [a for a in vars(opts) if isinstance(getattr(opts, a), (int, float, bool))] if opts else []
                if names:
                    a = rng.choice(names)
                    v = getattr(opts, a)
                    if isinstance(v, bool):
                        v = not v
                    elif isinstance(v, float):
                        v = rng.choice([0.0, -1.0, 1e-9, 1e9, float("nan")])
                    else:
                        v = rng.choice([-2, -1, 0, 1, 2, 3, 4, 5, 7, 100])
                    setattr(opts, a, v)
            elif sg.operators and len(m.operatorCodes) > 1:
                sg.operators[rng.randrange(len(sg.operators))].opcodeIndex = rng.randrange(len(m.operatorCodes))
        fb = flatbuffers.Builder(1024)
        fb.Finish(m.Pack(fb), file_identifier=b"TFL3")
        return bytes(fb.Output())


@functools.cache
def _object_model(name: str):
    runtime = pytest.importorskip("tflite_micro").runtime
    return runtime.convert_bytearray_to_object(bytearray(seed_bytes(name)))


SEMANTIC_SEEDS = [n for n in available_seeds() if not n.startswith("mobilenet")]  # 4 MB: too slow to re-pack


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.builds(SemanticMutation, st.sampled_from(SEMANTIC_SEEDS), st.integers(0, 2**32 - 1)))
def test_fuzz_semantic_mutations_hard(mutation):
    check_one(mutation)


# -- interpreter-side escapes the fuzzer found (fixed; kept as regression tests) ------------------


def test_int8_variable_with_out_of_range_zero_point():
    b = ModelBuilder()
    x = _q(b, "x", (1, 4))
    v = _q(b, "v", (1, 4), zp=300, is_variable=True)
    y = _q(b, "y", (1, 4))
    b.add_op("ADD", [x, v], [y])
    b.inputs, b.outputs = [x], [y]
    try:
        Interpreter(b.build())
    except MicroInterpError:
        pass


def test_lstm_with_zero_cell_state_scale(zoo):
    data = zoo("trained_lstm_int8.tflite").read_bytes()
    model = load_model(data)
    op = next(o for o in model.main.operators if o.name == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    q = tflite.Model.GetRootAs(data, 0).Subgraphs(0).Tensors(op.inputs[19]).Quantization()
    scale_pos = q._tab.Vector(q._tab.Offset(8))
    data = data[:scale_pos] + struct.pack("<f", 0.0) + data[scale_pos + 4:]
    try:
        Interpreter(data)
    except MicroInterpError:
        pass
