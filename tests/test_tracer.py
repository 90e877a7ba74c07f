"""The observer's kernel tracer (kernelgym/grader/tracer.py): its build, reading its traces (real ones, recorded on the
H200 on 2026-12-01, in tests/data/tracer/), cutting them at the markers with the harness's cache flushes dropped, and
which tool a grader picks. No GPU here: the tracer's run under CUDA is benchmarks/tracer_smoke.py."""
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelgym.backends import triton
from kernelgym.discovery import get_task
from kernelgym.grader import Grader, GraderConfig, tracer
from kernelgym.grader.observer import FLUSH_KERNEL, ObserverError, foreign_kernels, split
from kernelgym.hardware import detect_profile

DATA = Path(__file__).resolve().parent / "data" / "tracer"
N = 5


def trace_dir(tmp_path, *texts):
    for i, text in enumerate(texts):
        (tmp_path / f"{tracer.TRACE_PREFIX}.{i + 2}").write_text(text)
    return tmp_path


def recorded(tmp_path, name):
    shutil.copy(DATA / name, tmp_path / f"{tracer.TRACE_PREFIX}.2")
    return tracer.parse_trace(tmp_path, Path.read_bytes)


def test_a_real_trace_parses_and_cuts_at_the_markers_without_the_harness_flushes(tmp_path):
    kernels = recorded(tmp_path, "rmsnorm_fast.trace")
    assert len(kernels) == 25
    obs = split(kernels, N, flushed=True)
    assert [[k.name for k in c] for c in obs.checked] == [["rmsnorm_kernel"]] * N
    assert [k.name for k in obs.before] == ["rmsnorm_kernel"] * N  # the warm-up calls; their flush is dropped
    assert all(FLUSH_KERNEL not in k.name for part in obs.checked for k in part)
    assert all(0.001 < obs.checked_ms(i) < 1.0 for i in range(N))  # ns in the trace, ms here
    assert obs.checked_ms(4) > obs.checked_ms(0)
    rms = get_task("triton-rmsnorm")
    own = triton.own_kernel_names({"kernel.py": (rms.root / "kernel.py").read_text()})
    assert foreign_kernels(obs, own, bare=True) == [[]] * N


def test_without_flush_dropping_the_harness_flush_would_be_foreign(tmp_path):
    obs = split(recorded(tmp_path, "rmsnorm_fast.trace"), N)
    assert all(foreign_kernels(obs, {"rmsnorm_kernel"}, bare=True))  # the reduce_kernel of each flush


def test_a_part_without_the_harness_flush_is_refused(tmp_path):
    kernels = recorded(tmp_path, "rmsnorm_fast.trace")
    flush_positions = [i for i, k in enumerate(kernels) if FLUSH_KERNEL in k.name]
    del kernels[flush_positions[2]]
    with pytest.raises(ObserverError, match="cache flush"):
        split(kernels, N, flushed=True)


def test_kernels_are_ordered_by_their_device_start(tmp_path):
    text = "kernelgym-trace 1 2\n300\t310\t3\tc\n100\t120\t1\ta\n200\t205\t2\tb\nend 3 0\n"
    kernels = tracer.parse_trace(trace_dir(tmp_path, text), Path.read_bytes)
    assert [(k.name, k.duration_ns) for k in kernels] == [("a", 20.0), ("b", 5.0), ("c", 10.0)]


@pytest.mark.parametrize("text, why", [
    ("kernelgym-trace 1 2\n100\t120\t1\ta\n", "incomplete"),
    ("kernelgym-trace 1 2\nerror: CUPTI could not be enabled\n", "CUPTI could not be enabled"),
    ("kernelgym-trace 1 2\n100\t120\t1\ta\nend 1 4\n", "dropped 4"),
    ("kernelgym-trace 1 2\n100\t120\t1\ta\nend 2 0\n", "says 2"),
    ("kernelgym-trace 1 2\n100\t90\t1\ta\nend 1 0\n", "ends before it starts"),
    ("kernelgym-trace 1 2\nnot a record\nend 1 0\n", "unreadable trace line"),
    ("some other file\nend 0 0\n", "no header"),
])
def test_a_damaged_trace_is_refused(tmp_path, text, why):
    with pytest.raises(ObserverError, match=why):
        tracer.parse_trace(trace_dir(tmp_path, text), Path.read_bytes)


