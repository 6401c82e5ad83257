"""The two-stack arena: alignment of head and tail, counters, overflow messages (TFLM's wording and figures), the
sizing arena, and the interpreter's "smallest arena that works"."""

from __future__ import annotations

import numpy as np
import pytest

from microinterp import ArenaOverflowError, Interpreter, MicroInterpError
from microinterp.arena import Arena, SizingArena, align_down, align_up
from microinterp.testing.builder import ModelBuilder


def addr(view: np.ndarray) -> int:
    return view.ctypes.data


def test_align_helpers():
    assert [align_up(n) for n in (0, 1, 16, 17)] == [0, 16, 16, 32]
    assert [align_down(n) for n in (0, 15, 16, 31)] == [0, 0, 16, 16]
    assert align_up(5, 4) == 8 and align_down(5, 4) == 4


def test_fresh_arena():
    a = Arena(1000)
    assert a.size == a.buffer.nbytes == 1000 and a.tail == a.end == 1000
    assert a.head_bytes == 0 and a.tail_bytes == 0 and a.used_bytes == a.start
    assert (addr(a.buffer) + a.start) % 16 == 0 and 0 <= a.start < 16
    with pytest.raises(ValueError):
        Arena(-1)
    assert Arena(0).used_bytes == 0


def test_tail_grows_down_aligned():
    a = Arena(1000)  # the end is not 16-aligned: the first allocation pays for the padding
    end_addr = addr(a.buffer) + 1000
    p1 = a.allocate_persistent(10)
    assert p1.nbytes == 10 and p1.dtype == np.uint8
    assert addr(p1) % 16 == 0 and addr(p1) == align_down(end_addr - 10)
    assert a.tail_bytes == end_addr - addr(p1)
    p2 = a.allocate_persistent(32)
    assert addr(p2) == addr(p1) - 32 and a.tail_bytes == end_addr - addr(p2)
    p3 = a.allocate_persistent(4, alignment=4)
    assert addr(p3) == addr(p2) - 4
    p1[...] = 7
    assert not np.shares_memory(p1, p2) and (p2 == 0).all()
    assert a.used_bytes == a.start + a.head_bytes + a.tail_bytes


def test_head_and_views():
    a = Arena(512)
    a.set_head(200)
    assert a.head_bytes == 200 and a.used_bytes == a.start + 200
    v = a.head_view(32, 16)
    assert v.nbytes == 16 and addr(v) == addr(a.buffer) + a.start + 32 and addr(v) % 16 == 0
    v[...] = 3
    assert (a.buffer[a.start + 32:a.start + 48] == 3).all()
    a.set_head(100)  # the head is one resizable block
    assert a.head_bytes == 100


def test_tail_overflow_message_has_tflm_figures():
    a = Arena(256)
    a.set_head(200)
    room = a.tail - (a.start + a.head)  # 56 - start, at most 56
    with pytest.raises(ArenaOverflowError) as info:
        a.allocate_persistent(60)
    e = info.value
    new_tail = align_down(addr(a.buffer) + a.tail - 60) - addr(a.buffer)
    missing = a.start + 200 - new_tail  # TFLM: head - aligned_result, padding included
    assert (e.requested, e.available, e.missing) == (60, 60 - missing, missing)
    assert str(e).startswith(f"Failed to allocate tail memory. Requested: 60, available {60 - missing}, "
                             f"missing: {missing}")
    assert missing >= 60 - room
    assert isinstance(e, MicroInterpError) and isinstance(e, MemoryError)
    assert a.tail_bytes == 0  # a failed allocation changes nothing


def test_head_overflow_message():
    a = Arena(256)
    a.allocate_persistent(64)
    free = a.tail - a.start
    with pytest.raises(ArenaOverflowError, match=rf"Failed to allocate head memory \(planned tensors\). "
                                                 rf"Requested: 300, available {free}, missing: {300 - free}"):
        a.set_head(300)
    a.set_head(free)  # exactly fits
    with pytest.raises(ArenaOverflowError, match="Failed to allocate tail memory"):
        a.allocate_persistent(1)


def test_host_refusing_the_arena_is_an_arena_error():
    with pytest.raises(ArenaOverflowError, match="Failed to allocate the arena itself"):
        Arena(1 << 62)


