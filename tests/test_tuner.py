"""The tuner policy: it finds any Triton task's launch parameters in the source, optimizes bench.py's measure, never
submits a variant its measure does not put beyond the original's noise band, keeps to the step and time budgets,
falls back to the original where it cannot parse the kernel, and says on the CPU interpreter what the 120 means."""
import os
import re
import sys
import types

import pytest

from kernelgym.policies.tuner.launch_params import (UnparsableKernel, dispatch_by_size_class, find_launch_params,
                                                    set_params)
from kernelgym.policies.tuner.measure import SIZE_CLASS_CMD
from kernelgym.policy import DEFAULT_POLICIES_ROOT, load_policy
from kernelgym.task import DEFAULT_TASKS_ROOT

TASK_KERNEL = (DEFAULT_TASKS_ROOT / "triton" / "rmsnorm" / "kernel.py").read_text()
ONE_PASS = (DEFAULT_POLICIES_ROOT / "tuner" / "rewrites" / "rmsnorm_one_pass.py").read_text()
CHECK_OK = "CHECK correct=3/3 time_ms=nan\n"


def source(task):
    return (DEFAULT_TASKS_ROOT / "triton" / task / "kernel.py").read_text()


def bench(kind, mean, ratio="nan", per=None, band=None):
    lo, hi = band or (mean, mean)
    lines = [f"config {i} {{'rows': 4, 'hidden': {h}, 'dtype': 'float16'}}: original 1 us, yours 1 us, speedup {s}x"
             for i, (h, s) in enumerate(per or [])]
    return CHECK_OK + "\n".join(lines) + (f"\nBENCH kind={kind} speedup_mean={mean} speedup_geomean={mean} "
                                          f"band={lo}..{hi} bytes_ratio={ratio} configs=3\n")


class Driver:
    """Feeds a tuner the measure's output per variant: `answer(content)` -> the measure command's output for the
    kernel file written last (`answer(content, cmd)` with `with_cmd`: the command too)."""

    def __init__(self, policy, answer, prompt="You have 50 steps and 3600 s", size_classes="", with_cmd=False):
        self.policy, self.answer, self.size_classes, self.with_cmd = policy, answer, size_classes, with_cmd
        self.actions = []
        policy.reset({"output": "", "prompt": prompt}, {})

    def shells(self, screen):
        """The measure commands run, screening ones (`screen`) or full ones."""
        return [a["cmd"] for a in self.actions if a["kind"] == "shell" and a["cmd"] != SIZE_CLASS_CMD
                and ("--reps" in a["cmd"]) == screen]

    def run(self, source=TASK_KERNEL):
        current, obs = source, {"output": ""}
        while True:
            a = self.policy.act(obs, {})
            self.actions.append(a)
            if a["kind"] == "submit":
                return current
            if a["kind"] == "read_file":
                obs = {"output": current}
            elif a["kind"] == "write_file":
                current, obs = a["content"], {"output": "wrote"}
            elif a["cmd"] == SIZE_CLASS_CMD:
                obs = {"output": self.size_classes}
            else:
                obs = {"output": self.answer(current, a["cmd"]) if self.with_cmd else self.answer(current)}


def test_never_submits_a_variant_its_measure_says_is_slower():
    # Every variant measures slower than the original: the original is submitted.
    p = load_policy("tuner", params={"BLOCK_SIZE": [512, 2048], "NUM_WARPS": [8]}, verbose=False)
    d = Driver(p, lambda src: bench("measured", 1.0 if src == TASK_KERNEL else 0.95))
    assert d.run() == TASK_KERNEL
    shells = [a for a in d.actions if a["kind"] == "shell"]
    assert len(shells) == 1 + 1 + 2  # original, the rewrite, BLOCK_SIZE x NUM_WARPS jointly (2 x 1)


def test_a_failed_measure_of_the_original_is_repeated_once_before_nothing_is_searched():
    p = load_policy("tuner", params={"BLOCK_SIZE": [2048]}, rewrites=[], verbose=False)
    calls = []

    def answer(src):
        calls.append(src)
        if len(calls) == 1:  # the first measure of the original failed (out of GPU memory beside other processes)
            return "torch.OutOfMemoryError: CUDA out of memory.\n"
        return bench("measured", 1.2 if "BLOCK_SIZE = 2048" in src else 1.0)
    final = Driver(p, answer).run()
    assert "BLOCK_SIZE = 2048" in final and calls[:2] == [TASK_KERNEL, TASK_KERNEL]
    assert [e["variant"] for e in p.log[:2]] == ["original", "original (measured again)"]
    assert "out of memory" in p.log[0]["output_tail"]
    # An original that fails every time is measured twice, not more, and nothing is searched.
    q = load_policy("tuner", params={"BLOCK_SIZE": [2048]}, rewrites=[], verbose=False)
    d = Driver(q, lambda src: "error\n")
    assert d.run() == TASK_KERNEL and len([a for a in d.actions if a["kind"] == "shell"]) == 2


def test_a_winner_the_confirmation_does_not_support_is_not_submitted():
    p = load_policy("tuner", params={"BLOCK_SIZE": [2048]}, rewrites=[], verbose=False)
    seen = []

    def answer(src):
        seen.append(src)
        if src == TASK_KERNEL:
            return bench("measured", 1.0)
        return bench("measured", 1.10 if len(seen) == 2 else 0.97)  # fast once, slower when confirmed
    d = Driver(p, answer)
    assert d.run() == TASK_KERNEL and len(seen) == 3


