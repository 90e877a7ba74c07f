"""Config spaces (validators, expand, violations), the safe expression evaluator, and the unseen-config generator
on synthetic spaces: a matmul, attention, MoE, derived dims and grouped-query attention.

The generator properties are checked over numpy-drawn seen configs, seeds and byte caps (hypothesis is not
installed): deterministic per seed, every category present, every config valid, none seen, caps respected."""
import math
import re

import numpy as np
import pytest
from pydantic import ValidationError

from kernelgym.config_space import ConfigSpace, DimRange, expand, violations
from kernelgym.errors import TaskSpecError
from kernelgym.roofline import evaluate, evaluate_expression, itemsize, parse
from kernelgym.task import Task, TaskSpec, load_task
from kernelgym.unseen.generator import CATEGORIES, INTERPRETER_MAX_ELEMENTS, generate_for_space, generate_unseen_configs

#: Synthetic spaces: (config_space, roofline bytes formula or None).
SPACES = {
    "matmul": ({"dims": {"M": {"min": 16, "max": 16384, "multiple_of": 16},
                         "N": {"min": 16, "max": 16384, "multiple_of": 16},
                         "K": {"min": 16, "max": 16384, "multiple_of": 16}},
                "dtypes": ["float16", "bfloat16"],
                "production_shapes": [{"M": 4096, "N": 14336, "K": 4096, "model": "llama-3-8b mlp up"},
                                      {"M": 1, "N": 4096, "K": 4096, "model": "decode"}]},
               "(M * K + K * N + M * N) * itemsize"),
    "attention": ({"dims": {"batch": {"min": 1, "max": 64}, "heads": {"min": 1, "max": 128},
                            "seq_len": {"min": 1, "max": 32768}, "head_dim": {"values": [64, 128]}},
                   "inner_dim": "seq_len", "dtypes": ["float16", "bfloat16"], "max_bytes": 1 << 30,
                   "production_shapes": [{"batch": 1, "heads": 32, "seq_len": 8192, "head_dim": 128, "model": "l3"}]},
                  "4 * batch * heads * seq_len * head_dim * itemsize"),
    "moe": ({"dims": {"tokens": {"min": 1, "max": 65536}, "hidden": {"min": 64, "max": 8192, "multiple_of": 64},
                      "experts": {"min": 1, "max": 256}, "top_k": {"min": 1, "max": 8}},
             "constraints": ["top_k <= experts"], "inner_dim": "hidden", "dtypes": ["bfloat16"],
             "production_shapes": [{"tokens": 4096, "hidden": 7168, "experts": 256, "top_k": 8, "model": "dsv3"}]},
            "(2 * tokens * hidden + experts * hidden * hidden) * itemsize"),
    "derived": ({"dims": {"rows": {"min": 1, "max": 4096}, "hidden": {"min": 64, "max": 16384},
                          "heads": {"min": 1, "max": 64}},
                 "derived": {"head_dim": "hidden // heads"},
                 "constraints": ["hidden % heads == 0", "16 <= head_dim <= 256"], "inner_dim": "hidden",
                 "dtypes": ["float16"]},
                "2 * rows * hidden * itemsize + heads * head_dim * itemsize"),
    "gqa": ({"dims": {"heads": {"min": 1, "max": 128, "powers_of_two": True},
                      "kv_heads": {"min": 1, "max": 128, "powers_of_two": True}, "seq": {"min": 1, "max": 8192}},
             "derived": {"group": "heads // kv_heads", "K": "seq"}, "constraints": ["heads % kv_heads == 0"],
             "dtypes": ["float16"]},
            None),
}


def _space(name: str) -> ConfigSpace:
    return ConfigSpace.model_validate(SPACES[name][0])


def _error(raw: dict) -> str:
    with pytest.raises(ValidationError) as e:
        ConfigSpace.model_validate({"dtypes": ["float16"], **raw})
    return str(e.value)


