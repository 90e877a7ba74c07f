"""How a `Grader` gets its gradings ready before the submit: the warm worker and the processes spawned ahead of an
episode (worker.py, `harness --wait-request`), the grading session prepared while the agent works, and the grading
directories. A mixin of `Grader`, split out by concern; no verdict is decided here.
"""
from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from kernelgym.grader import gpu_schedule
from kernelgym.grader.files import copy_public, remove_tree, write_new
from kernelgym.grader.observing import _ObservedRun
from kernelgym.grader.protocol import REQUEST
from kernelgym.grader.session import GradingSession
from kernelgym.grader.worker import GraderWorker
from kernelgym.sandbox import kill_group

@dataclass
class _Spare:
    """The processes `Grader.spawn` started for the grader's first grading, before its seed was drawn."""

    gdir: Path
    worker: GraderWorker
    ahead: _ObservedRun | None

    def stop(self) -> None:
        self.worker.stop()
        if self.ahead is not None:
            kill_group(self.ahead.proc)


def _draw() -> float:
    """A uniform draw in [0, 1) the candidate cannot predict (whether this grading is observed)."""
    return secrets.randbelow(1 << 30) / (1 << 30)



class Preparing:
    """The preparing methods of `Grader` (see the module docstring)."""

    #: The observer's work for the prepared grading that `start_worker(seed, hold_observer=True)` held back until
    #: `release_observer`: that grading's session, its token, and the observed run `spawn` started (or None).
    _held_observer: "tuple[GradingSession, object, _ObservedRun | None] | None" = None

    def spawn(self) -> None:
        """Start this grader's first grading's processes before its seed is drawn: the warm worker, bound to a new
        grading directory, and (where the observer runs here) the observed run ahead, bound to directories of its
        own. Each imports torch and triton meanwhile and waits; `start_worker(seed)` then only has them prepare. The
        env calls it for the next episode while the episode before is graded, so that a reset followed at once by a
        submit does not wait for two Python processes to start. No candidate code runs in them before that grading;
        `stop_worker` kills them."""
        if self.keep_worker or self._spare is not None:
            return
        gdir = self._new_grading_dir()
        self._seed_kernel_cache(gdir)
        observed_apart = self.observer_unavailable() is None and not self.traces_checked_run
        ahead = self._start_observed_run(None, None) if observed_apart else None
        self._spare = _Spare(gdir, self._new_worker(gdir), ahead)

    def start_worker(self, seed: int | None = None, hold_observer: bool = False) -> None:
        """Start a warm worker (see worker.py), or take the one `spawn` started. With `seed`, also prepare the grading
        of that seed while the agent works: the next `grade(workspace, seed)` then only imports and runs the candidate
        (harness.prepare: CUDA start, inputs, the baseline's compilation and graphs; here: the reference outputs).
        The worker's sandbox then binds only that grading's directory, which the candidate therefore cannot rename or
        replace.

        Without `seed` the worker may write anywhere under `work_dir`: it serves only `keep_worker` gradings,
        which are of trusted code (the pristine original on unseen configs); `grade` uses it for nothing else.

        `hold_observer`: the observer's background work for this grading (the pristine baseline's observation where
        this process holds none, then the observed run ahead) waits for `release_observer`. The env holds it when it
        prepares the next episode's grading while the current episode's candidate runs: no candidate code may run
        beside the baseline's observation (its device times are kept for every later cross-check), and an observed
        run preparing under ncu (which flushes the caches before every kernel) must not overlap timed runs."""
        spare, self._spare = self._spare, None
        self.stop_worker()
        discarded, self._prepared = self._prepared, None
        if discarded is not None and not self.config.keep_grading_dirs:
            remove_tree(discarded.gdir)  # prepared for a seed no longer asked for (a reseeding reset): never graded
        if spare is not None and (seed is None or not spare.worker.alive()):
            spare.stop()
            spare = None
        if seed is None:
            self.worker = self._new_worker(None)
            return
        if spare is not None:
            # Spawned before any grading may have kept the baseline's compiled kernels (the first episodes made ahead).
            self._seed_kernel_cache(spare.gdir)
            session, self.worker = self._start_session(spare.gdir, seed), spare.worker
        else:
            session = self._new_session(seed)
            self._seed_kernel_cache(session.gdir)
            self.worker = self._new_worker(session.gdir)
        self.worker.prepare(session.gdir / REQUEST)
        self._prepared = session
        spawned = spare.ahead if spare is not None else None
        if self.observer_unavailable() is None:
            self._observe_drawn[session.gdir] = _draw() < self.config.observe_fraction
            self._ahead_token = token = object()
            self._held_observer = (session, token, spawned)
            if not hold_observer:
                self.release_observer()
        elif spawned is not None:
            kill_group(spawned.proc)

    def release_observer(self) -> None:
        """Start the observer's background work that `start_worker` held back (`hold_observer`); a no-op where none
        is held. `grade` releases it too, at the latest, before it waits for that work."""
        held, self._held_observer = self._held_observer, None
        if held is None:
            return
        session, token, spawned = held
        self._observer_thread = threading.Thread(target=self._prepare_observer, daemon=True,
                                                 args=(session, self._observe_drawn[session.gdir], token, spawned))
        self._observer_thread.start()

    def _new_worker(self, gdir: Path | None) -> GraderWorker:
        """A warm worker whose sandbox binds the grading directory `gdir` (None: all of `work_dir`, for
        `keep_worker` gradings of trusted code only)."""
        return GraderWorker(gdir or self.work_dir, self._readonly(), self.config.sandbox,
                            gpu=not self.hardware.interpreter, env=self._harness_env(gdir),
                            one_run=not self.keep_worker)

    def stop_worker(self) -> None:
        """Kill the warm worker, if any (and with it any grading it is running), any observed run started ahead, and
        the processes `spawn` started."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        if self._prepared is not None:
            self._prepared.references.cancel()  # if graded after all, `wait` computes the rest
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.stop()
        held, self._held_observer = self._held_observer, None
        if held is not None and held[2] is not None:
            kill_group(held[2].proc)  # the observed run `spawn` started, never given its request
        self.stop_observer()

    def _session_for(self, seed: int) -> GradingSession:
        """The session prepared by `start_worker` for this seed, or a fresh one (graded by a fresh process)."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared.seed == seed and self.worker is not None and self.worker.alive():
            prepared.started = time.monotonic()
            self.release_observer()  # where still held, it starts before this grading waits for it
            return prepared
        if not self.keep_worker:
            self.stop_worker()  # prepared for another seed, or not prepared: a fresh process grades
        return self._new_session(seed)

    def _new_session(self, seed: int) -> GradingSession:
        """A fresh grading directory with the task's pristine public files and the harness request for `seed`; the
        references start computing now. The editable files are copied in at grading time."""
        return self._start_session(self._new_grading_dir(), seed)

    def _new_grading_dir(self) -> Path:
        """A new owner-only grading directory under `work_dir` holding the task's pristine public files."""
        gdir = self.work_dir / f"grade-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        gdir.mkdir(parents=True, mode=0o700)  # owner-only: what the candidate leaves there is out of other users' reach
        copy_public(self.task, gdir)
        return gdir

    def _start_session(self, gdir: Path, seed: int) -> GradingSession:
        """The session of grading `gdir` (made by `_new_grading_dir`) with `seed`: its request written, its
        references computing from now."""
        timed = self._timed
        request = self._request(gdir, seed, timed)
        write_new(gdir / REQUEST, json.dumps(request.to_json()).encode())
        seen = self.configs == self.task.configs_for(self.hardware.interpreter)
        gpu = not self.hardware.interpreter
        session = GradingSession.start(self.task, gdir, seed, self.configs, timed, gpu=gpu, seen=seen,
                                       on_gpu=gpu and self.config.references_on_gpu,
                                       turn=lambda: gpu_schedule.shared_turn(self._gpu_lock, self.config))
        session.traced = request.traced
        return session
