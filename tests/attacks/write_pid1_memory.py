"""Attack: bwrap's pid 1 runs as the same user and is dumpable: through /proc/1/mem a command rewrites its code, no
ptrace needed, to clear its parent-death signal and outlive the sandbox (a review's attack). Here the probe only
opens the file read-write and reads four bytes.

Defence: `pid1_memory_masked` (/proc/1/mem and /proc/1/task/1/mem are covered by read-only /dev/null binds).
Honest twin: none (nothing legitimate opens another process's memory).
"""
import sys


def test_the_memory_of_the_sandboxs_pid_1_is_out_of_reach(box):
    # bwrap's pid 1 runs as the same user and is dumpable: through /proc/1/mem a command could rewrite it (no
    # ptrace needed) and make it outlive the sandbox. Both paths to it are masked.
    # Started by root, pid 1 is root's and the sandbox user may not even read its maps: the probe then seeks to 0.
    probe = ("try:\n"
             "    lo = int(open('/proc/1/maps').readline().split('-')[0], 16)\n"
             "except OSError:\n"
             "    lo = 0\n"
             "for p in ('/proc/1/mem', '/proc/1/task/1/mem'):\n"
             "    try:\n"
             "        f = open(p, 'r+b', buffering=0); f.seek(lo); print(p, f.read(4))\n"
             "    except OSError as e:\n"
             "        print(p, 'refused', e.errno)\n")
    (box.workspace / "probe.py").write_text(probe)
    r = box.run(f"{sys.executable} probe.py")
    assert r.output.count("refused") == 2, r.output
