"""The launch parameters of a Triton kernel file, found in its syntax tree, and the edits that set them.

A *launch* is a call ``kernel[grid](...)`` of a ``@triton.jit`` function. Its tunable parameters are the keywords
passed at the launch that are

- a ``tl.constexpr`` parameter of the kernel whose value is a power-of-two block size (``BLOCK``, ``BLOCK_M``, a
  name holding BLOCK, TILE, SIZE, CHUNK or GROUP): kind ``block``;
- ``num_warps`` and ``num_stages``: kinds ``num_warps`` and ``num_stages`` (launch options only: the CPU
  interpreter ignores them);

each given either as a module-level integer constant (``BLOCK=BLOCK_SIZE`` with ``BLOCK_SIZE = 1024``: the tuner
edits the constant, so a grid the wrapper computes from it follows) or as an integer literal (the tuner edits the
literal). A ``num_stages`` the launch does not pass is the compiler's default; the tuner may add it. A keyword
computed from the inputs (``BLOCK_D=triton.next_power_of_2(head_dim)``) is left alone and named in `notes`.

`find_launch_params` raises `UnparsableKernel`, naming why, where the file gives the tuner nothing it can set
safely: not Python, no jit kernel, no launch, an autotuned kernel (its configs are its own search), or no tunable
parameter.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

BLOCK_NAME = re.compile(r"BLOCK|TILE|SIZE|CHUNK|GROUP", re.I)
LAUNCH_OPTIONS = ("num_warps", "num_stages")
#: Candidate values per kind: block sizes are the current one times these factors (powers of two, 16..65536).
BLOCK_FACTORS = (0.25, 0.5, 2, 4)
BLOCK_RANGE = (16, 65536)
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4)
#: The compiler's num_stages where a launch passes none (Triton's NVIDIA default), not retried as a candidate.
DEFAULT_STAGES = 3
#: Elements per thread the joint block-and-warps candidates aim at (`ranked_candidates`): 8 and 16 elements fill a
#: thread's 16- and 32-byte vector loads of a 16-bit type; fewer leave the loads narrow, more raise register use.
ELEMS_PER_THREAD = (8, 16)
#: Tile configurations for kernels that call tl.dot, as (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), best
#: known first: the CUDA configurations of Triton's matmul tutorial (tutorials/03-matrix-multiplication.py), whose
#: larger tiles and deeper pipelines suit Hopper's shared memory better than the tasks' 64 x 64 x 32 in 4 warps.
DOT_TILES = ((128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 128, 32, 4, 4), (64, 256, 32, 4, 4),
             (128, 64, 32, 4, 4), (64, 128, 32, 4, 4))
#: For a dot kernel with BLOCK_M and BLOCK_N but no BLOCK_K (attention: the K loop is the sequence, the head
#: dimension is whole): (BLOCK_M, BLOCK_N, num_warps, num_stages), from Triton's fused-attention tutorial's configs.
DOT_TILES_MN = ((128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 3), (64, 64, 4, 4), (128, 32, 4, 4))


class UnparsableKernel(ValueError):
    """The kernel file gives the tuner nothing it can set safely; the message says why."""


@dataclass
class LaunchParam:
    """One tunable launch parameter.

    ``name`` is what the tuner calls it and sets: the module constant's name (``BLOCK_SIZE``) or, for a literal or an
    absent option, ``<kernel>.<keyword>`` (``matmul_kernel.num_stages``). ``value`` is the current value (None: not
    passed, the compiler's default). ``where``: "constant", "literal" or "absent". ``line``: 1-based line of the
    constant's assignment or of the launch.
    """
    name: str
    kind: str  # "block", "num_warps" or "num_stages"
    value: int | None
    where: str
    kernel: str
    keyword: str
    line: int
    grid_uses: bool = False  # the launch's grid is computed from this constant

    @property
    def launch_only(self) -> bool:
        """Only a launch option: the interpreter (and the CPU model) cannot see it."""
        return self.kind in LAUNCH_OPTIONS

    def candidates(self) -> list[int]:
        """Values to try besides the current one, in order of distance from it."""
        if self.kind == "num_warps":
            values = list(WARPS)
        elif self.kind == "num_stages":
            values = list(STAGES)
        else:
            lo, hi = BLOCK_RANGE
            values = [int(self.value * f) for f in BLOCK_FACTORS if lo <= self.value * f <= hi]
        ref = self.value if self.value is not None else DEFAULT_STAGES
        return sorted((v for v in values if v != ref), key=lambda v: (abs(v.bit_length() - ref.bit_length()), v))


@dataclass
class LaunchParams:
    """What `find_launch_params` found: the parameters (one per name), the wrappers that launch kernels (function
    name -> its parameters' names), and notes on what was left alone and why."""
    params: list[LaunchParam]
    wrappers: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    in_kernel_body: set[str] = field(default_factory=set)  # constants a jit body reads as globals
    wrapper_of: dict[str, str] = field(default_factory=dict)  # constant -> the one function that launches with it
    used_elsewhere: set[str] = field(default_factory=set)  # constants other top-level functions read too

    def dispatchable(self, name: str) -> bool:
        """Whether the wrapper may choose `name` per call (`dispatch_by_size_class`): a module constant read only by
        the one function that launches with it."""
        p = self.by_name().get(name)
        return (p is not None and p.where == "constant" and name in self.wrapper_of
                and name not in self.in_kernel_body and name not in self.used_elsewhere)

    def by_name(self) -> dict[str, LaunchParam]:
        return {p.name: p for p in self.params}

    def describe(self) -> str:
        """One line per parameter, then the notes."""
        lines = [f"{p.name} = {p.value if p.value is not None else 'default'} ({p.kind}, {p.where}, {p.kernel}"
                 f"{', the grid follows it' if p.grid_uses else ''})" for p in self.params]
        return "\n".join(lines + self.notes)


def _is_jit(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    return (isinstance(target, ast.Attribute) and target.attr == "jit") or (
        isinstance(target, ast.Name) and target.id == "jit")


def _is_autotune(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in ("autotune", "heuristics")


def _constexpr_args(fn: ast.FunctionDef) -> set[str]:
    def is_constexpr(ann):
        return (isinstance(ann, ast.Attribute) and ann.attr == "constexpr") or (
            isinstance(ann, ast.Name) and ann.id == "constexpr")
    return {a.arg for a in fn.args.args + fn.args.kwonlyargs if a.annotation is not None and is_constexpr(a.annotation)}


def _int_constants(tree: ast.Module) -> dict[str, tuple[int, ast.Constant]]:
    """Module-level ``NAME = <int>`` assignments (the last one wins, as at import)."""
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int):
            found[node.targets[0].id] = (node.value.value, node.value)
    return found


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _grid_names(call: ast.Call, wrapper: ast.FunctionDef | None) -> set[str]:
    """Names the launch's grid is computed from: its expression, or the wrapper's assignments to the grid's name."""
    grid = call.func.slice
    names = _names_in(grid)
    if wrapper is not None and isinstance(grid, ast.Name):
        for node in ast.walk(wrapper):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == grid.id for t in node.targets):
                names |= _names_in(node.value)
    return names


def find_launch_params(source: str) -> LaunchParams:
    """The tunable launch parameters of a Triton kernel file (see the module docstring).

    Args:
        source: the kernel file's text.

    Returns:
        `LaunchParams`, one entry per name, in source order.

    Raises:
        UnparsableKernel: not Python, no ``@triton.jit`` kernel, no ``kernel[grid](...)`` launch, an autotuned kernel,
            or no tunable parameter; the message says which and what was seen.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise UnparsableKernel(f"the kernel file is not valid Python (line {e.lineno}: {e.msg})") from None
    kernels = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and any(map(_is_jit, n.decorator_list))}
    if not kernels:
        raise UnparsableKernel("no @triton.jit kernel in the file")
    tuned_elsewhere = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                       and any(map(_is_autotune, n.decorator_list))]
    if tuned_elsewhere:
        raise UnparsableKernel(f"kernel {', '.join(tuned_elsewhere)} is autotuned (@triton.autotune/heuristics): its "
                               f"configs are its own search, which the tuner does not second-guess")
    constants = _int_constants(tree)
    out = LaunchParams([])
    for fn in kernels.values():
        own = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        out.in_kernel_body |= {n for n in _names_in(fn) if n in constants and n not in own}
    readers: dict[str, set[str]] = {}  # constant -> top-level functions (not kernels) that read it
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name not in kernels:
            for n in _names_in(fn) & set(constants):
                readers.setdefault(n, set()).add(fn.name)
    found: dict[str, LaunchParam] = {}
    launches = 0
    for wrapper in [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in kernels] + [None]:
        scope = wrapper if wrapper is not None else ast.Module(body=[n for n in tree.body if not isinstance(
            n, ast.FunctionDef)], type_ignores=[])
        for call in ast.walk(scope):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)
                    and isinstance(call.func.value, ast.Name) and call.func.value.id in kernels):
                continue
            launches += 1
            kernel = call.func.value.id
            if wrapper is not None:
                out.wrappers[wrapper.name] = [a.arg for a in wrapper.args.args]
            constexprs = _constexpr_args(kernels[kernel])
            grid = _grid_names(call, wrapper)
            passed = {k.arg for k in call.keywords}
            for kw in call.keywords:
                kind = kw.arg if kw.arg in LAUNCH_OPTIONS else "block" if kw.arg in constexprs else None
                if kind is None:
                    continue
                value = kw.value
                if isinstance(value, ast.Name) and value.id in constants:
                    name, current, where, line = value.id, constants[value.id][0], "constant", constants[value.id][1].lineno
                elif isinstance(value, ast.Constant) and type(value.value) is int:
                    name, current, where, line = f"{kernel}.{kw.arg}", value.value, "literal", value.lineno
                else:
                    out.notes.append(f"{kernel}: {kw.arg}={ast.unparse(value)} is computed in the wrapper, not a "
                                     f"constant: left alone")
                    continue
                if kind == "block" and not (BLOCK_NAME.search(kw.arg) or BLOCK_NAME.search(name)):
                    out.notes.append(f"{kernel}: constexpr {kw.arg}={current} is not named as a block size: left alone")
                    continue
                if kind == "block" and (current < 1 or current & (current - 1)):
                    out.notes.append(f"{kernel}: {kw.arg}={current} is not a power of two: left alone")
                    continue
                found.setdefault(name, LaunchParam(name, kind, current, where, kernel, kw.arg, line,
                                                   grid_uses=name in grid))
                if where == "constant" and wrapper is not None:
                    if out.wrapper_of.setdefault(name, wrapper.name) != wrapper.name:
                        out.used_elsewhere.add(name)
            if "num_stages" not in passed:
                name = f"{kernel}.num_stages"
                found.setdefault(name, LaunchParam(name, "num_stages", None, "absent", kernel, "num_stages",
                                                   call.lineno))
    if not launches:
        raise UnparsableKernel(f"no launch `kernel[grid](...)` of the jit kernel(s) {', '.join(kernels)} in the file")
    # Block sizes first, then warps, then stages (which matter mostly where a kernel loops over loads): the order
    # the search spends a short budget in.
    out.params = sorted(found.values(), key=lambda p: (("block", "num_warps", "num_stages").index(p.kind), p.line))
    for name, wrapper in out.wrapper_of.items():
        if readers.get(name, set()) - {wrapper}:
            out.used_elsewhere.add(name)
    if not out.params:
        raise UnparsableKernel("no tunable launch parameter: " + ("; ".join(out.notes) or "the launches pass none"))
    return out


def _calls_dot(source: str, kernel: str) -> bool:
    tree = ast.parse(source)
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    return fn is not None and any(isinstance(n, ast.Attribute) and n.attr == "dot" for n in ast.walk(fn))


def ranked_candidates(source: str, lp: LaunchParams) -> list[tuple[dict[str, int], str]]:
    """Joint candidates, most promising first, each (values, why), to measure before the one-at-a-time search.

    - A kernel calling ``tl.dot`` whose block sizes are named ``*_M``, ``*_N`` (and ``*_K``): the tile
      configurations `DOT_TILES` (`DOT_TILES_MN` without a K block), with their warps and stages.
    - Any other kernel: per block size, 4x and 2x the block with num_warps set so that each thread holds
      `ELEMS_PER_THREAD` elements (the warps scaled with the block: a bigger block in the same warps makes each
      thread's loads wider, in more warps keeps them as they are); a block alone where no warps are tunable.

    The tasks' baselines are small blocks in 4 warps with the compiler's stages, so larger tiles are where the gain
    usually lies; the one-at-a-time search afterwards goes on from the best of these. Values outside the block range
    or above 16 warps are left out; so is a candidate equal to the current values.
    """
    by = lp.by_name()
    current = {p.name: p.value for p in lp.params}
    out: list[tuple[dict[str, int], str]] = []

    def add(values: dict[str, int], why: str) -> None:
        values = {k: v for k, v in values.items() if k in by}
        if values and any(current[k] != v for k, v in values.items()) and values not in [o[0] for o in out]:
            out.append((values, why))

    for kernel in dict.fromkeys(p.kernel for p in lp.params):
        mine = [p for p in lp.params if p.kernel == kernel]
        blocks = [p for p in mine if p.kind == "block"]
        warps = next((p for p in mine if p.kind == "num_warps"), None)
        stages = next((p for p in mine if p.kind == "num_stages"), None)

        def named(suffix):
            return next((p for p in blocks if p.keyword.upper().endswith(suffix)), None)
        bm, bn, bk = named("_M"), named("_N"), named("_K")
        if _calls_dot(source, kernel) and bm and bn:
            lo, hi = BLOCK_RANGE
            for tile in (DOT_TILES if bk else DOT_TILES_MN):
                m, n, *rest = tile
                k, w, st = rest if bk else (None, *rest)
                values = {bm.name: m, bn.name: n}
                if bk:
                    values[bk.name] = k
                if warps:
                    values[warps.name] = w
                if stages:
                    values[stages.name] = st
                add(values, f"{kernel}: a known-good tl.dot tile ({', '.join(f'{x}={y}' for x, y in values.items())})")
            continue
        tile = 1
        for block in blocks:  # a program's elements: the product of its block sizes (a 2-D tile has two)
            tile *= block.value
        for factor in (4, 2):
            for block in blocks:
                size = block.value * factor
                if not BLOCK_RANGE[0] <= size <= BLOCK_RANGE[1]:
                    continue
                if warps is None or warps.value is None:
                    add({block.name: size}, f"{kernel}: {factor}x the block")
                    continue
                elems = tile * factor
                for per_thread in ELEMS_PER_THREAD:
                    w = max(1, min(WARPS[-1], elems // (32 * per_thread)))
                    add({block.name: size, warps.name: w},
                        f"{kernel}: {factor}x the block, {w} warps ({elems // (32 * w)} elements per thread)")
    return out


def _launches(tree: ast.Module, kernel: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == kernel]


def _offsets(source: str) -> list[int]:
    starts, pos = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    return starts + [pos]


def set_params(source: str, values: dict[str, int]) -> str:
    """`source` with each named launch parameter set to its value (names as `find_launch_params` gives them).

    Raises:
        KeyError: a name that is not a tunable parameter of `source`.
    """
    found = find_launch_params(source).by_name()
    tree = ast.parse(source)
    constants = _int_constants(tree)
    edits = []  # (line, col, end_line, end_col, text); columns are UTF-8 byte offsets as ast gives them
    for name, value in values.items():
        p = found[name]
        if p.where == "constant":
            node = constants[name][1]
            edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, str(value)))
            continue
        for call in _launches(tree, p.kernel):
            kw = next((k for k in call.keywords if k.arg == p.keyword), None)
            if kw is not None:
                if p.where == "literal":
                    v = kw.value
                    edits.append((v.lineno, v.col_offset, v.end_lineno, v.end_col_offset, str(value)))
            elif p.where == "absent":
                # Before the call's closing parenthesis; a trailing comma is already there or is added.
                end = (call.end_lineno, call.end_col_offset - 1)
                edits.append((*end, *end, f"{p.keyword}={value}"))
    lines = source.splitlines(keepends=True)
    for line, col, end_line, end_col, text in sorted(edits, reverse=True):
        first, last = lines[line - 1].encode(), lines[end_line - 1].encode()
        head, tail = first[:col].decode(), last[end_col:].decode()
        if text.startswith(("num_stages=", "num_warps=")):
            stripped = head.rstrip()
            text = ("" if stripped.endswith("(") else " " if stripped.endswith(",") else ", ") + text
        lines[line - 1:end_line] = [head + text + tail]
    return "".join(lines)


#: The helper `dispatch_by_size_class` adds; ``{torch}`` is the name the file binds torch to. It keeps to what the
#: grader's static check (kernelgym/grader/provenance.py) lets host code use: ``isinstance`` against torch.Tensor and
#: a doubling loop, not ``hasattr`` (refused_names) or ``int.bit_length`` (host_methods_allowed), which would make the
#: grader refuse the whole file. Its class is the one measure.SIZE_CLASS_CMD prints.
SIZE_CLASS_FN = '''

def _tuner_size_class(*args):
    """The size class of a call: the next power of two of its largest tensor argument's element count (1 if none)."""
    n = max([a.numel() for a in args if isinstance(a, {torch}.Tensor)] or [0])
    size_class = 1
    while size_class < n:
        size_class *= 2
    return size_class
'''


def _torch_name(tree: ast.Module) -> str | None:
    """The name a top-level ``import torch`` (``as X``) binds, or None."""
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch":
                    return alias.asname or "torch"
    return None


def dispatch_by_size_class(source: str, wrapper: str, names: list[str], table: dict[int, tuple[int, ...]],
                           default: tuple[int, ...]) -> str:
    """`source` whose `wrapper` picks the constants `names` per size class of its call (`_tuner_size_class`): the
    values `table[class]`, else `default`. The constants become the wrapper's locals, so a grid it computes from
    them follows.
    The helper names ``torch.Tensor`` through the file's own top-level ``import torch`` (``as X``); a file without
    one gets that import above the helper.

    Raises:
        ValueError: `wrapper` is not a top-level function of `source`, or a name is not a module-level constant.
    """
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == wrapper), None)
    if fn is None:
        raise ValueError(f"no top-level function {wrapper!r} in the kernel file")
    missing = [n for n in names if n not in _int_constants(tree)]
    if missing:
        raise ValueError(f"not module-level integer constants: {', '.join(missing)}")
    body = fn.body
    first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str) else body[0]
    indent = " " * first.col_offset
    args = ", ".join(a.arg for a in fn.args.args)
    rows = ", ".join(f"{k}: {tuple(v)!r}" for k, v in sorted(table.items()))
    target = ", ".join(names) + ("," if len(names) == 1 else "")
    line = f"{indent}{target} = _TUNER_BY_SIZE_CLASS.get(_tuner_size_class({args}), _TUNER_DEFAULT)\n"
    lines = source.splitlines(keepends=True)
    lines.insert(first.lineno - 1, line)
    torch_name = _torch_name(tree)
    header = ("" if torch_name else "\nimport torch\n") + (
              f"\n# Chosen by kernelgym's tuner per size class: {', '.join(names)}\n"
              f"_TUNER_BY_SIZE_CLASS = {{{rows}}}\n_TUNER_DEFAULT = {tuple(default)!r}\n")
    helper = SIZE_CLASS_FN.replace("{torch}", torch_name or "torch")
    lines.insert(fn.lineno - 1 - len(fn.decorator_list), header + helper + "\n\n")
    return "".join(lines)
