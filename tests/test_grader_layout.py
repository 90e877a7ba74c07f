"""The grader's auditability, as issue 24 sets it: `grader.py` stays under 400 lines, and the trusted grader modules
keep no module-level mutable state but the one cache object (`cache.GRADING_CACHE`) and the named registries and
constant tables below. A new module-level dict, list, set or object must be added here, with its reason, or moved
into the cache object."""
import ast
from pathlib import Path

GRADER = Path(__file__).resolve().parent.parent / "kernelgym" / "grader"

# harness.py runs in the candidate's sandboxed process, one grading per process: its globals are that process's.
UNTRUSTED = {"harness.py"}

# (module, name): why a module-level container or object is not a cache of grading state.
ALLOWED = {
    ("cache.py", "GRADING_CACHE"): "the one cache object",
    ("checks.py", "RESULTS"): "the registry @reports fills at import: each defence's result function by name",
    ("defences.py", "SCOPES"): "constant: the scopes' descriptions",
    ("gates.py", "PEAK_KEY"): "constant: dtype -> the hardware profile's peak key",
    ("grader.py", "PER_CONFIG_S"): "constant: the time limit per config",
    ("observer.py", "_UNITS_NS"): "constant: profiler units in ns",
    ("outcome.py", "OUTCOMES"): "constant: each outcome's meaning",
    ("provenance.py", "MODULE_NAMES"): "constant: the allowed names per module (frozensets)",
    ("provenance.py", "_HOST"): "a frozen-by-use context value (dataclass of frozensets), never mutated",
    ("worker.py", "HARNESS_FILES"): "constant: the files the sandbox binds read-only",
}

MUTABLE_LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
IMMUTABLE_CALLS = {"frozenset", "tuple", "re.compile", "struct.Struct", "Path", "_sibling", "os.path.dirname",
                   "Path(__file__).with_name", "_load_file", "torch.cuda.is_available", "TypeVar", "namedtuple"}


def _module_state(path: Path) -> list[str]:
    found = []
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        value = node.value
        call = isinstance(value, ast.Call) and ast.unparse(value.func)
        if isinstance(value, MUTABLE_LITERALS) or (call and call not in IMMUTABLE_CALLS):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if ast.unparse(target) != "__all__":
                    found.append(ast.unparse(target))
    return found


def test_grader_py_stays_under_400_lines():
    assert len((GRADER / "grader.py").read_text().splitlines()) < 400


def test_trusted_grader_modules_keep_no_module_level_state_but_the_cache_object():
    found = {(p.name, name) for p in sorted(GRADER.glob("*.py")) if p.name not in UNTRUSTED
             for name in _module_state(p)}
    unexplained = sorted(found - set(ALLOWED))
    assert not unexplained, f"module-level mutable state outside the cache object: {unexplained}"
    assert set(ALLOWED) <= found, f"listed here but gone: {sorted(set(ALLOWED) - found)}"


def test_the_check_finds_a_module_level_cache(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import functools\n_seen = {}\nRULES: list = []\nNAMES = frozenset({'a'})\n"
                      "_store = Store()\n")
    assert _module_state(module) == ["_seen", "RULES", "_store"]
