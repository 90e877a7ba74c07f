"""The benchmark-helper placeholder of reference-format runners: the lines from one starting ``# >>> AKA-GENERATED``
to one starting ``# <<< AKA-GENERATED`` are replaced by kernelgym's own helpers (timing_helpers.py), in the
workspace (so the agent runs the commands as the grader does) and in every grading directory."""
from __future__ import annotations

import os
from pathlib import Path

from kernelgym.errors import TaskSpecError

BEGIN = "# >>> AKA-GENERATED"
END = "# <<< AKA-GENERATED"
HELPERS_FILE = Path(__file__).resolve().parent / "timing_helpers.py"
HELPERS_MARK = "# --- HELPERS (copied into runners) ---"
#: The functions the block must define (the format's contract).
HELPER_NAMES = ("_benchmark_cuda_graph_or_events", "_measure_cuda_event_fallback")


class PlaceholderError(TaskSpecError):
    """A file's AKA-GENERATED block is malformed (an opening line without a closing one, or nested)."""


def helpers_source() -> str:
    """kernelgym's helper functions as source text (the part of timing_helpers.py below its HELPERS line)."""
    text = HELPERS_FILE.read_text()
    return text[text.index(HELPERS_MARK) + len(HELPERS_MARK):].strip("\n") + "\n"


def find_block(text: str, name: str = "file") -> tuple[int, int] | None:
    """(first, last) line index of the block, markers included, or None where `text` has no block.

    Raises:
        PlaceholderError: an opening line without a closing one, a closing line first, or two blocks.
    """
    lines = text.splitlines()
    begins = [i for i, line in enumerate(lines) if line.startswith(BEGIN)]
    ends = [i for i, line in enumerate(lines) if line.startswith(END)]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise PlaceholderError(f"{name}: expected one line starting {BEGIN!r} followed by one starting {END!r}; "
                               f"found {len(begins)} opening line(s) at {[i + 1 for i in begins]} and {len(ends)} "
                               f"closing line(s) at {[i + 1 for i in ends]}")
    return begins[0], ends[0]


def materialize(text: str, name: str = "file") -> str:
    """`text` with its block replaced by kernelgym's helpers (unchanged where it has no block).

    Raises:
        PlaceholderError: see `find_block`.
    """
    block = find_block(text, name)
    if block is None:
        return text
    lines = text.splitlines(keepends=True)
    first, last = block
    body = (f"{BEGIN}: kernelgym timing helpers (kernelgym/reference_tasks/timing_helpers.py) >>>\n"
            f"{helpers_source()}{END} <<<\n")
    return "".join(lines[:first]) + body + "".join(lines[last + 1:])


def materialize_tree(root: Path) -> list[Path]:
    """Materialize the block in every Python file under `root` that has one (links not followed); returns them.

    Raises:
        PlaceholderError: a file's block is malformed.
    """
    done = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
        for f in files:
            path = Path(here) / f
            if not f.endswith(".py") or path.is_symlink():
                continue
            text = path.read_text(errors="replace")
            if BEGIN in text or END in text:
                path.write_text(materialize(text, str(path.relative_to(root))))
                done.append(path)
    return done
