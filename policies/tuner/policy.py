"""`tuner`: a baseline policy for any Triton task: it searches the kernel's launch parameters (and known rewrites)
by what the grader rewards, and submits only what its measure says is faster beyond the noise.

Its measure is the workspace's ``bench.py`` run after ``check.py`` (``python bench.py --check``, measure.py,
docs/BENCH.md): the mean over the seen configs of the per-config speedup against the original kernel, which is what
the score pays. On a GPU it is measured with the grader's own timing code; on the CPU interpreter it is a MODEL
(bytes and launches counted by the interpreter, time estimated for a GPU), and the tuner says so. A variant counts
only if check.py finds it correct on every seen config.

The search, within the episode's step and time budgets (read from the prompt; ``time_budget_s`` may bound it more):

1. The original kernel, measured in full; bench's noise band of it (the original timed against itself) sets the bar.
2. Known structural rewrites (``rewrites`` in config.yaml: a whole kernel file under rewrites/, tried where the file
   contains every ``requires`` snippet). Each is measured with its own defaults.
3. Per structure, best first (on a GPU, only those within ``tune_within`` of the best): a rewrite's per-size
   ``tables`` (each value for every size, then each size's best), then its launch parameters as launch_params.py
   finds them in the syntax tree (constexpr block sizes passed at the launch, num_warps, num_stages): on a GPU
   first the joint candidates `ranked_candidates` puts first (known-good tl.dot tiles; bigger blocks with the
   warps scaled to them), then one at a time from the best so far, nearest values first, a direction dropped once
   it did not help; then, where the seen configs fall in several size classes and the classes' best variants
   differ, a kernel whose wrapper picks each class's values. On the model, launch options (num_warps, num_stages)
   are not searched: the interpreter ignores them. With ``params`` set, those module constants are searched over
   the given values instead (jointly where the grid has at most ``max_joint`` points).
4. The best variant is submitted only if a full measure of it lies beyond the original's noise band; otherwise
   the original is. A kernel the finder cannot parse gets no launch search, and the original is submitted, saying
   why.

Static check: before a variant is written and measured, the tuner runs the grader's static provenance check
(kernelgym/grader/provenance.py, `check_files`, on the kernel file, with the task's entry point and reference read
off the prompt or the workspace's configs.json) over its source. A variant the check refuses is not measured (the
grader would fail it on correctness whatever its speed): it counts as failed, and the summary lists it as refused
with the check's findings. The original is checked too; its own findings are noted.

Screening (on a GPU, ``screen_cmd``): every candidate of steps 2-3 is measured by bench alone with fewer runs (no
check.py), which costs a fraction of a full measure; the ``finalists`` best screened variants above the bar are
then measured in full (``check_cmd``: check.py on every seen config, then bench). The first finalist whose full
measure lies beyond the bar is submitted: its full measure was not used to pick it, so it is the confirmation of
its screening. A later finalist measured faster still replaces it only if one more full measure confirms that.
Without screening (``screen_cmd`` empty), every variant is measured in full and the winner once more.

Budget: before each measure the tuner checks that it, a full measure of the best variant and the submit still fit,
in steps and in time, at the average duration of the measures of its kind so far (a first screening is assumed to
take `SCREEN_GUESS` of the original's full measure). When the search stops it says why, with those times.

The last lines it prints (and `summary`) say what was tried, what was changed and why it submitted what it did.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generator

from kernelgym.errors import PolicyConfigError
from kernelgym.grader.files import MAX_EDITABLE_BYTES
from kernelgym.grader.provenance import check_files
from kernelgym.grader.static_check import finding_line

HERE = Path(__file__).resolve().parent


def _policies_package() -> None:
    """Make ``kernelgym.policies`` importable where no finder maps it, so the modules beside this file import by
    their package names: a checkout used from PYTHONPATH, never installed (as on the GPU machines), has no
    ``kernelgym/policies``; the folder is the package, loaded from its own ``__init__.py``."""
    try:
        importlib.import_module("kernelgym.policies")
    except ImportError:
        spec = importlib.util.spec_from_file_location("kernelgym.policies", HERE.parent / "__init__.py",
                                                      submodule_search_locations=[str(HERE.parent)])
        module = importlib.util.module_from_spec(spec)
        sys.modules["kernelgym.policies"] = module
        spec.loader.exec_module(module)


_policies_package()
from kernelgym.policies.tuner.constant_search import constants, tune_constants, tune_table  # noqa: E402
from kernelgym.policies.tuner.launch_params import (DEFAULT_STAGES, LaunchParams, UnparsableKernel,  # noqa: E402
                                                    dispatch_by_size_class, find_launch_params, ranked_candidates,
                                                    set_params)
from kernelgym.policies.tuner.measure import (SIZE_CLASS_CMD, Measure, Tried, parse_measure, parse_screen,  # noqa: E402
                                              parse_size_classes)

BUDGET_IN_PROMPT = re.compile(r"You have (\d+) steps and (\d+) s")
#: The task's entry point and reference as the prompt states them (kernelgym/prompt.py's "## Files" section).
ENTRY_IN_PROMPT = re.compile(r"Entry point: `([^`:]+:[^`]+)`")
REFERENCE_IN_PROMPT = re.compile(r"Reference \(read-only, for understanding\): `([^`:]+:[^`]+)`")
#: Stand-ins where neither the prompt nor configs.json names them: an entry point in no file checks every rule but
#: the entry point's own (`entry_point_fixed`); the reference's module name only widens the imports refused.
UNKNOWN_ENTRY = "<unknown>:<unknown>"
UNKNOWN_REFERENCE = "reference.py:<unknown>"
INTERPRETER_NOTE = ("On the CPU interpreter nothing is timed: the reward of 120 means the kernel is correct, not that "
                    "it was timed (the interpreter's grade has no speedup term).")

#: The first screening measure's duration, as a fraction of the original's full measure, before one has been timed:
#: a screen runs no check.py (its reference, its do_bench per config) and 12 of bench's 40 runs per kernel, and the
#: original's measure also compiled the baseline.
SCREEN_GUESS = 0.5
#: Seconds kept free at the end of the budget for the final write and the submit.
MARGIN_S = 5.0

#: Nothing beyond kernelgym itself (see kernelgym.policy: REQUIRES).
REQUIRES: list[str] = []


@dataclass
class TunerConfig:
    file: str = "kernel.py"
    """The kernel file that is tuned."""
    params: dict[str, list[int]] = field(default_factory=dict)
    """Module constant name -> values to try, instead of the launch parameters found in the source ({}: found)."""
    check_cmd: str = "python bench.py --check"
    """The full measure: a shell command that prints check.py's `CHECK correct=<n>/<total> time_ms=<float|nan>` and,
    for a correct kernel, bench.py's `BENCH kind=... speedup_mean=...` line."""
    screen_cmd: str = "python bench.py --warmup 2 --reps 12 --rounds 2"
    """Measured (GPU): the screening measure of a candidate (bench alone, fewer runs; `BENCH` line per config and in
    sum). Empty: no screening, every variant measured with `check_cmd`. Not used on the CPU model."""
    finalists: int = 2
    """Measured, with screening: how many of the best screened variants above the bar get a full measure."""
    ranked: bool = True
    """Measured (GPU): measure launch_params.ranked_candidates (joint block-and-warps or tl.dot tile candidates, most
    promising first) before the one-at-a-time search."""
    min_gain: float = 0.01
    """Measured (GPU): a variant must be this much faster (fraction of the mean speedup) to replace the best so far,
    and the submitted one must lie this far above 1 at least, or beyond the original's noise band where that is
    wider. The model is deterministic: there any strictly better estimate counts."""
    max_joint: int = 36
    """With `params`: search them jointly when their grid has at most this many points; else one at a time."""
    launch_only: list[str] = field(default_factory=lambda: ["NUM_WARPS"])
    """With `params`: the constants that only change launch options, not searched on the CPU model."""
    rewrites: list[dict[str, Any]] = field(default_factory=list)
    """Known structural rewrites: {name, file (relative to this folder), requires: [snippets], tables: [{name, field,
    values, default}]} (tables optional, or one `table`: each a dict constant mapping the next power of two of the
    config's `field` to a launch value, tuned per size on a GPU, one table after another; `default`: the value an
    empty table means)."""
    tune_within: float = 0.05
    """Measured (GPU): a structure whose own measure lies more than this fraction below the best structure's is not
    tuned; its launch parameters seldom make up such a gap, and each variant costs a bench run."""
    passes: int = 2
    """Passes of the one-parameter-at-a-time search over the launch parameters (another only while one improved)."""
    size_classes: bool = True
    """Try a kernel that picks launch parameters per size class of its inputs, where the classes' best differ."""
    time_budget_s: float | None = None
    """Seconds the search may take (None: the episode's own time budget, read from the prompt)."""
    confirm: bool = True
    """Measured (GPU): measure the winner once more before submitting it."""
    verbose: bool = True
    """Print one progress line per variant (what it is, and its measure)."""


