"""Out-of-core execution gives exactly the in-memory result, at any arena the pager accepts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import microinterp as mi
from microinterp.errors import ArenaOverflowError
from microinterp.testing.models import demo_cnn

from .conftest import arena_between, in_memory, random_input, small_net, smallest_out_of_core_arena


@given(seed=st.integers(0, 2**31 - 1), size=st.integers(40, 96), layers=st.integers(2, 6),
       pools=st.tuples(*[st.floats(0.5, 3.0)] * 3), where=st.floats(0.0, 1.0), optimized=st.booleans())
def test_random_models_match_in_memory(tmp_path_factory, seed, size, layers, pools, where, optimized):
    """Either kernel set's band functions (optimized: the optimized CONV_2D / DEPTHWISE_CONV_2D bands) against the
    reference in-memory run."""
    model = small_net(seed, size, layers)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    arena = arena_between(model, path, where, pools=pools)
    x = random_input(model, seed)
    with mi.Interpreter(model, arena=arena, backing=path, pools=pools, optimized=optimized) as it:
        assert it.out_of_core
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))


def test_the_smallest_named_arena_works_and_one_byte_less_does_not(tmp_path):
    model = small_net(2, 64)
    need = smallest_out_of_core_arena(model, tmp_path / "a.img")
    x = random_input(model)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "a.img") as it:
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))
    with pytest.raises(ArenaOverflowError, match=r"op \d+ \(\w+\)") as e:
        mi.Interpreter(model, arena=need - 1, backing=tmp_path / "b.img")
    assert e.value.needed_arena == need


def test_without_backing_the_overflow_suggests_it():
    with pytest.raises(ArenaOverflowError, match="backing="):
        mi.Interpreter(demo_cnn(), arena=20_000)


def test_inputs_outputs_and_tensors_behave_the_same(tmp_path):
    model = demo_cnn()
    x = random_input(model, 3)
    with mi.Interpreter(model, arena=45_000, backing=tmp_path / "sd.img") as it:
        assert it.out_of_core
        with pytest.raises(mi.errors.InputError):
            it.set_input(x.astype(np.int16))
        it.set_input(x)
        it.invoke()
        first = it.get_output()
        it.invoke()                           # a second invoke of the same input gives the same output
        assert np.array_equal(it.get_output(), first)
        assert np.array_equal(it.get_tensor(it.get_input_details(0)["index"]), x)
        assert np.array_equal(first, in_memory(model, x))


def test_profile_counters_equal_the_cards_counters(tmp_path):
    model = small_net(4, 64)
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img")
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img") as it:
        it.set_input(random_input(model))
        it.sd_image.reset_stats()
        it.invoke()
        stats = it.sd_image.stats()
        doc = it.profile_json()
    t = doc["totals"]
    acts, weights = stats.areas["activations"], stats.areas["weights"]
    assert t["sd_read_bytes"] == acts.bytes_read + weights.bytes_read
    assert t["sd_read_payload"] == acts.payload_bytes_read + weights.payload_bytes_read
    assert t["sd_write_bytes"] == acts.bytes_written
    assert t["sd_read_commands"] == acts.reads + weights.reads
    assert t["sd_write_commands"] == acts.writes
    assert t["tiles"] == sum(len(op["tiles"]) for op in doc["ops"]) > len(doc["ops"])
    for op in doc["ops"]:
        assert op["mode"] in ("rows", "channels", "whole", "alias", "fused", "chain")
        assert (op["compute_cycles"] > 0) == (op["mode"] not in ("alias", "fused"))
        for tile in op["tiles"]:
            reads = [e for e in tile["io"] if e[0] == "read"]
            assert sum(e[2] for e in reads) == tile["sd_read_bytes"]


def test_flash_budget_moves_weights_to_the_card(tmp_path):
    model = demo_cnn()
    x = random_input(model)
    with mi.Interpreter(model, arena=45_000, backing=tmp_path / "a.img", flash=0) as it:
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))
        assert it.sd_image.stats().areas["weights"].reads > 0
        assert sum(r.flash_read_bytes for r in it.profile) == 0
    with mi.Interpreter(model, arena=45_000, backing=tmp_path / "b.img") as it:
        it.invoke()
        assert sum(r.flash_read_bytes for r in it.profile) > 0 and it.sd_image.weights_bytes == 0


def test_streamed_filters_are_exact(tmp_path):
    """A conv filter bigger than the weights pool streams in output-channel tiles."""
    from microinterp.testing.models import QuantNet

    net = QuantNet((1, 24, 24, 64), seed=5)
    net.conv(96, 3)
    net.conv(64, 3)
    net.pool("MAX", 4, 4)
    net.flatten()
    net.fc(300)
    model = net.build()
    x = random_input(model)
    with mi.Interpreter(model, arena=70_000, backing=tmp_path / "a.img", flash=0, pools=(2, 1, 2)) as it:
        it.set_input(x)
        it.invoke()
        assert np.array_equal(it.get_output(), in_memory(model, x))
        streamed = [r for r in it.profile if any(t.channels for t in r.tiles)]
        assert streamed and all(len([e for e in t.io if e[0] == "compute"]) > 1 for r in streamed for t in r.tiles)


@pytest.mark.parametrize("recover", [False, True])
def test_later_invokes_report_the_counted_records_and_the_cards_counters(tmp_path, recover):
    """After the first invoke the engine reuses its tile records: every later profile equals the first, and the
    card's own counters (which count every command afresh) still equal the profile's totals."""
    model = small_net(6, 64)
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img", flash=0)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img", flash=0, recover=recover) as it:
        docs = []
        for seed in range(3):
            it.set_input(random_input(model, seed))
            it.sd_image.reset_stats()
            it.invoke()
            stats = it.sd_image.stats()
            doc = it.profile_json()
            acts, weights = stats.areas["activations"], stats.areas["weights"]
            assert doc["totals"]["sd_read_commands"] == acts.reads + weights.reads
            assert doc["totals"]["sd_write_bytes"] == acts.bytes_written
            docs.append([{k: v for k, v in op.items() if k != "host_seconds"} for op in doc["ops"]])
            assert np.array_equal(it.get_output(), in_memory(model, random_input(model, seed)))
        assert docs[0] == docs[1] == docs[2]
        assert it.runtime.engine._null not in [t for r in it.profile for t in r.tiles]


def test_simulate_counts_exactly_what_invoke_moves(tmp_path):
    model = small_net(6, 64)
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img", flash=0)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img", flash=0) as it:
        dry = it.simulate()
        it.invoke()
        real = it.profile
    assert [(r.op, [(t.rows, t.io, t.compute_cycles, t.io_cycles, t.hash_cycles) for t in r.tiles]) for r in dry] == \
        [(r.op, [(t.rows, t.io, t.compute_cycles, t.io_cycles, t.hash_cycles) for t in r.tiles]) for r in real]


def test_a_tile_cap_too_small_for_one_row_says_so(tmp_path):
    with pytest.raises(ArenaOverflowError, match=r"no arena works with tile=600.*use tile >= \d+"):
        mi.Interpreter(demo_cnn(), arena=45_000, backing=tmp_path / "a.img", tile=600)


def test_a_float_fully_connected_streams_its_filter_in_channel_tiles(tmp_path):
    """float32 FULLY_CONNECTED out of core: each output channel is its own sequential sum, so channel tiles of a
    filter that does not fit the weights pool give the in-memory result bit for bit (NaN and infinities
    included)."""
    from microinterp.testing.builder import ModelBuilder

    rng = np.random.default_rng(5)
    depth, accum = 300, 256
    b = ModelBuilder(description="float fc")
    x = b.add_tensor("x", (1, 64, 64, 4), "FLOAT32")
    pooled = b.add_tensor("pooled", (1, 8, 8, 4), "FLOAT32")
    b.add_op("AVERAGE_POOL_2D", [x], [pooled], padding="VALID", stride_w=8, stride_h=8, filter_width=8,
             filter_height=8, fused_activation_function="NONE")
    shape = b.add_tensor("shape", (2,), "INT32", data=np.array([1, accum], np.int32))
    flat = b.add_tensor("flat", (1, accum), "FLOAT32")
    b.add_op("RESHAPE", [pooled, shape], [flat])
    w = rng.standard_normal((depth, accum)).astype(np.float32)
    w[3, 5] = np.inf
    wi = b.add_tensor("w", w.shape, "FLOAT32", data=w)
    bi = b.add_tensor("b", (depth,), "FLOAT32", data=rng.standard_normal(depth).astype(np.float32))
    y = b.add_tensor("y", (1, depth), "FLOAT32")
    b.add_op("FULLY_CONNECTED", [flat, wi, bi], [y], fused_activation_function="RELU")
    b.inputs, b.outputs = [x], [y]
    model = b.build()
    data = rng.standard_normal((1, 64, 64, 4)).astype(np.float32)
    data[0, 7, 7, 1] = np.nan
    ref = mi.Interpreter(model, optimized=False)
    ref.set_input(data)
    ref.invoke()
    with mi.Interpreter(model, arena=45_000, backing=tmp_path / "sd.img", flash=0) as it:
        it.set_input(data)
        it.invoke()
        rec = next(r for r in it.profile if r.op == "FULLY_CONNECTED")
        assert rec.mode == "channels" and it.runtime.pools.weights < w.nbytes
        assert np.array_equal(it.get_output(), ref.get_output(), equal_nan=True)
