"""The tiny Llama (prefill + step models, KV cache as I/O) against the TFLM wheel: tokens and logits at every step
of a 33-token generation with both kernel sets, in memory and out of core; the arena heads; causality of both
masks; small random configurations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from microinterp import Interpreter
from microinterp.apps.lm import LlmConfig, generate
from microinterp.testing.llm import tiny_llama
from microinterp.testing.tflm import TflmRunner, tflm_arena_head

pytest.importorskip("tflite_micro")

PROMPT = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def llm():
    return tiny_llama(0)


@pytest.fixture(scope="module")
def wheel_generation(llm):
    pre, step = (TflmRunner(m, preserve_all=False).interpreter for m in (llm.prefill, llm.step))
    return generate(pre, step, PROMPT, 33, llm.config)


def assert_same(mine, wheel):
    assert mine.tokens == wheel.tokens
    assert len(mine.logits) == len(wheel.logits) == 33
    for k, (a, b) in enumerate(zip(mine.logits, wheel.logits)):
        assert np.array_equal(a, b), f"logits differ at token {k}"


@pytest.mark.parametrize("optimized", [True, False])
def test_33_tokens_match_tflm(llm, wheel_generation, optimized):
    mine = generate(Interpreter(llm.prefill, optimized=optimized), Interpreter(llm.step, optimized=optimized),
                    PROMPT, 33, llm.config)
    assert_same(mine, wheel_generation)
    assert len(set(mine.tokens)) > 10          # the random model does not collapse onto one token


def test_heads_equal_tflm(llm):
    for model in (llm.prefill, llm.step):
        assert Interpreter(model).head_bytes == tflm_arena_head(model)
    step = Interpreter(llm.step)
    assert step.head_bytes >= llm.config.cache_bytes      # the cache lives in the step model's head


def test_out_of_core_generation_matches_tflm(llm, wheel_generation, tmp_path):
    kw = {"arena": 64_000, "flash": 100_000}
    with Interpreter(llm.prefill, backing=tmp_path / "p.img", **kw) as pre, \
            Interpreter(llm.step, backing=tmp_path / "s.img", **kw) as step:
        assert pre.out_of_core and step.out_of_core
        mine = generate(pre, step, PROMPT, 33, llm.config)
        records = step.profile
    assert_same(mine, wheel_generation)
    assert sum(r.sd_read_bytes for r in records) > 400_000     # most weights are on the card (100 KB of flash)


def test_step_ignores_cache_rows_past_its_position(llm):
    """Keys and values past ``position`` are masked: garbage there changes nothing."""
    pre, step = Interpreter(llm.prefill), Interpreter(llm.step)
    gen = generate(pre, step, PROMPT, 3, llm.config)
    caches = [step.get_output(2 + i).copy() for i in range(llm.config.caches)]
    position = len(PROMPT) + 2
    rng = np.random.default_rng(0)

    def run(cs):
        step.set_input(np.array([[gen.tokens[-1]]], np.int32), 0)
        step.set_input(np.array([position], np.int32), 1)
        for i, c in enumerate(cs):
            step.set_input(c, 2 + i)
        step.invoke()
        return step.get_output(0).copy()

    clean = run(caches)
    noisy = [c.copy() for c in caches]
    for i, c in enumerate(noisy):
        garbage = rng.integers(-128, 128, size=c.shape, dtype=np.int8)
        if i % 2 == 0:
            c[:, position + 1:, :] = garbage[:, position + 1:, :]      # keys [heads, rows, dim]
        else:
            c[:, :, position + 1:] = garbage[:, :, position + 1:]      # values [heads, dim, rows]
    assert np.array_equal(run(noisy), clean)
    noisy[0][:, position - 1, :] ^= 0x55                               # a visible row does matter
    assert not np.array_equal(run(noisy), clean)


def test_prefill_is_causal(llm):
    """The prompt's last-token logits do not depend on the padding after it."""
    pre = Interpreter(llm.prefill)
    outs = []
    for pad in (0, 7):
        tokens = np.full((1, llm.config.prompt), pad, np.int32)
        tokens[0, :len(PROMPT)] = PROMPT
        pre.set_input(tokens, 0)
        pre.set_input(np.array([len(PROMPT)], np.int32), 1)
        pre.invoke()
        outs.append(pre.get_output(0).copy())
    assert np.array_equal(*outs)


@settings(max_examples=6)
@given(layers=st.integers(1, 2), heads=st.sampled_from([1, 2, 4]), context=st.sampled_from([8, 12, 16]),
       prompt=st.integers(1, 8), vocab=st.integers(8, 64), seed=st.integers(0, 2**16), data=st.data())
def test_small_configurations_match_tflm(layers, heads, context, prompt, vocab, seed, data):
    config = LlmConfig(vocab=vocab, hidden=16, layers=layers, heads=heads, ffn=32, context=context,
                       prompt=min(prompt, context))
    llm = tiny_llama(seed, config)
    ids = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=config.prompt))
    n = data.draw(st.integers(1, context - len(ids) + 1))
    mine = generate(Interpreter(llm.prefill), Interpreter(llm.step), ids, n, config)
    pre, step = (TflmRunner(m, preserve_all=False).interpreter for m in (llm.prefill, llm.step))
    wheel = generate(pre, step, ids, n, config)
    assert mine.tokens == wheel.tokens
    assert all(np.array_equal(a, b) for a, b in zip(mine.logits, wheel.logits))


def test_inconsistent_configuration_is_refused():
    with pytest.raises(ValueError, match="inconsistent"):
        tiny_llama(0, LlmConfig(hidden=10, heads=4))
