"""A TinyStories-class int8 decoder-only transformer (a small Llama), written by the model builder.

:func:`tiny_llama` returns two models over **one set of weights** -- what a deployment of an autoregressive model
on TFLM holds:

* ``prefill`` -- the prompt pass: ``tokens [1, P]`` (int32, padded) and ``length [1]`` in; all ``P`` positions run
  in parallel under a causal mask; out come the logits of the last real token ``[1, vocab]`` (int8), its greedy next
  token ``[1]`` (ARG_MAX, int32) and the key/value cache of every layer, ``[heads, context, head_dim]`` int8,
  rows ``0..P-1`` filled (rows past ``length`` hold the padding's keys; a step overwrites a row before it can see it).
* ``step`` -- one autoregressive step: ``token [1, 1]``, ``position [1]`` and the caches in; the new key and value
  rows are written at ``position`` with DYNAMIC_UPDATE_SLICE, the query attends to rows ``0..position`` (a
  LESS_EQUAL mask on SELECT_V2), and out come the logits, the next token and the updated caches.

The cache travels as explicit inputs and outputs. TFLM runs subgraph 0 only, so the two modes are two models, and
resource variables cannot be shared between two interpreters through the TFLM wheel's Python API (the oracle); with
the cache as I/O both models run on the wheel, in memory and out of core, and the application (here
:func:`microinterp.lm.generate`) hands the step model's cache outputs back as its next inputs.

Architecture (Llama): token and learned position embeddings (GATHER, ADD); per layer RMSNorm (MUL x*x, MEAN,
RSQRT, MUL, MUL by gamma), multi-head attention (FULLY_CONNECTED q/k/v/o without bias, RESHAPE, TRANSPOSE,
BATCH_MATMUL q*k^T with ``adj_y``, SELECT_V2 mask to the int8 minimum, SOFTMAX with ``beta = 1/sqrt(head_dim)``,
BATCH_MATMUL by v), a residual ADD, RMSNorm, SwiGLU feed-forward (two FULLY_CONNECTED, LOGISTIC, MUL, MUL,
FULLY_CONNECTED) and a residual ADD; a final RMSNorm and the LM head. Weights are random (seeded), uniform int8
with per-tensor scales ``1/sqrt(fan_in)/73``; every activation scale is chosen from a propagated estimate of its
spread (4 standard deviations over the int8 range) -- the same estimate in both models, so the cache scales agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from .builder import ModelBuilder

F = 4.0 / 127.0          # scale per unit of standard deviation: 4 sigma over the int8 range


@dataclass(frozen=True)
class LlmConfig:
    """Shape of a decoder-only model. The defaults are the Deeploy row: hidden 64, 8 layers, FFN 256, vocabulary
    512, with 64 cache rows and a 16-token prefill."""

    vocab: int = 512
    hidden: int = 64
    layers: int = 8
    heads: int = 4
    ffn: int = 256
    context: int = 64        # cache rows: prompt + generated tokens must fit
    prompt: int = 16         # the prefill model's (padded) prompt length

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def caches(self) -> int:
        """Cache tensors: a key and a value cache per layer."""
        return 2 * self.layers

    @property
    def cache_bytes(self) -> int:
        """Bytes of the whole int8 key/value cache."""
        return self.caches * self.heads * self.context * self.head_dim


@dataclass(frozen=True)
class TinyLlm:
    """The two models (bytes) and their configuration."""

    config: LlmConfig
    prefill: bytes
    step: bytes


@dataclass
class _Weights:
    """One seeded set of int8 weights, shared by both models: name -> (values, scale)."""

    config: LlmConfig
    seed: int
    tensors: dict[str, tuple[np.ndarray, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        c, rng = self.config, np.random.default_rng(self.seed)

        def mat(name: str, rows: int, cols: int, std: float) -> None:
            self.tensors[name] = (rng.integers(-127, 128, size=(rows, cols), dtype=np.int8), std / 73.0)

        mat("tok_emb", c.vocab, c.hidden, 1.0)
        mat("pos_emb", c.context, c.hidden, 0.5)
        for n in range(c.layers):
            for k in ("q", "k", "v", "o"):
                mat(f"l{n}.w{k}", c.hidden, c.hidden, 1.0 / math.sqrt(c.hidden))
            mat(f"l{n}.w1", c.ffn, c.hidden, 1.0 / math.sqrt(c.hidden))
            mat(f"l{n}.w3", c.ffn, c.hidden, 1.0 / math.sqrt(c.hidden))
            mat(f"l{n}.w2", c.hidden, c.ffn, 1.0 / math.sqrt(c.ffn))
            for g in ("attn_norm", "ffn_norm"):
                self.tensors[f"l{n}.{g}"] = (rng.integers(64, 128, size=(c.hidden,), dtype=np.int8), 1.0 / 96)
        self.tensors["final_norm"] = (rng.integers(64, 128, size=(c.hidden,), dtype=np.int8), 1.0 / 96)
        mat("lm_head", c.vocab, c.hidden, 2.0 / math.sqrt(c.hidden))


class _Graph:
    """One of the two models being written: int8 activations with a tracked spread (standard deviation)."""

    def __init__(self, weights: _Weights, description: str):
        self.w, self.c = weights, weights.config
        self.b = ModelBuilder(description=description)
        self.std: dict[int, float] = {}
        self.consts: dict[str, int] = {}
        self.n = 0

    # -- tensors ---------------------------------------------------------------------------------------------------
    def act(self, name: str, shape, std: float, zero_point: int = 0, scale: float | None = None) -> int:
        self.n += 1
        t = self.b.add_tensor(f"{name}_{self.n}", shape, "INT8", scale=std * F if scale is None else scale,
                              zero_point=zero_point)
        self.std[t] = std
        return t

    def weight(self, name: str, shape=None) -> int:
        if name not in self.consts:
            values, scale = self.w.tensors[name]
            self.consts[name] = self.b.add_tensor(name, values.shape if shape is None else shape, "INT8",
                                                  data=values, scale=scale, zero_point=0)
        return self.consts[name]

    def int32(self, name: str, values) -> int:
        values = np.asarray(values, np.int32)
        return self.b.add_tensor(name, values.shape, "INT32", data=values)

    def scale_of(self, t: int) -> float:
        return float(self.b.tensors[t].scales[0])

    # -- layers ------------------------------------------------------------------------------------------------------
    def fc(self, x: int, w: str, rows: int, std: float) -> int:
        units = self.w.tensors[w][0].shape[0]
        y = self.act(w, (rows, units), std)
        self.b.add_op("FULLY_CONNECTED", [x, self.weight(w), -1], [y], fused_activation_function="NONE")
        return y

    def binary(self, kind: str, a: int, b: int, shape, std: float) -> int:
        y = self.act(kind.lower(), shape, std)
        self.b.add_op(kind, [a, b], [y], fused_activation_function="NONE")
        return y

    def rmsnorm(self, x: int, gamma: str, rows: int) -> int:
        """``x * rsqrt(mean(x*x)) * gamma`` in int8: squares and mean-squares quantized from 0 (zero point -128),
        the reciprocal root up to 4/sigma (mean squares down to a sixteenth of the typical one)."""
        s, h = self.std[x], self.c.hidden
        sq = self.act("square", (rows, h), s * s, -128, scale=16 * s * s / 255)
        self.b.add_op("MUL", [x, x], [sq], fused_activation_function="NONE")
        ms = self.act("mean_square", (rows, 1), s * s, -128, scale=4 * s * s / 255)
        self.b.add_op("MEAN", [sq, self.int32(f"axis_{self.n}", [1])], [ms], keep_dims=True)
        r = self.act("rsqrt", (rows, 1), 1 / s, -128, scale=4 / s / 255)
        self.b.add_op("RSQRT", [ms], [r])
        y = self.binary("MUL", x, r, (rows, h), 1.0)
        return self.binary("MUL", y, self.weight(gamma), (rows, h), 1.0)

    def heads(self, x: int, rows: int, perm=(1, 0, 2)) -> int:
        """``[rows, hidden]`` -> ``[heads, rows, head_dim]`` (RESHAPE, TRANSPOSE); ``perm=(1, 2, 0)`` gives the
        transposed ``[heads, head_dim, rows]`` (values, so that both attention products use ``adj_y``)."""
        c = self.c
        r = self.b.add_tensor(f"split_{self.n}", (rows, c.heads, c.head_dim), "INT8",
                              scale=self.scale_of(x), zero_point=0)
        self.b.add_op("RESHAPE", [x, self.int32(f"shape_{self.n}", [rows, c.heads, c.head_dim])], [r],
                      new_shape=[rows, c.heads, c.head_dim])
        shape = tuple((rows, c.heads, c.head_dim)[p] for p in perm)
        y = self.b.add_tensor(f"heads_{self.n}", shape, "INT8", scale=self.scale_of(x), zero_point=0)
        self.b.add_op("TRANSPOSE", [r, self.int32(f"perm_{self.n}", list(perm))], [y])
        self.std[y] = self.std[x]
        return y

    def merge_heads(self, x: int, rows: int) -> int:
        c = self.c
        t = self.b.add_tensor(f"merge_{self.n}", (rows, c.heads, c.head_dim), "INT8", scale=self.scale_of(x),
                              zero_point=0)
        self.b.add_op("TRANSPOSE", [x, self.int32(f"perm_{self.n}", [1, 0, 2])], [t])
        y = self.b.add_tensor(f"merged_{self.n}", (rows, c.hidden), "INT8", scale=self.scale_of(x), zero_point=0)
        self.b.add_op("RESHAPE", [t, self.int32(f"shape_{self.n}", [rows, c.hidden])], [y],
                      new_shape=[rows, c.hidden])
        self.std[y] = self.std[x]
        return y

    def attention(self, q: int, keys: int, values_t: int, mask: int, rows: int, span: int) -> int:
        """Scores ``q k^T`` (real spread ``sqrt(head_dim)``, quantized over 6 standard deviations), masked to the
        int8 minimum, SOFTMAX with ``beta = 1/sqrt(head_dim)``, the masked probabilities set to exactly 0 (an int8
        softmax cannot push a masked score far enough below the visible ones to round it to 0 for every input:
        without this, values behind the mask would leak in; the masked scores are constants, so what remains of
        them is a dilution that depends on the position only), times the values; the values come transposed (``[heads, head_dim, span]``) so
        both BATCH_MATMULs take ``adj_y`` and TFLM needs no persistent buffer for a transposed right-hand side."""
        c = self.c
        scores = self.act("scores", (c.heads, rows, span), 1.5 * math.sqrt(c.head_dim))
        self.b.add_op("BATCH_MATMUL", [q, keys], [scores], adj_x=False, adj_y=True)
        masked = self.select(mask, scores, -128)
        probs = self.act("probs", (c.heads, rows, span), 1.0, -128, scale=1.0 / 256)
        self.b.add_op("SOFTMAX", [masked], [probs], beta=1.0 / math.sqrt(c.head_dim))
        probs = self.select(mask, probs, -128)
        out = self.act("context", (c.heads, rows, c.head_dim), 0.7)
        self.b.add_op("BATCH_MATMUL", [probs, values_t], [out], adj_x=False, adj_y=True)
        return out

    def select(self, mask: int, x: int, value: int) -> int:
        """SELECT_V2: ``x`` where ``mask``, else the int8 ``value`` (same quantization as ``x``)."""
        q = self.b.tensors[x]
        const = self.b.add_tensor(f"masked_value_{self.n}", (1,), "INT8", data=np.array([value], np.int8),
                                  scale=q.scales[0], zero_point=q.zero_points[0])
        y = self.b.add_tensor(f"masked_{self.n}", q.shape, "INT8", scale=q.scales[0], zero_point=q.zero_points[0])
        self.n += 1
        self.b.add_op("SELECT_V2", [mask, x, const], [y])
        return y

    def layer(self, n: int, x: int, rows: int, kv) -> int:
        """One decoder layer; ``kv(n, k_heads, v) -> (keys, values_t, mask, span)`` places the new rows (``v`` is
        the value projection ``[rows, hidden]``)."""
        c = self.c
        h = self.rmsnorm(x, f"l{n}.attn_norm", rows)
        q, k = (self.heads(self.fc(h, f"l{n}.w{p}", rows, 1.0), rows) for p in "qk")
        keys, values, mask, span = kv(n, k, self.fc(h, f"l{n}.wv", rows, 1.0))
        o = self.merge_heads(self.attention(q, keys, values, mask, rows, span), rows)
        a = self.fc(o, f"l{n}.wo", rows, 0.7)
        x = self.binary("ADD", x, a, (rows, c.hidden), math.hypot(self.std[x], 0.7))
        h = self.rmsnorm(x, f"l{n}.ffn_norm", rows)
        g = self.fc(h, f"l{n}.w1", rows, 1.0)
        u = self.fc(h, f"l{n}.w3", rows, 1.0)
        sig = self.act("sigmoid", (rows, c.ffn), 0.3, -128, scale=1.0 / 256)
        self.b.add_op("LOGISTIC", [g], [sig])
        silu = self.binary("MUL", g, sig, (rows, c.ffn), 0.6)
        m = self.binary("MUL", silu, u, (rows, c.ffn), 0.6)
        d = self.fc(m, f"l{n}.w2", rows, 0.6)
        return self.binary("ADD", x, d, (rows, c.hidden), math.hypot(self.std[x], 0.6))

    def head(self, x: int) -> tuple[int, int]:
        """Final RMSNorm, LM head (logits ``[1, vocab]``) and the greedy token (ARG_MAX, int32 ``[1]``)."""
        h = self.rmsnorm(x, "final_norm", 1)
        logits = self.fc(h, "lm_head", 1, 2.0)
        token = self.b.add_tensor("next_token", (1,), "INT32")
        self.b.add_op("ARG_MAX", [logits, self.int32("argmax_axis", [1])], [token], output_type="INT32")
        return logits, token

    def embed(self, ids: int, positions: int, rows: int) -> int:
        c = self.c
        tok = self.b.add_tensor("tok", (rows, c.hidden), "INT8", scale=self.w.tensors["tok_emb"][1], zero_point=0)
        self.b.add_op("GATHER", [self.weight("tok_emb"), ids], [tok], axis=0, batch_dims=0)
        pos = self.b.add_tensor("pos", (rows, c.hidden), "INT8", scale=self.w.tensors["pos_emb"][1], zero_point=0)
        self.b.add_op("GATHER", [self.weight("pos_emb"), positions], [pos], axis=0, batch_dims=0)
        self.std[tok], self.std[pos] = 1.0, 0.5
        return self.binary("ADD", tok, pos, (rows, c.hidden), math.hypot(1.0, 0.5))

    def cache_tensor(self, name: str, kind: str) -> int:
        """A layer's key cache ``[heads, context, head_dim]`` or (transposed) value cache
        ``[heads, head_dim, context]``, int8 with the projections' scale."""
        c = self.c
        shape = (c.heads, c.context, c.head_dim) if kind == "k" else (c.heads, c.head_dim, c.context)
        return self.b.add_tensor(name, shape, "INT8", scale=1.0 * F, zero_point=0)


