"""TFLM's signal-library custom ops against the wheel, one op per model, random inputs over the types' ranges and
random options; state across invokes and ``reset()`` for the spectral subtraction."""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st

from microinterp import Interpreter, PrepareError
from microinterp.errors import InvokeError
from microinterp.testing.builder import ModelBuilder
from microinterp.testing.single_op import assert_matches_tflm
from microinterp.testing.tflm import TflmRunner, compare_with_tflm

pytest.importorskip("tflite_micro")


def custom_model(code: str, inputs, outputs, opts: dict | None) -> bytes:
    """``inputs``: (shape, type, constant data or None); ``outputs``: (shape, type)."""
    b = ModelBuilder()
    ins, graph_inputs = [], []
    for k, (shape, type_name, data) in enumerate(inputs):
        t = b.add_tensor(f"in{k}", shape, type_name, data=data)
        ins.append(t)
        if data is None:
            graph_inputs.append(t)
    outs = [b.add_tensor(f"out{k}", shape, type_name) for k, (shape, type_name) in enumerate(outputs)]
    raw = flexbuffers.Dumps(opts) if opts is not None else None
    b.add_op("CUSTOM", ins, outs, custom_code=code, custom_options=raw)
    b.inputs, b.outputs = graph_inputs, outs
    return b.build()


def i16(rng, n, lo=-32768, hi=32767):
    return rng.integers(lo, hi, size=n, endpoint=True).astype(np.int16)


def assert_streams_are_interpreters(model: bytes, inputs: list[np.ndarray], written: slice = slice(None)) -> None:
    """One step of ``len(inputs[0])`` streams (:class:`microinterp.streams.Streams`) against one interpreter per
    stream, on the output elements the op writes (``written``)."""
    from microinterp.streams import Streams

    got = Streams(model, len(inputs[0])).run(*inputs)[0]
    for s in range(len(inputs[0])):
        one = Interpreter(model)
        for k, v in enumerate(inputs):
            one.set_input(v[s], k)
        one.invoke()
        np.testing.assert_array_equal(got[s][written], one.get_output(0)[written])