def test_kernels_in_a_second_process_or_no_trace_at_all_are_refused(tmp_path):
    good = "kernelgym-trace 1 2\n100\t120\t1\ta\nend 1 0\n"
    with pytest.raises(ObserverError, match="2 processes"):
        tracer.parse_trace(trace_dir(tmp_path, good, good), Path.read_bytes)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ObserverError, match="no trace"):
        tracer.parse_trace(empty, Path.read_bytes)


@pytest.mark.skipif(tracer.unavailable() is not None, reason=str(tracer.unavailable()))
def test_the_tracer_builds_once_and_exports_its_entry_points(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGYM_CACHE_DIR", str(tmp_path))
    library = tracer.build()
    assert library.is_relative_to(tmp_path) and tracer.build() == library  # cached by source and toolchain
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
    assert "InitializeInjection" in symbols and "kernelgym_trace_flush" in symbols and "kernelgym_trace_enable" in symbols


def test_a_broken_toolchain_is_an_observer_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGYM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tracer, "find_cupti", lambda: None)
    with pytest.raises(ObserverError, match="CUPTI"):
        tracer.build()


def test_the_grader_falls_back_to_ncu_and_says_why_neither_runs(tmp_path, monkeypatch):
    from kernelgym.grader import observing as grader_module
    monkeypatch.setattr(tracer, "build", lambda: (_ for _ in ()).throw(ObserverError("no CUPTI here")))
    g = Grader(get_task("triton-rmsnorm"), detect_profile(), tmp_path / "g", GraderConfig(sandbox="none"))
    monkeypatch.setattr(grader_module, "find_ncu", lambda: "/usr/bin/ncu")
    assert g.observer_tool() == "ncu"
    g = Grader(get_task("triton-rmsnorm"), detect_profile(), tmp_path / "h", GraderConfig(sandbox="none"))
    monkeypatch.setattr(grader_module, "find_ncu", lambda: None)
    assert "no CUPTI here" in g.observer_tool() and "ncu" in g.observer_tool()
    g = Grader(get_task("triton-rmsnorm"), detect_profile(), tmp_path / "i",
               GraderConfig(sandbox="none", observer_tool="tracer"))
    monkeypatch.setattr(grader_module, "find_ncu", lambda: "/usr/bin/ncu")
    assert "no CUPTI here" in g.observer_tool()  # asked for the tracer alone: no fallback


@pytest.mark.parametrize("trace, task, own", [
    ("cuda_gelu.trace", "cuda-gelu", {"gelu_kernel"}),
    ("fused_add_rmsnorm_fast.trace", "triton-fused-add-rmsnorm", {"fused_add_rmsnorm_kernel"}),
])
def test_real_traces_of_other_tasks_show_only_their_own_kernels(tmp_path, trace, task, own):
    from kernelgym.backends import cuda
    obs = split(recorded(tmp_path, trace), N, flushed=True)
    backend = cuda if task.startswith("cuda") else triton
    sources = {p.name: p.read_text() for p in get_task(task).root.glob("*") if p.suffix in (".py", ".cu", ".cpp")}
    if task.startswith("triton"):  # the known-faster kernel the trace was recorded with has the baseline's name
        sources = {"kernel.py": sources["kernel.py"]}
    assert backend.own_kernel_names(sources) >= own
    bare = backend.BARE_KERNEL_NAMES
    assert foreign_kernels(obs, own, bare) == [[]] * N
    assert all(foreign_kernels(obs, set(), bare))  # with no own kernels, every checked call is foreign work


def test_a_name_with_other_line_breaks_stays_one_record(tmp_path):
    # The tracer replaces only "\n" and "\t" in names; the reader splits at "\n" alone, so a name holding "\r" or
    # a Unicode line separator is one kernel, not a broken trace.
    text = "kernelgym-trace 1 2\n100\t120\t1\ta\rb\u2028c\x1cd\nend 1 0\n"
    kernels = tracer.parse_trace(trace_dir(tmp_path, text), Path.read_bytes)
    assert [k.name for k in kernels] == ["a\rb\u2028c\x1cd"]


