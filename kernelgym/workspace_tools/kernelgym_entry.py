"""Loading the workspace's kernel the way the grader does, for check.py and profile.py (copied into every workspace).

Standalone (the agent's sandbox has no kernelgym): it uses the copies of the grader's protocol, its comparison and
the task language's backend that the workspace holds in ``.kernelgym/``.
"""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = json.load(open(os.path.join(HERE, "configs.json")))


def _module(path, name):
    s = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(s)
    sys.modules[name] = m
    s.loader.exec_module(m)
    return m


protocol = _module(os.path.join(HERE, ".kernelgym", "protocol.py"), "kernelgym_protocol")
backend = _module(os.path.join(HERE, ".kernelgym", "backend.py"), "kernelgym_backend")
comparing = _module(os.path.join(HERE, ".kernelgym", "compare.py"), "kernelgym_compare")


def load(ref):
    """``file.py:function`` from the workspace."""
    return protocol.load_function(ref, HERE, "ws_" + ref.split(":")[0].removesuffix(".py").replace("/", "_"))


def entry(directory=HERE, module_name="ws_kernel"):
    """The kernel's entry point from `directory` (default: the workspace; bench.py also loads the pristine original
    from ``.kernelgym/baseline``); for a compiled language, built first into ``<directory>/build/`` (prints the
    compiler log on failure and exits 1)."""
    build_dir = None
    if backend.BUILDS:
        files = [f for f in spec["editable_files"] if f.endswith(tuple(backend.SOURCE_SUFFIXES))]
        digest = hashlib.sha256(b"".join(open(os.path.join(directory, f), "rb").read() for f in files)).hexdigest()[:16]
        build_dir = os.path.join(directory, "build", digest)
        if not os.path.isfile(os.path.join(build_dir, "BUILT")):
            os.makedirs(build_dir, exist_ok=True)
            r = subprocess.run([sys.executable, os.path.join(HERE, ".kernelgym", "backend.py"), "build", directory,
                                build_dir, *files], capture_output=True, text=True)
            if r.returncode != 0 or not os.path.isfile(os.path.join(build_dir, "BUILT")):
                print(r.stdout[-6000:] + r.stderr[-6000:])
                sys.exit(f"BUILD FAILED (exit {r.returncode})")
    if backend.load_entry is not None:
        return backend.load_entry(spec["entry_point"], directory, module_name, build_dir)
    return protocol.load_function(spec["entry_point"], directory, module_name)


def outputs(ret, args):
    """The outputs of one call as a tuple in the task's declared order, arranged as the grader arranges them."""
    return protocol.arrange_outputs(ret, args, [protocol.OutputSlot(s["name"], s.get("arg")) for s in spec["outputs"]])
