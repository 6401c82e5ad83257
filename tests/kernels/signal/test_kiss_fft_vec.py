"""The vectorized KISS FFT (``kernels/signal/_kiss_fft_vec.py``) against the scalar, operation-by-operation one
(``_kiss_fft.py``, itself checked against the wheel through RFFT / IRFFT): every supported length (n/2 made of 2, 3,
4 and 5), every build, random frames and frames at the types' extremes (the fixed-point wrap-arounds), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

from microinterp.kernels.signal import _kiss_fft_vec
from microinterp.kernels.signal._kiss_fft import factor, irfft, rfft
from microinterp.kernels.signal._kiss_fft_vec import irfft_frames, rfft_frames

DTYPES = {"INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32}
LENGTHS = [4, 6, 8, 10, 12, 16, 20, 24, 30, 32, 40, 48, 60, 64, 96, 120, 128, 160, 240, 256, 320, 480, 512, 1024]


def _frames(type_name: str, nfft: int, seed: int, width: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = DTYPES[type_name]
    if type_name == "FLOAT32":
        x = (rng.normal(size=(4, width)) * 10.0 ** rng.integers(-3, 4, size=(4, 1))).astype(np.float32)
        x[3, ::5] = np.float32(3e38)
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, size=(4, width), dtype=np.int64).astype(dtype)
    x[1] = info.max
    x[2, ::2], x[2, 1::2] = info.min, info.max
    return x


def _same(got: np.ndarray, expected: np.ndarray) -> bool:
    """Equal bytes; float32 NaN for NaN (an invalid operation's NaN is the hardware's choice: NumPy's scalars give
    +NaN where its vector loops and the C code give x86's negative default NaN)."""
    if got.dtype != expected.dtype:
        return False
    if got.dtype == np.float32:
        return bool(np.all((got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))))
    return np.array_equal(got, expected)


#: the forms of a transform: the gathers (fixed-point radix 2 and 4, few frames), the butterflies on frames laid out
#: first (few frames) or innermost (many)
FORMS = {"gathers": (1 << 20, 1 << 20), "butterflies": (0, 1 << 20), "frames-last": (0, 0)}


def _form(monkeypatch, form: str) -> None:
    gather_below, frames_last = FORMS[form]
    monkeypatch.setattr(_kiss_fft_vec, "GATHER_BELOW", gather_below)
    monkeypatch.setattr(_kiss_fft_vec, "FRAMES_LAST", frames_last)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("type_name", list(DTYPES))
@pytest.mark.parametrize("nfft", LENGTHS)
def test_rfft_frames_equal_the_scalar_code(type_name, nfft, form, monkeypatch):
    """Every form of the transforms (:data:`FORMS`)."""
    _form(monkeypatch, form)
    frames = _frames(type_name, nfft, nfft, nfft)
    expected = np.stack([rfft(f, nfft, type_name) for f in frames])
    got = rfft_frames(frames, nfft, type_name)
    assert _same(got, expected)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("type_name", list(DTYPES))
def test_rfft_frames_into_an_output(type_name, form, monkeypatch):
    """``out=``: the bins land in the given array, C-contiguous (through its own view) or not (through a copy)."""
    _form(monkeypatch, form)
    frames = _frames(type_name, 64, 5, 64)
    expected = np.stack([rfft(f, 64, type_name) for f in frames])
    dense = np.zeros((4, 66), DTYPES[type_name])
    strided = np.zeros((4, 70), DTYPES[type_name])[:, 2:68]
    for out in (dense, strided):
        assert rfft_frames(frames, 64, type_name, out) is out
        assert _same(out, expected)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("type_name", list(DTYPES))
@pytest.mark.parametrize("nfft", LENGTHS)
def test_irfft_frames_equal_the_scalar_code(type_name, nfft, form, monkeypatch):
    _form(monkeypatch, form)
    bins = _frames(type_name, nfft, nfft + 1, nfft + 2)
    expected = np.stack([irfft(b, nfft, type_name) for b in bins])
    got = irfft_frames(bins, nfft, type_name)
    assert _same(got, expected)


@pytest.mark.parametrize("p", [2, 3, 4, 5])
def test_unit_twiddle_leaves_every_int16_fixdiv_unchanged(p):
    """The one-point stage's skipped C_MUL, exhaustively over int16: ``C_MUL(C_FIXDIV(x, p), (32767, 0))`` is
    ``C_FIXDIV(x, p)`` for every x, and the check refuses a twiddle or a divisor for which it is not."""
    a = _kiss_fft_vec.VARITH["INT16"]
    assert a.unit_after_fixdiv(p, 32767, 0)
    assert not a.unit_after_fixdiv(p, 32766, 0) and not a.unit_after_fixdiv(1, 32767, 0)
    x = np.arange(-32768, 32768, dtype=np.int16)
    vr, vi = a.fixdiv(x, x[::-1], p)
    one, zero = a.factors([32767]), a.factors([0])
    sr, si = a.c_mul(vr, vi, one, zero)
    np.testing.assert_array_equal(sr, vr)
    np.testing.assert_array_equal(si, vi)
    x1 = np.array([-32768, 32767], np.int16)     # with p = 1 the product would change the extremes
    assert not np.array_equal(a.c_mul(*a.fixdiv(x1, x1, 1), one, zero)[0], a.fixdiv(x1, x1, 1)[0])


@pytest.mark.parametrize("type_name", ["INT16", "INT32"])
@pytest.mark.parametrize("nfft", [n for n in LENGTHS if set(factor(n // 2)[0::2]) <= {2, 4}])
@pytest.mark.parametrize("count", [1, 4])
def test_bound_gather_rfft_equals_the_scalar_code(type_name, nfft, count):
    """The bound gathers (``_kiss_fft_gather.BoundGatherRfft``: kept buffers, rows swapped by a copy, bins written
    through an interleaved view), twice on the same buffers, against the scalar transform: random frames and frames
    at the type's extremes."""
    from microinterp.kernels.signal._kiss_fft_gather import BoundGatherRfft

    frames = _frames(type_name, nfft, nfft, nfft)[:count].copy()
    out = np.full((count, nfft + 2), 77, DTYPES[type_name])
    bound = BoundGatherRfft(_kiss_fft_vec.gather_rfft(nfft, type_name), frames, out)
    for _ in range(2):
        bound()
    assert _same(out, np.stack([rfft(f, nfft, type_name) for f in frames]))
