"""The package's imports form no cycle (issue 23): every import of every kernelgym module, those inside functions
included, walked from the sources."""
import ast
import graphlib
from pathlib import Path

import kernelgym

PACKAGE_DIR = Path(kernelgym.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        if any(p.startswith(".") or p == "__pycache__" for p in parts):
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the kernelgym modules it imports (``from X import Y`` counts as X.Y where that is a module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # from . import x: relative to the module's package, one level up per extra dot
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([base] if base else []))
                targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_the_walk_sees_the_imports_it_must():
    graph = import_graph()
    assert len(graph) > 50
    assert "kernelgym.grader.grader" in graph["kernelgym.env"] or "kernelgym.grader" in graph["kernelgym.env"]
    assert "kernelgym.reference_tasks.format" in graph["kernelgym.task_format"]  # imported inside a function


def test_no_import_cycle():
    graph = import_graph()
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        raise AssertionError(f"import cycle: {' -> '.join(e.args[1])}") from None