# ---- validators --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,message", [
    ({"dims": {"a": {"min": 5, "max": 2}}}, "min 5 is greater than max 2"),
    ({"dims": {"a": {"min": 5}}}, "needs `min` and `max`, or `values`"),
    ({"dims": {"a": {"min": 65, "max": 127, "powers_of_two": True}}},
     "no value satisfies every rule (min 65, max 127, powers_of_two)"),
    ({"dims": {"a": {"min": 17, "max": 31, "multiple_of": 16}}}, "no multiple of 16 lies in [17, 31]"),
    ({"dims": {"a": {"values": [0, 64]}}}, "values [0, 64] must be integers >= 1"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "derived": {"b": "a.real"}},
     "derived `b`: expression 'a.real': Attribute is not allowed"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "derived": {"b": "c + 1"}},
     "derived `b`: expression 'c + 1' names unknown dimension(s) ['c']; known: ['a', 'b']"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "derived": {"b": "c", "c": "b"}}, "['b', 'c'] read each other in a cycle"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "derived": {"a": "2"}}, "derived: ['a'] also in dims"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "constraints": ["a >"]}, "constraints[0]: expression 'a >': not a valid"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "constraints": ["a < b"]},
     "constraints[0]: expression 'a < b' names unknown dimension(s) ['b']"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "batch_dim": "rows"}, "batch_dim 'rows' is not in dims ['a']"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "derived": {"b": "a"}, "inner_dim": "b"},
     "inner_dim 'b' is not in dims ['a'] (a derived dimension cannot be drawn)"),
    ({"dims": {"a": {"min": 1, "max": 9}, "b": {"min": 1, "max": 9}}, "production_shapes": [{"a": 1, "model": "x"}]},
     "production_shapes[0] {'a': 1, 'model': 'x'}: missing ['b']"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "production_shapes": [{"a": "4k"}]}, "production_shapes[0]: {'a': '4k'}"),
    ({"dims": {"dtype": {"min": 1, "max": 9}}}, "dimension name 'dtype' must be a Python identifier"),
    ({"dims": {"a": {"min": 1, "max": 9}}, "derived": {"min": "a"}}, "dimension name 'min' must be"),
])
def test_validator_messages_name_the_field(raw, message):
    assert message in _error(raw)


def test_dim_range_error_carries_the_dim_path():
    with pytest.raises(ValidationError) as e:
        ConfigSpace.model_validate({"dims": {"hidden": {"min": 9, "max": 1}}, "dtypes": ["float16"]})
    assert e.value.errors()[0]["loc"] == ("dims", "hidden")


def test_load_task_reports_the_config_space_field(tmp_path):
    (tmp_path / "k.py").write_text("def f(): pass\n")
    (tmp_path / "task.yaml").write_text("""
id: t
language: triton
kind: triton2triton
description: d
editable_files: [k.py]
entry_point: k.py:f
reference: k.py:f
input_builder: k.py:f
seen_configs: [{n: 8, dtype: float16}]
interpreter_configs: [{n: 4, dtype: float16}]
tolerance: {float16: {atol: 0.01, rtol: 0.01}}
config_space:
  dims: {n: {min: 1, max: 64}}
  derived: {m: "n.bit_length()"}
  dtypes: [float16]
""")
    with pytest.raises(TaskSpecError, match=re.escape("field `config_space`: Value error, derived `m`")):
        load_task(tmp_path)


def test_defaults_and_values_fill_the_range():
    s = ConfigSpace.model_validate({"dims": {"b": {"min": 1, "max": 8}, "d": {"values": [256, 64, 128]}},
                                    "dtypes": ["float16"]})
    assert (s.batch_dim, s.inner_dim) == ("b", "d")
    assert (s.dims["d"].min, s.dims["d"].max, s.dims["d"].lowest(), s.dims["d"].highest()) == (64, 256, 64, 256)


# ---- dims, expand, violations ------------------------------------------------------------------------------------

def test_dim_range_snap_neighbour_problems():
    m = DimRange(min=20, max=100, multiple_of=16)
    assert (m.lowest(), m.highest(), m.snap(1), m.snap(40), m.snap(41), m.snap(41, -1), m.snap(1000)) == \
           (32, 96, 32, 32, 48, 32, 96)
    assert (m.neighbour(48, +1), m.neighbour(48, -1), m.neighbour(96, +1), m.neighbour(32, -1)) == (64, 32, None, None)
    p = DimRange(min=1, max=4096, powers_of_two=True, multiple_of=8)
    assert (p.lowest(), p.snap(100), p.snap(100, +1), p.snap(95), p.neighbour(8, +1)) == (8, 128, 128, 64, 16)
    v = DimRange(values=[64, 128, 256], max=128)
    assert (v.highest(), v.snap(1000), v.snap(96), v.snap(97)) == (128, 128, 64, 128)
    assert v.problems(100) == ["100 is not one of [64, 128, 256]"] and v.allows(64) and not v.allows(256)
    assert p.problems(24) == ["24 is not a power of two"] and m.problems(7) == \
           ["7 is below min 20", "7 is not a multiple of 16"]
    assert m.problems(True) == ["True is not an integer"] and m.free is False and DimRange(min=1, max=2).free


