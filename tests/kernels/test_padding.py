"""The shared padding / output-size maths (TFLM ``micro/kernels/padding.h``) and the window helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from microinterp.kernels.padding import (
    Padding,
    compute_out_size,
    compute_padding_height_width,
    compute_padding_with_offset,
    input_rows_for,
    windows,
)


@pytest.mark.parametrize("args, expected", [
    # (stride_h, stride_w, dil_h, dil_w, in_h, in_w, f_h, f_w, padding)
    ((2, 2, 1, 1, 224, 224, 3, 3, "SAME"), Padding(0, 0, 1, 1, 112, 112)),      # odd pixel at the end
    ((1, 1, 1, 1, 96, 96, 3, 3, "SAME"), Padding(1, 1, 0, 0, 96, 96)),
    ((1, 1, 1, 1, 5, 5, 3, 3, "VALID"), Padding(0, 0, 0, 0, 3, 3)),
    ((1, 1, 2, 2, 7, 7, 3, 3, "SAME"), Padding(2, 2, 0, 0, 7, 7)),              # dilation widens the filter
    ((2, 1, 1, 1, 5, 4, 9, 1, "VALID"), Padding(0, 0, 0, 0, 0, 4)),             # (5+2-9)/2 < 0: stops after W
    ((3, 1, 1, 1, 5, 4, 9, 1, "VALID"), Padding(0, 0, 1, 0, 0, 4)),             # (5+3-9)/3 truncates to 0
    ((1, 1, 0, 1, 6, 5, 3, 3, "SAME"), Padding(0, 0, 0, 0, 0, 5)),              # dil_h 0: H invalid, W kept
    ((1, 0, 1, 1, 6, 5, 3, 3, "SAME"), Padding(0, 0, 0, 0, 0, 0)),              # stride_w 0: nothing computed
    ((1, 1, 1, 1, 6, 5, 3, 3, "UNKNOWN"), Padding(0, 0, 0, 0, 0, 0)),
])
def test_known_values(args, expected):
    assert compute_padding_height_width(*args) == expected


def test_out_size_edge_cases():
    assert compute_out_size("SAME", 7, 3, 0) == 0
    assert compute_out_size("VALID", 3, 5, 1) == 0          # (3+1-5)/1 = -1 -> error -> 0
    assert compute_out_size("VALID", 3, 5, 2) == 0          # (3+2-5)/2 = 0
    assert compute_padding_with_offset(1, 0, 5, 3, 5) == (0, 0)


@given(st.integers(0, 300), st.integers(1, 11), st.integers(1, 5), st.integers(1, 4),
       st.sampled_from(["SAME", "VALID"]))
def test_padding_centres_the_windows(in_size, f, stride, dil, padding):
    p = compute_padding_height_width(stride, 1, dil, 1, in_size, 1, f, 1, padding)
    eff = (f - 1) * dil + 1
    out = p.out_height
    if padding == "VALID" and in_size + stride - eff <= -stride:   # C division gives a negative size: error
        assert (out, p.height, p.height_offset) == (0, 0, 0)
        return
    if padding == "SAME":
        assert out == math.ceil(in_size / stride)
    elif in_size + stride >= eff:
        assert out == (in_size - eff) // stride + 1            # every window fits
    total = (out - 1) * stride + eff - in_size
    if total > 0:
        assert (p.height, p.height_offset) == (total // 2, total % 2)
    else:
        assert (p.height, p.height_offset) == (0, 0)


@st.composite
def window_cases(draw):
    n, h, w, c = draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 3))
    fh, fw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw, dh, dw = (draw(st.integers(0, 3)) for _ in range(4))
    ph, pw = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    oh, ow = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    y0 = draw(st.integers(0, oh - 1))
    return {"n": n, "h": h, "w": w, "c": c, "fh": fh, "fw": fw, "sh": sh, "sw": sw, "dh": dh, "dw": dw, "ph": ph,
            "pw": pw, "oh": oh, "ow": ow, "y0": y0, "seed": draw(st.integers(0, 2**32 - 1))}


@given(window_cases())
def test_windows_match_a_direct_loop(k):
    rng = np.random.default_rng(k["seed"])
    x = rng.integers(-128, 128, (k["n"], k["h"], k["w"], k["c"])).astype(np.int8)
    band = k["oh"] - k["y0"]
    lo, hi = input_rows_for(k["y0"], k["oh"], k["sh"], k["dh"], k["fh"], k["ph"], k["h"])
    view = windows(x[:, lo:hi], y0=k["y0"], out_h=band, out_w=k["ow"], filter_h=k["fh"], filter_w=k["fw"],
                   stride_h=k["sh"], stride_w=k["sw"], dilation_h=k["dh"], dilation_w=k["dw"], pad_h=k["ph"],
                   pad_w=k["pw"], in_h=k["h"], x_row0=lo, offset=3, fill=-1, dtype=np.int32)
    expected = np.full((k["n"], band, k["ow"], k["fh"], k["fw"], k["c"]), -1, np.int32)
    for oy in range(band):
        for ox in range(k["ow"]):
            for ky in range(k["fh"]):
                for kx in range(k["fw"]):
                    iy = (k["y0"] + oy) * k["sh"] - k["ph"] + ky * k["dh"]
                    ix = ox * k["sw"] - k["pw"] + kx * k["dw"]
                    if 0 <= iy < k["h"] and 0 <= ix < k["w"]:
                        assert lo <= iy < hi
                        expected[:, oy, ox, ky, kx] = x[:, iy, ix].astype(np.int32) + 3
    np.testing.assert_array_equal(view, expected)


def test_windows_refuse_a_band_without_its_halo():
    x = np.zeros((1, 4, 4, 1), np.int8)
    with pytest.raises(ValueError, match="do not cover"):
        windows(x[:, 1:3], y0=0, out_h=2, out_w=4, filter_h=3, filter_w=3, stride_h=1, stride_w=1, dilation_h=1,
                dilation_w=1, pad_h=1, pad_w=1, in_h=4, x_row0=1)


def test_input_rows_for():
    assert input_rows_for(0, 1, 1, 1, 3, 1, 10) == (0, 2)          # top row: one padded tap
    assert input_rows_for(2, 4, 2, 1, 3, 1, 10) == (3, 8)
    assert input_rows_for(4, 5, 2, 1, 3, 1, 8) == (7, 8)           # clipped at the bottom
    assert input_rows_for(3, 3, 1, 1, 3, 1, 10) == (0, 0)          # empty band
    assert input_rows_for(9, 10, 1, 1, 3, 0, 5) == (0, 0)          # only padding


@given(st.integers(1, 2), st.integers(1, 6), st.integers(1, 6), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2), st.integers(0, 2),
       st.integers(0, 3), st.integers(0, 3), st.integers(-3, 3))
def test_gathered_windows_equal_the_strided_ones(n, h, w, c, fh, fw, sh, sw, dh, dw, ph, pw, y0, oh_extra, offset):
    """The fancy-indexing path taken for absurd strides gives what the strided path gives."""
    from microinterp.kernels.padding import _gathered_windows, windows

    x = np.arange(n * h * w * c, dtype=np.int16).reshape(n, h, w, c) - 40
    out_h, out_w = 1 + oh_extra, 1 + (w + 2 * pw) // sw
    kw = dict(y0=y0, out_h=out_h, out_w=out_w, filter_h=fh, filter_w=fw, stride_h=sh, stride_w=sw, dilation_h=dh,
              dilation_w=dw, pad_h=ph, pad_w=pw, offset=offset, fill=7, dtype=np.int32)
    strided = windows(x, **kw)
    gathered = _gathered_windows(x, y0, out_h, out_w, fh, fw, sh, sw, dh, dw, ph, pw, h, 0, offset, 7,
                                 np.dtype(np.int32))
    assert strided.shape == gathered.shape and np.array_equal(strided, gathered)


@pytest.mark.parametrize("size,c,k,stride,mult", [(5, 3, 3, 1, 1), (6, 2, 2, 2, 1), (4, 3, 3, 1, 2), (9, 4, 3, 1, 1),
                                                   (40, 8, 3, 1, 1)])
def test_bind_gather_copies_every_window(size, c, k, stride, mult):
    """bind_gather: the windows of a padded buffer (and a depthwise multiplier's broadcast of them) as one take of
    positions found once, value for value what the strided copy gives -- also after the buffer changes; above
    GATHER_TAKE_BELOW values the copy itself."""
    from microinterp.kernels.padding import GATHER_TAKE_BELOW, bind_gather, window_view

    rng = np.random.default_rng(size)
    buf = rng.normal(size=(1, size, size, c)).astype(np.float32)
    out_hw = (size - k) // stride + 1
    win = window_view(buf, out_hw, out_hw, k, k, stride, stride, 1, 1).transpose(3, 4, 5, 0, 1, 2)
    if mult > 1:
        win = np.broadcast_to(win[:, :, :, None], (k, k, c, mult, 1, out_hw, out_hw))
    target, want = np.empty(win.shape, np.float32), np.empty(win.shape, np.float32)
    gather = bind_gather(target, win, buf)
    assert (gather.func.__name__ == "take") == (win.size <= GATHER_TAKE_BELOW)
    for _ in range(2):
        gather()
        np.copyto(want, win)
        assert np.array_equal(target, want)
        buf[...] = rng.normal(size=buf.shape)
    # windows starting inside the base (a view of some of its rows and columns)
    inner = window_view(buf[:, 1:, 1:], out_hw - 1, out_hw - 1, k, k, stride, stride, 1, 1).transpose(3, 4, 5, 0, 1, 2)
    part = np.empty(inner.shape, np.float32)
    bind_gather(part, inner, buf)()
    assert np.array_equal(part, inner)
    # a base the windows do not lie in, or a strided target: the copy
    assert bind_gather(target, win, np.empty_like(buf)).func.__name__ == "copyto"
    assert bind_gather(target[..., ::2], win[..., ::2], buf).func.__name__ == "copyto"
