"""Worker processes that embed batches for a :class:`BatchedEmbedder`, so that every core works.

A numpy model (USE) runs one core per process: its matrices are too small for BLAS threads to
pay, and on a busy machine spinning BLAS threads cost more than they give. So the batching layer
runs the same batches in several processes instead, the calling process being one of them.

The workers are plain child processes (``python -m recallwatch.embedders._workers``) fed over
pipes, not ``multiprocessing``: ``multiprocessing`` would re-run the caller's ``__main__`` module
in each worker, which breaks scripts that call recallwatch at top level. A worker builds its own
embedder from the class and constructor options it is given (the weights are loaded once per
worker), then answers ``(batch number, texts, role)`` with the raw vectors of that batch. Each batch
goes through the same model call as it would in the calling process, so the vectors are the same
bit for bit (the tests hold them to it).
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue
from typing import IO, Any

import numpy as np

from recallwatch.errors import EmbedderError

__all__ = ["Spec", "WorkerPool"]

Spec = tuple[str, str, dict[str, Any]]  # module, class name, constructor options
Result = tuple[int, np.ndarray]


@dataclass
class _Worker:
    proc: subprocess.Popen[bytes]
    stderr: IO[bytes]
    ready: threading.Event = field(default_factory=threading.Event)
    failed: str | None = None


class WorkerPool:
    """``size`` worker processes for one embedder configuration, started in the background."""

    def __init__(self, spec: Spec, size: int) -> None:
        self.spec = spec
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        for _ in range(size):
            self._workers.append(self._start())

    def _start(self) -> _Worker:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        env = dict(os.environ)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core per worker, whatever the model
        env.setdefault("OMP_NUM_THREADS", "1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "recallwatch.embedders._workers"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
        )
        worker = _Worker(proc, stderr)
        assert proc.stdin is not None
        pickle.dump(self.spec, proc.stdin)
        proc.stdin.flush()
        threading.Thread(target=self._await_ready, args=(worker,), daemon=True).start()
        return worker

    @staticmethod
    def _await_ready(worker: _Worker) -> None:
        try:
            assert worker.proc.stdout is not None
            status = pickle.load(worker.proc.stdout)
            if status != "ready":
                worker.failed = str(status)
        except (EOFError, OSError, pickle.UnpicklingError):
            worker.failed = "the worker process ended while loading the model"
        worker.ready.set()

    def run(
        self, batches: Sequence[list[str]], role: str, local: Callable[[list[str]], np.ndarray]
    ) -> Iterator[Result]:
        """Each batch's raw vectors as ``(batch number, array)``, in the order they finish.

        The calling process works through the queue with ``local`` too; a worker takes batches
        once its model is loaded. A worker that fails hands its batch back to the queue.
        """
        todo: SimpleQueue[int] = SimpleQueue()
        for n in range(len(batches)):
            todo.put(n)
        done: SimpleQueue[Result | BaseException] = SimpleQueue()
        stop = threading.Event()
        threads = [threading.Thread(target=self._serve, args=(w, batches, role, todo, done, stop),
                                    daemon=True) for w in self._workers]
        for t in threads:
            t.start()
        received = 0
        try:
            while received < len(batches):
                try:  # answers first, so they are handed on as soon as they come
                    item = done.get_nowait()
                except Empty:
                    try:
                        n = todo.get_nowait()
                    except Empty:  # all taken: wait for an answer (or a batch handed back)
                        try:
                            item = done.get(timeout=0.05)
                        except Empty:
                            continue
                    else:
                        received += 1
                        yield n, local(batches[n])
                        continue
                if isinstance(item, BaseException):
                    raise item
                received += 1
                yield item
        finally:
            stop.set()
            for t in threads:
                t.join()

    def _serve(self, worker: _Worker, batches: Sequence[list[str]], role: str,
               todo: SimpleQueue[int], done: SimpleQueue[Result | BaseException],
               stop: threading.Event) -> None:
        while not worker.ready.wait(0.05):
            if stop.is_set():
                return
        if worker.failed is not None:
            return
        assert worker.proc.stdin is not None and worker.proc.stdout is not None
        while not stop.is_set():
            try:
                n = todo.get_nowait()
            except Empty:
                return
            try:
                pickle.dump((n, batches[n], role), worker.proc.stdin)
                worker.proc.stdin.flush()
                answer = pickle.load(worker.proc.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                worker.failed = "the worker process ended"
                todo.put(n)  # the caller (or another worker) does it
                return
            if isinstance(answer, str):  # the model raised: the same error would in-process
                done.put(EmbedderError(f"embedding worker: {answer}"))
                return
            done.put(answer)

    def close(self) -> None:
        for worker in self._workers:
            try:
                if worker.proc.stdin is not None:
                    pickle.dump(None, worker.proc.stdin)
                    worker.proc.stdin.close()
            except OSError:
                pass
        for worker in self._workers:
            try:
                worker.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.proc.wait()
            if worker.proc.stdout is not None:
                worker.proc.stdout.close()
            worker.stderr.close()
        self._workers = []


def _serve_forever(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """The worker's side: build the embedder, then embed batches until told to stop."""
    module, qualname, options = pickle.load(stdin)
    try:
        embedder = getattr(importlib.import_module(module), qualname)(**options, workers=1)
    except Exception as exc:  # reported to the caller, which then works alone
        pickle.dump(f"{type(exc).__name__}: {exc}", stdout)
        stdout.flush()
        return
    pickle.dump("ready", stdout)
    stdout.flush()
    while True:
        try:
            message = pickle.load(stdin)
        except EOFError:  # the caller went away
            return
        if message is None:
            return
        n, texts, role = message
        try:
            answer: Any = (n, np.asarray(embedder._embed_batch(texts, role)))
        except Exception as exc:
            answer = f"{type(exc).__name__}: {exc}"
        pickle.dump(answer, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


if __name__ == "__main__":
    _serve_forever(sys.stdin.buffer, sys.stdout.buffer)