def test_measured_winner_is_submitted_and_block_and_warps_are_searched_jointly():
    p = load_policy("tuner", params={"BLOCK_SIZE": [512, 2048], "NUM_WARPS": [2, 8]}, rewrites=[], verbose=False)

    def answer(src):
        return bench("measured", 1.3 if "BLOCK_SIZE = 2048" in src and "NUM_WARPS = 8" in src else 1.0)
    d = Driver(p, answer)
    final = d.run()
    assert "BLOCK_SIZE = 2048" in final and "NUM_WARPS = 8" in final
    tried = [(re.search(r"^BLOCK_SIZE = (\d+)", a["content"], re.M).group(1),
              re.search(r"^NUM_WARPS = (\d+)", a["content"], re.M).group(1))
             for a in d.actions if a["kind"] == "write_file"][:-1]
    assert set(tried) == {("512", "2"), ("512", "8"), ("2048", "2"), ("2048", "8")}  # the joint grid


def test_model_mode_picks_the_rewrite_that_moves_fewer_bytes_and_skips_launch_only_constants():
    p = load_policy("tuner", verbose=False)

    def answer(src):
        if "ONE_PASS" in src:
            return bench("model", 1.0006, ratio=0.75)
        return bench("model", 1.0, ratio=1.0)  # block size alone never changes the bytes
    d = Driver(p, answer)
    final = d.run()
    assert final == ONE_PASS
    writes = [a["content"] for a in d.actions if a["kind"] == "write_file"]
    assert all(re.search(r"^NUM_WARPS = 4", w, re.M) for w in writes if "ONE_PASS" not in w)  # warps not searched
    # The model is deterministic and untimed: no screening there, every variant gets the full command (check.py).
    assert d.shells(screen=False) and not d.shells(screen=True)


def test_per_size_table_is_tuned_from_per_config_speedups():
    p = load_policy("tuner", params={}, verbose=False)
    best = {128: 1, 1024: 4, 2048: 8}

    def answer(src):
        if "ONE_PASS" not in src:
            return bench("measured", 1.0, per=[(128, 1.0), (1024, 1.0), (2048, 1.0)])
        m = re.search(r"^WARPS_BY_BLOCK = \{(.*)\}", src, re.M).group(1)
        table = {int(k): int(v) for k, v in (kv.split(":") for kv in m.split(",") if kv.strip())}
        per = [(h, 1.3 if table.get(h) == best[h] else 1.1) for h in (128, 1024, 2048)]
        return bench("measured", sum(s for _, s in per) / 3, per=per)
    final = Driver(p, answer).run()
    assert "WARPS_BY_BLOCK = {128: 1, 1024: 4, 2048: 8}" in final


def test_stays_within_the_step_budget():
    p = load_policy("tuner", verbose=False)
    d = Driver(p, lambda src: bench("measured", 1.0), prompt="You have 12 steps and 3600 s")
    d.run()
    assert len(d.actions) <= 12 and d.actions[-1] == {"kind": "submit"}


def test_main_job_on_the_cpu_ends_correct_with_fewer_bytes_and_says_what_120_means(tmp_path, require_bwrap, capsys):
    from kernelgym.env import KernelArenaEnv
    from kernelgym.rollout import rollout
    env = KernelArenaEnv("triton-rmsnorm", run_dir=tmp_path, hardware="cpu-interpreter")
    policy = load_policy("tuner")
    try:
        result = rollout(env, policy, seed=0)
        final = (env.workspace / "kernel.py").read_text()
        assert result["reward"] == 120.0 and env.grade.correct
        assert final == ONE_PASS
        kept = [e for e in policy.log if e["variant"].startswith("rewrite")]
        assert kept and kept[0]["kind"] == "model" and kept[0]["bytes_ratio"] < 1.0
        original = [e for e in policy.log if e["variant"] == "original"][0]
        assert original["kind"] == "model" and original["bytes_ratio"] == 1.0
        # The block sizes the finder found were searched (the model sees them); warps and stages were not.
        assert any("BLOCK_SIZE=" in e["variant"] for e in policy.log)
        assert not any("NUM_WARPS=" in e["variant"] or "num_stages=" in e["variant"] for e in policy.log)
        out = capsys.readouterr().out
        assert "Submitted: rewrite 'rmsnorm one pass per row'" in out and "Changed: " in out
        assert re.search(r"MODEL estimate of the submitted kernel .*not a measurement\): speedup 1\.\d+x, bytes moved "
                         r"x0\.\d+ of the original", out)
        assert "the reward of 120 means the kernel is correct, not that it was timed" in out
    finally:
        env.close()


def test_the_tuner_refuses_a_workspace_without_its_kernel_or_bench(tmp_path):
    from kernelgym.errors import PolicyConfigError
    from kernelgym.policies.tuner.policy import TunerConfig, TunerPolicy
    policy = TunerPolicy(TunerConfig())
    (tmp_path / "kernel.py").write_text("")
    with pytest.raises(PolicyConfigError, match="no bench.py"):
        policy.reset({"prompt": ""}, {"workspace": str(tmp_path)})
    (tmp_path / "bench.py").write_text("")
    policy.reset({"prompt": ""}, {"workspace": str(tmp_path)})  # both there: it starts


def test_a_structure_well_behind_the_best_is_not_tuned_on_a_gpu():
    """On the H200 the main job spent 24 of its 50 steps (about 200 s) on the original's block x warps grid, reaching
    1.039x beside the rewrite's 1.134x: a structure measured more than `tune_within` below the best is skipped."""
    p = load_policy("tuner", params={"BLOCK_SIZE": [512, 2048], "NUM_WARPS": [2, 8]}, verbose=False)
    d = Driver(p, lambda src: bench("measured", 1.12 if "ONE_PASS" in src else 1.0))
    final = d.run()
    writes = [a["content"] for a in d.actions if a["kind"] == "write_file"]
    assert "ONE_PASS" in final and all("ONE_PASS" in w for w in writes)  # the original's grid never written
    # Within the margin, the original is tuned as before.
    p = load_policy("tuner", params={"BLOCK_SIZE": [512, 2048], "NUM_WARPS": [2, 8]}, verbose=False, tune_within=0.2)
    d = Driver(p, lambda src: bench("measured", 1.12 if "ONE_PASS" in src else 1.0))
    d.run()
    assert any("ONE_PASS" not in a["content"] for a in d.actions if a["kind"] == "write_file")


