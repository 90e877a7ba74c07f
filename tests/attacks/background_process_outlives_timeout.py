"""Attack: a command starts a background loop and outlives its own timeout: killing only the top process leaves the
loop running (using the host, writing into the workspace) after the step has ended.

Defence: `process_group_kill` (each command runs in its own session; on timeout, and on success, the whole process
group is killed, for the sandbox and for the explicit opt-out alike).
Honest twin: a command that ends within its limit keeps its output (every other sandbox test).
"""
import contextlib
import time

import pytest

from kernelgym.sandbox import Limits, make_sandbox


@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_timeout_kills_children(tmp_path, backend, require_bwrap):
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.warns(UserWarning) if backend == "none" else contextlib.nullcontext():
        box = make_sandbox(backend, ws)
    cmd = "(while true; do date +%s%N > tick; sleep 0.05; done) & sleep 60"
    r = box.run(cmd, limits=Limits(timeout_s=1.0))
    assert r.timed_out and "timed out" in r.describe()
    before = (ws / "tick").read_text()
    time.sleep(0.5)
    assert (ws / "tick").read_text() == before, "a background child survived the timeout"
