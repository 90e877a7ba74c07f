"""docs/OFFLINE.md's account of `kernelgym.offline.read_episodes` matches the code (issue 27 item 6b: the doc said it
returns lists; it returns a `ReadReport`): the prose names the types, and the example runs on a recorded episode."""
import dataclasses
import json
import re
from pathlib import Path

from kernelgym.offline import ReadReport, RecordedEpisode, read_episodes
from kernelgym.wrappers import TRAJECTORY_FORMAT

DOC = Path(__file__).resolve().parents[1] / "docs" / "OFFLINE.md"


def _section() -> str:
    text = DOC.read_text()
    found = re.search(r"## Reading trajectories without Minari\n(.*?)(?=\n## |\Z)", text, re.S)
    assert found, "docs/OFFLINE.md: no 'Reading trajectories without Minari' section"
    return found.group(1)


def test_the_doc_names_what_read_episodes_returns():
    section = _section()
    assert "returns a `ReadReport`" in section
    assert "as Python\nlists" not in section and "returns the whole episodes as Python" not in section
    # every field the prose names is a field of the dataclass it says holds it
    for name in ("episodes", "unfinished", "failed"):
        assert f"`{name}`" in section and name in {f.name for f in dataclasses.fields(ReadReport)}
    assert "`RecordedEpisode`" in section
    assert read_episodes([]) == ReadReport([])


def test_the_docs_example_runs_on_a_recorded_episode(tmp_path, capsys):
    line = lambda event, **f: json.dumps({"format": TRAJECTORY_FORMAT, "event": event, **f})  # noqa: E731
    (tmp_path / "trajectories.jsonl").write_text("\n".join([
        line("reset", episode_id="e1", observation={"output": "", "prompt": "p"}, info={"step": 0}),
        line("step", action={"kind": "submit"}, observation={"output": "score 120.0", "prompt": ""}, reward=120.0,
             terminated=True, truncated=False, info={"action_error": ""}),
    ]) + "\n")
    code = re.search(r"<!-- example:read_episodes[^>]*-->\n```python\n(.*?)```", _section(), re.S)
    assert code, "docs/OFFLINE.md: no ```python block after <!-- example:read_episodes -->"
    source, n = re.subn(r"^paths = .*$", f"paths = [{str(tmp_path)!r}]", code.group(1), flags=re.M)
    assert n == 1, "the example's `paths = [...]` line is the one the test points at a recorded run"
    namespace: dict = {}
    exec(compile(source, str(DOC), "exec"), namespace)  # every attribute the example reads must exist
    assert isinstance(namespace["report"], ReadReport) and isinstance(namespace["episode"], RecordedEpisode)
    assert capsys.readouterr().out == "0 0\n"
