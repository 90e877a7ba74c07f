"""CUDA backend: CUDA C++ sources (``.cu``, ``.cpp``) built into a PyTorch extension by `torch.utils.cpp_extension`.

The candidate writes kernels plus a binding, ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); }``,
and the entry point ``binding.cpp:f`` names the function the module exports (the file part names one of the
sources; all of them build into one module). The trusted build step (kernelgym/grader/build.py) runs this file as a
script:

    python cuda.py build SRC_DIR OUT_DIR FILE...

It copies the sources into OUT_DIR/src and, where torch has CUDA (or ROCm), builds them with `cpp_extension.load`
into OUT_DIR without importing the result: importing a shared library runs its static initializers, which are
candidate code, and none may run in the build. Where torch has no CUDA but nvcc exists (the CPU dev and CI machines),
it only compiles: ``nvcc -c`` per ``.cu`` and the host compiler per ``.cpp``, with torch's include paths, and
writes ``COMPILE_ONLY`` so `load_entry` refuses the unlinked build. Either way it prints the compiler log and
leaves ``BUILT`` on success. The harness then loads the shared library from the (read-only) build directory.

AMD: on a ROCm build of torch, `cpp_extension` hipifies the same sources (CUDA names mapped to HIP ones) and
compiles them with hipcc. That path follows PyTorch's documented behaviour and is untested here (no AMD GPU).

Provenance: there is no in-process check that the candidate's own kernels did the work (no ``LaunchCounter``):
a compiled extension's launches cannot be observed from Python. On NVIDIA the outside observer
(kernelgym/grader/observer.py) lists them, and `own_kernel_names` says which are the candidate's.

Standard library and torch only at import (the harness loads this file by path inside the sandbox, and the
workspace tools copy it beside the agent's files).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

LANGUAGE = "cuda"


def own_kernel_names(sources):
    """Names of the ``__global__`` functions in the C++ `sources` ({path: text}; comments and ``__launch_bounds__``
    ignored): the outside observer (kernelgym/grader/observer.py) counts a kernel as the candidate's own by that name.
    """
    import re
    names = set()
    # Each pattern may also end at the end of the text: an unclosed comment, bound list or declaration is then one
    # match to the end, not a scan to the end from every later start (time quadratic in the file's size).
    for text in sources.values():
        text = re.sub(r"//[^\n]*|/\*.*?(?:\*/|\Z)", " ", text, flags=re.S)
        text = re.sub(r"__launch_bounds__\s*\([^)]*(?:\)|\Z)", " ", text)
        for match in re.finditer(r"__global__([^(;{}]*)(?:\(|\Z)", text):
            words = re.findall(r"[A-Za-z_]\w*", match.group(1))
            if words and match.group(0).endswith("("):
                names.add(words[-1])
    return names
VENDORS = frozenset({"nvidia", "amd"})
"""NVIDIA through nvcc; AMD through PyTorch's hipify of the same sources (untested here)."""
INTERPRETER_ENV = None
SOURCE_SUFFIXES = (".cu", ".cpp")
STATIC_CHECK = True
"""The C++ sources (and any Python) are judged by kernelgym's static provenance check before they are built."""
BARE_KERNEL_NAMES = False
"""A compiled CUDA kernel's name is mangled (namespace, template arguments, parameter types): the outside observer
finds the source name within it."""
PRELOAD = ()
LaunchCounter = None
"""Launches of a built extension's kernels cannot be counted in the process; the outside observer sees them."""
KERNEL_CACHE_DIR = None
"""The build step's own cache (kernelgym/grader/build.py) keeps builds; no compiler cache lives in a harness."""
KERNEL_CACHE_ENV = None
KERNEL_ARTIFACTS = ()
KERNEL_LAUNCHERS = ()
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl", ".hip")
"""Copied into the build beside the sources (they may be included) but not compiled on their own; the same set
kernelgym/grader/build.py puts in the cache key."""
BUILDS = True
PROMPT = ("Language: CUDA C++, built as a PyTorch C++ extension with torch.utils.cpp_extension (nvcc for .cu files, "
          "the host C++ compiler for .cpp files; flags -O3). One source must bind the entry function with "
          "`PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"<function>\", &<function>); }` (include "
          "<torch/extension.h> there); the grader calls that function with the task's tensors and compares what "
          "it returns. Launch kernels on PyTorch's current stream (`c10::cuda::getCurrentCUDAStream()` from "
          "<c10/cuda/CUDAStream.h>): the grader times inside CUDA graphs captured on a side stream. Every source "
          "is compiled before any of your code runs, and a compiler error fails the compile gate with the "
          "compiler's log. Your own kernels must do the work: torch/ATen compute (at:: and torch:: operations, tensor "
          "methods that compute, vendor libraries such as cuBLAS) is refused in every source; allocation "
          "(torch::empty and kin), shapes, pointers and streams are allowed. On ROCm, PyTorch hipifies the same "
          "sources, so stay with CUDA names PyTorch maps, use no inline PTX, and do not assume a 32-wide warp "
          "(warpSize is 64 on AMD CDNA).")