def test_an_own_kernel_named_like_the_marker_is_not_a_marker(tmp_path):
    # The marker is PyTorch's spin_kernel in its anonymous namespace (at::cuda:: under the tracer, cuda:: in ncu's
    # report); a candidate's own kernel of that name, at file scope, is its own kernel, not a cut.
    text = (DATA / "rmsnorm_fast.trace").read_text().replace("\trmsnorm_kernel\n", "\tspin_kernel\n")
    kernels = tracer.parse_trace(trace_dir(tmp_path, text), Path.read_bytes)
    obs = split(kernels, N, flushed=True)
    assert [[k.name for k in c] for c in obs.checked] == [["spin_kernel"]] * N
    assert foreign_kernels(obs, {"spin_kernel"}, bare=True) == [[]] * N


@pytest.mark.parametrize("tool, report, name", [("tracer", "rmsnorm_fast.trace", f"{tracer.TRACE_PREFIX}.2"),
                                                ("ncu", "../ncu/rmsnorm_baseline.csv", "ncu.csv")])
def test_the_grader_reads_either_tools_observation(tmp_path, tool, report, name):
    """The ncu fallback and the tracer both reach a cut observation through `_read_observation`: the tracer's
    flushes dropped, ncu's report cut as it is; either tool's file alone is not read by the other."""
    import json

    from kernelgym.grader.protocol import CHECK_RESULT, OBSERVED_PREFIX
    from kernelgym.hardware import all_profiles
    g = Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], tmp_path / "g", GraderConfig(sandbox="none"))
    n = len(g.configs)
    assert n == N  # the traces' and reports' configs
    results = tmp_path / "results"
    results.mkdir()
    (results / (OBSERVED_PREFIX + CHECK_RESULT)).write_text(json.dumps(
        {"stage": "check", "ok": True, "error": None, "configs": [{"ok": True}] * n}))
    shutil.copy(DATA / report, results / name)
    g._tool = tool
    obs = g._read_observation(results, False, 0, "")
    assert [[k.name for k in c] for c in obs.checked] == [["rmsnorm_kernel"]] * N
    g._tool = "ncu" if tool == "tracer" else "tracer"  # the other tool finds no report of its own
    with pytest.raises(ObserverError, match="no result|no trace|no report"):
        g._read_observation(results, False, 0, "")


def test_a_tracer_that_fails_on_the_baseline_gives_way_to_ncu(tmp_path, monkeypatch):
    from kernelgym.grader import observing as grader_module
    from kernelgym.grader.observer import Observation
    from kernelgym.hardware import all_profiles
    g = Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], tmp_path / "g", GraderConfig(sandbox="none"))
    g._tool = "tracer"
    monkeypatch.setattr(grader_module, "find_ncu", lambda: "/usr/bin/ncu")
    observed = Observation(before=[], checked=[[]] * len(g.configs))
    tools = []

    def run_baseline_observation():
        tools.append(g._tool)
        if g._tool == "tracer":
            raise ObserverError("CUPTI could not be enabled")
        return observed
    monkeypatch.setattr(g, "_run_baseline_observation", run_baseline_observation)
    monkeypatch.setattr(g, "_baseline_key", lambda: f"key-of-this-test-{g._tool}")
    assert g.baseline_observation() is observed and tools == ["tracer", "ncu"] and g.observer_tool() == "ncu"
    # Asked for the tracer alone: its failure stands.
    h = Grader(get_task("triton-rmsnorm"), all_profiles()["h200"], tmp_path / "h",
               GraderConfig(sandbox="none", observer_tool="tracer"))
    h._tool = "tracer"
    monkeypatch.setattr(h, "_run_baseline_observation", lambda: (_ for _ in ()).throw(ObserverError("no CUPTI")))
    monkeypatch.setattr(h, "_baseline_key", lambda: f"unique-key-of-this-test-{h._tool}")
    with pytest.raises(ObserverError, match="no CUPTI"):
        h.baseline_observation()
