"""Loading the workspace's kernel the way the grader does, for check.py and profile.py (copied into every workspace).

Standalone (the agent's sandbox has no kernelgym): it uses the copies of the grader's protocol and of the task
language's backend that the workspace holds in ``.kernelgym/``.
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


def load(ref):
    """``file.py:function`` from the workspace."""
    return protocol.load_function(ref, HERE, "ws_" + ref.split(":")[0].removesuffix(".py").replace("/", "_"))


def entry():
    """The kernel's entry point; for a compiled language, built first into ``build/`` (prints the compiler log on
    failure and exits 1)."""
    build_dir = None
    if getattr(backend, "BUILDS", False):
        files = [f for f in spec["editable_files"] if f.endswith(tuple(backend.SOURCE_SUFFIXES))]
        digest = hashlib.sha256(b"".join(open(os.path.join(HERE, f), "rb").read() for f in files)).hexdigest()[:16]
        build_dir = os.path.join(HERE, "build", digest)
        if not os.path.isfile(os.path.join(build_dir, "BUILT")):
            os.makedirs(build_dir, exist_ok=True)
            r = subprocess.run([sys.executable, os.path.join(HERE, ".kernelgym", "backend.py"), "build", HERE, build_dir,
                                *files], capture_output=True, text=True)
            if r.returncode != 0 or not os.path.isfile(os.path.join(build_dir, "BUILT")):
                print(r.stdout[-6000:] + r.stderr[-6000:])
                sys.exit(f"BUILD FAILED (exit {r.returncode})")
    if hasattr(backend, "load_entry"):
        return backend.load_entry(spec["entry_point"], HERE, "ws_kernel", build_dir)
    return protocol.load_function(spec["entry_point"], HERE, "ws_kernel")


def outputs(ret, args):
    """The outputs of one call as a tuple in the task's declared order (returned ones, then in-place arguments)."""
    slots = spec["outputs"]
    returned = [s for s in slots if s.get("arg") is None]
    values = [ret] if len(returned) == 1 else list(ret) if isinstance(ret, (tuple, list)) else [ret]
    if len(values) != len(returned):
        raise TypeError(f"the entry point must return {len(returned)} outputs "
                        f"({', '.join(s['name'] for s in returned)}), got {len(values)}")
    it = iter(values)
    return tuple(next(it) if s.get("arg") is None else args[s["arg"]] for s in slots)
