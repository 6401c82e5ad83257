"""The scheduler's task graph moves exactly what the pager moves, and its simulation is a valid, deadlock-free
schedule (resources never overlap, edges and pools respected) on random small models, pool splits and frames."""

from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import microinterp as mi
from microinterp.runtime.profile import totals
from microinterp.schedule import build_graph, simulate
from microinterp.schedule.run import Config, open_records, run
from microinterp.schedule.wear import wear
from microinterp.testing.models import QuantNet, demo_cnn

from ..pager.conftest import small_net, smallest_out_of_core_arena

COUNTERS = ("sd_read_commands", "sd_read_bytes", "sd_read_payload", "sd_write_commands", "sd_write_bytes",
            "sd_write_payload", "tiles")


def streamed_net() -> bytes:
    """Two convolutions whose filters (55 KB each) stream in channel tiles through a 70 KB arena, then an FC."""
    net = QuantNet((1, 20, 20, 48), seed=9, name="streamed filters")
    net.conv(128, 3, act="RELU")
    net.conv(48, 3)
    net.pool("AVERAGE", 5, 5)
    net.flatten()
    net.fc(200, act="NONE")
    return net.build()


def check_schedule(s) -> None:
    """Every task finished after its predecessors, one task at a time per resource, pools never over capacity."""
    g = s.graph
    tasks = g.tasks
    for t in tasks:
        assert t.state == "FINISHED"
        for j in t.succ:
            assert tasks[j].start >= t.end - 1e-6, (t, tasks[j])
    for res in ("cpu", "io"):
        spans = sorted(seg for t in tasks if t.resource == res for seg in t.segments)
        assert all(sum(b - a for a, b in t.segments) == pytest.approx(t.cycles, abs=1e-3) for t in tasks
                   if t.resource == res)
        for (_, a1), (b0, _) in itertools.pairwise(spans):
            assert b0 >= a1 - 1e-6
    use = dict.fromkeys(g.pools, 0)
    for _, pool, delta, _, _ in sorted(s.pool_events, key=lambda e: (e[0], e[2])):
        use[pool] += delta
        assert 0 <= use[pool] <= g.pools[pool]
    assert all(v == 0 for v in use.values())


def assert_counters_match(records, graph) -> None:
    want = totals(records)
    got = graph.totals(0)
    for k in COUNTERS:
        assert got[k] == want[k], k
    assert got["total_cycles"] == pytest.approx(want["total_cycles"], rel=1e-9)
    # per tile: the same commands in the same order
    for r in records:
        for t in r.tiles:
            steps = [(e[0], e[2]) for e in t.io if e[0] in ("read", "write")]
            mine = sorted((x for x in graph.tasks if x.frame == 0 and x.op == r.index and x.tile == t.index
                           and x.kind in ("read", "write")), key=lambda x: x.seq)
            assert [(x.kind, x.nbytes) for x in mine] == steps


@settings(deadline=None)
@given(seed=st.integers(0, 2**31 - 1), size=st.integers(40, 80), layers=st.integers(2, 5),
       pools=st.tuples(*[st.floats(0.5, 3.0)] * 3), where=st.floats(0.0, 1.0), frames=st.integers(1, 3),
       flash=st.sampled_from([0, None]), preempt=st.booleans(), single=st.booleans())
def test_graph_matches_the_pager_and_schedules_without_deadlock(tmp_path_factory, seed, size, layers, pools, where,
                                                                frames, flash, preempt, single):
    model = small_net(seed, size, layers)
    path = tmp_path_factory.mktemp("sd") / "sd.img"
    need = smallest_out_of_core_arena(model, path, pools=pools, flash=flash)
    full = mi.Interpreter(model).arena_used_bytes
    assume(need < full)
    arena = need + int(where * (full - 1 - need))
    with mi.Interpreter(model, arena=arena, backing=path, pools=pools, flash=flash) as it:
        records = it.simulate()
        g = build_graph(records, pager=it.runtime, mcu=it.mcu, frames=frames, single_buffer_io_bound=single)
    assert g.precise
    assert_counters_match(records, g)
    s = simulate(g, preempt=preempt)
    check_schedule(s)
    t = g.totals(0)
    assert s.latency_cycles >= max(t["compute_cycles"], t["io_cycles"]) - 1e-6
    assert s.makespan >= frames * max(t["compute_cycles"], t["io_cycles"]) - 1e-6


def test_invoke_profile_and_simulate_give_the_same_graph(tmp_path):
    model = small_net(4, 64)
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img", flash=0)
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img", flash=0) as it:
        dry = build_graph(it.simulate(), pager=it.runtime, mcu=it.mcu).totals(0)
        it.invoke()
        real = build_graph(it.profile, pager=it.runtime, mcu=it.mcu)
        assert real.totals(0) == dry
        assert_counters_match(it.profile, real)


