"""Attack: during its checked run the candidate rewrites the shared libraries in Triton's cache (the host launcher
`__triton_launcher*.so`, `cuda_utils*.so`), which the observed run would load into its process: native code of the
candidate's choosing, past the static check, beside the profiler.

Defence: `kernel_artifacts_only` (of the checked run's Triton cache only compiled kernels and their metadata are
copied into the observed run: `.cubin`, `.ptx`, `.json`, ...; never a shared library, never a link; the observed run
builds its own launchers).
Honest twin: the kernel files themselves are copied, so the observed run need not recompile them.
"""
import os

from kernelgym.grader.files import copy_regular_files, remove_tree
from kernelgym.backends.triton import KERNEL_ARTIFACTS


def test_only_kernel_artifacts_reach_the_observed_run(tmp_path):
    cache = tmp_path / "cache" / "HASH1"
    cache.mkdir(parents=True)
    (cache / "rmsnorm_kernel.cubin").write_bytes(b"\x7fELF kernel")
    (cache / "rmsnorm_kernel.json").write_text('{"name": "rmsnorm_kernel"}')
    (cache.parent / "HASH2").mkdir()
    (cache.parent / "HASH2" / "__triton_launcher.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF evil")
    (cache.parent / "HASH2" / "cuda_utils.so").write_bytes(b"\x7fELF evil")
    os.symlink("/etc/passwd", cache / "linked.json")
    dest = tmp_path / "observed"
    copy_regular_files(tmp_path / "cache", dest, 1 << 20, KERNEL_ARTIFACTS)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert copied == ["HASH1/rmsnorm_kernel.cubin", "HASH1/rmsnorm_kernel.json"]


def test_the_kernel_group_is_moved_with_the_kernel_and_points_nowhere_else(tmp_path):
    """Triton finds a cached kernel through its group file's absolute paths: copied unchanged, they named the
    checked run's directory, which the observed run's sandbox cannot see, so it compiled every kernel again. The
    copy now points into the observed run's cache; a path outside the checked run's cache (the candidate can write
    the group file) is dropped, and a tree too deep for os.walk stops the copy instead of raising."""
    import json
    src = tmp_path / "cache"
    (src / "HASH1").mkdir(parents=True)
    (src / "HASH1" / "k.cubin").write_bytes(b"\x7fELF kernel")
    (src / "HASH1" / "k.json").write_text("{}")
    (src / "HASH1" / "__grp__k.json").write_text(json.dumps({"child_paths": {
        "k.cubin": str(src / "HASH1" / "k.cubin"), "k.json": str(src / "HASH1" / "k.json"),
        "evil.so": "/etc/passwd", "up.json": str(src / "HASH1" / ".." / ".." / "x.json")}}))
    deep = src / "deep"
    deep.mkdir()
    here = os.getcwd()
    os.chdir(deep)
    try:
        for _ in range(1200):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(here)  # the test process's own working directory, as other tests expect it
    try:
        dest = tmp_path / "observed"
        copy_regular_files(src, dest, 1 << 20, KERNEL_ARTIFACTS)
        group = json.loads((dest / "HASH1" / "__grp__k.json").read_text())["child_paths"]
        assert group == {"k.cubin": str(dest / "HASH1" / "k.cubin"), "k.json": str(dest / "HASH1" / "k.json")}
        assert all(os.path.isfile(p) for p in group.values())
    finally:
        remove_tree(deep)  # pytest's own clean-up of old temporary folders recurses, and would fail on it
