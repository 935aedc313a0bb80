"""The clusters of a fleet rendered in worker processes, for ``render.tree.render_fleet``.

A cluster's files, pool lock and summary come from the fleet model and that cluster's own snapshots
and lock, so clusters render independently. The workers are forked: they inherit the loaded fleet and
the snapshots' digests (nothing is pickled to them); each renders one cluster at a time and sends back
its part (files and lock as bytes, the summary), and what it parsed for that cluster is released
before the next. The caller merges the parts in cluster-name order, so the bytes are the same whatever
the number of workers and the order they finish in.

A cluster that fails in a worker is rendered again in the calling process, in name order, so the error
raised is the sequential render's (the first failing cluster's, its own exception type and text) and no
exception crosses a process boundary. Without ``fork`` (not Linux) or with one worker, nothing forks.
``GPUFLEET_RENDER_WORKERS`` caps the workers (1: no worker processes).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

WORKERS_ENV = "GPUFLEET_RENDER_WORKERS"

_JOB: Callable[[str], Any] | None = None  # set in the parent before the fork; the workers inherit it


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def worker_count(clusters: int, requested: int | None = None) -> int:
    """How many processes render ``clusters`` clusters: ``requested``, else ``GPUFLEET_RENDER_WORKERS``,
    else one per core; never more than the clusters; 1 where ``fork`` is not available."""
    if requested is None:
        env = os.environ.get(WORKERS_ENV, "").strip()
        requested = int(env) if env.isdigit() and int(env) > 0 else cores()
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(requested, clusters))


def _run(name: str) -> tuple[str, Any]:
    job = _JOB
    try:
        return name, job(name) if job is not None else None
    except Exception:  # rendered again in the parent, which raises it (see above)
        return name, None


def render_parts(names: list[str], workers: int, job: Callable[[str], Any]) -> dict[str, Any]:
    """``{name: job(name)}`` for every name, the jobs run in ``workers`` forked processes."""
    global _JOB
    _JOB = job
    for stream in (sys.stdout, sys.stderr):  # a forked worker flushes what it inherited: nothing, then
        stream.flush()
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            done: dict[str, Any] = dict(pool.map(_run, names, chunksize=1))
    except BrokenProcessPool:  # a worker died (killed, out of memory): render in this process
        done = {}
    finally:
        _JOB = None
    for name in names:
        if done.get(name) is None:
            done[name] = job(name)  # raises this cluster's own error, as the sequential render does
    return done
