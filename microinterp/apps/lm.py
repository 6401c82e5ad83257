"""Greedy autoregressive generation with a prefill model and a step model whose key/value cache is explicit I/O.

The contract (what :func:`microinterp.testing.llm.tiny_llama` writes, and what an application on TFLM does):

* prefill inputs ``tokens [1, P]`` (int32, the prompt padded with zeros) and ``length [1]``; outputs ``logits``,
  ``next_token`` and the caches (outputs 2.. in layer order);
* step inputs ``token [1, 1]``, ``position [1]`` and the caches (inputs 2.., the same order); outputs ``logits``,
  ``next_token`` and the updated caches, which become the next step's cache inputs.

:func:`generate` drives any runner with ``set_input(value, index)``, ``invoke()`` and ``get_output(index)`` -- a
microinterp :class:`~microinterp.interpreter.Interpreter` (in memory or out of core) or the TFLM wheel through
:class:`~microinterp.testing.tflm.TflmRunner`'s adapter -- so the same loop produces both sides of a comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..testing.llm import LlmConfig


@dataclass
class Generation:
    """What :func:`generate` produced: the new tokens and, per token, the int8 logits it was chosen from."""

    prompt: list[int]
    tokens: list[int] = field(default_factory=list)
    logits: list[np.ndarray] = field(default_factory=list)


def generate(prefill: Any, step: Any, prompt_ids: Sequence[int], n: int, config: LlmConfig,
             on_token: Any = None) -> Generation:
    """Run the prompt through ``prefill``, then ``n - 1`` single-token ``step`` invokes; greedy (the models'
    ARG_MAX). ``on_token(token, logits)`` is called after every invoke."""
    prompt = [int(t) for t in prompt_ids]
    if not 1 <= len(prompt) <= config.prompt:
        raise InputError(f"the prompt must have 1..{config.prompt} tokens, got {len(prompt)}")
    if any(not 0 <= t < config.vocab for t in prompt):
        raise InputError(f"prompt tokens must be in 0..{config.vocab - 1}")
    if n < 1 or len(prompt) + n - 1 > config.context:
        raise InputError(f"{len(prompt)} prompt tokens + {n} new ones do not fit {config.context} cache rows")
    out = Generation(prompt)
    tokens = np.zeros((1, config.prompt), np.int32)
    tokens[0, :len(prompt)] = prompt
    prefill.set_input(tokens, 0)
    prefill.set_input(np.array([len(prompt)], np.int32), 1)
    prefill.invoke()
    caches = _record(prefill, out, config, on_token)
    for k in range(n - 1):
        step.set_input(np.array([[out.tokens[-1]]], np.int32), 0)
        step.set_input(np.array([len(prompt) + k], np.int32), 1)
        for i, cache in enumerate(caches):
            step.set_input(cache, 2 + i)
        step.invoke()
        caches = _record(step, out, config, on_token)
    return out


def _record(runner: Any, out: Generation, config: LlmConfig, on_token: Any) -> list[np.ndarray]:
    logits = np.array(runner.get_output(0), copy=True).reshape(-1)
    token = int(np.asarray(runner.get_output(1)).reshape(-1)[0])
    out.logits.append(logits)
    out.tokens.append(token)
    if on_token is not None:
        on_token(token, logits)
    return [np.array(runner.get_output(2 + i), copy=True) for i in range(config.caches)]


def report(prefill_model: Any, step_model: Any, config: LlmConfig, prompt_ids: Sequence[int], n: int, *,
           mcus: Sequence[str] = ("stm32f746", "apollo3"), kernels: str = "optimized", arena: int | None = None,
           backing: str | None = None, flash: int | None = None, recover: bool = False) -> dict[str, Any]:
    """Generate ``n`` tokens and measure what a deployment needs: both models' plans (head, tail, weights), the
    cache, host time per step (whole calls, median), MCU cycles per token and per prompt for every profile in
    ``mcus`` (from the profiles of one prefill and one step invoke on the generation's own inputs) and, with
    ``backing``, the same generation out of core (the two images are ``BACKING.prefill`` and ``BACKING.step``):
    its tokens, SD traffic and cycles per token on the first profile (``recover``: recompute records whose
    checksum fails, as :class:`~microinterp.Interpreter`'s)."""
    import time
    from itertools import pairwise

    from ..interpreter import Interpreter
    from ..runtime.profile import totals

    pre, step = Interpreter(prefill_model), Interpreter(step_model)
    stamps: list[float] = []
    gen = generate(pre, step, prompt_ids, n, config, on_token=lambda *_: stamps.append(time.perf_counter()))
    intervals = [b - a for a, b in pairwise(stamps)]
    per_step = sorted(intervals[1:] or intervals)      # the first step warms up; with two tokens it is all there is
    step_s = per_step[len(per_step) // 2] if per_step else None     # one token: no step to time
    doc: dict[str, Any] = {
        "config": {k: getattr(config, k) for k in ("vocab", "hidden", "layers", "heads", "ffn", "context", "prompt")},
        "prompt": gen.prompt, "tokens": gen.tokens, "cache_bytes": config.cache_bytes,
        "plan": {name: {"head": it.head_bytes, "tail": it.tail_bytes, "arena": it.arena_used_bytes,
                        "weights": sum(t.nbytes for t in it.model.main.tensors if t.data is not None)}
                 for name, it in (("prefill", pre), ("step", step))},
        "host": {"step_ms_median": None if step_s is None else step_s * 1e3,
                 "tokens_per_s": 1.0 / step_s if step_s else None},
        "mcu": {},
    }
    last_inputs = [np.array([[gen.tokens[-2] if n > 1 else gen.tokens[-1]]], np.int32),
                   np.array([len(gen.prompt) + max(n - 2, 0)], np.int32)]
    caches = [step.get_output(2 + i) if n > 1 else pre.get_output(2 + i) for i in range(config.caches)]
    for name in mcus:
        cycles = {}
        for mode, model, inputs in (("prefill", prefill_model, None), ("step", step_model, last_inputs + caches)):
            it = Interpreter(model, mcu=name, cost_kernels=kernels)
            if inputs is None:
                tokens = np.zeros((1, config.prompt), np.int32)
                tokens[0, :len(gen.prompt)] = gen.prompt
                inputs = [tokens, np.array([len(gen.prompt)], np.int32)]
            for i, x in enumerate(inputs):
                it.set_input(x, i)
            it.invoke()
            cycles[mode] = totals(it.profile)["total_cycles"]
        clock = it.mcu.clock_hz
        doc["mcu"][name] = {"clock_hz": clock, "cost_build": it.mcu.figure_note(kernels),
                            "prefill_cycles": cycles["prefill"],
                            "step_cycles": cycles["step"], "tokens_per_s": clock / cycles["step"]}
    if backing is not None:
        kw = {"arena": arena, "mcu": mcus[0], "flash": flash, "cost_kernels": kernels, "recover": recover}
        with Interpreter(prefill_model, backing=f"{backing}.prefill", **kw) as p2, \
                Interpreter(step_model, backing=f"{backing}.step", **kw) as s2:
            ooc = generate(p2, s2, prompt_ids, n, config)
            t = totals(s2.profile) if n > 1 else totals(p2.profile)
            doc["out_of_core"] = {
                "arena": arena, "mcu": mcus[0], "out_of_core": [p2.out_of_core, s2.out_of_core],
                "same_tokens": ooc.tokens == gen.tokens,
                "same_logits": all(np.array_equal(a, b) for a, b in zip(ooc.logits, gen.logits)),
                "step_cycles": t["total_cycles"], "step_sd_read_bytes": t["sd_read_bytes"],
                "step_sd_write_bytes": t["sd_write_bytes"], "step_flash_read_bytes": t["flash_read_bytes"],
                "tokens_per_s": s2.mcu.clock_hz / t["total_cycles"]}
    return doc
