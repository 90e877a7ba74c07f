"""Roofline numbers for a config: bytes moved and FLOPs from a task's formulas, achieved rates, peak fractions.

Formulas are arithmetic over the config's integer fields and `itemsize` (bytes per element of the config's
dtype), e.g. ``2 * rows * hidden * itemsize + hidden * itemsize``. The same safe evaluator serves config
spaces (kernelgym/config_space.py): derived dimensions and boolean constraints such as ``N % heads == 0``.

The grammar is checked on the syntax tree, never run through `eval`: numbers, names, ``+ - * / // ** %``,
unary ``- + not``, comparisons (``== != < <= > >=``, chained), ``and``/``or``, calls of ``min`` and ``max``,
and parentheses. Anything else (attribute access, subscripts, other calls, lambdas, strings) is refused.
"""
from __future__ import annotations

import ast
import functools
import operator
from typing import Any

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_CALLS = {"min": min, "max": max}
#: Node types that only carry context or an operator; the evaluator reads them through their parent.
_PLAIN = (ast.Expression, ast.Load, ast.And, ast.Or, *_OPS, *_UNARY, *_COMPARE)
#: Largest exponent, and largest result of ``**`` in bits: ``10 ** 10 ** 10`` would otherwise hang the process.
_MAX_EXPONENT = 256
_MAX_POWER_BITS = 1 << 16
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int32": 4, "int64": 8,
             "float8_e4m3fn": 1, "float8_e5m2": 1, "uint8": 1}


def itemsize(dtype: Any) -> int:
    """Bytes per element of `dtype` (a name such as ``float16``); 4 for a name not in the table."""
    return _ITEMSIZE.get(str(dtype), 4)


@functools.lru_cache(maxsize=1024)
def parse(expr: str) -> tuple[ast.Expression, frozenset[str]]:
    """Parse `expr` and check it against the grammar.

    Args:
        expr: the expression text.

    Returns:
        (tree, names): the syntax tree and the names it reads (``min``/``max`` as callees not included);
        cached per text, since config spaces evaluate the same few expressions many times.

    Raises:
        ValueError: `expr` is not an expression, or uses syntax outside the grammar; the message names it.
    """
    if not isinstance(expr, str):
        raise ValueError(f"expression {expr!r}: expected a string, found {type(expr).__name__}")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"expression {expr!r}: not a valid expression ({e.msg})") from None
    names: set[str] = set()
    callees: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            # Only min(a, b, ...) by name: any other callee could reach objects beyond plain numbers.
            if not (isinstance(node.func, ast.Name) and node.func.id in _CALLS) or node.keywords or not node.args \
                    or any(isinstance(a, ast.Starred) for a in node.args):
                raise ValueError(f"expression {expr!r}: only calls of min(...) and max(...) with plain arguments "
                                 f"are allowed")
            callees.add(id(node.func))
        elif isinstance(node, ast.Name):
            if id(node) not in callees:
                names.add(node.id)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) or not isinstance(node.value, (int, float)):
                raise ValueError(f"expression {expr!r}: only numbers are allowed as constants, found "
                                 f"{node.value!r}")
        elif not isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, *_PLAIN)):
            raise ValueError(f"expression {expr!r}: {type(node).__name__} is not allowed; only arithmetic, "
                             f"comparisons, and/or/not and min/max are")
    return tree, frozenset(names)


def evaluate_expression(expr: str, names: dict[str, Any]) -> int | float | bool:
    """Value of `expr` with `names` bound (integers stay integers, comparisons give booleans).

    Args:
        expr: an expression in the grammar of this module.
        names: the values of the names it may read.

    Returns:
        The value, as Python computes it on those numbers.

    Raises:
        ValueError: syntax outside the grammar, a name not in `names`, a division by zero, or an exponent
            over the limit.
    """
    if not isinstance(expr, str):
        raise ValueError(f"expression {expr!r}: expected a string, found {type(expr).__name__}")
    tree, _ = parse(expr)

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ValueError(f"expression {expr!r}: unknown name {node.id!r}; known: {sorted(names)}")
            return names[node.id]
        if isinstance(node, ast.BinOp):
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > _MAX_EXPONENT
                                                 or int(abs(left)).bit_length() * abs(right) > _MAX_POWER_BITS):
                raise ValueError(f"expression {expr!r}: a power over the limit "
                                 f"(exponent at most {_MAX_EXPONENT}, result at most {_MAX_POWER_BITS} bits)")
            try:
                return _OPS[type(node.op)](left, right)
            except ZeroDivisionError:
                raise ValueError(f"expression {expr!r}: division by zero") from None
            except OverflowError:
                raise ValueError(f"expression {expr!r}: the result overflows a float") from None
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](ev(node.operand))
        if isinstance(node, ast.BoolOp):
            # Short-circuits like Python, but always gives a boolean.
            if isinstance(node.op, ast.And):
                return all(ev(v) for v in node.values)
            return any(ev(v) for v in node.values)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, comparator in zip(node.ops, node.comparators):
                right = ev(comparator)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            return _CALLS[node.func.id](*(ev(a) for a in node.args))
        raise ValueError(f"expression {expr!r}: {type(node).__name__} is not allowed")  # parse() refused it already

    return ev(tree.body)


def evaluate(formula: str, config: dict[str, Any]) -> float:
    """Value of a roofline `formula` for `config`.

    Args:
        formula: an expression over the config's numeric fields and ``itemsize``.
        config: the config; its ``dtype`` sets ``itemsize``.

    Returns:
        The value as a float.

    Raises:
        ValueError: a name not in the config, or syntax outside the grammar.
    """
    names = {k: v for k, v in config.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    names["itemsize"] = itemsize(config.get("dtype"))
    return float(evaluate_expression(formula, names))


def achieved(bytes_moved: float, flops: float, time_ms: float) -> tuple[float, float]:
    """(GB/s, TFLOP/s) for work done in `time_ms` milliseconds (decimal GB and TFLOP)."""
    seconds = time_ms * 1e-3
    return bytes_moved / seconds / 1e9, flops / seconds / 1e12
