"""Attack: code in the sandbox takes the host's memory: one process allocates 4 GiB, or a command fills the
sandbox's RAM-backed /tmp or /dev/shm, which the address-space limit does not cover.

Defences: `address_space_limit` (RLIMIT_AS per process) and `tmpfs_size_cap` (/tmp and /dev/shm are private tmpfs
mounts with a size cap). Not defended: many processes, each under the limit (no memory cgroup; docs/THREAT_MODEL.md,
known limits).
Honest twin: allocations and files within the limits work (every grading, every command).
"""
from kernelgym.sandbox import BubblewrapSandbox, Limits


def test_memory_limit(box):
    r = box.run(["python", "-c", "b = bytearray(4 << 30); print('ALLOCATED')"], limits=Limits(memory_bytes=1 << 30))
    assert "ALLOCATED" not in r.output and r.returncode != 0


def test_tmp_and_shm_are_size_capped(box):
    small = BubblewrapSandbox(box.workspace, limits=Limits(tmpfs_bytes=100 << 20))
    for d in ("/tmp", "/dev/shm"):
        r = small.run(f"head -c 300000000 /dev/zero > {d}/x")
        assert "No space left" in r.output and r.returncode != 0