def test_streamed_filters_input_reuse_and_hash_placement(tmp_path):
    model = streamed_net()
    with mi.Interpreter(model, arena=70_000, backing=tmp_path / "a.img", flash=0, pools=(2, 1, 2)) as it:
        records = it.simulate()
        g = build_graph(records, pager=it.runtime, mcu=it.mcu, frames=2)
        assert_counters_match(records, g)
        check_schedule(simulate(g))
        # SwapNN's graph re-reads the input band for every weight tile: more reads, same writes
        naive = build_graph(records, pager=it.runtime, mcu=it.mcu, input_reuse=False)
        check_schedule(simulate(naive))
        assert naive.totals(0)["sd_read_bytes"] > g.totals(0)["sd_read_bytes"]
        assert naive.totals(0)["sd_write_bytes"] == g.totals(0)["sd_write_bytes"]
        # the input tile is read before the weight tiles of its compute task
        for t in g.tasks:
            if t.kind == "read" and t.pool == "input":
                assert any(g.tasks[j].kind == "read" and g.tasks[j].pool == "weights" for j in t.succ) or \
                    any(g.tasks[j].kind == "compute" for j in t.succ)
        # checksums: on the STM32F746's CRC engine they are IO time; without an engine, CPU time
        sw = build_graph(records, pager=it.runtime, mcu=it.mcu, hash_on_cpu=True)
        hw = g
        assert sw.totals(0)["total_cycles"] == pytest.approx(hw.totals(0)["total_cycles"])
        assert sw.totals(0)["compute_cycles"] > hw.totals(0)["compute_cycles"]


def test_the_records_alone_give_the_exact_graph_and_untyped_steps_fall_back(tmp_path):
    """The engine's typed IO steps say which records each command moves, so the records alone (no pager) give the
    same exact graph; steps as a profile's JSON has them (kind, pool, bytes, payload) fall back to barriers."""
    model = small_net(7, 64)
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img")
    with mi.Interpreter(model, arena=need, backing=tmp_path / "sd.img") as it:
        records = it.simulate()
        pools = {"input": it.runtime.pools.input, "weights": it.runtime.pools.weights,
                 "output": it.runtime.pools.output}
        with_pager = build_graph(records, pager=it.runtime, mcu=it.mcu, frames=2)
    g = build_graph(records, mcu=it.mcu, pools=pools, frames=2)
    assert g.precise
    assert [(t.kind, t.op, t.tile, t.succ) for t in g.tasks] == [(t.kind, t.op, t.tile, t.succ) for t in with_pager.tasks]
    bare = copy.deepcopy(records)
    for r in bare:
        for t in r.tiles:
            t.io = [tuple(e[:4]) for e in t.io]
    fallback = build_graph(bare, mcu=it.mcu, pools=pools, frames=2)
    assert not fallback.precise
    assert_counters_match(bare, fallback)
    check_schedule(simulate(fallback))
    assert simulate(fallback).makespan >= simulate(g).makespan


def test_run_forces_out_of_core_when_weights_exceed_flash_and_reports_baselines(tmp_path):
    model = demo_cnn()
    big = mi.Interpreter(model).arena_used_bytes * 2
    r, s1, sf = run(model, Config(sram=big, tile=None, frames=3, flash=0), "demo", tmp_path / "sd.img", keep=True)
    assert r.status == "ok" and r.out_of_core
    assert r.compute_only_s <= r.latency_s <= r.sequential_s + 1e-12
    assert r.latency_overhead == pytest.approx(r.latency_s / r.compute_only_s - 1)
    assert r.period_s == pytest.approx(sf.makespan / 3 / 216e6)
    check_schedule(s1)
    check_schedule(sf)
    assert 0 < r.energy["ideal_joules"] < r.energy["joules"]
    # with the weights in flash and enough SRAM, the model runs in core: latency == compute-only
    r2, _, _ = run(model, Config(sram=big, tile=None, frames=2, flash=None), "demo", tmp_path / "b.img")
    assert not r2.out_of_core and r2.io_tasks == 0
    assert r2.latency_s == pytest.approx(r2.compute_only_s)


def test_double_buffer_caps_tiles_at_half_a_pool(tmp_path):
    model = small_net(3, 96, 4)
    need = smallest_out_of_core_arena(model, tmp_path / "sd.img", pools=Config(0, None).pools)
    cfg = Config(sram=need * 3, tile=None, frames=1, double_buffer=True, flash=None)
    opened = open_records(model, cfg, tmp_path / "sd.img")
    try:
        p = opened.pager.pools
        assert opened.tile == min(p.input, p.output) // 2
    finally:
        opened.close()


def test_too_small_a_tile_is_a_result_not_an_exception(tmp_path):
    r, _, _ = run(demo_cnn(), Config(sram=45_000, tile=64, frames=1), "demo", tmp_path / "sd.img")
    assert r.status.startswith("does not fit")


def test_wear_arithmetic():
    w = wear(2_000_000, 1.0)                      # 2 MB per inference, one per second
    assert w.gb_per_day == pytest.approx(172.8)
    assert w.endurance_tb == pytest.approx(32e9 * 10_000 / 4 / 1e12)
    assert w.lifetime_days == pytest.approx(32e9 * 10_000 / 4 / 172.8e9)
    assert wear(0, 1.0).lifetime_days == float("inf")
    with pytest.raises(ValueError):
        wear(1, 1.0, write_amplification=0.5)