def _prefill(w: _Weights) -> bytes:
    c, g = w.config, _Graph(w, "microinterp tiny Llama: prefill")
    p = c.prompt
    tokens = g.b.add_tensor("tokens", (1, p), "INT32")
    length = g.b.add_tensor("length", (1,), "INT32")
    ids = g.b.add_tensor("ids", (p,), "INT32")
    g.b.add_op("RESHAPE", [tokens, g.int32("ids_shape", [p])], [ids], new_shape=[p])
    x = g.embed(ids, g.int32("positions", np.arange(p)), p)
    causal = g.b.add_tensor("causal_mask", (1, p, p), "BOOL", data=np.tril(np.ones((p, p), bool))[None])
    pads = {"k": g.int32("k_cache_pads", [[0, 0], [0, c.context - p], [0, 0]]),
            "v": g.int32("v_cache_pads", [[0, 0], [0, 0], [0, c.context - p]])}
    caches: list[int] = []

    def kv(n: int, k: int, v: int):
        v = g.heads(v, p, perm=(1, 2, 0))
        for kind, t in (("k", k), ("v", v)):
            out = g.cache_tensor(f"{kind}_cache_{n}", kind)
            g.b.add_op("PAD", [t, pads[kind]], [out])
            caches.append(out)
        return k, v, causal, p

    for n in range(c.layers):
        x = g.layer(n, x, p, kv)
    last = g.b.add_tensor("last_index", (1,), "INT32")
    g.b.add_op("SUB", [length, g.int32("one", [1])], [last], fused_activation_function="NONE")
    row = g.act("last_row", (1, c.hidden), g.std[x], scale=g.scale_of(x))
    g.b.add_op("GATHER", [x, last], [row], axis=0, batch_dims=0)
    logits, token = g.head(row)
    g.b.inputs, g.b.outputs = [tokens, length], [logits, token, *caches]
    return g.b.build()


