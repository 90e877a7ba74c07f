"""Roofline numbers for a config: bytes moved and FLOPs from a task's formulas, achieved rates, peak fractions.

Formulas are arithmetic over the config's integer fields and `itemsize` (bytes per element of the config's
dtype), e.g. ``2 * rows * hidden * itemsize + hidden * itemsize``. Only numbers, names and + - * / // ** %
and parentheses are allowed.
"""
from __future__ import annotations

import ast
import operator
from typing import Any

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int32": 4, "int64": 8,
             "float8_e4m3fn": 1, "float8_e5m2": 1, "uint8": 1}


def evaluate(formula: str, config: dict[str, Any]) -> float:
    """Value of `formula` for `config`.

    Raises:
        ValueError: a name not in the config, or syntax outside plain arithmetic.
    """
    names = {k: v for k, v in config.items() if isinstance(v, (int, float))}
    names["itemsize"] = _ITEMSIZE.get(str(config.get("dtype")), 4)

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ValueError(f"formula {formula!r}: unknown name {node.id!r}; known: {sorted(names)}")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"formula {formula!r}: only arithmetic is allowed, found {type(node).__name__}")

    return float(ev(ast.parse(formula, mode="eval")))


def achieved(bytes_moved: float, flops: float, time_ms: float) -> tuple[float, float]:
    """(GB/s, TFLOP/s) for work done in `time_ms` milliseconds (decimal GB and TFLOP)."""
    seconds = time_ms * 1e-3
    return bytes_moved / seconds / 1e9, flops / seconds / 1e12