EXTRA_CFLAGS = ["-O3"]
EXTRA_CUDA_CFLAGS = ["-O3"]
COMPILE_ONLY_ARCH = "sm_90"
"""The architecture the compile-only check targets (the H100 and H200 the NVIDIA profiles describe)."""
BUILT, COMPILE_ONLY, MODULE = "BUILT", "COMPILE_ONLY", "MODULE"
"""Marker files of a build: finished, not linked (no CUDA torch), and the extension's module name."""


# -- toolchain ---------------------------------------------------------------------------------------------------
def _cuda_home() -> str | None:
    """The CUDA toolkit the build uses: /usr/local/cuda where it has nvcc, else the toolkit of the nvcc on PATH
    (resolved through links; a wrapper script in /usr/local/bin is not a toolkit). Environment variables are not
    read: the build runs in a sandbox with a clean environment, and the parent must resolve the same toolkit."""
    if os.path.isfile("/usr/local/cuda/bin/nvcc"):
        return "/usr/local/cuda"
    nvcc = shutil.which("nvcc")
    if nvcc:
        home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        if os.path.isfile(os.path.join(home, "include", "cuda_runtime.h")):
            return home
    return None


def _nvcc() -> str | None:
    home = _cuda_home()
    return os.path.join(home, "bin", "nvcc") if home else shutil.which("nvcc")


def _first_line(argv: list[str]) -> str:
    """The version line of a tool (`argv` prints it), or a note that it is missing."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{argv[0]}: {type(e).__name__}"
    release = [line for line in out if "release" in line]  # nvcc's banner puts the version on that line
    return (release or out or [f"{argv[0]}: no output"])[0]


def _cxx() -> str:
    return os.environ.get("CXX", "c++")


def _cxx_standard() -> str:
    """The C++ standard torch's own cpp_extension passes (c++20 from torch 2.10 on, c++17 before)."""
    from torch.utils import cpp_extension
    return "c++20" if "-std=c++20" in inspect.getsource(cpp_extension) else "c++17"


def _linkable() -> bool:
    """True where torch itself has CUDA or ROCm: only then can the extension be linked and loaded."""
    import torch
    return bool(torch.version.hip) or bool(torch.version.cuda and torch.cuda._is_compiled())


def _device_archs() -> str:
    """The visible GPUs' architectures, which a linked build targets (``sm_90``, ``gfx942``), or ``none``. Starts
    CUDA in the calling process where a GPU is visible (the grader's parent has, to detect its hardware profile)."""
    import torch
    if not torch.cuda.is_available():
        return "none"
    props = [torch.cuda.get_device_properties(i) for i in range(torch.cuda.device_count())]
    return ",".join(sorted({(getattr(p, "gcnArchName", "") or f"sm_{p.major}{p.minor}").split(":")[0] for p in props}))


@functools.lru_cache(maxsize=1)
def toolchain_id() -> str:
    """Everything besides the sources that decides the build (part of the build cache key): torch and its CUDA or
    HIP version, the compiler versions, Python, the flags, the target architectures and this file's own bytes."""
    import torch
    if torch.version.hip:
        compiler = _first_line(["hipcc", "--version"])
    else:
        nvcc = _nvcc()
        compiler = _first_line([nvcc, "--version"]) if nvcc else "nvcc: not found"
    mode = "link" if _linkable() else f"compile-only {COMPILE_ONLY_ARCH}"
    own = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    return (f"cuda backend {own}; torch {torch.__version__} cuda {torch.version.cuda} hip {torch.version.hip}; "
            f"{compiler}; {_first_line([_cxx(), '--version'])}; python {sys.version.split()[0]}; "
            f"cflags {EXTRA_CFLAGS} cuda_cflags {EXTRA_CUDA_CFLAGS}; {mode}; devices {_device_archs()}")


