"""The defences registry (kernelgym/grader/defences.py) against the code, the attack tests and the threat model.

Fails when an entry has no attack file, or one without a test function or not naming it; when an attack file in
tests/attacks/ is named by no entry (or would not be collected); when an entry's ``lives_in`` no longer resolves
(the message names the entry to update); when docs/THREAT_MODEL.md misses a defence or lists one the registry does
not have. The registry is loaded by path, so that a broken import elsewhere in kernelgym.grader cannot hide it.
"""
import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "kernelgym" / "grader" / "defences.py"
ATTACKS = ROOT / "tests" / "attacks"
THREAT_MODEL = ROOT / "docs" / "THREAT_MODEL.md"
GPU_ATTACKS = ROOT / "benchmarks" / "attacks.py"


def _load_registry():
    spec = importlib.util.spec_from_file_location("kernelgym_defences_registry", REGISTRY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


registry = _load_registry()
DEFENCES = registry.DEFENCES
WHERE = "kernelgym/grader/defences.py"


def _attack_files():
    """Every .py in tests/attacks/ that is not conftest.py or a helper (``_*.py``)."""
    return sorted(p for p in ATTACKS.glob("*.py") if p.name != "conftest.py" and not p.name.startswith("_"))


def _docstring_and_tests(path):
    tree = ast.parse(path.read_text())
    tests = [n.name for n in tree.body
             if (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"))
             or (isinstance(n, ast.ClassDef) and n.name.startswith("Test"))]
    return ast.get_docstring(tree) or "", tests


def test_the_registry_imports_nothing_but_the_standard_library():
    tree = ast.parse(REGISTRY.read_text())
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            top = name.split(".")[0]
            assert top == "__future__" or top in sys.stdlib_module_names, (
                f"{WHERE} imports {name}: the registry must stay standard library only (plain data)")


def test_entries_are_well_formed_and_names_unique():
    assert DEFENCES, f"{WHERE}: DEFENCES is empty"
    seen = set()
    for d in DEFENCES:
        assert isinstance(d, registry.Defence), f"{WHERE}: {d!r} is not a Defence"
        assert re.fullmatch(r"[a-z][a-z0-9_]*", d.name), f"{WHERE}: defence name {d.name!r} is not snake_case"
        assert d.name not in seen, f"{WHERE}: defence {d.name!r} is listed twice"
        seen.add(d.name)
        for field in ("blocks", "rationale", "lives_in", "attack_test"):
            assert getattr(d, field).strip(), f"{WHERE}: defence {d.name!r} has an empty {field}"
        assert d.runs_on in ("ci", "gpu"), f"{WHERE}: defence {d.name!r}: runs_on {d.runs_on!r} is not 'ci' or 'gpu'"
        assert d.acts_on in registry.SCOPES, (
            f"{WHERE}: defence {d.name!r}: acts_on {d.acts_on!r} is none of SCOPES ({', '.join(registry.SCOPES)})")
        if d.runs_on == "ci":
            assert re.fullmatch(r"tests/attacks/[a-z][a-z0-9_]*\.py", d.attack_test), (
                f"{WHERE}: defence {d.name!r}: attack_test {d.attack_test!r} is not tests/attacks/<attack>.py")
        else:
            assert re.fullmatch(r"benchmarks/attacks\.py::[a-z][a-z0-9_]*", d.attack_test), (
                f"{WHERE}: defence {d.name!r}: a GPU attack_test is benchmarks/attacks.py::<name>, "
                f"got {d.attack_test!r}")


@pytest.mark.parametrize("d", [d for d in DEFENCES if d.runs_on == "ci"], ids=lambda d: d.name)
def test_every_defence_has_an_attack_file_that_tests_it(d):
    path = ROOT / d.attack_test
    assert path.is_file(), (f"defence {d.name!r} in {WHERE}: its attack test {d.attack_test} does not exist; "
                            f"write the attack there (see the registry's docstring)")
    doc, tests = _docstring_and_tests(path)
    assert tests, f"{d.attack_test} (the attack test of defence {d.name!r}) has no test function"
    assert doc.startswith("Attack:"), (f"{d.attack_test}: its module docstring must start with 'Attack:' (say the "
                                       f"attack): tests/attacks/conftest.py collects only such files")
    assert f"`{d.name}`" in doc, (f"{d.attack_test}: its docstring must name the defence it tests as `{d.name}` "
                                  f"(with the honest twin)")


def test_every_gpu_attack_is_in_the_gpu_script():
    for d in DEFENCES:
        if d.runs_on == "gpu":
            name = d.attack_test.split("::", 1)[1]
            assert re.search(rf"[\"']{name}[\"']", GPU_ATTACKS.read_text()), (
                f"defence {d.name!r} in {WHERE}: attack {name!r} is not run by {GPU_ATTACKS.relative_to(ROOT)}")


def test_every_attack_file_is_named_by_a_defence():
    named = {d.attack_test for d in DEFENCES}
    for path in _attack_files():
        rel = str(path.relative_to(ROOT))
        doc, tests = _docstring_and_tests(path)
        assert doc.startswith("Attack:") and tests, (
            f"{rel} is not an attack test (a module docstring starting 'Attack:' and a test function): it is not "
            f"collected; payloads belong in a string inside their attack file")
        assert rel in named, f"{rel} is named by no defence in {WHERE}: add the defence it tests (or delete it)"


def test_attack_files_are_collected():
    # The collection hook's own predicate, loaded by path (conftest modules are pytest's to import).
    spec = importlib.util.spec_from_file_location("kernelgym_attacks_conftest", ATTACKS / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    for path in _attack_files():
        assert conftest.is_attack_file(path), f"{path.relative_to(ROOT)} would not be collected"


@pytest.mark.parametrize("d", DEFENCES, ids=lambda d: d.name)
def test_lives_in_resolves(d):
    module_name, _, qualname = d.lives_in.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in qualname.split(".") if qualname else []:
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        pytest.fail(f"defence {d.name!r} in {WHERE}: lives_in {d.lives_in!r} does not resolve ({type(e).__name__}: "
                    f"{e}). The code moved or was renamed: update this entry's lives_in to the \"module:qualname\" "
                    f"where the defence lives now, and its row in docs/THREAT_MODEL.md.", pytrace=False)


def _threat_model_names():
    """The defence names in the first column of THREAT_MODEL.md's tables (rows starting with | `name` |)."""
    return re.findall(r"^\|\s*`([a-z][a-z0-9_]*)`\s*\|", THREAT_MODEL.read_text(), re.M)


def test_the_threat_model_lists_every_defence_and_no_other():
    assert THREAT_MODEL.is_file(), f"{THREAT_MODEL.relative_to(ROOT)} is missing"
    listed = _threat_model_names()
    missing = [d.name for d in DEFENCES if d.name not in listed]
    assert not missing, f"docs/THREAT_MODEL.md: no table row for the defences {missing} (add one per defence)"
    unknown = sorted(set(listed) - {d.name for d in DEFENCES})
    assert not unknown, f"docs/THREAT_MODEL.md lists defences that {WHERE} does not have: {unknown}"
    assert len(listed) == len(set(listed)), "docs/THREAT_MODEL.md lists a defence twice"


def test_the_threat_models_rows_are_generated_from_the_registry():
    text = THREAT_MODEL.read_text()
    rendered = registry.render_threat_model(text)
    stale = [line for line, new in zip(text.splitlines(), rendered.splitlines()) if line != new]
    assert not stale, (f"docs/THREAT_MODEL.md's rows differ from {WHERE} ({len(stale)} rows, first: {stale[0][:160]}); "
                       "run `python kernelgym/grader/defences.py docs/THREAT_MODEL.md`")


def test_the_threat_model_has_a_row_per_scope():
    text = THREAT_MODEL.read_text()
    missing = [s for s in registry.SCOPES if f"| **{s}** |" not in text]
    assert not missing, (f"docs/THREAT_MODEL.md: no row for the scopes {missing} in its table of scopes; add "
                         f"`| **<scope>** |` and run `python kernelgym/grader/defences.py docs/THREAT_MODEL.md`")
    assert set(registry.IN_A_GRADE) <= set(registry.SCOPES)