def _step(w: _Weights) -> bytes:
    c, g = w.config, _Graph(w, "microinterp tiny Llama: step")
    token = g.b.add_tensor("token", (1, 1), "INT32")
    position = g.b.add_tensor("position", (1,), "INT32")
    ids = g.b.add_tensor("id", (1,), "INT32")
    g.b.add_op("RESHAPE", [token, g.int32("id_shape", [1])], [ids], new_shape=[1])
    x = g.embed(ids, position, 1)
    # rows 0..position are visible: LESS_EQUAL(row, position) -> [1, 1, context]
    visible = g.b.add_tensor("visible", (c.context,), "BOOL")
    g.b.add_op("LESS_EQUAL", [g.int32("rows", np.arange(c.context)), position], [visible])
    mask = g.b.add_tensor("mask", (1, 1, c.context), "BOOL")
    g.b.add_op("RESHAPE", [visible, g.int32("mask_shape", [1, 1, c.context])], [mask],
               new_shape=[1, 1, c.context])
    # DYNAMIC_UPDATE_SLICE start indices: [0, position, 0] for keys, [0, 0, position] for the transposed values
    zero = g.int32("zero", [0])
    starts = {kind: g.b.add_tensor(f"{kind}_start", (3,), "INT32") for kind in "kv"}
    for kind, parts in (("k", [zero, position, zero]), ("v", [zero, zero, position])):
        g.b.add_op("CONCATENATION", parts, [starts[kind]], axis=0, fused_activation_function="NONE")
    inputs, outputs = [token, position], []

    def kv(n: int, k: int, v: int):
        vt = g.b.add_tensor(f"v_column_{n}", (c.heads, c.head_dim, 1), "INT8", scale=g.scale_of(v), zero_point=0)
        g.b.add_op("RESHAPE", [v, g.int32(f"v_shape_{n}", [c.heads, c.head_dim, 1])], [vt],
                   new_shape=[c.heads, c.head_dim, 1])
        placed = []
        for kind, t in (("k", k), ("v", vt)):
            cache_in = g.cache_tensor(f"{kind}_cache_{n}", kind)
            cache_out = g.cache_tensor(f"{kind}_cache_{n}_out", kind)
            g.b.add_op("DYNAMIC_UPDATE_SLICE", [cache_in, t, starts[kind]], [cache_out])
            inputs.append(cache_in)
            outputs.append(cache_out)
            placed.append(cache_out)
        return placed[0], placed[1], mask, c.context

    for n in range(c.layers):
        x = g.layer(n, x, 1, kv)
    logits, next_token = g.head(x)
    g.b.inputs, g.b.outputs = inputs, [logits, next_token, *outputs]
    return g.b.build()


def tiny_llama(seed: int = 0, config: LlmConfig | None = None) -> TinyLlm:
    """The prefill and step models of one seeded tiny Llama (see the module docstring)."""
    config = config or LlmConfig()
    if config.hidden % config.heads or config.prompt > config.context or min(
            config.vocab, config.hidden, config.layers, config.heads, config.ffn, config.prompt) < 1:
        raise ConfigError(f"inconsistent configuration {config}: every size must be >= 1, hidden a multiple of "
                          f"heads and the prompt no longer than the context (cache rows)")
    w = _Weights(config, seed)
    return TinyLlm(config, _prefill(w), _step(w))
