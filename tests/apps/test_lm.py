"""microinterp.apps.lm: greedy generation's checks, the deployment report (plans, cycles per token, out of core) and
the ``microinterp lm`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from microinterp import InputError, Interpreter
from microinterp.apps.cli import main
from microinterp.apps.lm import LlmConfig, generate, report
from microinterp.testing.llm import tiny_llama

SMALL = LlmConfig(vocab=32, hidden=16, layers=2, heads=2, ffn=32, context=12, prompt=4)


@pytest.fixture(scope="module")
def small():
    return tiny_llama(3, SMALL)


def test_generate_checks_the_prompt_and_the_length(small):
    pre, step = Interpreter(small.prefill), Interpreter(small.step)
    for prompt, n, match in (([], 2, "1..4 tokens"), ([1] * 5, 2, "1..4 tokens"), ([1, 99], 2, r"0\.\.31"),
                             ([1, 2], 12, "do not fit 12 cache rows"), ([1], 0, "do not fit")):
        with pytest.raises(InputError, match=match):
            generate(pre, step, prompt, n, SMALL)
    gen = generate(pre, step, [1, 2, 3], 10, SMALL)         # 3 + 10 - 1 = 12 rows: the whole cache
    assert len(gen.tokens) == len(gen.logits) == 10
    assert all(0 <= t < SMALL.vocab for t in gen.tokens)
    assert all(l.shape == (SMALL.vocab,) and l.dtype == np.int8 for l in gen.logits)
    assert gen.tokens == [int(np.argmax(l)) for l in gen.logits]    # greedy: ARG_MAX picks the first maximum


def test_report_in_memory_and_out_of_core(tmp_path):
    llm = tiny_llama(0)
    doc = report(llm.prefill, llm.step, llm.config, [1, 2], 4, mcus=("stm32f746", "apollo3"), arena=64_000,
                 backing=str(tmp_path / "lm"), flash=100_000)
    gen = generate(Interpreter(llm.prefill), Interpreter(llm.step), [1, 2], 4, llm.config)
    assert doc["tokens"] == gen.tokens
    assert doc["cache_bytes"] == llm.config.cache_bytes == 2 * 8 * 4 * 64 * 16
    assert doc["plan"]["step"]["head"] == Interpreter(llm.step).head_bytes > doc["cache_bytes"]
    for m in doc["mcu"].values():
        assert 0 < m["step_cycles"] < m["prefill_cycles"]
        assert m["tokens_per_s"] == pytest.approx(m["clock_hz"] / m["step_cycles"])
    o = doc["out_of_core"]
    assert o["out_of_core"] == [True, True] and o["same_tokens"] and o["same_logits"]
    assert o["step_sd_read_bytes"] > 0 and o["step_cycles"] > doc["mcu"]["stm32f746"]["step_cycles"]
    assert (tmp_path / "lm.step").exists() and (tmp_path / "lm.prefill").exists()


def test_cli_lm(tmp_path, capsys):
    args = ["lm", "--layers", "1", "--steps", "3", "--context", "16", "--prompt-len", "4", "--prompt", "7,8"]
    assert main([*args, "--json", "--save", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["prompt"] == [7, 8] and len(doc["tokens"]) == 3 and set(doc["mcu"]) == {"stm32f746", "apollo3"}
    for name in ("tiny_llama_prefill.tflite", "tiny_llama_step.tflite"):
        assert Interpreter(tmp_path / name).head_bytes > 0
    assert main([*args, "--mcu", "apollo3", "--profile"]) == 0
    out = capsys.readouterr().out
    assert "cycles/token" in out and "KV cache" in out and "DYNAMIC_UPDATE_SLICE" in out and "MCU estimate" in out
    assert main([*args, "--prompt", "1,2,3,4,5"]) == 1                 # longer than the prompt model
    assert "1..4 tokens" in capsys.readouterr().err
    # one or two tokens (one step, or none, to time) and a board spec with facts in the list
    for steps in ("1", "2"):
        argv = [*args[:4], steps, *args[5:], "--mcu", "apollo3,cortex-m7@480MHz,flash_ws=4"]
        assert main(argv) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert "cortex-m7@480MHz,flash_ws=4" in out and ("no step to time" in out) == (steps == "1"), out
