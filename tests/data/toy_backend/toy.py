"""A toy language backend, registered from outside the package by tests/test_backend_protocol.py: a "kernel" is a
plain Python function whose name ends in ``_kernel``, run on the CPU. It implements every member of
`kernelgym.backends.protocol.Backend`, standard library only, as a real backend must be."""
import ast

LANGUAGE = "toy"
VENDORS = frozenset({"cpu"})
INTERPRETER_ENV = {"KERNELGYM_TOY": "1"}
SOURCE_SUFFIXES = (".py",)
PROMPT = "Language: toy (plain Python functions named *_kernel, called from the entry point)."
BUILDS = False
STATIC_CHECK = False  # a toy kernel is plain PyTorch: kernelgym's provenance rules are Triton's and CUDA's
BARE_KERNEL_NAMES = True
PRELOAD = ()
load_entry = None
KERNEL_CACHE_DIR = None
KERNEL_CACHE_ENV = None
KERNEL_ARTIFACTS = ()
KERNEL_LAUNCHERS = ()


class LaunchCounter:
    """Counts calls of the candidate's *_kernel functions by profiling Python calls in files under `directory`."""

    what = "toy kernel"

    def __init__(self, directory):
        import sys
        self.count, self.installed = 0, True
        previous = sys.getprofile()

        def profile(frame, event, arg):
            if (event == "call" and frame.f_code.co_name.endswith("_kernel")
                    and frame.f_code.co_filename.startswith(directory)):
                self.count += 1
            if previous is not None:
                previous(frame, event, arg)
        sys.setprofile(profile)

    def reset(self):
        self.count = 0


def is_compile_error(exc):
    return isinstance(exc, SyntaxError)


def own_kernel_names(sources):
    names = set()
    for text in sources.values():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.endswith("_kernel")}
    return names


def toolchain_id():
    return "toy-1"


def build(src, out, files):
    print("the toy backend has no build step")
    return 1