def test_expand_computes_derived_dims_in_dependency_order():
    s = ConfigSpace.model_validate({"dims": {"hidden": {"min": 1, "max": 9999}, "heads": {"min": 1, "max": 64}},
                                    "derived": {"width": "2 * head_dim", "head_dim": "hidden // heads",
                                                "ratio": "hidden / heads"},
                                    "dtypes": ["float16"]})
    out = expand(s, {"hidden": 4096, "heads": 32, "head_dim": 1, "dtype": "float16"})
    assert out == {"hidden": 4096, "heads": 32, "head_dim": 128, "width": 256, "ratio": 128, "dtype": "float16"}
    assert isinstance(out["ratio"], int)
    assert expand(s, {"hidden": 100, "heads": 3})["ratio"] == pytest.approx(33.33, 1e-3)
    with pytest.raises(ValueError, match=re.escape("missing dimension(s) ['heads']")):
        expand(s, {"hidden": 1})


def test_violations_lists_every_broken_rule():
    s = _space("derived")
    assert violations(s, {"rows": 2, "hidden": 4096, "heads": 32}) == []
    assert violations(s, {"rows": 0, "hidden": 4096, "heads": 32.5, "dtype": "float32"}) == [
        "rows: 0 is below min 1", "heads: 32.5 is not an integer", "dtype: 'float32' is not one of ['float16']"]
    assert violations(s, {"rows": 2, "hidden": 4097}) == ["heads: missing"]
    assert violations(s, {"rows": 2, "hidden": 4097, "heads": 64}) == [
        "constraint `hidden % heads == 0` is false (heads=64, hidden=4097)"]
    assert violations(s, {"rows": 2, "hidden": 8192, "heads": 2}) == [
        "constraint `16 <= head_dim <= 256` is false (head_dim=4096)"]
    g = _space("gqa")
    assert violations(g, {"heads": 4, "kv_heads": 8, "seq": 3}) == [
        "group = heads // kv_heads = 0 is not a positive integer",
        "constraint `heads % kv_heads == 0` is false (heads=4, kv_heads=8)"]
    assert violations(_space("attention"), {"batch": 1, "heads": 1, "seq_len": 1, "head_dim": 96}) == [
        "head_dim: 96 is not one of [64, 128]"]


# ---- the safe evaluator ------------------------------------------------------------------------------------------

def test_evaluator_grammar():
    names = {"a": 6, "b": 4}
    assert evaluate_expression("a // b + a % b * 2 ** 3 - -1", names) == 1 + 2 * 8 + 1
    assert evaluate_expression("1 <= b < a != 7 and not a == b or False", names) is True
    assert evaluate_expression("min(a, b) * max(a, b, 10) / 4", names) == 10.0
    assert evaluate_expression("a > b and b > a", names) is False
    assert evaluate("2 * rows * hidden * itemsize + hidden * itemsize",
                    {"rows": 2, "hidden": 3, "dtype": "bfloat16", "category": "edge", "flag": True}) == 30.0
    assert parse("min(a, max(b, c)) + d")[1] == {"a", "b", "c", "d"} and itemsize("float8_e4m3fn") == 1


