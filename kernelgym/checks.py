"""`Check`: one result of validating a task folder, the record every format's validator returns (validate.py,
reference_tasks/validate.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Check:
    """One validation check.

    Attributes:
        name: what is checked (``"task.yaml loads"``).
        passed: True, False, or None when it did not run (an earlier check it needs failed).
        message: what was found; for a failure, what is wrong and where.
    """

    name: str
    passed: bool | None
    message: str