def test_a_param_the_kernel_does_not_define_is_named(capsys):
    # A misspelt name would search nothing: the tuner says which names it cannot find.
    p = load_policy("tuner", params={"BLOCK_SZE": [512]}, verbose=True)
    Driver(p, lambda src: bench("measured", 1.0)).run()
    out = capsys.readouterr().out
    assert "params BLOCK_SZE: no module-level integer constant of that name in kernel.py" in out


# --- the general tuner: launch parameters found in the source (launch_params.py) ---

@pytest.mark.parametrize("task, blocks, grid, left_alone", [
    ("matmul", {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, {"BLOCK_M", "BLOCK_N"}, []),
    ("softmax", {"BLOCK_SIZE": 1024}, set(), []),
    ("sum-dim0", {"BLOCK_M": 32, "BLOCK_N": 128}, {"BLOCK_N"}, []),
    ("flash-attention", {"BLOCK_M": 64, "BLOCK_N": 64}, {"BLOCK_M"}, ["BLOCK_D=triton.next_power_of_2(head_dim)"]),
    ("embedding", {"BLOCK_SIZE": 256}, set(), []),
    ("topk-softmax", {}, set(), ["BLOCK_E=triton.next_power_of_2(n_experts)"]),
    ("rmsnorm", {"BLOCK_SIZE": 1024}, set(), []),
])
def test_the_finder_reads_real_task_sources(task, blocks, grid, left_alone):
    found = find_launch_params(source(task))
    by = found.by_name()
    assert {p.name: p.value for p in found.params if p.kind == "block"} == blocks
    assert {p.name for p in found.params if p.grid_uses} == grid
    warps = [p for p in found.params if p.kind == "num_warps"]
    assert [(p.name, p.where) for p in warps] == [("NUM_WARPS", "constant")]
    stages = [p for p in found.params if p.kind == "num_stages"]
    assert len(stages) == 1 and stages[0].where == "absent" and stages[0].value is None
    for expr in left_alone:
        assert any(expr in n and "left alone" in n for n in found.notes), found.notes
    assert all(p.launch_only for p in warps + stages) and not any(by[b].launch_only for b in blocks)


def test_set_params_edits_constants_literals_and_adds_num_stages():
    src = source("matmul")
    out = set_params(src, {"BLOCK_M": 128, "NUM_WARPS": 8, "matmul_kernel.num_stages": 4})
    found = find_launch_params(out).by_name()
    assert (found["BLOCK_M"].value, found["NUM_WARPS"].value) == (128, 8)
    assert "num_warps=NUM_WARPS, num_stages=4)" in out and "BLOCK_M = 128\n" in out
    literal = ("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x, BLOCK: tl.constexpr):\n    pass\n\n"
               "def f(x):\n    k[(1,)](x, BLOCK=256, num_warps=4,)\n")
    found = find_launch_params(literal).by_name()
    assert found["k.BLOCK"].where == "literal" and found["k.BLOCK"].candidates() == [128, 512, 64, 1024]
    out = set_params(literal, {"k.BLOCK": 512, "k.num_warps": 2, "k.num_stages": 2})
    assert "k[(1,)](x, BLOCK=512, num_warps=2, num_stages=2)" in out


@pytest.mark.parametrize("text, reason", [
    ("def broken(:\n", "not valid Python (line 1"),
    ("import torch\n\ndef f(x):\n    return x * 2\n", "no @triton.jit kernel"),
    ("import triton\n\n@triton.autotune(configs=[], key=[])\n@triton.jit\ndef k(x):\n    pass\n\ndef f(x):\n"
     "    k[(1,)](x)\n", "is autotuned"),
    ("import triton\n\n@triton.jit\ndef k(x):\n    pass\n", "no launch `kernel[grid](...)`"),
])
def test_the_finder_says_why_it_cannot_parse(text, reason):
    with pytest.raises(UnparsableKernel, match=re.escape(reason)):
        find_launch_params(text)


def test_a_kernel_it_cannot_parse_gets_the_original_submitted_with_the_reason(capsys):
    text = "import torch\n\ndef f(x):\n    return x * 2\n"
    p = load_policy("tuner", rewrites=[])
    d = Driver(p, lambda src: bench("measured", 1.0))
    assert d.run(text) == text
    assert [a["kind"] for a in d.actions] == ["read_file", "shell", "write_file", "submit"]
    out = capsys.readouterr().out
    assert "launch parameters not searched: no @triton.jit kernel in the file" in out
    assert "Submitted: the original kernel, unchanged (nothing was tried)" in out


def test_the_search_picks_the_faster_variant_of_a_fake_measure():
    matmul = source("matmul")

    def answer(src):
        found = find_launch_params(src).by_name()
        fast = found["BLOCK_M"].value == 128 and found["BLOCK_N"].value == 128
        return bench("measured", 1.25 if fast else 1.1 if found["BLOCK_M"].value == 128 else 1.0, band=(0.99, 1.01))
    p = load_policy("tuner", rewrites=[], verbose=False)
    final = Driver(p, answer, prompt="You have 200 steps and 3600 s").run(matmul)
    found = find_launch_params(final).by_name()
    assert (found["BLOCK_M"].value, found["BLOCK_N"].value) == (128, 128)
    assert "Submitted: original with BLOCK_M=128, BLOCK_N=128" in p.summary
    # Directions that did not help were not followed: BLOCK_M=16 (a quarter, past a worse half) was never tried.
    assert not any("BLOCK_M=16" in e["variant"] for e in p.log)


@pytest.mark.parametrize("variant, submitted", [(1.04, False), (1.08, True)])
def test_never_submits_a_variant_within_the_noise_band(variant, submitted):
    softmax = source("softmax")

    def answer(src):
        if src == softmax:
            return bench("measured", 1.0, band=(0.95, 1.05))  # the original against itself: 5% noise
        return bench("measured", variant if "BLOCK_SIZE = 2048" in src else 0.9, band=(variant - 0.05, variant + 0.05))
    p = load_policy("tuner", rewrites=[], verbose=False)
    final = Driver(p, answer).run(softmax)
    assert (final != softmax) is submitted and p.bar(p_base(p)) == pytest.approx(1.05)
    if not submitted:
        assert "does not lie beyond the original's noise band (it must exceed 1.0500x)" in p.summary


def p_base(policy):
    from kernelgym.policies.tuner.measure import Measure
    original = policy.log[0]
    assert original["variant"] == "original"
    return Measure(True, original["kind"], original["score"], band=tuple(original["band"]))


def test_per_size_class_kernel_is_tried_where_the_classes_best_differ():
    softmax = source("softmax")
    classes = "ENTRY softmax\nSIZE_CLASS 0 512\nSIZE_CLASS 1 4096\nSIZE_CLASS 2 4096\n"

    def answer(src):
        if "_TUNER_BY_SIZE_CLASS" in src:
            per = [1.3, 1.2, 1.2]
        else:
            block = find_launch_params(src).by_name()["BLOCK_SIZE"].value
            per = {512: [1.3, 1.0, 1.0], 2048: [1.0, 1.2, 1.2]}.get(block, [1.0, 1.0, 1.0])
        return bench("measured", sum(per) / 3, per=[(128, per[0]), (1024, per[1]), (4096, per[2])], band=(0.99, 1.01))
    p = load_policy("tuner", rewrites=[], verbose=False, ranked=False)
    final = Driver(p, answer, prompt="You have 200 steps and 3600 s", size_classes=classes).run(softmax)
    assert "_TUNER_BY_SIZE_CLASS = {512: (512,), 4096: (2048,)}" in final
    assert "BLOCK_SIZE, = _TUNER_BY_SIZE_CLASS.get(_tuner_size_class(x), _TUNER_DEFAULT)" in final
    compile(final, "kernel.py", "exec")


def test_dispatch_by_size_class_makes_the_wrapper_choose_per_call():
    out = dispatch_by_size_class(source("matmul"), "matmul", ["BLOCK_M", "NUM_WARPS"], {4096: (16, 2)}, (128, 8))
    import torch
    namespace = {"torch": torch}
    exec(out[out.index("_TUNER_BY_SIZE_CLASS ="):out.index("def matmul(")], namespace)
    assert namespace["_TUNER_BY_SIZE_CLASS"] == {4096: (16, 2)} and namespace["_TUNER_DEFAULT"] == (128, 8)
    body = out[out.index("def matmul("):]
    # The first statement after the docstring: the grid below it is computed from the chosen values.
    assert body.splitlines()[2] == "    BLOCK_M, NUM_WARPS = _TUNER_BY_SIZE_CLASS.get(_tuner_size_class(a, b), _TUNER_DEFAULT)"
    small, big = torch.empty(4000, dtype=torch.int8), torch.empty(10 ** 6, dtype=torch.int8)
    size_class = namespace["_tuner_size_class"]
    assert size_class(small, 3) == 4096 and size_class(big) == 1 << 20 and size_class(3) == 1
    # The class is the one SIZE_CLASS_CMD prints for the same inputs: 1 << (n - 1).bit_length().
    for n in (1, 2, 3, 4096, 4097):
        assert size_class(torch.empty(n, dtype=torch.int8)) == 1 << max(n - 1, 0).bit_length()
    with pytest.raises(ValueError, match="no top-level function 'nope'"):
        dispatch_by_size_class(source("matmul"), "nope", ["BLOCK_M"], {}, (64,))


def fake_clock(monkeypatch, policy):
    clock = [0.0]
    monkeypatch.setattr(sys.modules[type(policy).__module__], "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    return clock


def test_stays_within_the_time_budget_without_screening(monkeypatch):
    p = load_policy("tuner", rewrites=[], verbose=False, time_budget_s=100, screen_cmd="")
    clock = fake_clock(monkeypatch, p)

    def answer(src):
        clock[0] += 30.0  # each measure takes 30 s
        return bench("measured", 1.0)
    d = Driver(p, answer, prompt="You have 200 steps and 3600 s")
    d.run(source("softmax"))
    assert clock[0] <= 100 and "time budget reached" in p.summary
    # Each measure is cut off where the budget ends: 100 s at first, then what is left.
    limits = [int(a["cmd"].split()[1]) for a in d.actions if a["kind"] == "shell"]
    assert limits == [95, 65]  # the original at 0 s, one variant at 30 s; at 60 s two more measures would not fit
    assert all(a["cmd"].endswith(" python bench.py --check") for a in d.actions if a["kind"] == "shell")


def test_screening_reaches_variants_where_the_old_rule_tried_none(monkeypatch):
    """On the H200 (12 tasks at once, 120 s each) 19 tasks stopped right after the original's measure (about 40 s):
    40 + 2 x 40 + 5 > 120. A screen costs less than a full measure, and only the best needs the full one."""
    p = load_policy("tuner", rewrites=[], verbose=False, time_budget_s=120)
    clock = fake_clock(monkeypatch, p)
    softmax = source("softmax")

    def answer(src, cmd):
        clock[0] += 12.0 if "--reps" in cmd else 40.0  # a screen 12 s, a full measure (check.py + bench) 40 s
        fast = "BLOCK_SIZE = 4096" in src and "NUM_WARPS = 16" in src  # the first ranked candidate
        return bench("measured", 1.0 if src == softmax else 1.2 if fast else 0.98, band=(0.99, 1.01))
    d = Driver(p, answer, prompt="You have 200 steps and 3600 s", with_cmd=True)
    final = d.run(softmax)
    screens, fulls = d.shells(screen=True), d.shells(screen=False)
    # The original in full (0-40 s); screens while a screen, the winner's full measure and 5 s still fit: at 40 s
    # (a first screen guessed at half the full one: 40 + 20 + 40 + 5 <= 120) and at 52 s; at 64 s 64 + 12 + 40 + 5
    # would not; then the one finalist in full (64-104 s).
    assert len(screens) == 2 and len(fulls) == 2 and clock[0] == 104 <= 120
    assert all("bench.py --warmup 2 --reps 12 --rounds 2" in c and "--check" not in c for c in screens)
    assert "BLOCK_SIZE = 4096" in final and "NUM_WARPS = 16" in final
    assert re.search(r"time budget reached: the ranked candidates stopped at 64 s of 120 s \(a screening measure "
                     r"takes about 12 s, a full one about 40 s", p.summary)
    assert "search time 104 s of 120 s: 2 full measure(s), 2 screening measure(s)" in p.summary
    assert "(screening, 12 s)" in p.summary and "(full measure, 40 s)" in p.summary


def test_only_finalists_get_the_full_measure_and_the_first_that_passes_is_submitted():
    """Screens rank; the full measure (check.py, then bench) decides. The 2 best screened variants above the bar are
    measured in full; the first whose full measure lies beyond the bar is submitted; a faster second finalist only
    with one more full measure confirming it."""
    softmax = source("softmax")
    screen = {(4096, 16): 1.30, (4096, 8): 1.25, (2048, 8): 1.20, (2048, 4): 1.02}
    full = {(4096, 16): 1.00, (4096, 8): 1.22}  # the top screen does not hold up; the second does

    def answer(src, cmd):
        if src == softmax:
            return bench("measured", 1.0, band=(0.98, 1.02))
        found = find_launch_params(src).by_name()
        key = (found["BLOCK_SIZE"].value, found["NUM_WARPS"].value, found["softmax_kernel.num_stages"].value)
        return bench("measured", (screen if "--reps" in cmd else full).get(key[:2] if key[2] is None else key, 0.9),
                     band=(0.99, 1.01))
    p = load_policy("tuner", rewrites=[], verbose=False)
    d = Driver(p, answer, prompt="You have 200 steps and 3600 s", with_cmd=True)
    final = d.run(softmax)
    found = find_launch_params(final).by_name()
    assert (found["BLOCK_SIZE"].value, found["NUM_WARPS"].value) == (4096, 8)
    assert len(d.shells(screen=False)) == 1 + 2  # the original, then the two finalists; no other full measure
    assert len(d.shells(screen=True)) >= 4  # every ranked candidate was screened
    assert [e["variant"] for e in p.log if e["measure"] == "full"] == [
        "original", "original with BLOCK_SIZE=4096, NUM_WARPS=16 (full measure)",
        "original with BLOCK_SIZE=4096, NUM_WARPS=8 (full measure)"]
    assert "confirmed: original with BLOCK_SIZE=4096, NUM_WARPS=8 screened beyond the bar and a full measure gave " \
           "1.2200x" in p.summary
    # No full measure holds: the original, saying why.
    full.clear()
    p = load_policy("tuner", rewrites=[], verbose=False)
    assert Driver(p, answer, prompt="You have 200 steps and 3600 s", with_cmd=True).run(softmax) == softmax
    assert "no finalist's full measure lay beyond the original's noise band (1.0200x)" in p.summary


def test_a_failed_screen_is_never_a_finalist():
    # A variant whose screen lost a config (a timed run differed from the original's output) is not measured in full.
    softmax = source("softmax")

    def answer(src, cmd):
        if src == softmax:
            return bench("measured", 1.0)
        out = bench("measured", 1.5 if "NUM_WARPS = 16" in src else 0.9)
        if "--reps" in cmd and "NUM_WARPS = 16" in src:
            out = out.replace("configs=3", "configs=2") + "config 2 {'rows': 4}: WRONG in a timed run: differs\n"
        return out
    p = load_policy("tuner", rewrites=[], verbose=False)
    d = Driver(p, answer, prompt="You have 200 steps and 3600 s", with_cmd=True)
    assert d.run(softmax) == softmax
    assert [e["variant"] for e in p.log if e["measure"] == "full"] == ["original"]
    failed = [e for e in p.log if "NUM_WARPS=16" in e["variant"]]
    assert failed and not any(e["correct"] for e in failed)
    # The log keeps what a failed measure printed (the suite benchmark's record of why), and nothing for the others.
    assert all("WRONG in a timed run" in e["output_tail"] for e in failed)
    assert not any("output_tail" in e for e in p.log if e["correct"])
    assert "Submitted: the original kernel, unchanged (the best variant by its screening measure" in p.summary


def test_parse_screen_counts_configs_and_wrong_runs():
    from kernelgym.policies.tuner.measure import parse_screen
    ok = bench("measured", 1.1, per=[(128, 1.1), (1024, 1.1), (2048, 1.1)]).replace(CHECK_OK, "")
    m = parse_screen(ok, 3)
    assert m.correct and m.screen and m.score == pytest.approx(1.1) and len(m.per_config) == 3
    assert not parse_screen(ok, 5).correct  # fewer configs timed than asked for
    assert not parse_screen(ok + "config 1 {'rows': 4}: error: RuntimeError: boom\n", 3).correct
    assert not parse_screen("Traceback ...", 3).correct
    assert "screening measure (fewer runs, no check.py) 1.1000x" in m.describe()


def test_ranked_candidates_put_scaled_blocks_and_dot_tiles_first():
    from kernelgym.policies.tuner.launch_params import ranked_candidates
    softmax = source("softmax")
    first = [v for v, _ in ranked_candidates(softmax, find_launch_params(softmax))]
    # 4x and 2x the block, each with the warps that give a thread 8 and then 16 elements.
    assert first == [{"BLOCK_SIZE": 4096, "NUM_WARPS": 16}, {"BLOCK_SIZE": 4096, "NUM_WARPS": 8},
                     {"BLOCK_SIZE": 2048, "NUM_WARPS": 8}, {"BLOCK_SIZE": 2048, "NUM_WARPS": 4}]
    matmul = source("matmul")
    tiles = [v for v, _ in ranked_candidates(matmul, find_launch_params(matmul))]
    assert tiles[0] == {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "NUM_WARPS": 8, "matmul_kernel.num_stages": 3}
    assert all(set_params(matmul, t) != matmul for t in tiles)
    # Nothing to scale (the block is computed in the wrapper): no ranked candidates, the one-at-a-time search only.
    topk = source("topk-softmax")
    assert ranked_candidates(topk, find_launch_params(topk)) == []


def test_the_gpu_search_measures_the_ranked_candidates_first():
    softmax = source("softmax")
    p = load_policy("tuner", rewrites=[], verbose=False)
    d = Driver(p, lambda src: bench("measured", 1.0))
    d.run(softmax)
    written = [(find_launch_params(a["content"]).by_name()["BLOCK_SIZE"].value,
                find_launch_params(a["content"]).by_name()["NUM_WARPS"].value)
               for a in d.actions if a["kind"] == "write_file"][:4]
    assert written == [(4096, 16), (4096, 8), (2048, 8), (2048, 4)]


def test_the_rmsnorm_rewrite_tunes_its_tables_one_after_another():
    # Each table's value for every size, then each size's best; the next table starts from that best.
    p = load_policy("tuner", verbose=False, tune_within=0.0)
    best_rows = {128: 8, 1024: 2, 2048: 1}

    def table(src, name):
        m = re.search(rf"^{name} = \{{(.*)\}}", src, re.M).group(1)
        return {int(k): int(v) for k, v in (kv.split(":") for kv in m.split(",") if kv.strip())}

    def answer(src):
        if "ONE_PASS" not in src:
            return bench("measured", 1.0, per=[(128, 1.0), (1024, 1.0), (2048, 1.0)])
        rows = table(src, "ROWS_BY_BLOCK")
        per = [(h, 1.1 + (0.1 if rows.get(h, 1) == best_rows[h] else 0.0)) for h in (128, 1024, 2048)]
        return bench("measured", sum(s for _, s in per) / 3, per=per)
    final = Driver(p, answer, prompt="You have 200 steps and 3600 s").run()
    assert table(final, "ROWS_BY_BLOCK") == {128: 8, 1024: 2, 2048: 1}
    rows_tried = [e["variant"] for e in p.log if "ROWS_BY_BLOCK = " in e["variant"] and "every size" in e["variant"]]
    # 1 is what the empty table means (the rewrite's own measure stands for it): not measured again.
    assert rows_tried == [f"rewrite 'rmsnorm one pass per row' with ROWS_BY_BLOCK = {v} for every size" for v in (2, 4, 8)]


def test_the_suite_benchmark_judges_against_the_baselines_noise():
    import importlib.util
    spec = importlib.util.spec_from_file_location("tuner_suite", DEFAULT_POLICIES_ROOT.parent / "benchmarks" / "tuner_suite.py")
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    grade = {"speedup": 0.97, "configs": [{"noise_band": [0.98, 1.02]}, {"noise_band": [0.99, 1.01]}]}
    assert suite.band_half_width(grade) == pytest.approx(0.015)
    base = [{"speedup": 1.01, "noise_half_width": 0.015}]
    slower = suite.judge({"task": "t", "tuner": {"speedup": 0.97}, "baseline": base})
    assert slower["baseline_noise"] == pytest.approx(0.015) and slower["slower_beyond_noise"] and not slower["at_target"]
    within = suite.judge({"task": "u", "tuner": {"speedup": 0.99}, "baseline": base})
    assert not within["slower_beyond_noise"]
    untimed = suite.judge({"task": "v", "interpreter": True, "tuner": {"speedup": None}, "baseline": [{"speedup": None}]})
    assert untimed["label"] == "untimed (CPU interpreter)" and not untimed["timed"]
    md = suite.summary_markdown({"machine": "m", "date": "d", "wall_s": 1, "main_job": None,
                                 "tasks": [slower, within, untimed]})
    assert "slower than the baseline beyond its noise: ['t']" in md and "| v | untimed (CPU interpreter) |" in md
    # Where the time went: the tuner's screens and full measures, counted with their mean seconds, and its stops.
    log = [{"measure": "full", "seconds": 40.0}, {"measure": "screen", "seconds": 10.0},
           {"measure": "screen", "seconds": 14.0}, {"measure": "full", "seconds": 30.0}]
    counts = suite.measure_counts(log)
    assert counts == {"screens": 2, "screen_mean_s": 12.0, "full": 2, "full_mean_s": 35.0}
    row = suite.judge({"task": "w", "tuner": {"speedup": 1.2}, "baseline": base, **counts,
                       "stopped": ["time budget reached: the ranked candidates stopped at 64 s of 120 s (...)"]})
    md = suite.summary_markdown({"machine": "m", "date": "d", "wall_s": 1, "main_job": None, "tasks": [row]})
    assert "| 2 (12.0) / 2 (35.0) | time budget reached: the ranked candidates |" in md


def test_a_second_pass_follows_what_the_first_changed():
    # 4096 only pays once the warps are 8, which the first pass finds after it has passed the block size.
    scores = {(2048, 4): 1.1, (4096, 4): 0.9, (2048, 8): 1.2, (4096, 8): 1.35}

    def answer(src):
        found = find_launch_params(src).by_name()
        return bench("measured", scores.get((found["BLOCK_SIZE"].value, found["NUM_WARPS"].value), 1.0))
    p = load_policy("tuner", rewrites=[], verbose=False, ranked=False)
    final = Driver(p, answer, prompt="You have 200 steps and 3600 s").run(source("softmax"))
    found = find_launch_params(final).by_name()
    assert (found["BLOCK_SIZE"].value, found["NUM_WARPS"].value) == (4096, 8)
    p = load_policy("tuner", rewrites=[], verbose=False, passes=1, ranked=False)
    final = Driver(p, answer, prompt="You have 200 steps and 3600 s").run(source("softmax"))
    found = find_launch_params(final).by_name()
    assert (found["BLOCK_SIZE"].value, found["NUM_WARPS"].value) == (2048, 8)


def test_the_tuner_loads_from_a_checkout_on_pythonpath_never_installed():
    # On the GPU machines kernelgym runs from the copied checkout on PYTHONPATH: no finder maps kernelgym.policies
    # there, and the tuner's policy.py imports the modules beside it by that package name. `python -S` skips the
    # editable install's .pth (its finder), as such a machine has none.
    import subprocess
    import sysconfig
    code = (f"import sys; sys.path.insert(0, {str(DEFAULT_POLICIES_ROOT.parent)!r}); "
            f"sys.path.append({sysconfig.get_paths()['purelib']!r}); import importlib.util; "
            "assert importlib.util.find_spec('kernelgym.policies') is None; "
            "from kernelgym.policy import load_policy; p = load_policy('tuner', verbose=False); "
            "print(sys.modules['kernelgym.policies.tuner.launch_params'].__file__)")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(DEFAULT_POLICIES_ROOT / "tuner" / "launch_params.py")


# -- The grader's static check on the tuner's variants --------------------------------------------------------------
QUANT = "per-token-quant-int8"
#: The per-size-class choice the tuner measured at 1.18x on an H200 for triton-per-token-quant-int8 and the grader
#: then refused (provenance_refused): its helper used `hasattr` and `int.bit_length`.
QUANT_CLASSES = {8192: (1024, 8), 1048576: (4096, 16), 8388608: (1024, 4), 33554432: (4096, 8)}
#: The helper as dispatch_by_size_class wrote it then.
OLD_SIZE_CLASS_FN = '''

def _tuner_size_class(*args):
    """The size class of a call: the next power of two of its largest tensor argument's element count."""
    n = max([a.numel() for a in args if hasattr(a, "numel")] or [0])
    return 1 << max(n - 1, 0).bit_length()
'''


def task_prompt(task, steps=200):
    """A prompt naming the task's entry point and reference as kernelgym/prompt.py does, and the budget."""
    from kernelgym.task import load_task
    spec = load_task(DEFAULT_TASKS_ROOT / "triton" / task).spec
    return (f"Entry point: `{spec.entry_point}`. Target kernel functions: x.\nReference (read-only, for "
            f"understanding): `{spec.reference}`. `configs.json` lists the seen configs.\n"
            f"- You have {steps} steps and 3600 s; the episode is graded when you submit.")


def static_findings(task, src):
    from kernelgym.grader.provenance import check_source
    from kernelgym.task import load_task
    spec = load_task(DEFAULT_TASKS_ROOT / "triton" / task).spec
    return [str(f) for f in check_source({"kernel.py": src}, spec.entry_point, spec.reference)]


def quant_per_class():
    return dispatch_by_size_class(source(QUANT), "per_token_quant_int8", ["BLOCK_SIZE", "NUM_WARPS"], QUANT_CLASSES,
                                  (1024, 4))


def test_the_per_size_class_variant_of_per_token_quant_int8_passes_the_grader_static_check():
    assert static_findings(QUANT, source(QUANT)) == []
    out = quant_per_class()
    assert "_TUNER_BY_SIZE_CLASS = {8192: (1024, 8), 1048576: (4096, 16)" in out
    assert static_findings(QUANT, out) == []


@pytest.mark.parametrize("task", sorted(p.name for p in (DEFAULT_TASKS_ROOT / "triton").iterdir()
                                        if (p / "kernel.py").is_file()))
def test_per_size_class_dispatch_passes_the_static_check_wherever_it_applies(task):
    from kernelgym.task import load_task
    src = source(task)
    try:
        lp = find_launch_params(src)
    except UnparsableKernel:
        pytest.skip("no launch parameters")
    entry = load_task(DEFAULT_TASKS_ROOT / "triton" / task).spec.entry_point.split(":")[1]
    names = [p.name for p in lp.params if lp.dispatchable(p.name) and lp.wrapper_of.get(p.name) == entry]
    if not names:
        pytest.skip("no constant the entry point alone reads")
    before = static_findings(task, src)
    out = dispatch_by_size_class(src, entry, names, {4096: tuple(lp.by_name()[n].value for n in names)},
                                 tuple(lp.by_name()[n].value for n in names))
    assert static_findings(task, out) == before == []


def quant_answer(src):
    """Per-config speedups whose best block differs between the small config and the two large ones, so the tuner
    tries a per-size-class kernel, which measures best."""
    if "_TUNER_BY_SIZE_CLASS" in src:
        per = [1.3, 1.25, 1.25]
    else:
        block = find_launch_params(src).by_name()["BLOCK_SIZE"].value
        per = {512: [1.3, 1.0, 1.0], 2048: [1.0, 1.25, 1.25]}.get(block, [1.0, 1.0, 1.0])
    return bench("measured", sum(per) / 3, per=[(128, per[0]), (1024, per[1]), (4096, per[2])], band=(0.99, 1.01))


QUANT_SIZE_CLASSES = "ENTRY per_token_quant_int8\nSIZE_CLASS 0 8192\nSIZE_CLASS 1 1048576\nSIZE_CLASS 2 1048576\n"


def test_the_tuner_submits_a_per_size_class_quant_kernel_the_grader_accepts():
    p = load_policy("tuner", rewrites=[], verbose=False, ranked=False)
    d = Driver(p, quant_answer, prompt=task_prompt(QUANT), size_classes=QUANT_SIZE_CLASSES)
    final = d.run(source(QUANT))
    assert p._entry_point == "kernel.py:per_token_quant_int8"
    assert "_TUNER_BY_SIZE_CLASS = {8192: (512,), 1048576: (2048,)}" in final
    assert static_findings(QUANT, final) == []
    # Every variant the tuner wrote (each one it measured) passes the check; none was refused.
    writes = [a["content"] for a in d.actions if a["kind"] == "write_file"]
    assert writes and all(static_findings(QUANT, w) == [] for w in writes)
    assert p.refused == [] and "refused" not in p.summary


def test_a_variant_the_static_check_refuses_is_never_measured_and_is_reported(monkeypatch):
    # The helper as it was (hasattr, int.bit_length): the grader refuses the per-size-class kernel, so the tuner
    # must skip it rather than measure it and submit it.
    import kernelgym.policies.tuner.launch_params as launch_params
    monkeypatch.setattr(launch_params, "SIZE_CLASS_FN", OLD_SIZE_CLASS_FN)
    old = quant_per_class()
    assert any("[refused_names]" in f for f in static_findings(QUANT, old))
    p = load_policy("tuner", rewrites=[], verbose=False, ranked=False)
    d = Driver(p, quant_answer, prompt=task_prompt(QUANT), size_classes=QUANT_SIZE_CLASSES)
    final = d.run(source(QUANT))
    writes = [a["content"] for a in d.actions if a["kind"] == "write_file"]
    assert not any("_TUNER_BY_SIZE_CLASS" in w for w in writes)  # never written, so never measured or submitted
    assert "_TUNER_BY_SIZE_CLASS" not in final and static_findings(QUANT, final) == []
    (label, findings), = p.refused
    assert label.startswith("original per size class: 8192: BLOCK_SIZE=512")
    assert any("uses `hasattr`" in f and f.endswith("[refused_names]") for f in findings)
    assert any("`.bit_length()`" in f and f.endswith("[host_methods_allowed]") for f in findings)
    line = next(x for x in p.summary.splitlines() if x.strip().startswith("original per size class"))
    assert "refused by the grader's static check (not measured)" in line and "[refused_names]" in line
    assert "1 variant(s) refused by the grader's static check" in p.summary
    assert [e["measure"] for e in p.log].count("refused") == 1


def test_a_refused_rewrite_is_skipped_and_the_entry_point_comes_from_configs_json(tmp_path):
    rewrite = tmp_path / "refused.py"
    rewrite.write_text(source(QUANT).replace("    if x.stride(-1) != 1:", "    if getattr(x, 'is_cuda'):\n        pass\n"
                                             "    if x.stride(-1) != 1:"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kernel.py").write_text(source(QUANT))
    (workspace / "bench.py").write_text("")
    (workspace / "configs.json").write_text('{"entry_point": "kernel.py:per_token_quant_int8", '
                                            '"reference": "reference.py:per_token_quant_int8_reference"}')
    p = load_policy("tuner", params={"BLOCK_SIZE": [2048]}, verbose=False,
                    rewrites=[{"name": "refused", "file": str(rewrite), "requires": ["per_token_quant_int8_kernel"]}])
    d = Driver(p, lambda src: bench("measured", 1.5 if "getattr" in src else 1.0))
    p.reset({"output": "", "prompt": "You have 50 steps and 3600 s"}, {"workspace": str(workspace)})
    assert p._entry_point == "kernel.py:per_token_quant_int8"
    assert p._reference == "reference.py:per_token_quant_int8_reference"
    final = d.run(source(QUANT))
    assert final == source(QUANT)
    assert not any("getattr" in a.get("content", "") for a in d.actions)
    assert [label for label, _ in p.refused] == ["rewrite 'refused'"]
    assert "rewrite 'refused': refused by the grader's static check (not measured): kernel.py:" in p.summary
    assert "[refused_names]" in p.summary


def _rewrites():
    import yaml
    return yaml.safe_load((DEFAULT_POLICIES_ROOT / "tuner" / "config.yaml").read_text())["rewrites"]


@pytest.mark.parametrize("rewrite", _rewrites(), ids=lambda rw: rw["name"])
def test_each_rewrite_applies_to_its_task_and_passes_the_grader_static_check(rewrite):
    # A rewrite is tried only where a task's baseline holds every `requires` snippet: a snippet edited in the task
    # would silently retire it. What it writes must pass the static check the grader runs.
    tasks = [p.name for p in (DEFAULT_TASKS_ROOT / "triton").iterdir() if (p / "kernel.py").is_file()
             and all(r in source(p.name) for r in rewrite["requires"])]
    assert len(tasks) == 1, tasks
    assert static_findings(tasks[0], (DEFAULT_POLICIES_ROOT / "tuner" / rewrite["file"]).read_text()) == []


def test_the_softmax_rewrite_matches_torch_on_every_path():
    # One pass (a row per program, and several rows per program past the last row), and a long row split over
    # programs (two chunk sizes), on Triton's CPU interpreter, against torch.softmax in fp32. In a process of its
    # own: the interpreter must be chosen before triton is first imported.
    import subprocess
    script = f"""
import importlib.util, torch
spec = importlib.util.spec_from_file_location("softmax_one_pass", {str(DEFAULT_POLICIES_ROOT / "tuner" / "rewrites" / "softmax_one_pass.py")!r})
sm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sm)
gen = torch.Generator().manual_seed(0)
for rows, cols, dtype, tables in [(3, 1000, torch.bfloat16, {{}}), (7, 300, torch.float16, {{"ROWS_BY_BLOCK": {{512: 4}}}}),
                                  (2, 9000, torch.float16, {{}}), (3, 10001, torch.bfloat16, {{"SPLIT_BY_BLOCK": {{16384: 2048}}}})]:
    sm.ROWS_BY_BLOCK, sm.SPLIT_BY_BLOCK = tables.get("ROWS_BY_BLOCK", {{}}), tables.get("SPLIT_BY_BLOCK", {{}})
    x = (3 * torch.randn(rows, cols, generator=gen)).to(dtype)
    y = sm.softmax(x)
    assert y.dtype == dtype and y.shape == x.shape
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), atol=2e-3, rtol=1e-2)
    print("ok", rows, cols)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("ok") == 4, proc.stdout