@pytest.mark.parametrize("expr,message", [
    ("a.__class__", "Attribute is not allowed"),
    ("a.real", "Attribute is not allowed"),
    ("__import__('os').system('true')", "only calls of min(...) and max(...)"),
    ("abs(a)", "only calls of min(...) and max(...)"),
    ("(lambda: 1)()", "only calls of min(...) and max(...)"),
    ("lambda: 1", "Lambda is not allowed"),
    ("min(*[a, b])", "only calls of min(...) and max(...) with plain arguments"),
    ("min(a, key=b)", "only calls of min(...) and max(...) with plain arguments"),
    ("min()", "only calls of min(...) and max(...) with plain arguments"),
    ("[a, b]", "List is not allowed"),
    ("(a, b)", "Tuple is not allowed"),
    ("a[0]", "Subscript is not allowed"),
    ("[x for x in (1, 2)]", "ListComp is not allowed"),
    ("(b := 3)", "NamedExpr is not allowed"),
    ("a if b else 1", "IfExp is not allowed"),
    ("'a' * 3", "only numbers are allowed as constants"),
    ("f'{a}'", "JoinedStr is not allowed"),
    ("a in (1, 2)", "In is not allowed"),
    ("a is b", "Is is not allowed"),
    ("a & b", "BitAnd is not allowed"),
    ("a = 1", "not a valid expression"),
    ("10 ** 10 ** 10", "a power over the limit"),
    ("1 // 0", "division by zero"),
    ("c + 1", "unknown name 'c'"),
    ("min", "unknown name 'min'"),
])
def test_evaluator_refuses(expr, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate_expression(expr, {"a": 6, "b": 4})


# ---- the generator on synthetic spaces ---------------------------------------------------------------------------

def _draw_seen(space: ConfigSpace, rng: np.random.Generator, k: int) -> list[dict]:
    """`k` valid configs of `space`, drawn log-uniformly up to 1024 per dim and snapped (rejection sampling)."""
    out: list[dict] = []
    while len(out) < k:
        cfg = {d: r.snap(float(np.exp(rng.uniform(0, math.log(min(r.highest(), 1024) + 1)))))
               for d, r in space.dims.items()}
        cfg["dtype"] = str(rng.choice(space.dtypes))
        if not violations(space, cfg) and cfg not in out:
            out.append(cfg)
    return out


def _key(space: ConfigSpace, cfg: dict) -> tuple:
    return tuple(cfg[d] for d in space.dims) + (cfg["dtype"],)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_generator_properties_over_random_seen_configs(name):
    space, roofline = _space(name), SPACES[name][1]
    rng = np.random.default_rng(sorted(SPACES).index(name))
    for trial in range(10):
        seen = _draw_seen(space, rng, int(rng.integers(1, 5)))
        interpreter = bool(trial % 2)
        memory = int(rng.choice([0, 1 << 30, 64 << 30])) or None
        seed = int(rng.integers(1 << 31))
        kwargs = dict(seen=seen, roofline_bytes=roofline, interpreter=interpreter, memory_bytes=memory)
        configs, log = generate_for_space(space, seed, **kwargs)
        assert (configs, log) == generate_for_space(space, seed, **kwargs), "not deterministic per seed"
        assert len(configs) == 8 and {c["category"] for c in configs} == set(CATEGORIES)
        keys = [_key(space, c) for c in configs]
        assert len(set(keys)) == 8 and not set(keys) & {_key(space, s) for s in seen}
        cap = min(space.max_bytes, memory // 4 if memory else space.max_bytes)
        for c in configs:
            assert violations(space, c) == [], (c, log)
            assert c == {**expand(space, c), **{k: c[k] for k in ("dtype", "category", "model") if k in c}}
            assert ("model" in c) == (c["category"] == "production" and bool(space.production_shapes))
            if roofline:
                assert evaluate(roofline, c) <= cap
                if interpreter:
                    assert evaluate(roofline, c) / itemsize(c["dtype"]) <= INTERPRETER_MAX_ELEMENTS
            elif interpreter:
                assert math.prod(c[d] for d in space.dims) <= INTERPRETER_MAX_ELEMENTS


def test_generator_seeds_differ():
    space, roofline = _space("matmul"), SPACES["matmul"][1]
    seen = [{"M": 128, "N": 256, "K": 512, "dtype": "float16"}]
    runs = [generate_for_space(space, s, seen=seen, roofline_bytes=roofline)[0] for s in range(4)]
    assert len({str(r) for r in runs}) > 1


def test_categories_carry_their_point_on_the_gpu():
    seen = [{"M": 256, "N": 512, "K": 1024, "dtype": "float16"}]
    configs, _ = generate_for_space(_space("matmul"), 0, seen=seen, roofline_bytes=SPACES["matmul"][1])
    by = {c["category"]: c for c in reversed(configs)}
    assert by["edge"]["M"] == 16  # the batch dim at its smallest allowed value
    assert any(c[d] in (64, 128, 256, 512, 1024, 2048, 4096) for c in configs if c["category"] == "edge"
               for d in ("N", "K"))
    for c in (c for c in configs if c["category"] == "alignment"):
        assert all((c[d] // 16) % 2 == 1 for d in ("M", "N", "K")), c  # odd multiples of 16
    assert (by["aspect"]["M"], by["aspect"]["N"], by["aspect"]["K"]) == (16, 16, 16384)
    assert by["production"]["model"] in ("llama-3-8b mlp up", "decode")

    configs, _ = generate_for_space(_space("attention"), 0, seen=[
        {"batch": 4, "heads": 8, "seq_len": 512, "head_dim": 64, "dtype": "float16"}],
        roofline_bytes=SPACES["attention"][1])
    align = [c for c in configs if c["category"] == "alignment"]
    assert all(c["seq_len"] in (37, 97, 131, 769, 3001, 4003, 5003) and c["heads"] == 7 for c in align)
    aspect = next(c for c in configs if c["category"] == "aspect")
    assert (aspect["batch"], aspect["heads"], aspect["head_dim"]) == (1, 1, 64) and aspect["seq_len"] >= 4096


def test_constraints_are_repaired_with_a_logged_reason():
    configs, log = generate_for_space(_space("derived"), 0, seen=[{"rows": 4, "hidden": 1024, "heads": 8,
                                                                    "dtype": "float16"}])
    assert any("repaired (constraint `hidden % heads == 0` is false" in line for line in log)
    assert all(c["hidden"] % c["heads"] == 0 and 16 <= c["head_dim"] <= 256 for c in configs)


def test_validate_is_honoured_and_the_fallback_is_logged():
    space = ConfigSpace.model_validate({"dims": {"a": {"min": 1, "max": 1000}}, "dtypes": ["float16"]})
    seen = [{"a": 10, "dtype": "float16"}]
    calls = []

    def validate(cfg):
        calls.append(cfg)
        return None if cfg["a"] in (10, 11) else "the reference failed"
    configs, log = generate_for_space(space, 0, seen=seen, n=1, validate=validate)
    assert configs == [{"a": 11, "dtype": "float16", "category": "edge"}]
    assert any("fell back to {'a': 11, 'dtype': 'float16'}" in line for line in log)
    assert calls and all(c["dtype"] == "float16" for c in calls)
    with pytest.raises(TaskSpecError, match="no valid unseen edge config within the budgets"):
        generate_for_space(space, 0, seen=seen, n=2, validate=validate)


def test_interpreter_budget_shrinks_with_a_logged_reason():
    configs, log = generate_for_space(_space("matmul"), 0, seen=[{"M": 64, "N": 64, "K": 64, "dtype": "float16"}],
                                      roofline_bytes=SPACES["matmul"][1], interpreter=True)
    assert any("over the CPU interpreter's budget" in line for line in log)
    production = next(c for c in configs if c["category"] == "production")
    assert production["M"] * production["K"] + production["K"] * production["N"] + \
        production["M"] * production["N"] <= INTERPRETER_MAX_ELEMENTS


def test_task_wrapper_uses_interpreter_configs_and_roofline(tmp_path):
    raw_space, roofline = SPACES["moe"]
    spec = TaskSpec.model_validate({
        "id": "moe", "language": "triton", "kind": "triton2triton", "description": "d", "editable_files": ["k.py"],
        "entry_point": "k.py:f", "reference": "r.py:f", "input_builder": "r.py:g",
        "seen_configs": [{"tokens": 4096, "hidden": 4096, "experts": 64, "top_k": 4, "dtype": "bfloat16"}],
        "interpreter_configs": [{"tokens": 8, "hidden": 128, "experts": 8, "top_k": 2, "dtype": "bfloat16"}],
        "tolerance": {"bfloat16": {"atol": 0.02, "rtol": 0.02}}, "config_space": raw_space,
        "roofline": {"bytes": roofline, "flops": "2 * tokens * hidden"}})
    task = Task(spec, tmp_path)
    configs, log = generate_unseen_configs(task, 5, interpreter=True)
    assert configs == generate_for_space(spec.config_space, 5, seen=spec.seen_configs + spec.interpreter_configs,
                                         base=spec.interpreter_configs, roofline_bytes=roofline,
                                         interpreter=True)[0]
    assert all(evaluate(roofline, c) / 2 <= INTERPRETER_MAX_ELEMENTS and c["top_k"] <= c["experts"] for c in configs)
