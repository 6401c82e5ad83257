"""Discrete-event simulation of a task graph on two concurrent resources: the CPU and the IO chain (DMA + SD card).

SwapNN's scheduler: tasks go INIT -> READY (every predecessor finished) -> SELECTED (its buffer was allocated and its
resource took it) -> FINISHED (successors' in-degrees decremented, buffers freed). Two ready queues — IO tasks and
compute tasks — are ordered by priority ``(frame, position in the pager's sequential order)``, so earlier frames and
layers go first. Whenever a resource is free it takes the highest-priority ready task it may select:

- the IO worker: a write (needs no buffer) or a read whose pool can take its buffer;
- the CPU: a compute whose output band can be allocated (the first compute of a tile allocates it; later channel
  tiles of the same tile reuse it);
- ``join`` tasks (zero time, no resource) finish as soon as they are ready.

Allocation rule (why this cannot deadlock with separate pools of any split, e.g. 1:2:1). Within one frame a pool's
buffers are allocated in the pager's sequential order (the order the engine itself uses, whose working set fits the
pools by construction): then the frame's earliest unfinished task always finds its buffer, because everything
allocated before it in that pool was allocated by finished tasks and is exactly what the engine holds at that
point. A later frame may allocate in a pool only while, for every earlier unfinished frame ``g``, the bytes held by
frames after ``g`` plus the largest sequential usage ``g`` still has ahead of it fit the pool. So the oldest frame
always progresses, and when it finishes the next one is the oldest. Reads may still run ahead of compute as far as
the pools allow (prefetching the next band, the next weight tiles, the next layer's weights, the next frame).
The simulation checks this and raises ``RuntimeError`` if it ever stalls with work left.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .tasks import COMPUTE, JOIN, POOLS, READ, WRITE, Task, TaskGraph


@dataclass
class Schedule:
    """The simulated timeline (cycles). ``frame_start``/``frame_end``: first task start and last task end per frame."""

    graph: TaskGraph
    makespan: float
    frame_start: list[float]
    frame_end: list[float]
    busy: dict[str, float]                          # cpu, io, sd_read, sd_write (cycles)
    pool_events: list[tuple[float, str, int, int, int]] = field(default_factory=list)  # (t, pool, +-bytes, buf, f)

    @property
    def clock_hz(self) -> float:
        return self.graph.clock_hz

    def seconds(self, cycles: float) -> float:
        return cycles / self.graph.clock_hz

    @property
    def latency_cycles(self) -> float:
        """Latency of frame 0 (its first task to its last)."""
        return self.frame_end[0] - self.frame_start[0]

    @property
    def frame_latencies(self) -> list[float]:
        return [e - s for s, e in zip(self.frame_start, self.frame_end)]

    @property
    def period_cycles(self) -> float:
        """Cycles per frame over the whole run (makespan / frames): the inverse throughput of F frames."""
        return self.makespan / len(self.frame_end)

    def tasks(self, kind: str | None = None, frame: int | None = None) -> list[Task]:
        return [t for t in self.graph.tasks if t.kind != JOIN and (kind is None or t.kind == kind)
                and (frame is None or t.frame == frame)]


class _State:
    def __init__(self, g: TaskGraph):
        self.g = g
        self.frames = g.frames
        self.cap = dict(g.pools)
        self.held = [{p: 0 for p in POOLS} for _ in range(g.frames)]
        self.free = dict(g.pools)
        # per frame and pool: allocating tasks in sequential order, and the next one's index
        self.allocs: list[dict[str, list[Task]]] = [{p: [] for p in POOLS} for _ in range(g.frames)]
        # per frame: unfinished task count per seq position, and the earliest unfinished position
        self.left = [[0] * (g.seq_len + 1) for _ in range(g.frames)]
        for t in sorted(g.tasks, key=lambda t: t.seq):
            if t.kind == JOIN:
                continue
            if t.alloc is not None:
                self.allocs[t.frame][t.alloc].append(t)
            self.left[t.frame][t.seq] += 1
        self.next_alloc = [{p: 0 for p in POOLS} for _ in range(g.frames)]
        self.earliest = [0] * g.frames
        self.frame_left = [0] * g.frames
        for t in g.tasks:
            if t.kind != JOIN:
                self.frame_left[t.frame] += 1
        for f in range(g.frames):
            self._advance(f)
        self.live: dict[int, tuple[str, int, int]] = {}

    def _advance(self, f: int) -> None:
        left, e = self.left[f], self.earliest[f]
        while e < self.g.seq_len and left[e] == 0:
            e += 1
        self.earliest[f] = e

    def allocatable(self, t: Task) -> bool:
        pool = t.alloc
        if pool is None or t.buf_id in self.live:
            return True
        f = t.frame
        lst, i = self.allocs[f][pool], self.next_alloc[f][pool]
        if i >= len(lst) or lst[i] is not t:
            return False                       # in order within a frame
        s = t.buffer
        if s > self.free[pool]:
            return False
        cap = self.cap[pool]
        newer = s + sum(self.held[h][pool] for h in range(f + 1, self.frames))
        for g in range(f - 1, -1, -1):         # every earlier unfinished frame keeps room for its own future
            newer += self.held[g + 1][pool]
            if self.frame_left[g] == 0:
                continue
            e = self.earliest[g]
            ahead = self.g.suffix_peak[pool][e] if e < self.g.seq_len else 0
            if newer + ahead > cap:
                return False
        return True

    def allocate(self, t: Task, now: float, events: list | None) -> None:
        pool = t.alloc
        if pool is None or t.buf_id in self.live:
            return
        self.held[t.frame][pool] += t.buffer
        self.free[pool] -= t.buffer
        self.next_alloc[t.frame][pool] += 1
        self.live[t.buf_id] = (pool, t.buffer, t.frame)
        if events is not None:
            events.append((now, pool, t.buffer, t.buf_id, t.frame))

    def release(self, t: Task, now: float, events: list | None) -> None:
        for pool, _nbytes, bid in t.frees:
            rec = self.live.pop(bid, None)
            if rec is None:
                continue
            _, nbytes, f = rec
            self.held[f][pool] -= nbytes
            self.free[pool] += nbytes
            if events is not None:
                events.append((now, pool, -nbytes, bid, f))


def simulate(graph: TaskGraph, *, record_pools: bool = True, preempt: bool = False) -> Schedule:
    """Run the two workers over ``graph`` (see the module docstring); every task gets ``start``/``end`` cycles and
    its ``segments`` (one, or several when it was preempted).

    ``preempt=True``: the CPU is priority-preemptive across frames (an RTOS would do this with one task per frame):
    when a compute of an earlier frame becomes ready while a later frame's compute runs, the later one is suspended
    (its buffers stay allocated) and resumes when the CPU is free again. SD commands are never preempted."""
    tasks = graph.tasks
    st = _State(graph)
    npred = [t.npred for t in tasks]
    for t in tasks:
        t.state, t.start, t.end = "INIT", -1.0, -1.0
        t.segments = []
    remaining: dict[int, float] = {}
    valid: set[int] = set()
    cpu_run: list = [None, 0.0, 0]          # running compute task, its segment start, its heap token
    ready_cpu: list[tuple[int, int, int]] = []        # (frame, seq, id)
    ready_write: list[tuple[int, int, int]] = []
    running: list[tuple[float, int, int]] = []       # (end, order, id)
    busy_until = {"cpu": 0.0, "io": 0.0}
    busy = {"cpu": 0.0, "io": 0.0, "sd_read": 0.0, "sd_write": 0.0}
    events: list | None = [] if record_pools else None
    frames = graph.frames
    f_start = [float("inf")] * frames
    f_end = [0.0] * frames
    counter = 0
    now = 0.0
    unfinished = sum(1 for t in tasks if t.kind != JOIN)

    def make_ready(t: Task) -> None:
        t.state = "READY"
        if t.kind == JOIN:
            finish(t)
        elif t.kind == COMPUTE:
            heapq.heappush(ready_cpu, (t.frame, t.seq, t.id))
        elif t.kind == WRITE:
            heapq.heappush(ready_write, (t.frame, t.seq, t.id))
        # reads are found through their pool's next allocation

    def finish(t: Task) -> None:
        nonlocal unfinished
        t.state = "FINISHED"
        if t.kind != JOIN:
            t.end = now
            unfinished -= 1
            st.release(t, now, events)
            st.left[t.frame][t.seq] -= 1
            st.frame_left[t.frame] -= 1
            st._advance(t.frame)
            f_end[t.frame] = max(f_end[t.frame], now)
        else:
            t.start = t.end = now
        for s in t.succ:
            npred[s] -= 1
            if npred[s] == 0:
                make_ready(tasks[s])

    def start(t: Task, resource: str) -> None:
        nonlocal counter
        st.allocate(t, now, events)
        t.state = "SELECTED"
        if t.start < 0:
            t.start = now
        cycles = remaining.pop(t.id, t.cycles)
        end = now + cycles
        busy_until[resource] = end
        busy[resource] += cycles
        if t.kind == READ:
            busy["sd_read"] += t.cycles
        elif t.kind == WRITE:
            busy["sd_write"] += t.cycles
        f_start[t.frame] = min(f_start[t.frame], now)
        counter += 1
        heapq.heappush(running, (end, counter, t.id))
        valid.add(counter)
        if resource == "cpu":
            cpu_run[:] = [t, now, counter]
        else:
            t.segments.append((now, end))

    def preemption() -> None:
        """Suspend the running compute when an earlier frame has a selectable compute ready."""
        t = cpu_run[0]
        if t is None or busy_until["cpu"] <= now or not ready_cpu:
            return
        best = pick_cpu()
        if best is None:
            return
        if best.frame < t.frame:
            valid.discard(cpu_run[2])
            left = busy_until["cpu"] - now
            remaining[t.id] = left
            busy["cpu"] -= left
            t.segments.append((cpu_run[1], now))
            cpu_run[0] = None
            busy_until["cpu"] = now
            heapq.heappush(ready_cpu, (t.frame, t.seq, t.id))
        heapq.heappush(ready_cpu, (best.frame, best.seq, best.id))

    def pick_io() -> Task | None:
        best: Task | None = None
        if ready_write:
            best = tasks[ready_write[0][2]]
        for f in range(frames):
            if best is not None and f > best.frame:
                break
            if st.frame_left[f] == 0:
                continue
            for pool in ("input", "weights"):
                lst, i = st.allocs[f][pool], st.next_alloc[f][pool]
                if i >= len(lst):
                    continue
                t = lst[i]
                if t.state != "READY" or t.kind != READ:
                    continue
                if best is not None and (t.frame, t.seq) >= (best.frame, best.seq):
                    continue
                if st.allocatable(t):
                    best = t
        if best is not None and best.kind == WRITE:
            heapq.heappop(ready_write)
        return best

    def pick_cpu() -> Task | None:
        skipped = []
        chosen = None
        while ready_cpu:
            item = heapq.heappop(ready_cpu)
            t = tasks[item[2]]
            if st.allocatable(t):
                chosen = t
                break
            skipped.append(item)
        for item in skipped:
            heapq.heappush(ready_cpu, item)
        return chosen

    for t in tasks:
        if t.npred == 0 and t.state == "INIT":
            make_ready(t)

    while True:
        if preempt:
            preemption()
        for resource, pick in (("io", pick_io), ("cpu", pick_cpu)):
            if busy_until[resource] <= now:
                t = pick()
                if t is not None:
                    start(t, resource)
        while running and running[0][1] not in valid:
            heapq.heappop(running)            # runs cut short by a preemption
        if not running:
            break
        now = running[0][0]
        while running and running[0][0] <= now:
            _, token, tid = heapq.heappop(running)
            if token not in valid:
                continue                      # a preempted run
            valid.discard(token)
            t = tasks[tid]
            if t.resource == "cpu":
                t.segments.append((cpu_run[1], now))
                cpu_run[0] = None
            finish(t)

    if unfinished:
        stuck = [t for t in tasks if t.state != "FINISHED" and t.kind != JOIN][:5]
        raise RuntimeError(f"schedule stalled with {unfinished} tasks left (first: {stuck}); pools "
                           f"{graph.pools}, free {st.free}")
    f_start = [0.0 if s == float("inf") else s for s in f_start]
    return Schedule(graph, now, f_start, f_end, busy, events or [])