class TunerPolicy:
    """Searches rewrites and launch parameters by the bench measure; see the module docstring."""

    def __init__(self, config: TunerConfig):
        self.config = config
        self.log: list[dict[str, Any]] = []
        self.summary = ""
        self.refused: list[tuple[str, list[str]]] = []  # (label, findings) of variants the static check refused

    def reset(self, observation: dict[str, str], info: dict[str, Any]) -> None:
        """Start an episode.

        Raises:
            PolicyConfigError: the workspace lacks the kernel file or ``bench.py`` the tuner works with (tasks in
                the reference arena's format have no bench.py): a policy error of the episode, not a guess.
        """
        workspace = Path((info or {}).get("workspace") or "")
        if str(workspace) not in ("", ".") and workspace.is_dir():
            missing = [f for f in (self.config.file, "bench.py") if not (workspace / f).is_file()]
            if missing:
                raise PolicyConfigError(
                    f"the tuner works on kernelgym's own Triton tasks: this workspace has no {' and no '.join(missing)} "
                    f"(set `file` in the tuner's config for another kernel file; reference-format tasks have no bench.py)")
        prompt = (observation or {}).get("prompt", "")
        self._entry_point, self._reference = _task_names(prompt, workspace)
        self.refused = []
        m = BUDGET_IN_PROMPT.search(prompt)
        self._steps_left = int(m.group(1)) if m else None
        budgets = [b for b in (float(m.group(2)) if m else None, self.config.time_budget_s) if b is not None]
        self._time_budget_s = min(budgets) if budgets else None
        self._start = time.monotonic()
        self._full_s: list[float] = []
        self._screen_s: list[float] = []
        self._screening = False  # set once the original's measure says it is measured on a GPU
        self._n_configs: int | None = None
        self._plan = self._run()
        self._started = False
        self._classes: tuple[str | None, dict[int, int]] | None = None
        self.log, self.summary, self.notes = [], "", []

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> dict[str, Any]:
        try:
            if not self._started:
                self._started = True
                action = next(self._plan)
            else:
                action = self._plan.send(observation)
        except StopIteration:
            action = {"kind": "submit"}
        if self._steps_left is not None:
            self._steps_left -= 1
        return action

    def close(self) -> None:
        """Nothing to release."""

    def _say(self, text: str) -> None:
        if self.config.verbose:
            print(f"  tuner: {text}", flush=True)

    def _note(self, text: str) -> None:
        """A reason the final output repeats (what was not tried, and why)."""
        self.notes.append(text)
        self._say(text)

    def _estimate(self, screen: bool) -> float:
        """Seconds a measure of that kind is expected to take: the mean of those so far (the original's full measure,
        which also compiled the baseline, only until another full one is timed); a first screen, `SCREEN_GUESS` of
        the full one."""
        full = self._full_s[1:] or self._full_s
        f = sum(full) / len(full) if full else 0.0
        if not screen:
            return f
        return sum(self._screen_s) / len(self._screen_s) if self._screen_s else SCREEN_GUESS * f

    def _affordable(self, steps: int, screen: bool = False, reserve_full: bool | None = None) -> bool:
        """Whether `steps` more actions (one measure of that kind) leave room for what must follow, in steps and in
        time: the final write and the submit, and (`reserve_full`, by default with a screen, or a full measure
        without screening) one full measure of the best variant: its finalist measure or its confirmation."""
        reserve_full = (screen or not self._screening) if reserve_full is None else reserve_full
        if self._steps_left is not None and self._steps_left - steps - (2 if reserve_full else 0) < 2:
            return False
        if self._time_budget_s is None or not (self._full_s or self._screen_s):
            return True
        need = self._estimate(screen) + (self._estimate(False) if reserve_full else 0.0) + MARGIN_S
        return time.monotonic() - self._start + need <= self._time_budget_s

    def _can_try(self) -> bool:
        """Whether one more candidate (its write and its measure) fits."""
        return self._affordable(2, screen=self._screening)

    def _stop(self, what: str) -> None:
        if self._steps_left is not None and self._steps_left < 6:
            self._note(f"step budget reached: {what} stopped ({self._steps_left} steps left)")
            return
        elapsed = time.monotonic() - self._start
        kinds = (f"a screening measure takes about {self._estimate(True):.0f} s, a full one about "
                 f"{self._estimate(False):.0f} s" if self._screening else
                 f"a measure takes about {self._estimate(False):.0f} s")
        self._note(f"time budget reached: {what} stopped at {elapsed:.0f} s of {self._time_budget_s or 0:.0f} s "
                   f"({kinds}; room for a full measure of the best and the submit is kept)")

    def _better(self, m: Measure, best: Measure) -> bool:
        if not m.correct or math.isnan(m.score):
            return False
        if not best.correct or math.isnan(best.score):
            return True
        if m.kind == "model":  # deterministic: any better estimate; equal estimates: fewer bytes
            return m.score > best.score + 1e-9 or (abs(m.score - best.score) <= 1e-9 and m.bytes_ratio < best.bytes_ratio - 1e-9)
        return m.score > best.score * (1 + self.config.min_gain)

    def bar(self, base: Measure) -> float:
        """The mean speedup a variant must exceed to be submitted: beyond the original's noise band (bench timed
        the original against itself), and at least `min_gain` above 1; on the model, any gain (it has no noise)."""
        if base.kind == "model":
            return 1.0 + 1e-9
        lo, hi = base.band
        noise = max((x for x in (hi - 1.0, 1.0 - lo) if not math.isnan(x)), default=0.0)
        return 1.0 + max(noise, self.config.min_gain)

    def _measure_cmd(self, screen: bool = False) -> str:
        """The measure command (`screen_cmd` or `check_cmd`), cut off where the time budget ends (a variant that
        compiles for minutes, say, is stopped there and counts as failed), at least 10 s."""
        cmd = self.config.screen_cmd if screen else self.config.check_cmd
        if self._time_budget_s is None:
            return cmd
        left_s = self._time_budget_s - (time.monotonic() - self._start)
        return f"timeout {max(10, int(left_s - 5))} {cmd}"

    def _measure(self, source: str, label: str, write: bool = True, screen: bool = False):
        if write:
            yield {"kind": "write_file", "path": self.config.file, "content": source}
        t0 = time.monotonic()
        obs = yield {"kind": "shell", "cmd": self._measure_cmd(screen)}
        seconds = time.monotonic() - t0
        (self._screen_s if screen else self._full_s).append(seconds)
        m = parse_screen(obs["output"], self._n_configs) if screen else parse_measure(obs["output"])
        m.seconds = seconds
        self.log.append({"variant": label, "correct": m.correct, "kind": m.kind, "score": m.score,
                         "bytes_ratio": m.bytes_ratio, "band": list(m.band),
                         "values": constants(source, self.config.params),
                         "measure": "screen" if screen else "full", "seconds": round(seconds, 1)})
        if not m.correct:  # what the measure said, for whoever reads the log (the suite benchmark keeps it)
            self.log[-1]["output_tail"] = obs["output"][-1500:]
        self._say(f"{label}: {m.describe()} [{seconds:.1f} s]")
        return m

    def static_findings(self, source: str) -> list[str]:
        """What the grader's static provenance check says of `source` as the tuned kernel file: its findings (and
        source errors), each ``file:line: what [rule]`` as the grade reports them; empty where it passes.

        The check reads syntax trees only (nothing in `source` is imported or run), so it runs in this process; the
        grader runs the same `check_files` in a sandbox because its candidates are hostile, which these are not.
        """
        result = check_files({self.config.file: source.encode()}, self._entry_point, self._reference,
                             MAX_EDITABLE_BYTES)
        return [finding_line(f) for f in result["source_errors"] + result["findings"]]

    def _trial(self, source: str, label: str):
        """A candidate's measure: a screen where screening is on (GPU), else the full measure; a variant the
        grader's static check refuses is not written or measured (a failed `Measure` with `refused` set)."""
        findings = self.static_findings(source)
        if findings:
            self.refused.append((label, findings))
            self.log.append({"variant": label, "correct": False, "kind": "refused", "score": math.nan,
                             "bytes_ratio": math.nan, "band": [math.nan, math.nan],
                             "values": constants(source, self.config.params), "measure": "refused",
                             "seconds": None, "findings": findings})
            m = Measure(False, "check", math.nan, refused=findings)
            self._say(f"{label}: {m.describe()}")
            return m
        return (yield from self._measure(source, label, screen=self._screening))

    def _run(self) -> Generator[dict[str, Any], dict[str, str], None]:
        cfg = self.config
        obs = yield {"kind": "read_file", "path": cfg.file}
        original = obs["output"]
        own = self.static_findings(original)
        if own:
            # The grader refuses the original as it stands; variants with the same findings are skipped as refused.
            self._note(f"the original kernel is refused by the grader's static check: {'; '.join(own)}")
        missing = sorted(set(cfg.params) - set(constants(original, cfg.params)))
        if missing:  # a misspelt name would otherwise search nothing, silently
            self._say(f"params {', '.join(missing)}: no module-level integer constant of that name in {cfg.file} "
                      f"(`NAME = 123`), so it is not tuned")
        base = yield from self._measure(original, "original", write=False)
        if not base.correct and not own:
            # The task's own kernel, unchanged: a failed measure is more likely the machine's (a GPU shared with other
            # processes out of memory) than the kernel's. Once more, before nothing is searched.
            self._say("the original's measure failed (its output's tail is in the log); measuring it once more")
            base = yield from self._measure(original, "original (measured again)", write=False)
        self._screening = bool(cfg.screen_cmd) and base.correct and base.kind == "measured"
        self._n_configs = len(base.per_config) or None
        tried = [Tried("original", original, {}, base)]
        if not base.correct:
            self._note("the original kernel is not correct by the check (or its measure failed): nothing to "
                       "compare against, so nothing was searched")
        elif base.kind == "model":
            self._say("the measure is bench.py's MODEL (CPU interpreter): bytes and launches counted, time estimated "
                      "for a GPU; nothing is timed. Launch options (num_warps, num_stages) are not searched: the "
                      "interpreter ignores them.")
        structures = [("original", original, None, base)] if base.correct else []
        for rw in cfg.rewrites if base.correct else []:
            if not all(snippet in original for snippet in rw.get("requires", [])):
                continue
            if not self._can_try():
                self._stop("the rewrites")
                break
            src = (HERE / rw["file"]).read_text()
            label = f"rewrite '{rw['name']}'"
            m = yield from self._trial(src, label)
            tried.append(Tried(label, src, {}, m, label))
            tables = rw.get("tables") or ([rw["table"]] if rw.get("table") else [])
            structures.append((label, src, tables, m))
        order = sorted((s for s in structures if s[3].correct), key=lambda s: -(s[3].score if not math.isnan(s[3].score) else -1))
        for name, src, tables, m0 in order:
            top = order[0][3]
            if m0.kind == "measured" and top.score > 0 and m0.score < top.score * (1 - cfg.tune_within):
                self._note(f"{name} not tuned: its measure {m0.score:.4f}x lies more than {cfg.tune_within:.0%} below "
                           f"the best structure's {top.score:.4f}x")
                continue
            tried += (yield from self._tune(name, src, tables, m0))
        yield from self._finish(original, base, tried)

    def _finish(self, original: str, base: Measure, tried: list[Tried]):
        """Submit the best variant if a full measure puts it beyond the noise band (confirmed), else the original;
        say why."""
        cfg = self.config
        if self._screening:
            final, why, full = yield from self._finalists(original, base, tried)
            tried += full
        else:
            final, why = yield from self._best_confirmed(original, base, tried)
        yield {"kind": "write_file", "path": cfg.file, "content": final.source}
        self.summary = self._summarize(final, base, tried, why)
        if cfg.verbose:
            print(self.summary, flush=True)
        yield {"kind": "submit"}

    def _confirm(self, best: Tried, bar: float, write: bool):
        """One more full measure of `best`; whether it too lies beyond `bar` (noted if so)."""
        label = best.label.removesuffix(" (full measure)")
        again = yield from self._measure(best.source, label + " (confirmation)", write=write)
        if again.correct and again.score > bar:
            self.notes.append(f"confirmed: a second full measure of {label} gave {again.score:.4f}x")
            return True
        return False

    def _best_confirmed(self, original: str, base: Measure, tried: list[Tried]):
        """Without screening: the best variant by its (full) measure, confirmed by a second one on a GPU."""
        best = tried[0]
        for t in tried[1:]:
            if self._better(t.measure, best.measure):
                best = t
        m, bar = best.measure, self.bar(base)
        keep = best.source != original and m.correct and (m.kind == "check" or m.score > bar)
        why = ""
        if best.source != original and not keep:
            why = (f"the best variant ({best.label}, {m.score:.4f}x) does not lie beyond the original's noise band "
                   f"(it must exceed {bar:.4f}x)")
        elif best.source == original:
            why = "no variant beat the original by its measure" if len(tried) > 1 else "nothing was tried"
        if keep and m.kind == "measured" and self.config.confirm:
            if not self._affordable(2, reserve_full=False):
                self._stop("the confirmation")
                return tried[0], f"no time or steps were left to confirm {best.label} by a second measure"
            if not (yield from self._confirm(best, bar, write=True)):
                last = self.log[-1]["score"]
                return tried[0], f"a second measure of {best.label} ({last:.4f}x) did not lie beyond {bar:.4f}x"
        return (best if keep else tried[0]), why

    def _finalists(self, original: str, base: Measure, tried: list[Tried]):
        """With screening: the `finalists` best screened variants above the bar, each measured in full, in the order
        of their screens. The first whose full measure lies beyond the bar is the one submitted (that measure was
        not used to pick it: it confirms the screen); a later one measured faster by `min_gain` replaces it only if
        a further full measure confirms it. Returns (final Tried, why the original was kept or "", [full Tried])."""
        cfg, bar = self.config, self.bar(base)
        ranked = sorted((t for t in tried[1:] if t.measure.screen and t.measure.correct and t.source != original),
                        key=lambda t: -t.measure.score)
        picks: list[Tried] = []
        for t in ranked:
            if t.measure.score > bar and t.source not in [p.source for p in picks]:
                picks.append(t)
        picks = picks[:max(1, cfg.finalists)]
        if not picks:
            if len(tried) == 1:
                return tried[0], "nothing was tried", []
            top = ranked[0] if ranked else None
            return tried[0], (f"the best variant by its screening measure ({top.label}, {top.measure.score:.4f}x) does "
                              f"not lie beyond the original's noise band (it must exceed {bar:.4f}x), so none was "
                              f"measured in full" if top else "no variant passed its screening measure"), []
        full: list[Tried] = []
        for t in picks:
            if not self._affordable(2, reserve_full=False):
                self._stop(f"the full measures of the finalists ({len(full)} of {len(picks)} measured)")
                break
            m = yield from self._measure(t.source, f"{t.label} (full measure)")
            full.append(Tried(f"{t.label} (full measure)", t.source, t.values, m, t.structure))
        passed = [t for t in full if t.measure.correct and t.measure.score > bar]
        if not passed:
            if not full:
                return tried[0], f"no time or steps were left for a full measure of {picks[0].label}", full
            return tried[0], (f"no finalist's full measure lay beyond the original's noise band ({bar:.4f}x): "
                              + ", ".join(f"{t.label} {t.measure.score:.4f}x" for t in full)), full
        chosen = passed[0]
        self.notes.append(f"confirmed: {chosen.label.removesuffix(' (full measure)')} screened beyond the bar and "
                          f"a full measure gave {chosen.measure.score:.4f}x")
        faster = max(passed[1:], key=lambda t: t.measure.score, default=None)
        if faster is not None and self._better(faster.measure, chosen.measure) and cfg.confirm:
            if not self._affordable(2, reserve_full=False):
                self._stop(f"the confirmation of {faster.label}")
            elif (yield from self._confirm(faster, bar, write=True)):
                if self.log[-1]["score"] > chosen.measure.score:
                    chosen = faster
                else:  # beyond the bar again, but not faster than the first finalist: that one stays
                    self.notes.append(f"kept {chosen.label.removesuffix(' (full measure)')}: the confirmation of "
                                      f"{faster.label.removesuffix(' (full measure)')} ({self.log[-1]['score']:.4f}x) "
                                      f"did not exceed its {chosen.measure.score:.4f}x")
        return chosen, "", full

    def _summarize(self, final: Tried, base: Measure, tried: list[Tried], why: str) -> str:
        correct = sum(t.measure.correct for t in tried[1:])
        lines = [f"tuner summary: tried {len(tried) - 1} variant(s) besides the original ({correct} correct)"
                 + (":" if len(tried) > 1 else ".")]
        unit = "x (model)" if base.kind == "model" else "x" if base.kind == "measured" else " (1/ms)"
        def how(m: Measure) -> str:
            kind = " screening" if m.screen else " full measure" if self._screening else ""
            return f" ({kind.strip()}, {m.seconds:.0f} s)" if kind and not math.isnan(m.seconds) else ""
        def result(m: Measure) -> str:
            if m.refused:
                return "refused by the grader's static check (not measured): " + "; ".join(m.refused)
            return (f"{m.score:.4f}{unit}" if m.correct else "wrong or failed") + how(m)
        lines += [f"  {t.label.removesuffix(' (full measure)')}: {result(t.measure)}" for t in tried[1:]]
        if self.refused:
            lines.append(f"  - {len(self.refused)} variant(s) refused by the grader's static check and not measured "
                         f"(entry point {self._entry_point})")
        if self._screening or self._time_budget_s is not None:
            elapsed = time.monotonic() - self._start
            lines.append(f"  - search time {elapsed:.0f} s" + (f" of {self._time_budget_s:.0f} s" if self._time_budget_s
                                                                   else "")
                         + f": {len(self._full_s)} full measure(s)" + (f", {len(self._screen_s)} screening measure(s)"
                                                                       if self._screening else "")
                         + ("" if any("budget reached" in n for n in self.notes) else
                            "; the search ran to its end (no budget stopped it)"))
        lines += [f"  - {n}" for n in dict.fromkeys(self.notes)]
        if final.label == "original":
            lines.append(f"Submitted: the original kernel, unchanged ({why}).")
        else:
            change = ", ".join(f"{k}={v}" for k, v in final.values.items()) or "its own defaults"
            lines.append(f"Submitted: {final.label.removesuffix(' (full measure)')}. Changed: {change if final.structure == 'original' else final.structure + ' with ' + change}. "
                         f"Why: {final.measure.describe()}, "
                         + ("above the original's 1.0000x (the model is deterministic: it has no noise band)."
                            if base.kind == "model" else f"beyond the original's noise band ({self.bar(base):.4f}x)."))
        if base.kind == "model":
            m = final.measure
            lines.append(f"MODEL estimate of the submitted kernel (bench.py's roofline model, kernelgym/estimate.py; "
                         f"not a measurement): speedup {m.score:.4f}x, bytes moved x{m.bytes_ratio:.3f} of the original.")
            if m.bytes_ratio < 0.95 and m.score < 1.05:
                lines.append("The interpreter's configs are small: the model's time for them is mostly the launch, so "
                             "fewer bytes move its speedup estimate little; on a GPU's seen configs the bytes dominate.")
            lines.append(INTERPRETER_NOTE)
        return "\n".join(lines)

    def _tune(self, name: str, source: str, tables, m0: Measure):
        """One structure: a rewrite's per-size `tables` (one after another, each from the best so far), then its
        launch parameters and the per-size-class choice, from the best table. Returns [Tried]."""
        model = m0.kind == "model"
        found: list[Tried] = []
        best = Tried(name, source, {}, m0, name)
        for table in tables or []:
            if model:
                self._say(f"{name}: per-size table {table['name']} not searched on the model (launch options only)")
                continue
            if m0.kind == "measured" and best.measure.per_config:
                found += (yield from tune_table(self, name, best.source, table, best.measure, best.values))
                best = max([best] + found, key=lambda t: t.measure.score if t.measure.correct else -1)
        source, m0 = best.source, best.measure
        if self.config.params:
            found += (yield from tune_constants(self, name, source, m0, model))
            return found
        try:
            lp = find_launch_params(source)
        except UnparsableKernel as e:
            self._note(f"{name}: launch parameters not searched: {e}")
            return found
        self._say(f"{name}: launch parameters found:\n    " + lp.describe().replace("\n", "\n    "))
        searched = yield from self._coordinate(name, source, lp, m0, model)
        found += searched
        if self.config.size_classes:
            found += (yield from self._per_class(name, source, lp, [Tried(name, source, {}, m0, name)] + searched))
        return found

    def _coordinate(self, name: str, source: str, lp: LaunchParams, m0: Measure, model: bool):
        """One parameter at a time from the best so far, nearest values first; a direction that did not help is
        not followed further. Up to `passes` passes over the parameters, while a pass improved. Returns [Tried]."""
        found, values, best_m = [], {}, m0
        skipped = [p.name for p in lp.params if model and p.launch_only]
        if skipped:
            self._note(f"{name}: {', '.join(skipped)} not searched on the model (launch options: the interpreter "
                       f"ignores them)")
        tunable = [p for p in lp.params if not (model and p.launch_only)]
        seen = set()  # the value sets measured already
        if self.config.ranked and not model:
            for trial, why in ranked_candidates(source, lp):
                if not self._can_try():
                    self._stop("the ranked candidates")
                    return found
                seen.add(tuple(sorted(trial.items())))
                label = f"{name} with " + ", ".join(f"{k}={x}" for k, x in trial.items())
                self._say(f"{label}: tried first ({why})")
                src = set_params(source, trial)
                m = yield from self._trial(src, label)
                found.append(Tried(label, src, trial, m, name))
                if self._better(m, best_m):
                    best_m, values = m, trial
        for _ in range(self.config.passes):
            improved = False
            for p in tunable:
                here = dataclasses.replace(p, value=values.get(p.name, p.value))
                ref = here.value if here.value is not None else DEFAULT_STAGES
                dead = set()  # directions (-1, +1) that did not help
                for v in here.candidates():
                    direction = 1 if v > ref else -1
                    trial = {**values, p.name: v}
                    if direction in dead or tuple(sorted(trial.items())) in seen:
                        continue
                    if not self._can_try():
                        self._stop("the launch-parameter search")
                        return found
                    seen.add(tuple(sorted(trial.items())))
                    label = f"{name} with " + ", ".join(f"{k}={x}" for k, x in trial.items())
                    src = set_params(source, trial)
                    m = yield from self._trial(src, label)
                    found.append(Tried(label, src, trial, m, name))
                    if self._better(m, best_m):
                        best_m, values, improved = m, trial, True
                    else:
                        dead.add(direction)
            if not improved or len(tunable) < 2:  # another pass can only move what the others' change affects
                break
        return found

    def _per_class(self, name: str, source: str, lp: LaunchParams, tried: list[Tried]):
        """Where the seen configs fall in several size classes whose best variants differ, a kernel that picks each
        class's values (launch_params.dispatch_by_size_class), measured. Returns [Tried] (empty if not tried)."""
        usable = [t for t in tried if t.measure.correct and len(t.measure.per_config) > 1]
        if len(usable) < 2:
            return []
        # Only where the configs' own best variants differ can any grouping of them into classes gain; the classes
        # cost a command that builds every seen config's inputs.
        per_config = {i: max(usable, key=lambda t: t.measure.per_config.get(i, ({}, 0.0))[1]).label
                      for i in usable[0].measure.per_config}
        if len(set(per_config.values())) < 2:
            return []
        if self._classes is None:
            if not self._affordable(1, screen=self._screening):
                return []
            obs = yield {"kind": "shell", "cmd": SIZE_CLASS_CMD}
            self._classes = parse_size_classes(obs["output"])
        entry, classes = self._classes
        if len(set(classes.values())) < 2:
            self._note(f"{name}: per size class not tried: the seen configs fall in one size class (or their inputs "
                       f"could not be built)")
            return []
        best = max(usable, key=lambda t: t.measure.score)
        full = {p.name: p.value for p in lp.params}
        default = {**full, **best.values}
        # Per call the wrapper can choose only the constants it alone reads (a num_stages the launch leaves out, a
        # literal, a constant a jit body reads: not); the classes choose among variants that keep the others at the
        # overall best's values.
        fixed = [n for n in full if not (lp.dispatchable(n) and lp.wrapper_of.get(n) == entry)]
        usable = [t for t in usable if all({**full, **t.values}[n] == default[n] for n in fixed)]
        choice = {}
        for c in sorted(set(classes.values())):
            idx = [i for i, k in classes.items() if k == c]
            top = max(usable, key=lambda t: sum(t.measure.per_config.get(i, ({}, 0.0))[1] for i in idx))
            choice[c] = {**full, **top.values}
        differ = sorted({n for v in choice.values() for n in v if v[n] != default[n]})
        if not differ:  # every class's best is the overall best (among variants it can choose)
            return []
        wrong = [n for n in differ if not lp.dispatchable(n) or lp.wrapper_of.get(n) != entry]
        if wrong:
            self._note(f"{name}: per size class not tried: {', '.join(wrong)} cannot be chosen per call by the entry "
                       f"point {entry}")
            return []
        src = set_params(source, {k: v for k, v in default.items() if k in best.values})
        try:
            src = dispatch_by_size_class(src, entry, differ, {c: tuple(v[n] for n in differ) for c, v in choice.items()},
                                         tuple(default[n] for n in differ))
        except ValueError as e:
            self._note(f"{name}: per size class not tried: {e}")
            return []
        if not self._can_try():
            self._stop("the per-size-class search")
            return []
        label = f"{name} per size class: " + "; ".join(
            f"{c}: " + ", ".join(f"{n}={v[n]}" for n in differ) for c, v in choice.items())
        m = yield from self._trial(src, label)
        return [Tried(label, src, {**best.values, "per size class": len(choice)}, m, name)]


def _task_names(prompt: str, workspace: Path) -> tuple[str, str]:
    """(entry point, reference) as ``file.py:function``: from the prompt, else the workspace's configs.json, else
    `UNKNOWN_ENTRY` / `UNKNOWN_REFERENCE`."""
    entry, ref = ENTRY_IN_PROMPT.search(prompt), REFERENCE_IN_PROMPT.search(prompt)
    found = {"entry_point": entry.group(1) if entry else None, "reference": ref.group(1) if ref else None}
    if None in found.values() and str(workspace) not in ("", "."):
        try:
            configs = json.loads((workspace / "configs.json").read_text())
        except (OSError, ValueError):
            configs = {}
        for key in found:
            value = configs.get(key) if isinstance(configs, dict) else None
            if found[key] is None and isinstance(value, str) and value.count(":") == 1:
                found[key] = value
    return found["entry_point"] or UNKNOWN_ENTRY, found["reference"] or UNKNOWN_REFERENCE
