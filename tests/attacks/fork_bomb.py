"""Attack: a shell step starts processes without end (a review started 2000 in one step), to exhaust the host's
process table or memory until the command's timeout.

Defence: `cgroup_pids_limit` (every sandboxed command runs in a cgroup of its own whose pids.max counts its whole
tree, threads included; forks past it fail, the step's observation says the limit was hit, and the group is killed and
removed when the command ends).
Honest twin: a command that starts a few processes runs as before, and its output carries no note.
"""
import pytest

from kernelgym import cgroups
from kernelgym.sandbox import BubblewrapSandbox, Limits


@pytest.fixture
def small_box(box):
    if cgroups.unavailable_reason():
        pytest.fail(f"cgroups cannot be made here ({cgroups.unavailable_reason()}): the defence does not hold")
    return BubblewrapSandbox(box.workspace, limits=Limits(timeout_s=30, pids_max=40))


def test_forks_past_the_limit_fail_and_the_step_says_so(small_box):
    r = small_box.run("n=0; for i in $(seq 200); do (sleep 20 &) 2>/dev/null && n=$((n+1)); done; echo started=$n")
    started = int(r.output.split("started=")[1].split()[0])
    assert started < 200, r.output
    assert "limit of 40 processes" in r.output, r.output
    assert not r.timed_out


def test_honest_twin_a_few_processes_run_and_no_note(small_box):
    r = small_box.run("for i in 1 2 3; do (true &); done; echo done")
    assert "done" in r.output and "limit of" not in r.output and r.returncode == 0


def test_the_group_is_removed_with_its_leftovers(small_box):
    import os
    import time
    parent = cgroups._PARENTS[0].get("pids") or cgroups._PARENTS[0]["v2"]
    before = set(os.listdir(parent))
    small_box.run("(sleep 61.5 &); echo left")

    def ours():
        # New groups holding this run's leftover (`sleep 61.5`): groups that other tests' sandboxes make meanwhile
        # (the suite runs in parallel) are not this run's.
        found = set()
        for d in set(os.listdir(parent)) - before:
            if not d.startswith("kernelgym-"):
                continue
            try:
                pids = open(os.path.join(parent, d, "cgroup.procs")).read().split()
            except OSError:
                continue  # removed meanwhile
            for pid in pids:
                try:
                    if open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[:2] == [b"sleep", b"61.5"]:
                        found.add(d)
                except OSError:
                    pass
        return found

    deadline = time.monotonic() + 5  # removal finishes in the background once the members are gone
    while ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ours()
