"""Fused row bands (pager/fusion.py): chains give the in-memory result, compute every row of every op exactly once
(same MACs as unfused), move fewer SD bytes, and keep their intermediates off the card."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import microinterp as mi
from microinterp.bands.chains import band_rows, find_chains
from microinterp.errors import InputError
from microinterp.testing.models import demo_cnn

from .conftest import arena_between, in_memory, random_input, small_net


def run(model, x, path, arena, **kw):
    with mi.Interpreter(model, arena=arena, backing=path, **kw) as it:
        it.set_input(x)
        it.invoke()
        return it.get_output(), it.profile_json(tiles=False)["totals"], it.runtime


@given(seed=st.integers(0, 2**31 - 1), size=st.integers(40, 96), layers=st.integers(2, 7), where=st.floats(0, 1),
       pools=st.sampled_from([None, (1, 1, 1), (3, 1, 1)]))
def test_fused_chains_are_exact_and_move_less(tmp_path_factory, seed, size, layers, where, pools):
    model = small_net(seed, size, layers)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    arena = arena_between(model, path, where, pools=pools)
    x = random_input(model, seed)
    fused, ft, pager = run(model, x, path, arena, pools=pools)
    plain, pt, _ = run(model, x, path, arena, pools=pools, fuse=False)
    assert np.array_equal(fused, in_memory(model, x)) and np.array_equal(plain, fused)
    assert ft["macs"] <= pt["macs"]     # line buffers: no row twice (rows no consumer reads are not computed)
    moved = ft["sd_read_bytes"] + ft["sd_write_bytes"]
    assert moved <= pt["sd_read_bytes"] + pt["sd_write_bytes"]
    if pager.chains:
        assert moved < pt["sd_read_bytes"] + pt["sd_write_bytes"]


def test_chains_of_the_demo_cnn(tmp_path):
    model = demo_cnn()
    x = random_input(model, 3)
    out, _, pager = run(model, x, tmp_path / "a.img", 45_000)
    assert np.array_equal(out, in_memory(model, x))
    assert pager.chains and all(len(c.plans) >= 2 for c in pager.chains)
    records = {r.index: r for r in pager.records()}
    for c in pager.chains:
        for i, p in enumerate(c.plans):
            height = pager.tensors[p.op.outputs[0]].shape[1]
            needed = max(band_rows(c, pager.tensors, t.y0, t.y1)[i][1] for t in c.tiles)
            rows = [t.rows for t in records[p.index].tiles]
            # every needed row is computed exactly once, band after band
            assert rows[0][0] == 0 and rows[-1][1] == needed <= height
            assert all(a[1] == b[0] for a, b in pairwise(rows))
        assert all(ti in pager.fused_tensors for ti in c.intermediates())
    chained = [r for r in records.values() if r.mode == "chain"]
    assert chained and all(r.chain is not None for r in chained)
    assert all(r.sd_write_bytes == 0 for r in chained if r.index != r.chain)    # intermediates never written


def test_an_intermediate_is_not_readable_and_fuse_false_keeps_it(tmp_path):
    model = demo_cnn()
    x = random_input(model)
    with mi.Interpreter(model, arena=45_000, backing=tmp_path / "a.img") as it:
        ti = next(iter(it.runtime.fused_tensors))
        it.set_input(x)
        it.invoke()
        with pytest.raises(InputError, match="fused chain"):
            it.get_tensor(ti)
    with mi.Interpreter(model, arena=45_000, backing=tmp_path / "a.img", fuse=False) as it:
        assert not it.runtime.chains
        it.set_input(x)
        it.invoke()
        assert it.get_tensor(ti).size > 0


def test_find_chains_stops_at_tensors_with_two_readers(tmp_path):
    """A residual block's input has two readers (the branch and the ADD): no chain passes through it."""
    from microinterp.testing.models import QuantNet

    net = QuantNet((1, 48, 48, 8), seed=1)
    net.conv(8, 3)
    mark = net.mark()
    net.conv(8, 3, act="NONE")
    net.add(mark)
    net.pool("MAX", 2, 2)
    net.flatten()
    net.fc(4, act="NONE")
    model = net.build()
    with mi.Interpreter(model, arena=20_000, backing=tmp_path / "a.img") as it:
        chains = find_chains(it.runtime.plans, set(it.runtime.subgraph.outputs))
        first = it.runtime.plans[0].op.outputs[0]
        assert all(first not in c.intermediates() for c in chains)
        assert any([p.op.key for p in c.plans] == ["CONV_2D", "ADD", "MAX_POOL_2D"] for c in chains)


def resnet_block_net(size: int = 32) -> bytes:
    """ResNet's downsampling block: conv s2 -> conv on one branch, a 1x1 s2 shortcut conv on the other, ADD: the
    ADD is fed by two row-band ops."""
    from microinterp.testing.models import QuantNet

    net = QuantNet((1, size, size, 4), seed=2)
    net.conv(8, 3)
    block = net.mark()
    net.conv(16, 3, stride=2)
    net.conv(16, 3, act="NONE")
    branch = net.mark()
    net.resume(block)
    net.conv(16, 1, stride=2, act="NONE")
    net.add(branch, act="RELU")
    net.pool("AVERAGE", 2, 2)
    net.flatten()
    net.fc(5, act="NONE")
    return net.build()


@pytest.mark.parametrize("arena", [9_000, 14_000])
def test_an_op_fed_by_two_branches_continues_one_chain(tmp_path, arena):
    """Regression: both feeders of a residual ADD started a chain through it, so the ADD ran in one of them while
    the other's intermediate never reached the card (an IntegrityError on pretrainedResnet_quant)."""
    model = resnet_block_net()
    x = random_input(model, 5)
    out, _, pager = run(model, x, tmp_path / "a.img", arena)
    assert np.array_equal(out, in_memory(model, x))
    members = [p.index for c in pager.chains for p in c.plans]
    assert len(members) == len(set(members))
    keys = [[p.op.key for p in c.plans] for c in find_chains(pager.plans, set(pager.subgraph.outputs))]
    assert ["CONV_2D", "CONV_2D", "ADD", "AVERAGE_POOL_2D"] in keys
