"""Host work buffers: one block per role, grown on demand; claims tell an owner whether the block still holds what
it left there, and tell the previous owner to let go."""

from __future__ import annotations

import threading

import numpy as np

from microinterp.kernels.optimized._buffers import claimed_buffer, still_claimed, work_buffer


class Owner:
    def __init__(self):
        self.released = 0

    def release(self):
        self.released += 1


def test_views_share_the_role_block_and_it_grows():
    a = work_buffer("test_grow", (4, 4), np.float32)
    b = work_buffer("test_grow", (8,), np.float64)
    assert a.ctypes.data == b.ctypes.data                   # one block per role
    assert work_buffer("test_grow", (4, 4), np.float32) is a
    c = work_buffer("test_grow", (1000,), np.float64)       # larger: a new block
    assert c.nbytes == 8000 and work_buffer("test_grow", (4, 4), np.float32) is not a


def test_claims():
    first, second = Owner(), Owner()
    view, kept = claimed_buffer("test_claim", (16,), np.float32, first)
    assert not kept and still_claimed("test_claim", first, view)
    again, kept = claimed_buffer("test_claim", (16,), np.float32, first)
    assert kept and again is view                            # nobody else claimed it: its content is as left
    _, kept = claimed_buffer("test_claim", (16,), np.float32, second)
    assert not kept and first.released == 1 and not still_claimed("test_claim", first, view)
    _, kept = claimed_buffer("test_claim", (16,), np.float32, first)
    assert not kept and second.released == 1


def test_each_thread_has_its_own_blocks():
    here = work_buffer("test_thread", (32,), np.int8)
    there = []
    t = threading.Thread(target=lambda: there.append(work_buffer("test_thread", (32,), np.int8)))
    t.start()
    t.join()
    assert there[0].ctypes.data != here.ctypes.data