@given(n=st.integers(1, 4), size=st.integers(1, 40), shift=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
def test_window(n, size, shift, seed):
    rng = np.random.default_rng(seed)
    w = i16(rng, size)
    model = custom_model("SignalWindow", [((n, size), "INT16", None), ((size,), "INT16", w)],
                         [((n, size), "INT16")], {"shift": shift})
    assert_matches_tflm(model, [i16(rng, (n, size))])


@given(n=st.integers(1, 3), size=st.integers(1, 40), shift=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
def test_window_given_at_invoke(n, size, shift, seed):
    """The window as a model input (the bound form's other branch: the window read at every invoke)."""
    rng = np.random.default_rng(seed)
    model = custom_model("SignalWindow", [((n, size), "INT16", None), ((size,), "INT16", None)],
                         [((n, size), "INT16")], {"shift": shift})
    assert_matches_tflm(model, [i16(rng, (n, size)), i16(rng, size)])


@given(size=st.integers(1, 64), magnitude=st.integers(0, 15), seed=st.integers(0, 2**32 - 1))
def test_fft_auto_scale(size, magnitude, seed):
    rng = np.random.default_rng(seed)
    hi = (1 << magnitude) - 1
    x = i16(rng, size, -hi - 1, hi)
    if size > 2 and seed % 3 == 0:
        x[1] = -32768
    model = custom_model("SignalFftAutoScale", [((size,), "INT16", None)], [((size,), "INT16"), ((), "INT32")], {})
    assert_matches_tflm(model, [x])


@pytest.mark.parametrize("n", [4, 6, 8, 10, 12, 16, 18, 20, 30, 32, 50, 64, 100, 256, 512])
@pytest.mark.parametrize("type_name", ["INT16", "INT32", "FLOAT32"])
def test_rfft_every_radix(n, type_name):
    """Sizes whose halves factor into 4, 2, 3 and 5 (every butterfly TFLM's build can run), every build."""
    frame = n - n // 4
    x = _rfft_frames(np.random.default_rng(n), type_name, (2, frame))
    result = assert_matches_tflm(_rfft_model(type_name, n, (2, frame)), [x])
    assert result[0].shape == (2, n + 2)


@pytest.mark.parametrize("n", [64, 480, 512])
@pytest.mark.parametrize("type_name", ["INT16", "INT32", "FLOAT32"])
def test_rfft_many_frames(n, type_name):
    """40 frames: beyond the gathers' GATHER_BELOW, the bound call writes every frame's bins straight into the
    output (frames innermost in the stages, the split through slices of the output)."""
    frame = n - n // 16
    x = _rfft_frames(np.random.default_rng(n + 1), type_name, (40, frame))
    if type_name == "INT16":
        x[3] = -32768                                   # a frame at the type's extreme (the wrap-arounds)
    assert_matches_tflm(_rfft_model(type_name, n, (40, frame)), [x])


def _rfft_frames(rng, type_name: str, shape: tuple[int, int]) -> np.ndarray:
    if type_name == "FLOAT32":
        return rng.uniform(-1000, 1000, size=shape).astype(np.float32)
    if type_name == "INT32":
        return rng.integers(-(1 << 30), 1 << 30, size=shape).astype(np.int32)
    return i16(rng, shape)


def _rfft_model(type_name: str, n: int, shape: tuple[int, int]) -> bytes:
    code = {"INT16": 7, "INT32": 2, "FLOAT32": 0}[type_name]
    return custom_model("SignalRfft", [(shape, type_name, None)], [((shape[0], n + 2), type_name)],
                        {"T": code, "fft_length": n})


@given(size=st.integers(2, 60), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_energy(size, data, seed):
    start = data.draw(st.integers(0, size // 2))
    end = data.draw(st.integers(start, size // 2))
    """Only bins [start, end) are written (TFLM leaves the rest of the output as the arena held it)."""
    rng = np.random.default_rng(seed)
    model = custom_model("SignalEnergy", [((size,), "INT16", None)], [((size // 2,), "UINT32")],
                         {"end_index": end, "start_index": start})
    result = compare_with_tflm(model, [i16(rng, size)], per_op=False)
    np.testing.assert_array_equal(result.outputs[0][start:end], result.tflm_outputs[0][start:end])


@given(channels=st.integers(1, 12), extreme=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_filter_bank(channels, extreme, seed):
    """Random tables; ``extreme``: wide channels, weights of the whole int16 range and spectrum values near 2^32
    (the products' modulo-2^64 sums, which the kernel computes as exact float64 products of 16-bit halves)."""
    rng = np.random.default_rng(seed)
    widths = rng.integers(0, 60 if extreme else 6, size=channels + 1).astype(np.int16)
    spectrum = int(widths.sum()) + 8
    starts = np.concatenate([[0], np.cumsum(widths[:-1])]).astype(np.int16) + rng.integers(0, 3)
    wstarts = np.concatenate([[0], np.cumsum(widths[:-1])]).astype(np.int16)
    nweights = max(int(widths.sum()), 1)
    lim = 32767 if extreme else 4096
    weights, unweights = i16(rng, nweights, -lim - extreme, lim), i16(rng, nweights, -lim - extreme, lim)
    x = rng.integers(0, 1 << 32, size=spectrum, dtype=np.uint64).astype(np.uint32)
    if extreme:
        x[::2] = np.uint32(0xFFFFFFFF) - x[::2] % 7
    model = custom_model("SignalFilterBank",
                         [((spectrum,), "UINT32", None), ((nweights,), "INT16", weights),
                          ((nweights,), "INT16", unweights), ((channels + 1,), "INT16", starts.astype(np.int16)),
                          ((channels + 1,), "INT16", wstarts), ((channels + 1,), "INT16", widths)],
                         [((channels,), "UINT64")], {"num_channels": channels})
    assert_matches_tflm(model, [x])


@given(channels=st.integers(1, 40), shift=st.integers(0, 12), seed=st.integers(0, 2**32 - 1))
def test_filter_bank_square_root(channels, shift, seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 64, size=channels)
    x = (rng.integers(0, 1 << 62, size=channels, dtype=np.uint64) >> (63 - bits).astype(np.uint64)).astype(np.uint64)
    x[0] = np.uint64(0xFFFFFFFFFFFFFFFF)
    model = custom_model("SignalFilterBankSquareRoot", [((channels,), "UINT64", None), ((), "INT32", None)],
                         [((channels,), "UINT32")], {})
    assert_matches_tflm(model, [x, np.array(shift, np.int32)])


@given(channels=st.integers(1, 40), bits=st.integers(0, 8), scale=st.sampled_from([1, 64, 100, 1 << 15]),
       seed=st.integers(0, 2**32 - 1))
def test_filter_bank_log(channels, bits, scale, seed):
    rng = np.random.default_rng(seed)
    shifts = rng.integers(0, 32, size=channels).astype(np.uint64)
    x = (rng.integers(0, 1 << 32, size=channels, dtype=np.uint64) >> shifts).astype(np.uint32)
    x[:3] = [0, 1, 2][:min(3, channels)]
    model = custom_model("SignalFilterBankLog", [((channels,), "UINT32", None)], [((channels,), "INT16")],
                         {"input_correction_bits": bits, "output_scale": scale})
    assert_matches_tflm(model, [x])


@given(channels=st.integers(1, 40), bits=st.integers(0, 20), scale=st.sampled_from([1, 64, 100, 1 << 15, 12345678]),
       over=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_filter_bank_log_below_its_table_limit(channels, bits, scale, over, seed):
    """Inputs below 2^16 (the bound op's table of results), and with ``over`` one at 2^16 (the arithmetic)."""
    from microinterp.kernels.signal.filter_bank_log import TABLED

    rng = np.random.default_rng(seed)
    x = rng.integers(0, TABLED, size=channels).astype(np.uint32)
    x[:4] = [0, 1, 2, TABLED - 1][:min(4, channels)]
    if over:
        x[-1] = TABLED
    model = custom_model("SignalFilterBankLog", [((channels,), "UINT32", None)], [((channels,), "INT16")],
                         {"input_correction_bits": bits, "output_scale": scale})
    assert_matches_tflm(model, [x])


def test_pcan_as_streams_equals_one_interpreter_per_stream():
    """Streams of SignalPCAN (the bound form on every stream at once): estimates of every bit length, 0, 1 and 2
    among them, a gain table over the whole int16 range, against one interpreter per stream."""
    rng = np.random.default_rng(11)
    model = custom_model("SignalPCAN", [((9,), "UINT32", None), ((9,), "UINT32", None),
                                        ((130,), "INT16", i16(rng, 130))], [((9,), "UINT32")], {"snr_shift": 6})
    x = rng.integers(0, 1 << 32, size=(5, 9), dtype=np.uint64).astype(np.uint32)
    noise = (rng.integers(0, 1 << 32, size=(5, 9), dtype=np.uint64) >> rng.integers(0, 32, size=(5, 9))
             .astype(np.uint64)).astype(np.uint32)
    noise[0, :4] = [0, 1, 2, 3]
    assert_streams_are_interpreters(model, [x, noise])


def test_filter_bank_as_streams_with_weights_given_at_invoke():
    """Streams of SignalFilterBank whose weights are an input (each stream its own): the walk per stream on that
    stream's tables, against one interpreter per stream."""
    rng = np.random.default_rng(4)
    widths, starts = np.array([2, 3, 2, 1], np.int16), np.array([0, 2, 5, 7], np.int16)
    model = custom_model("SignalFilterBank", [((10,), "UINT32", None), ((8,), "INT16", None),
                                              ((8,), "INT16", i16(rng, 8, -100, 100)), ((4,), "INT16", starts),
                                              ((4,), "INT16", starts), ((4,), "INT16", widths)],
                         [((3,), "UINT64")], {"num_channels": 3})
    x = rng.integers(0, 1 << 20, (3, 10)).astype(np.uint32)
    assert_streams_are_interpreters(model, [x, i16(rng, (3, 8), -100, 100)])


def test_window_and_pcan_tables_given_at_invoke_as_streams():
    """Streams whose SignalWindow window and SignalPCAN gain table are inputs (each stream its own), two frames a
    stream for the window, against one interpreter per stream."""
    rng = np.random.default_rng(6)
    window = custom_model("SignalWindow", [((2, 12), "INT16", None), ((12,), "INT16", None)], [((2, 12), "INT16")],
                          {"shift": 3})
    pcan = custom_model("SignalPCAN", [((5,), "UINT32", None), ((5,), "UINT32", None), ((130,), "INT16", None)],
                        [((5,), "UINT32")], {"snr_shift": 6})
    cases = [(window, [i16(rng, (3, 2, 12)), i16(rng, (3, 12))]),
             (pcan, [rng.integers(0, 1 << 20, (3, 5)).astype(np.uint32),
                     rng.integers(0, 1 << 12, (3, 5)).astype(np.uint32), i16(rng, (3, 130), 0, 4096)])]
    for model, inputs in cases:
        assert_streams_are_interpreters(model, inputs)


def test_energy_as_streams_equals_one_interpreter_per_stream():
    """Streams of SignalEnergy (its bound call on every stream at once) over the whole int16 range -- sums of two
    squares past 2^31 wrap in int32 as the C code's and are stored as uint32 --, against one interpreter each."""
    model = custom_model("SignalEnergy", [((18,), "INT16", None)], [((9,), "UINT32")],
                         {"end_index": 8, "start_index": 1})
    x = i16(np.random.default_rng(5), (6, 18))
    x[0, :4] = -32768
    x[1, 2:6] = [32767, -32768, -32768, 32767]
    assert_streams_are_interpreters(model, [x], written=slice(1, 8))


@pytest.mark.parametrize("over", [False, True])
def test_filter_bank_log_as_streams_equals_one_interpreter_per_stream(over):
    """Streams of the op (``invoke_streams``): the table of results, or with ``over`` one input at 2^16 in one
    stream (the arithmetic for all), against one interpreter per stream."""
    from microinterp.kernels.signal.filter_bank_log import TABLED
    model = custom_model("SignalFilterBankLog", [((7,), "UINT32", None)], [((7,), "INT16")],
                         {"input_correction_bits": 3, "output_scale": 1 << 15})
    x = np.random.default_rng(int(over)).integers(0, TABLED, size=(4, 7)).astype(np.uint32)
    x[0, :3] = [0, 1, TABLED - 1]
    if over:
        x[2, 5] = TABLED
    assert_streams_are_interpreters(model, [x])


@pytest.mark.parametrize("bits", [0, 3, 17, 31])
@pytest.mark.parametrize("scale", [1, 1 << 15, 0xFFFFFFFF])
def test_filter_bank_log_table_is_the_invoke_everywhere_below_its_limit(bits, scale):
    """The table of results, every entry, against the invoke's formula (:func:`_common.log32`)."""
    from microinterp.kernels.signal._common import U32, log32
    from microinterp.kernels.signal.filter_bank_log import TABLED, results_below

    v = (np.arange(TABLED, dtype=np.int64) << bits) & U32
    big = v > 1
    want = np.where(big, np.minimum(log32(np.where(big, v, 2), scale), 32767), 0)
    np.testing.assert_array_equal(results_below(bits, scale), want.astype(np.int16))


SPECTRAL = {"alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": False,
            "min_signal_remaining": 819, "num_channels": 8, "one_minus_smoothing": 15975, "smoothing": 409,
            "smoothing_bits": 10, "spectral_subtraction_bits": 14}


@pytest.mark.parametrize("clamping", [False, True])
def test_spectral_subtraction_state_across_invokes_and_reset(clamping):
    opts = dict(SPECTRAL, clamping=clamping)
    model = custom_model("SignalFilterBankSpectralSubtraction", [((8,), "UINT32", None)],
                         [((8,), "UINT32"), ((8,), "UINT32")], opts)
    mine, wheel = Interpreter(model), TflmRunner(model, preserve_all=False)
    rng = np.random.default_rng(int(clamping))
    for k in range(12):
        if k == 7:
            mine.reset()
            wheel.interpreter.reset()
        x = rng.integers(0, 1 << 22, size=8).astype(np.uint32)
        if k % 4 == 3:
            x //= 1000                            # quiet frames: the estimate exceeds the signal
        mine.set_input(x, 0)
        mine.invoke()
        wheel.run([x])
        for i in range(2):
            np.testing.assert_array_equal(mine.get_output(i), wheel.output(i))


@given(channels=st.integers(1, 40), shift=st.integers(0, 12), signed=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_pcan(channels, shift, signed, seed):
    """Gain tables of the usual range, and of the whole int16 range (the int32 and int16 wrap-arounds)."""
    rng = np.random.default_rng(seed)
    lut = i16(rng, 125) if signed else i16(rng, 125, 0, 4096)
    x = rng.integers(0, 1 << 20, size=channels).astype(np.uint32)
    noise = (rng.integers(0, 1 << 30, size=channels, dtype=np.uint64) >> rng.integers(0, 30, size=channels)
             .astype(np.uint64)).astype(np.uint32)
    model = custom_model("SignalPCAN", [((channels,), "UINT32", None), ((channels,), "UINT32", None),
                                        ((125,), "INT16", lut)], [((channels,), "UINT32")], {"snr_shift": shift})
    assert_matches_tflm(model, [x, noise])


@pytest.mark.parametrize("n", [2, 34, 14])
def test_rfft_lengths_the_wheel_crashes_on_are_refused(n):
    model = custom_model("SignalRfft", [((n,), "INT16", None)], [((n + 2,), "INT16")], {"T": 7, "fft_length": n})
    with pytest.raises(PrepareError, match="null pointer"):
        Interpreter(model)


def test_options_with_other_keys_are_refused():
    model = custom_model("SignalWindow", [((4,), "INT16", None), ((4,), "INT16", np.ones(4, np.int16))],
                         [((4,), "INT16")], {"shift": 1, "extra": 2})
    with pytest.raises(PrepareError, match="exactly the keys"):
        Interpreter(model)


@pytest.mark.parametrize("n", [4, 8, 12, 20, 30, 64, 256, 512])
@pytest.mark.parametrize("type_name", ["INT16", "INT32", "FLOAT32"])
def test_irfft_every_radix(n, type_name):
    rng = np.random.default_rng(n + 1)
    shape = (2, n + 2)
    if type_name == "FLOAT32":
        x = rng.uniform(-1000, 1000, size=shape).astype(np.float32)
    elif type_name == "INT32":
        x = rng.integers(-(1 << 28), 1 << 28, size=shape).astype(np.int32)
    else:
        x = i16(rng, shape)
    code = {"INT16": 7, "INT32": 2, "FLOAT32": 0}[type_name]
    model = custom_model("SignalIrfft", [(shape, type_name, None)], [((2, n), type_name)],
                         {"T": code, "fft_length": n})
    assert_matches_tflm(model, [x])


def run_sequence(model: bytes, inputs: list[np.ndarray], reset_at: int | None = None, valid_output: int | None = None):
    """Invoke microinterp and the wheel on the same inputs in order; compare every output of every invoke (the data
    outputs only where the op says they are valid: TFLM leaves them unwritten otherwise)."""
    mine, wheel = Interpreter(model), TflmRunner(model, preserve_all=False)
    for k, x in enumerate(inputs):
        if k == reset_at:
            mine.reset()
            wheel.interpreter.reset()
        mine.set_input(x, 0)
        mine.invoke()
        wheel.run([x])
        valid = True
        if valid_output is not None:
            valid = bool(wheel.output(valid_output))
            assert bool(mine.get_output(valid_output)) == valid, k
        if valid:
            np.testing.assert_array_equal(mine.get_output(0), wheel.output(0), err_msg=f"invoke {k}")


@given(outer=st.integers(1, 3), frame=st.integers(1, 8), delay=st.integers(0, 12), seed=st.integers(0, 2**32 - 1))
def test_delay(outer, frame, delay, seed):
    rng = np.random.default_rng(seed)
    model = custom_model("SignalDelay", [((outer, frame), "INT16", None)], [((outer, frame), "INT16")],
                         {"delay_length": delay})
    run_sequence(model, [i16(rng, (outer, frame)) for _ in range(8)], reset_at=5)


@given(ch=st.integers(1, 5), left=st.integers(0, 3), right=st.integers(0, 3), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_stacker(ch, left, right, data, seed):
    step = data.draw(st.integers(1, left + right + 1))
    size = ch * (left + right + 1)
    rng = np.random.default_rng(seed)
    model = custom_model("SignalStacker", [((ch,), "INT16", None)], [((size,), "INT16"), ((), "BOOL")],
                         {"num_channels": ch, "stacker_left_context": left, "stacker_right_context": right,
                          "stacker_step": step})
    run_sequence(model, [i16(rng, ch) for _ in range(10)], reset_at=6, valid_output=1)


@given(outer=st.integers(1, 2), step=st.integers(1, 6), data=st.data(), prefill=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_framer(outer, step, data, prefill, seed):
    size = data.draw(st.integers(step, 3 * step + 2))
    n_frames = data.draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    model = custom_model("SignalFramer", [((outer, n_frames * step), "INT16", None)],
                         [((outer, n_frames, size), "INT16"), ((), "BOOL")],
                         {"frame_size": size, "frame_step": step, "prefill": prefill})
    run_sequence(model, [i16(rng, (outer, n_frames * step)) for _ in range(8)], reset_at=5, valid_output=1)


@given(type_name=st.sampled_from(["INT16", "FLOAT32"]), outer=st.integers(1, 2), n_frames=st.integers(1, 3),
       size=st.integers(1, 8), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_overlap_add(type_name, outer, n_frames, size, data, seed):
    step = data.draw(st.integers(1, size))
    rng = np.random.default_rng(seed)
    shape = (outer, n_frames, size)
    frames = [rng.uniform(-100, 100, size=shape).astype(np.float32) if type_name == "FLOAT32" else i16(rng, shape)
              for _ in range(6)]
    model = custom_model("SignalOverlapAdd", [(shape, type_name, None)], [((outer, n_frames * step), type_name)],
                         {"T": 7 if type_name == "INT16" else 0, "frame_step": step})
    run_sequence(model, frames, reset_at=4)


def test_filter_bank_square_root_rounding_edges():
    """Around the rounding rule (root + 1 when the remainder exceeds the root, not past the half-width maximum):
    squares, square + root, square + root + 1, at small roots and at the 16- and 32-bit maxima."""
    values = [0, 1, 2, 3]
    for r in (1, 2, 255, 4095, (1 << 16) - 1, 1 << 16, 123456789, (1 << 32) - 2, (1 << 32) - 1):
        values += [v for v in (r * r - 1, r * r, r * r + r, r * r + r + 1) if 0 <= v < 1 << 64]
    values.append((1 << 64) - 1)
    x = np.array(values, np.uint64)
    model = custom_model("SignalFilterBankSquareRoot", [((len(x),), "UINT64", None), ((), "INT32", None)],
                         [((len(x),), "UINT32")], {})
    assert_matches_tflm(model, [x, np.array(0, np.int32)])


def test_pcan_refuses_a_noise_estimate_past_its_gain_table():
    """A noise estimate of 2^20 reads entry 4 * 21 - 4 = 80 of the table: with 60 entries the invoke fails (TFLM
    would read past the table), as it does from 2^15 (entry 60); smaller estimates run."""
    rng = np.random.default_rng(0)
    model = custom_model("SignalPCAN", [((3,), "UINT32", None), ((3,), "UINT32", None),
                                        ((60,), "INT16", i16(rng, 60, 0, 4096))], [((3,), "UINT32")],
                         {"snr_shift": 6})
    it = Interpreter(model)
    it.set_input(np.array([5, 6, 7], np.uint32), 0)
    it.set_input(np.array([1, 1000, 1 << 20], np.uint32), 1)
    with pytest.raises(InvokeError, match="gain table entry 80 of 60"):
        it.invoke()
    it.set_input(np.array([1, 1000, 1 << 15], np.uint32), 1)     # the first estimate past it: entry 60
    with pytest.raises(InvokeError, match="gain table entry 60 of 60"):
        it.invoke()
    it.set_input(np.array([1, 1000, (1 << 15) - 1], np.uint32), 1)     # its last one: entry 56
    it.invoke()


def test_sqrt64_of_arrays_is_the_bit_by_bit_method():
    """The array Sqrt64 (float64 root corrected in uint64) against the method's definition on Python ints --
    floor root, plus one when the remainder exceeds it below the half-width maximum -- on 200 000 values of every
    bit length, the squares around them and the extremes."""
    import math

    from microinterp.kernels.signal._common import sqrt64

    rng = np.random.default_rng(5)
    bits = rng.integers(0, 65, 200_000).tolist()
    words = (rng.integers(0, 1 << 63, 200_000, np.uint64) * np.uint64(2) + np.uint64(1)).tolist()
    values = [w >> (64 - b) if b else 0 for w, b in zip(words, bits)]
    for r in (1, 255, (1 << 16) - 1, 1 << 16, (1 << 32) - 2, (1 << 32) - 1):
        values += [r * r - 1, r * r, r * r + r, r * r + r + 1]
    values += [(1 << 64) - 1, (1 << 32) - 1, 1 << 32]
    values = [v for v in values if 0 <= v < 1 << 64]

    def reference(v: int) -> int:
        root = math.isqrt(v)
        limit = 0xFFFF if v >> 32 == 0 else 0xFFFFFFFF
        return root + 1 if v - root * root > root and root != limit else root

    got = sqrt64(np.array(values, np.uint64)).tolist()
    assert got == [reference(v) for v in values]
    small = [v for v in values if v < 1 << 51 and math.isqrt(v) != 0xFFFF]    # the one-correction path
    assert sqrt64(np.array(small, np.uint64)).tolist() == [reference(v) for v in small]


def test_filter_bank_taps_choose_one_product_only_when_exact():
    """Mel-like tables (Q12 weights, narrow channels) take one float64 product of the spectrum; tables whose column
    sums could pass 2^53 with a spectrum near 2^32 take the two 16-bit halves. Both give the C loop's bits."""
    from microinterp.kernels.signal.filter_bank import Taps, _walk

    rng = np.random.default_rng(7)
    for lim, width, whole in ((4096, 8, True), (32767, 60, False)):
        channels = 5
        widths = np.full(channels + 1, width, np.int16)
        starts = wstarts = np.arange(channels + 1, dtype=np.int16) * width
        n = width * (channels + 1)
        weights, unweights = i16(rng, n, -lim - 1, lim), i16(rng, n, -lim - 1, lim)
        taps = Taps.build(weights, unweights, starts, wstarts, widths, channels, n)
        assert taps.whole is whole
        x = np.uint32(0xFFFFFFFF) - rng.integers(0, 9, size=(3, n)).astype(np.uint32)
        got = np.empty((3, channels + 1), np.uint64)
        taps.sums(x, got)
        for s in range(3):
            want = np.empty(channels + 1, np.uint64)
            _walk(x[s], [weights, unweights, starts, wstarts, widths], channels, want)
            np.testing.assert_array_equal(got[s], want)


@pytest.mark.parametrize("bits", [0, 1, 3, 8, 31])
@pytest.mark.parametrize("scale", [1, 64, 100, 1 << 15, 12345678, 0xFFFFFFFF])
def test_bound_log32_is_log32(bits, scale):
    """SignalFilterBankLog's bound form (``_common.BoundLog32``: the fraction and segment from ``(v << 17) >> e``,
    the no-op uint32 masks left out) against :func:`_common.log32` on every bit length, both ends of each (powers of
    two and all-ones), 0, 1, 2, and random values of every magnitude, for shifts that lose bits and scales that wrap
    uint32."""
    from microinterp.kernels.signal._common import U32, BoundLog32, log32

    rng = np.random.default_rng(bits * 7 + scale % 1000)
    shifts = rng.integers(0, 32, size=3000).astype(np.uint64)
    x = (rng.integers(0, 1 << 32, size=3000, dtype=np.uint64) >> shifts).astype(np.uint32)
    powers = np.uint64(1) << np.arange(33, dtype=np.uint64)
    x = np.concatenate([np.arange(40, dtype=np.uint32), powers[:32].astype(np.uint32),
                        (powers[1:] - np.uint64(1)).astype(np.uint32), x])
    out = np.empty(x.size, np.int16)
    with np.errstate(all="ignore"):
        BoundLog32(x, out, bits, scale)()
    v = (x.astype(np.int64) << bits) & U32
    big = v > 1
    want = np.where(big, np.minimum(log32(np.where(big, v, 2), scale), 32767), 0)
    np.testing.assert_array_equal(out, want.astype(np.int16))


@pytest.mark.parametrize("shift", [0, 3, 6, 12, 31, 63])
@pytest.mark.parametrize("signed", [False, True])
def test_bound_pcan_is_the_invoke(shift, signed):
    """SignalPCAN's bound form (``pcan.BoundPcan``: kept buffers, shifted copies of the table) against the invoke's
    functions on noise estimates of every bit length (0, 1, 2 read the table itself), inputs up to 2^32 - 1, gain
    tables of the usual range and of the whole int16 range (the int32 products wrap), every SNR shift."""
    from microinterp.kernels.signal._common import U32
    from microinterp.kernels.signal.pcan import BoundPcan, pcan_shrink, wide_dynamic_function

    rng = np.random.default_rng(shift + 100 * signed)
    lut = i16(rng, 130) if signed else i16(rng, 130, 0, 4096)
    n = 2000
    noise = (rng.integers(0, 1 << 32, size=n, dtype=np.uint64) >> rng.integers(0, 32, size=n).astype(np.uint64))
    noise = noise.astype(np.uint32)
    noise[:6] = [0, 1, 2, 3, 4, 0xFFFFFFFF]
    x = (rng.integers(0, 1 << 32, size=n, dtype=np.uint64) >> rng.integers(0, 32, size=n).astype(np.uint64))
    x = x.astype(np.uint32)
    x[:3] = [0, 0xFFFFFFFF, 8191]
    out = np.empty(n, np.uint32)
    lut_view = lut.copy()
    lut_view.flags.writeable = False
    with np.errstate(all="ignore"):
        BoundPcan(None, x, noise, lut_view, out, shift)()
    gain = wide_dynamic_function(noise.astype(np.int64), lut.astype(np.int64)) & U32
    snr = ((x.astype(np.uint64) * gain.astype(np.uint64)) >> np.uint64(shift)) & np.uint64(U32)
    np.testing.assert_array_equal(out, pcan_shrink(snr.astype(np.int64)).astype(np.uint32))


@pytest.mark.parametrize("kind", ["small", "squares", "edge", "wide"])
def test_bound_square_root_is_sqrt64(kind):
    """SignalFilterBankSquareRoot's bound form on its fast case (every input below 2^51, no root at 2^16 - 1) and
    both fallbacks, against :func:`_common.sqrt64` shifted: random values, squares and their neighbours, the
    ``Sqrt32`` maximum's neighbourhood, and inputs up to 2^64 - 1; every shift, negative ones as ``& 31``."""
    from microinterp.kernels.signal._common import U32, sqrt64

    rng = np.random.default_rng(["small", "squares", "edge", "wide"].index(kind))
    if kind == "small":
        x = rng.integers(0, 1 << 40, size=500, dtype=np.uint64) >> rng.integers(0, 40, 500).astype(np.uint64)
    elif kind == "squares":
        r = rng.integers(0, 1 << 25, size=200, dtype=np.uint64)
        x = np.concatenate([r * r - np.uint64(1), r * r, r * r + r, r * r + r + np.uint64(1)])
    elif kind == "edge":
        x = np.arange(0xFFFE * 0xFFFE, 0xFFFE * 0xFFFE + 300, dtype=np.uint64)
        x = np.concatenate([x, np.array([0xFFFF * 0xFFFF + k for k in range(-2, 3)] + [0xFFFFFFFF], np.uint64)])
    else:
        x = rng.integers(0, 1 << 63, size=500, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    model = custom_model("SignalFilterBankSquareRoot", [((len(x),), "UINT64", None), ((), "INT32", None)],
                         [((len(x),), "UINT32")], {})
    it = Interpreter(model)
    for shift in (0, 3, 17, -1):
        it.set_input(x, 0)
        it.set_input(np.array(shift, np.int32), 1)
        it.invoke()
        want = (sqrt64(x) >> np.uint64(shift & 31)) & np.uint64(U32)
        np.testing.assert_array_equal(it.get_output(0), want.astype(np.uint32))
