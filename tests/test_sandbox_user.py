"""The sandbox's user: never host root, also where kernelgym runs as root (the default in containers, and this suite's
machine), and the workspace stays usable by both sides.

On the old behaviour (bwrap's user namespace mapping the sandbox's uid 0 to host uid 0) the first three tests fail
when the suite runs as root: /etc/shadow was readable, a setuid file made in the workspace was a root setuid file on
the host, and the sandbox's uid was host uid 0. Run by another user they hold trivially (the sandbox is that user).
"""
import os
import stat
import sys
import time

import pytest

from kernelgym.sandbox import BubblewrapSandbox, Limits, hand_over, kill_group, sandbox_user


def _host_uid(output: str) -> int:
    """The host uid of the sandbox's user, from ``id -u`` and /proc/self/uid_map printed in the sandbox."""
    lines = output.splitlines()
    inside = int(lines[0])
    for line in lines[1:]:
        first, host, count = (int(x) for x in line.split())
        if first <= inside < first + count:
            return host + inside - first
    raise AssertionError(f"uid {inside} not mapped: {output}")


def test_etc_shadow_is_unreadable(box):
    assert os.path.exists("/etc/shadow"), "this test needs a host with /etc/shadow"
    r = box.run("cat /etc/shadow && echo READ_SHADOW")
    assert "READ_SHADOW" not in r.output and r.returncode != 0
    assert "Permission denied" in r.output, r.output


def test_the_sandbox_user_is_not_host_root(box):
    r = box.run("id -u; cat /proc/self/uid_map")
    assert r.returncode == 0, r.output
    host = _host_uid(r.output)
    assert host != 0, r.output
    assert host == (sandbox_user() or (os.getuid(), 0))[0]


def test_a_setuid_file_made_in_the_sandbox_is_not_setuid_root_on_the_host(box):
    r = box.run("cp /bin/true suid && chmod u+s suid && echo MADE")
    assert "MADE" in r.output, r.output
    st = os.stat(box.workspace / "suid")
    assert st.st_mode & stat.S_ISUID  # the chmod took: the file is setuid, to the sandbox's user
    assert st.st_uid != 0, "a setuid-root file was made on the host"


def test_no_capability_is_left(box):
    r = box.run("grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status")
    caps = dict(line.split(":") for line in r.output.splitlines() if line.startswith("Cap"))
    assert len(caps) == 5 and all(int(v, 16) == 0 for k, v in caps.items() if k != "CapBnd"), r.output
    if sandbox_user():
        assert int(caps["CapBnd"], 16) == 0, r.output  # the drop cleared the bounding set too


def test_files_the_trusted_side_writes_are_writable_in_the_sandbox_and_back(box):
    (box.workspace / "kernel.py").write_text("x = 1\n")  # as the env's write_file does, as kernelgym's user
    (box.workspace / "sub").mkdir(mode=0o700)
    (box.workspace / "sub" / "deep.txt").write_text("deep\n")
    r = box.run("echo y = 2 >> kernel.py && echo more >> sub/deep.txt && mkdir made && echo new > made/f && "
                "chmod 600 made/f && echo OK")
    assert "OK" in r.output, r.output
    assert (box.workspace / "kernel.py").read_text() == "x = 1\ny = 2\n"
    assert (box.workspace / "sub" / "deep.txt").read_text() == "deep\nmore\n"
    assert (box.workspace / "made" / "f").read_text() == "new\n"  # kernelgym reads what the sandbox made


def test_tmp_and_home_are_writable(box):
    r = box.run("echo a > /tmp/a && echo b > /dev/shm/b && echo c > \"$HOME/c\" && cat /tmp/a /dev/shm/b \"$HOME/c\"")
    assert r.output.split() == ["a", "b", "c"], r.output


def test_a_private_read_only_path_is_readable(box, tmp_path):
    private = tmp_path / "private-ro"
    private.mkdir(mode=0o700)
    (private / "f").write_text("secret-for-the-sandbox\n")
    os.chmod(private / "f", 0o600)
    ro = BubblewrapSandbox(box.workspace, readonly=[private], limits=Limits(timeout_s=30))
    r = ro.run(f"cat {private}/f; echo x > {private}/g")
    assert "secret-for-the-sandbox" in r.output, r.output
    assert not (private / "g").exists()


def test_hand_over_follows_no_link(box, tmp_path):
    # Files of the host that a link or a hard link in the workspace names are never given to the sandbox user.
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    os.chmod(outside, 0o600)
    (box.workspace / "link").symlink_to(outside)
    os.link(outside, box.workspace / "hard")
    owner = os.stat(outside).st_uid
    hand_over(box.workspace, 65534, 65534)
    assert os.stat(outside).st_uid == owner
    assert os.lstat(box.workspace / "link").st_uid == owner


def test_the_rlimits_are_set_in_the_sandbox(box):
    r = box.run("ulimit -v; ulimit -f; ulimit -c; ulimit -t", limits=Limits(timeout_s=30, memory_bytes=1 << 30,
                                                                            max_file_bytes=1 << 20))
    assert r.output.split() == [str((1 << 30) // 1024), str((1 << 20) // 512), "0", str(30 * 4 + 10)], r.output


@pytest.mark.timeout(60)
def test_a_long_lived_sandbox_reads_a_directory_made_after_it_started(box):
    # The grader makes an owner-only grading directory after its worker started, then tells the worker about it.
    proc = box.popen([sys.executable, "-c", "import sys\nfor line in sys.stdin:\n"
                      "    print(open(line.strip()).read().strip(), flush=True)"], limits=Limits(timeout_s=30))
    try:
        time.sleep(0.2)
        later = box.workspace / "grade-1"
        later.mkdir(mode=0o700)
        (later / "request.json").write_text("{}\n")
        os.chmod(later / "request.json", 0o600)
        proc.stdin.write(f"{later / 'request.json'}\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "{}"
    finally:
        kill_group(proc)


def test_the_sandbox_user_cannot_signal_or_read_pid_1(box):
    if not sandbox_user():
        pytest.skip("run by an unprivileged user, bwrap's pid 1 is that user (the pidfd kill covers it)")
    r = box.run("kill -9 1; echo killed=$?; ls /proc/1/fd > /dev/null 2>&1; echo fd=$?")
    assert "killed=0" not in r.output and "fd=0" not in r.output, r.output



def test_device_groups_never_include_root_and_only_groups_the_mode_serves(tmp_path):
    from kernelgym.sandbox import _device_groups
    if os.geteuid() != 0:
        pytest.skip("setting the nodes' groups needs root")
    nodes = {"render": (0o660, 4242), "root-only": (0o400, 0), "root-group": (0o660, 0), "open": (0o666, 4343),
             "owner-only": (0o600, 4444)}
    for name, (mode, gid) in nodes.items():
        (tmp_path / name).write_text("")
        os.chmod(tmp_path / name, mode)
        os.chown(tmp_path / name, -1, gid)
    assert _device_groups([str(tmp_path / n) for n in nodes]) == [4242]


def test_without_setpriv_this_python_drops_the_user(box, monkeypatch):
    import shutil
    if not sandbox_user():
        pytest.skip("run by an unprivileged user there is nothing to drop")
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None if name == "setpriv" else which(name, path=path))
    fallback = BubblewrapSandbox(box.workspace, limits=Limits(timeout_s=30))
    assert "setpriv" not in " ".join(fallback._drop)
    r = fallback.run("id -u; grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status")
    lines = r.output.split()
    assert lines[0] == str(sandbox_user()[0]) and all(set(v) == {"0"} for v in lines[2::2]), r.output