def test_sizing_arena_counts_like_the_real_one():
    s = SizingArena()
    for n in (10, 32, 1, 0):
        assert s.allocate_persistent(n).nbytes == n
    s.set_head(100)
    # a head ending off the 16-byte grid (an offline plan's unaligned offset) leaves the gap to the tail unused
    assert s.tail_bytes == 16 + 32 + 16 and s.head_bytes == 100 and s.used_bytes == 112 + 64
    real = Arena(s.used_bytes + 16)
    for n in (10, 32, 1, 0):
        real.allocate_persistent(n)
    real.set_head(100)
    end_padding = addr(real.buffer) + real.end - align_down(addr(real.buffer) + real.end)
    assert real.tail_bytes == s.tail_bytes + end_padding  # the same, up to the unaligned end of the block


def _model() -> bytes:
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.add_tensor("x", (1, 8, 8, 3), "INT8", scale=0.05, zero_point=-3)
    w = b.add_tensor("w", (4, 3, 3, 3), "INT8", data=rng.integers(-127, 128, (4, 3, 3, 3)),
                     scale=[0.01, 0.02, 0.03, 0.04], zero_point=0, axis=0)
    bias = b.add_tensor("b", (4,), "INT32", data=np.array([1, -2, 3, -4]), scale=[5e-4, 1e-3, 1.5e-3, 2e-3])
    y = b.add_tensor("y", (1, 8, 8, 4), "INT8", scale=0.1, zero_point=2)
    z = b.add_tensor("z", (1, 256), "INT8", scale=0.1, zero_point=2)
    b.add_op("CONV_2D", [x, w, bias], [y], padding="SAME")
    b.add_op("RESHAPE", [y], [z], new_shape=[1, 256])
    b.inputs, b.outputs = [x], [z]
    return b.build()


def test_interpreter_arena_none_is_exactly_enough():
    data = _model()
    sized = Interpreter(data)
    needed = sized.arena_size
    assert sized.arena_used_bytes == needed == sized.head_bytes + sized.tail_bytes + sized.arena.start
    exact = Interpreter(data, arena=needed)
    assert exact.head_bytes == sized.head_bytes and exact.tail_bytes == sized.tail_bytes
    with pytest.raises(ArenaOverflowError) as info:
        Interpreter(data, arena=needed - 1)
    assert info.value.needed_arena == needed
    assert f"the smallest arena that works is {needed} bytes" in str(info.value)


@pytest.mark.parametrize("arena", [0, 16, 300])
def test_interpreter_small_arenas_fail_with_arena_errors(arena):
    with pytest.raises(ArenaOverflowError, match="Failed to allocate (tail|head) memory"):
        Interpreter(_model(), arena=arena)


def test_an_offline_plan_with_unaligned_offsets_runs_in_the_arena_measured_for_it():
    """TFLM takes offline offsets as they are; a head that ends off the 16-byte grid still runs in the arena
    microinterp measures (the tail's first allocation is aligned down past the gap)."""
    import microinterp as mi

    b = ModelBuilder()
    q = {"scale": 0.1, "zero_point": 0}
    x = b.add_tensor("x", (1, 1, 10, 1), **q)
    y, z = (b.add_tensor(n, (1, 1, 10, 4), **q) for n in "yz")     # 4 channels: 16-byte multipliers and shifts
    w = b.add_tensor("w", (4, 1, 1, 1), data=np.full((4, 1, 1, 1), 3, np.int8), scale=[0.05] * 4,
                     zero_point=[0] * 4)
    bias = b.add_tensor("b", (4,), "INT32", data=np.zeros(4, np.int32), scale=[0.005] * 4, zero_point=[0] * 4)
    b.add_op("CONV_2D", [x, w, bias], [y], padding="VALID", stride_h=1, stride_w=1,
             fused_activation_function="NONE")
    b.add_op("RELU", [y], [z])
    b.inputs, b.outputs = [x], [z]
    b.add_offline_plan([0, 20, 68, -1, -1])
    it = mi.Interpreter(b.build())        # the conv's multipliers and shifts live in the tail
    assert it.head_bytes == 116
    x_value = (np.arange(10, dtype=np.int8) - 5).reshape(1, 1, 10, 1)
    it.set_tensor(it.get_input_details(0)["index"], x_value)
    it.invoke()
    want = np.broadcast_to(np.maximum(np.round(x_value * 3 * 0.05), 0), (1, 1, 10, 4))
    assert np.array_equal(it.get_tensor(it.get_output_details(0)["index"]), want.astype(np.int8))