# -- running -----------------------------------------------------------------------------------------------------
def is_compile_error(exc: BaseException) -> bool:
    """A build that did not link into a loadable module: the unlinked compile-only build, or a symbol the sources
    declare and never define (the shared library links, then fails to load)."""
    return isinstance(exc, (ImportError, RuntimeError)) and ("undefined symbol" in str(exc)
                                                             or "compiled but not linked" in str(exc))


def load_entry(entry_point: str, directory: str, module_name: str, build_directory: str | None):
    """The function `entry_point` (``file:function``) names, from the extension the build step left in
    `build_directory`. `directory` (the sources) is not read: only what the trusted build produced is loaded.

    Raises:
        RuntimeError: no build, or a compile-only build (this torch has no CUDA).
        AttributeError: the module exports no such function (the message lists what it does export).
    """
    if not build_directory:
        raise RuntimeError("the cuda backend loads only a built extension, and no build directory was given")
    build = Path(build_directory)
    if (build / COMPILE_ONLY).is_file():
        raise RuntimeError(f"compiled but not linked: this torch has no CUDA ({build / COMPILE_ONLY})")
    name = (build / MODULE).read_text().strip()
    spec = importlib.util.spec_from_file_location(name, build / f"{name}.so")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[module_name] = module
    function = entry_point.split(":")[1]
    fn = getattr(module, function, None)
    if fn is None:
        exported = sorted(n for n in dir(module) if not n.startswith("_"))
        raise AttributeError(f"the extension built from {entry_point.split(':')[0]} exports no {function!r} (it "
                             f"exports {exported}): bind it with m.def(\"{function}\", &{function}) in "
                             f"PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)")
    return fn


# -- the build (run as a script, in the build sandbox) -----------------------------------------------------------
def _copy_sources(src: Path, out: Path, files: list[str]) -> list[Path]:
    """Copy `files` and every header under `src` into ``out/src`` (hipify writes beside the sources it converts,
    and the source directory is read-only). Links are not followed; earlier builds under `src` are skipped."""
    dest = out / "src"
    headers = [p.relative_to(src) for p in src.rglob("*") if p.suffix in HEADER_SUFFIXES and p.is_file()
               and not p.is_symlink() and out not in p.parents and "build" not in p.relative_to(src).parts]
    for rel in [Path(f) for f in files] + headers:
        if rel.is_absolute() or ".." in rel.parts or (src / rel).is_symlink() or not (src / rel).is_file():
            raise ValueError(f"{rel}: not a regular file inside the source directory")
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, dest / rel)
    return [dest / f for f in files]


def _build_linked(name: str, sources: list[Path], out: Path) -> int:
    """`cpp_extension.load` into `out`, without importing the result. Returns an exit code."""
    if shutil.which("ninja") is None:
        print("BUILD ERROR: ninja is not on PATH; torch.utils.cpp_extension needs it to build extensions. Install it "
              "into the Python environment running kernelgym: pip install 'ninja>=1.11'")
        return 1
    import torch
    if not torch.version.hip:
        home = _cuda_home()
        if home:
            os.environ["CUDA_HOME"] = home
        arch = os.environ.get("KERNELGYM_CUDA_ARCH", "")
        if arch.startswith("sm_") and "TORCH_CUDA_ARCH_LIST" not in os.environ:
            # The grader's hardware profile names the target (the build sandbox has no GPU to ask): sm_90 -> 9.0.
            digits = arch.removeprefix("sm_").rstrip("a")
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{digits[:-1]}.{digits[-1]}"
        elif torch.cuda.is_available() and "TORCH_CUDA_ARCH_LIST" not in os.environ:
            caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
            os.environ["TORCH_CUDA_ARCH_LIST"] = ";".join(f"{major}.{minor}" for major, minor in caps)
    elif os.environ.get("KERNELGYM_CUDA_ARCH", "").startswith("gfx") and "PYTORCH_ROCM_ARCH" not in os.environ:
        os.environ["PYTORCH_ROCM_ARCH"] = os.environ["KERNELGYM_CUDA_ARCH"]
    from torch.utils import cpp_extension
    if not hasattr(cpp_extension, "_import_module_from_library"):
        print("BUILD ERROR: this torch's cpp_extension has no _import_module_from_library, which the build replaces "
              "so that it does not import (run) the built extension; kernelgym/backends/cuda.py needs updating")
        return 1
    # Importing the library runs its static initializers: candidate code, which must not run in the trusted build.
    cpp_extension._import_module_from_library = lambda module, path, is_python_module: os.path.join(path, module)
    try:
        cpp_extension.load(name=name, sources=[str(s) for s in sources], build_directory=str(out), verbose=True,
                           extra_cflags=EXTRA_CFLAGS, extra_cuda_cflags=EXTRA_CUDA_CFLAGS,
                           extra_include_paths=[str(out / "src")], with_cuda=True)
    except Exception as e:  # noqa: BLE001 - the compiler's failure is the build's result
        print(f"BUILD FAILED: {e}")
        return 1
    if not (out / f"{name}.so").is_file():
        print(f"BUILD FAILED: no {name}.so was produced")
        return 1
    return 0


