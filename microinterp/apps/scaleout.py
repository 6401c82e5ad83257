"""Exact dataset evaluation spread over processes or a Ray cluster.

The samples are cut into contiguous chunks; every worker builds the interpreter once from the model's bytes (and
its own rebatched copy, :mod:`microinterp.batch`) and returns its chunk's outputs, which are put back in order. Each
chunk is what ``invoke_batch`` computes for it, so the result equals the single-process run bit for bit.

* ``jobs=N`` -- N local worker processes (``concurrent.futures``, spawn start method: no state is shared).
* ``ray=ADDRESS`` -- Ray tasks (the optional ``ray`` extra): ``ray.init(address)`` when Ray is not running yet
  (``"local"`` or ``None`` starts a local instance, ``"auto"`` joins a running cluster); the model bytes travel once
  through Ray's object store.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError

_WORKER: dict[str, Any] = {}


def _worker_interpreter(data: bytes) -> Any:
    from ..interpreter import Interpreter

    key = f"{len(data)}:{hash(data[:4096])}:{hash(data[-4096:])}"
    if _WORKER.get("key") != key:
        _WORKER.update(key=key, interp=Interpreter(data))
    return _WORKER["interp"]


def _run_chunk(data: bytes, arrays: Sequence[np.ndarray], batch: int) -> list[np.ndarray]:
    ys = _worker_interpreter(data).invoke_batch(list(arrays), batch)
    return [ys] if isinstance(ys, np.ndarray) else list(ys)


def _chunks(n: int, parts: int) -> list[tuple[int, int]]:
    size = -(-n // max(parts, 1))
    return [(a, min(n, a + size)) for a in range(0, n, size)] if n else []


def evaluate(model: Any, inputs: Any, batch: int = 64, *, jobs: int | None = None, ray: str | None = None,
             chunks: int | None = None, progress: Callable[[int, int], None] | None = None) -> Any:
    """Outputs of every sample (as :meth:`~microinterp.interpreter.Interpreter.invoke_batch`), computed by ``jobs``
    local processes or by Ray tasks (``ray``); ``chunks`` defaults to 4 per worker."""
    from ..model import load_model

    m = load_model(model)
    data = bytes(memoryview(m._raw))
    arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
    n = len(arrays[0]) if arrays else 0
    workers = jobs or 1
    if ray is not None:
        return _concat(_with_ray(data, arrays, batch, ray, chunks, progress, n))
    spans = _chunks(n, chunks or 4 * workers)
    results: list[list[np.ndarray] | None] = [None] * len(spans)
    done = 0
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(_run_chunk, data, [a[s:e] for a in arrays], batch): k
                   for k, (s, e) in enumerate(spans)}
        for fut in cf.as_completed(futures):
            k = futures[fut]
            results[k] = fut.result()
            done += spans[k][1] - spans[k][0]
            if progress is not None:
                progress(done, n)
    return _concat(results)


def _ray(address: str | None) -> Any:
    """The ``ray`` module, started (``"local"``/None: a local instance, else ``ray.init(address)``) unless it
    already runs; a clear error naming the extra when it is not installed."""
    try:
        import ray as ray_mod
    except ImportError:
        raise ConfigError("--ray needs the 'ray' package: pip install 'microinterp[ray]'") from None
    if not ray_mod.is_initialized():
        ray_mod.init(address=None if address in (None, "", "local") else address, ignore_reinit_error=True,
                     include_dashboard=False, log_to_driver=False)
    return ray_mod


def ray_map(fn: Callable[..., Any], args: Sequence[tuple], address: str | None = "local",
            shared: tuple = (), progress: Callable[[int], None] | None = None) -> list[Any]:
    """``[fn(*shared, *a) for a in args]`` as Ray tasks (Ray started by :func:`_ray`), results in order.
    ``shared`` arguments travel once through Ray's object store."""
    ray_mod = _ray(address)
    task = ray_mod.remote(fn)
    refs = [ray_mod.put(x) for x in shared]
    pending = {task.remote(*refs, *a): k for k, a in enumerate(args)}
    results: list[Any] = [None] * len(args)
    while pending:
        ready, _ = ray_mod.wait(list(pending), num_returns=1)
        k = pending.pop(ready[0])
        results[k] = ray_mod.get(ready[0])
        if progress is not None:
            progress(k)
    return results


def _with_ray(data: bytes, arrays: list[np.ndarray], batch: int, address: str, chunks: int | None,
              progress: Any, n: int) -> list[list[np.ndarray]]:
    workers = int(_ray(address).cluster_resources().get("CPU", 1))
    spans = _chunks(n, chunks or 4 * workers)
    done = [0]

    def tick(k: int) -> None:
        done[0] += spans[k][1] - spans[k][0]
        if progress is not None:
            progress(done[0], n)

    return ray_map(_run_chunk, [([a[s:e] for a in arrays], batch) for s, e in spans], address, shared=(data,),
                   progress=tick)


def _concat(results: list[list[np.ndarray] | None]) -> Any:
    if not results:
        return np.zeros((0,))
    outs = [np.concatenate([r[k] for r in results]) for k in range(len(results[0]))]
    return outs[0] if len(outs) == 1 else outs
