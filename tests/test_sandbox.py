"""The sandbox: setup errors with their fix, the opt-out, where this Python is mounted, the seccomp program's shape.
Attacks on the sandbox (network, writes, private files, host variables, timeouts, memory, capabilities, sysctls,
ptrace, other ABIs, pid 1) are in tests/attacks/ (kernelgym/grader/defences.py lists them)."""
import pytest

from kernelgym.errors import SandboxUnavailableError
from kernelgym.sandbox import BubblewrapSandbox, make_sandbox


def test_missing_bwrap_refuses_with_fix(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        BubblewrapSandbox(tmp_path)


def test_opt_out_warns(tmp_path):
    with pytest.warns(UserWarning, match="sandboxing is OFF"):
        make_sandbox("none", tmp_path)


def test_python_prefix_is_mounted_after_private_tmp(box, monkeypatch, tmp_path):
    # A venv under /tmp (e.g. a CI clone in /tmp) must not be hidden by the sandbox's private /tmp.
    import sys
    venv = str(tmp_path / "venv")  # wherever this suite's Python lives (on the GPU machine: under /opt)
    monkeypatch.setattr(sys, "prefix", venv)
    argv = box.argv(["true"])
    tmp_at = argv.index("/tmp")
    prefix_binds = [i for i, a in enumerate(argv) if a == venv]
    assert prefix_binds and min(prefix_binds) > tmp_at


def test_the_filter_is_built_only_for_known_machines():
    from kernelgym import seccomp
    assert seccomp.program("riscv64") is None
    for machine in ("x86_64", "aarch64"):
        prog = seccomp.program(machine)
        # load arch, check arch, load nr, [x32 bit,] one check per refused call, one per socket call, allow; load the
        # family, one check per allowed family, refuse, allow; deny: 8 bytes each
        n = (3 + (machine == "x86_64") + len(seccomp._REFUSED[machine]) + len(seccomp._SOCKET_CALLS[machine]) + 1
             + 1 + len(seccomp.AF_ALLOWED) + 2 + 1)
        assert len(prog) == 8 * n


def test_a_sandbox_bwrap_cannot_set_up_says_why(box, tmp_path):
    # bwrap reports its pid 1 before it mounts; pid 1 may be gone before the parent confines it.
    broken = BubblewrapSandbox(box.workspace, readonly=[tmp_path / "missing"])
    for _ in range(3):
        r = broken.run("echo RAN")
        assert "RAN" not in r.output and r.returncode != 0
        assert "Can't find source path" in r.output, r.output
