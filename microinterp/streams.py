"""Many independent streams of one model in lockstep: a clip per stream through a stateful audio front end.

``Streams(model, streams=S)`` prepares the model once (an in-memory :class:`~microinterp.interpreter.Interpreter`,
which validates it and computes every op's OpData) and gives every non-constant tensor of subgraph 0 a leading
stream axis. :meth:`Streams.run` takes one input per stream (``[S, *input shape]``), runs every op once for all
streams and returns ``[S, *output shape]``; the state of each stream (the kernels' own, declared per kernel, and the
model's variable tensors) carries over to its next step, as it does between the invokes of one interpreter, and
:meth:`Streams.reset` clears it. Stream ``s`` of step ``t`` equals the ``t``-th invoke of an interpreter fed stream
``s``'s inputs, bit for bit.

How each op runs every stream is its kernel's declaration (:mod:`.kernels.streams`): its own ``invoke`` or
``bind`` on the stream views, an explicit ``invoke_streams`` (with per-stream state for stateful kernels), or -- for
a stateless op without one -- its single-stream ``invoke`` once per stream. Stateful ops without a declaration, control flow and
resource variables are refused with the list of them.

The cost of an op's NumPy calls is shared by the streams: the zoo's audio front end, 0.29 ms per window alone, takes
a few microseconds per window and stream at S = 64 (``benchmarks/bench_streams.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import ConfigError, InputError
from .kernels.bands import RowLocal
from .kernels.base import InvokeContext
from .kernels.registry import reference
from .kernels.streams import BIND, INVOKE
from .runtime.base import reset_variable
from .runtime.memory import quiet_floats


class Streams:
    """``streams`` independent streams of ``model`` run together (see the module docstring). Keyword arguments go to
    the :class:`~microinterp.interpreter.Interpreter` that prepares the model (in memory: no ``arena`` below the
    plan, no ``backing``; the reference kernel layer unless ``optimized=True``)."""

    def __init__(self, model: Any, streams: int, **interpreter_options: Any):
        from .interpreter import Interpreter

        _check_count(streams)
        if interpreter_options.get("backing") is not None:
            raise ConfigError("streams run in memory: no backing")
        # the reference layer: its elementwise kernels compute on views of any rank (some optimized ones keep
        # buffers of the model's shapes); the heavy kernels are shared by both layers anyway
        self.interpreter = Interpreter(model, **{"optimized": False, **interpreter_options})
        runtime = self.interpreter.runtime
        if self.interpreter.out_of_core:
            raise ConfigError("streams run in memory: give an arena at least as large as the model's plan")
        self.model, self.count = runtime.model, int(streams)
        sg = self.model.main
        if len(self.model.subgraphs) > 1:
            raise ConfigError("streams run single-subgraph models (this one has control flow)")
        self.tensors = sg.tensors
        main, steps = runtime.all_steps[0]             # the in-memory runtime's main subgraph: context and steps
        self.single = main.views
        self.views: list[np.ndarray | None] = [
            None if v is None else v if t.data is not None else np.zeros((self.count, *t.shape), t.dtype)
            for t, v in zip(sg.tensors, self.single)]
        self.ctx = InvokeContext(self.views, main.scratch_views)     # scratch buffers: shared, stateless
        kernels, op_data = [k for k, _, _ in steps], [d for _, _, d in steps]
        resolver = self.interpreter.resolver
        decls = [resolver.declare(k, op.key) for op, k in zip(sg.operators, kernels)]
        refused = [f"op {op.index} {op.key}" for op, d in zip(sg.operators, decls) if not self._supported(op, d)]
        if refused:
            raise ConfigError(f"{len(refused)} op(s) cannot run as streams ({', '.join(refused)}): they keep state "
                              "without a stream declaration, or are control flow / resource variables")
        self.steps = [self._step(op, d, data) for op, d, data in zip(sg.operators, decls, op_data)]
        self.inputs, self.outputs = list(sg.inputs), list(sg.outputs)
        self.reset()

    # -- building ---------------------------------------------------------------------------------------------------
    def _supported(self, op: Any, decl: Any) -> bool:
        if decl.traits.graph:
            return False
        if decl.invoke_streams is not None or decl.streams in (INVOKE, BIND) or self._elementwise(op, decl):
            return True
        return not decl.traits.stateful and decl.reset is None and \
            not any(self.tensors[t].is_variable for t in op.outputs if t >= 0)

    @staticmethod
    def _elementwise(op: Any, decl: Any) -> bool:
        """An elementwise op run by its reference kernel (whose invoke computes on views of any rank)."""
        return isinstance(decl.bands, RowLocal) and decl.bands.elementwise and decl.kernel is reference().get(op.key)

    def _step(self, op: Any, decl: Any, data: Any):
        kernel = decl.kernel
        # an elementwise op binds and invokes on views of one rank more (constants broadcast to every stream)
        elementwise = self._elementwise(op, decl)
        ctx = self._elementwise_ctx(op) if elementwise else self.ctx
        if decl.streams == BIND:
            bound = decl.bind(ctx, op, data)
            if bound is not None:
                return _Bound(bound)
        if decl.invoke_streams is not None:
            return _Explicit(decl, self.ctx, op, data, decl.stream_state(data, self.count))
        if elementwise or decl.streams in (BIND, INVOKE):
            return _Call(kernel, ctx, op, data)
        return _OneByOne(kernel, self, op, data)

    def _elementwise_ctx(self, op: Any) -> InvokeContext:
        """Views of one rank more for every operand: inputs padded to the output's rank, constants broadcast to every
        stream (read-only), so the op's own broadcasting applies within each stream."""
        views = list(self.views)
        rank = len(self.tensors[op.outputs[0]].shape)
        for ti in op.inputs:
            if ti < 0 or views[ti] is None:
                continue
            t = self.tensors[ti]
            padded = (1,) * (rank - len(t.shape)) + tuple(t.shape)
            if t.data is not None:
                views[ti] = np.broadcast_to(views[ti].reshape(padded), (self.count, *padded))
            else:
                views[ti] = views[ti].reshape((self.count, *padded))
        return InvokeContext(views, self.ctx.scratch_views)

    # -- running ----------------------------------------------------------------------------------------------------
    def run(self, *inputs: Any) -> list[np.ndarray]:
        """One step of every stream: ``inputs[k]`` is ``[streams, *shape of model input k]``; returns every model
        output as ``[streams, *shape]`` (copies)."""
        if len(inputs) != len(self.inputs):
            raise InputError(f"the model takes {len(self.inputs)} input(s), got {len(inputs)}")
        for k, (ti, value) in enumerate(zip(self.inputs, inputs)):
            t = self.tensors[ti]
            value = np.asarray(value)
            want = (self.count, *t.shape)
            if value.shape != want or value.dtype != t.dtype:
                raise InputError(f"input {k} ({t.name!r}): expected {t.dtype} {want} (one row per stream), got "
                                 f"{value.dtype} {value.shape}")
            self.views[ti][...] = value
        with quiet_floats():
            for step in self.steps:
                step()
        return [self.views[ti].copy() for ti in self.outputs]

    def reset(self) -> None:
        """Every stream back to its state after the build: variable tensors to their initial value, every kernel's
        per-stream state cleared."""
        for t, v in zip(self.tensors, self.views):
            if t.is_variable and v is not None:
                for s in range(self.count):
                    reset_variable(t, v[s])
        for step in self.steps:
            step.reset()


