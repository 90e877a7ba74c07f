"""An observed run started ahead, as a real process, for the grader's tests on a machine without a GPU (the observer
cannot really run): `sleeper` stands in for its process, `with_run_ahead` gives every session of a `fake_grader` one
(as `Grader._prepare_observer` leaves it, under the kernel tracer), and `fake_fresh_runs` stands in for a fresh
observed run and for reading what a run saw."""
from kernelgym.grader.observer import ObserverError


def sleeper(seconds, code=0, prepared=True):
    """A stand-in for a run ahead: prints the prepared marker (where `prepared`), sleeps, exits with `code`."""
    import subprocess
    import sys

    from kernelgym.grader.protocol import PREPARED_MARKER
    script = (f"import sys, time\n{'print(%r, flush=True)' % PREPARED_MARKER if prepared else ''}\n"
              f"time.sleep({seconds}); sys.exit({code})\n")
    return subprocess.Popen([sys.executable, "-c", script], start_new_session=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def with_run_ahead(g, monkeypatch, make_proc, prepared_output=True):
    """Every session of `g` (under the tracer, observed apart from its checked run) gets a run ahead `make_proc()`, as `_prepare_observer` leaves it;
    returns the processes made."""
    import collections
    import dataclasses

    from kernelgym.grader.observing import _ObservedRun
    from kernelgym.grader.protocol import PREPARED_MARKER
    procs, session_for = [], g._session_for
    g._tool = "tracer"
    monkeypatch.setattr(g, "observer_unavailable", lambda: None)
    g.config = dataclasses.replace(g.config, observe_in_checked_run=False)  # a run of its own observes

    def session_with_run_ahead(seed):
        session = session_for(seed)
        procs.append(make_proc())
        output = collections.deque([PREPARED_MARKER + "\n"] if prepared_output else [], maxlen=400)
        g._observing = _ObservedRun(procs[-1], session.gdir, g._observer_source(), g._observer_dir(), output)
        return session
    monkeypatch.setattr(g, "_session_for", session_with_run_ahead)
    return procs


def fake_fresh_runs(g, monkeypatch, seconds, observed):
    """A fresh observed run takes `seconds` and sees `observed` (so does the baseline's); a run ahead's exit is
    read as the real code reads it (nonzero: an ObserverError). Returns the fresh runs' start times."""
    import time as _time
    from types import SimpleNamespace

    from kernelgym.grader.protocol import OUTPUTS
    calls = []

    class Sandbox:
        def run(self, argv, limits=None):
            calls.append(_time.monotonic())
            _time.sleep(seconds)
            return SimpleNamespace(timed_out=False, returncode=0, output="")

    def read(results, timed_out, code, output, prepared=False):
        if timed_out or code != 0:
            raise ObserverError(f"the profiler exited with code {code}")
        g._observed_outputs = g.session.gdir / OUTPUTS  # the checked outputs stand for the observed ones
        return observed
    monkeypatch.setattr(g, "_observer_command", lambda *a, **k: (Sandbox(), ["observed"]))
    monkeypatch.setattr(g, "_read_observation", read)
    monkeypatch.setattr(g, "baseline_observation", lambda: observed)
    return calls