def _compile_only(name: str, sources: list[Path], out: Path) -> int:
    """Compile each source to an object (nvcc -c for .cu, the host compiler for .cpp), in parallel, with the flags
    cpp_extension would pass. Returns an exit code."""
    import torch
    from torch.utils import cpp_extension
    nvcc = _nvcc()
    if nvcc is None and any(s.suffix == ".cu" for s in sources):
        print("BUILD ERROR: this torch has no CUDA and nvcc was not found: nothing can compile the .cu sources")
        return 1
    includes = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"], str(out / "src")]
    if _cuda_home():
        includes.append(os.path.join(_cuda_home(), "include"))
    torch_include = Path(cpp_extension.include_paths()[0])
    if not (torch_include / "c10/cuda/impl/cuda_cmake_macros.h").is_file():
        # A CPU wheel lacks this generated header of its CUDA twin (one define), which c10/cuda headers include.
        stub = out / "stub-include" / "c10/cuda/impl/cuda_cmake_macros.h"
        stub.parent.mkdir(parents=True)
        stub.write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        includes.append(str(out / "stub-include"))
    common = [f"-std={_cxx_standard()}", f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H",
              f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", *(f"-I{i}" for i in includes)]
    arch = COMPILE_ONLY_ARCH.removeprefix("sm_")
    jobs = []
    for i, s in enumerate(sources):
        rel, obj = str(s.relative_to(out / "src")), str(out / f"{i}-{s.name}.o")  # errors then name `kernel.cu(21)`
        if s.suffix == ".cu":
            argv = [nvcc, "-c", rel, "-o", obj, *common, *cpp_extension.COMMON_NVCC_FLAGS, "--compiler-options",
                    "-fPIC", f"-gencode=arch=compute_{arch},code=sm_{arch}", *EXTRA_CUDA_CFLAGS]
        else:
            argv = [_cxx(), "-c", rel, "-o", obj, *common, "-fPIC", *EXTRA_CFLAGS]
        jobs.append((argv, subprocess.Popen(argv, cwd=out / "src", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            text=True)))
    failed = 0
    for argv, proc in jobs:
        log = proc.communicate()[0]
        print("$ " + " ".join(argv) + "\n" + log + (f"[exit code {proc.returncode}]" if proc.returncode else ""))
        failed |= proc.returncode != 0
    if failed:
        print("BUILD FAILED: a source did not compile (see the log above)")
        return 1
    (out / COMPILE_ONLY).write_text(f"compiled for {COMPILE_ONLY_ARCH} but not linked: torch {torch.__version__} "
                                    "has no CUDA, so the extension cannot be loaded here\n")
    return 0


def build(src: Path, out: Path, files: list[str]) -> int:
    """Build `files` (relative to `src`) into `out`; leave `BUILT` there on success. Returns an exit code."""
    try:
        sources = _copy_sources(src, out, files)
    except (OSError, ValueError) as e:
        print(f"BUILD ERROR: {e}")
        return 1
    digest = hashlib.sha256(b"".join(f.encode() + b"\0" + s.read_bytes() for f, s in zip(files, sources)))
    name = "kg_cuda_" + digest.hexdigest()[:16]  # distinct per sources: baseline and candidate load side by side
    if _linkable():
        code = _build_linked(name, sources, out)
    else:
        print("torch has no CUDA here: compile-only check (the build is not linked and cannot be loaded)")
        code = _compile_only(name, sources, out)
    if code == 0:
        (out / MODULE).write_text(name + "\n")
        (out / BUILT).write_text("ok\n")
    return code


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] != "build":
        sys.exit("usage: python cuda.py build SRC_DIR OUT_DIR FILE...")
    sys.exit(build(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve(), sys.argv[4:]))