class _Call:
    """The kernel's own ``invoke`` on stream views (stateless)."""

    def __init__(self, kernel: Any, ctx: InvokeContext, op: Any, data: Any):
        self.kernel, self.ctx, self.op, self.data = kernel, ctx, op, data

    def __call__(self) -> None:
        self.kernel.invoke(self.ctx, self.op, self.data)

    def reset(self) -> None:
        """No state."""


class _Bound:
    """The kernel's bound call on the stream views (stateless)."""

    def __init__(self, call: Any):
        self.call = call

    def __call__(self) -> None:
        self.call()

    def reset(self) -> None:
        """No state."""


class _Explicit(_Call):
    """The kernel's ``invoke_streams`` with its per-stream state."""

    def __init__(self, decl: Any, ctx: InvokeContext, op: Any, data: Any, state: Any):
        super().__init__(decl.kernel, ctx, op, data)
        self.decl, self.state = decl, state

    def __call__(self) -> None:
        self.decl.invoke_streams(self.ctx, self.op, self.data, self.state)

    def reset(self) -> None:
        self.decl.reset_streams(self.data, self.state)


class _OneByOne(_Call):
    """A stateless op without a declaration: its single-stream ``invoke`` once per stream, through the single-stream
    views."""

    def __init__(self, kernel: Any, streams: Streams, op: Any, data: Any):
        super().__init__(kernel, InvokeContext(streams.single, streams.ctx.scratch_views), op, data)
        self.single, self.views, self.count = streams.single, streams.views, streams.count
        self.ins = [t for t in op.inputs if t >= 0 and streams.tensors[t].data is None and streams.views[t] is not None]
        self.outs = [t for t in op.outputs if t >= 0 and streams.views[t] is not None]

    def __call__(self) -> None:
        for s in range(self.count):
            for t in self.ins:
                self.single[t][...] = self.views[t][s]
            self.kernel.invoke(self.ctx, self.op, self.data)
            for t in self.outs:
                self.views[t][s] = self.single[t]


def _check_count(streams: Any) -> None:
    if not isinstance(streams, (int, np.integer)) or isinstance(streams, bool) or streams < 1:
        raise ConfigError(f"streams must be a positive number, got {streams!r}")


def run_streams(model: Any, sequences: Sequence[np.ndarray] | np.ndarray, streams: int = 64,
                **interpreter_options: Any) -> np.ndarray:
    """Every sequence of a one-input, one-output model's inputs (``[N, steps, *input shape]``) through its own
    stream, ``streams`` at a time, each from the model's initial state: ``[N, steps, *output shape]``, what ``N``
    interpreters fed one sequence each would give."""
    _check_count(streams)
    seqs = np.asarray(sequences)
    if seqs.ndim < 2:
        raise InputError(f"sequences must be [N, steps, ...], got shape {seqs.shape}")
    runner: Streams | None = None
    chunks = []
    for start in range(0, len(seqs), streams):
        part = seqs[start:start + streams]
        if runner is None or runner.count != len(part):
            runner = Streams(model, len(part), **interpreter_options)
        else:
            runner.reset()
        if len(runner.inputs) != 1 or len(runner.outputs) != 1:
            raise ConfigError("run_streams takes one-input, one-output models (use Streams for others)")
        t = runner.tensors[runner.inputs[0]]
        if math.prod(part.shape[2:]) != math.prod(t.shape):
            raise InputError(f"each step of a sequence must hold {math.prod(t.shape)} values (the model's input "
                             f"{t.shape}), got shape {part.shape[2:]}")
        chunks.append(np.stack([runner.run(part[:, k].reshape(len(part), *t.shape))[0]
                                for k in range(part.shape[1])], axis=1))
    return np.concatenate(chunks) if chunks else np.zeros((0,), np.int8)
