"""Issue 27 item 6e: `kernelgym run` with several policies checks every policy (its config, API key, agent CLI,
modules: kernelgym.policy.policy_problems) before the first episode, and refuses to start (exit 2, every problem
listed) unless --keep-going is given. Before, a run of several found a missing key only when its turn came."""
import pytest
from rich.console import Console

import kernelgym.cli as cli
from kernelgym.cli import main
from kernelgym.errors import KernelGymError
from kernelgym.policy import policy_problems


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setattr(cli, "console", Console(width=4000))  # wide: each problem stays on one line


def test_every_problem_is_listed_and_nothing_runs(tmp_path, capsys, monkeypatch, wide):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = '{"scripted": {"actions": [{"kind": "shel"}]}, "codex": {"binary": "/nonexistent/codex"}}'
    code = main(["run", "--task", "triton-softmax", "--policy", "tuner", "--policy", "anthropic", "--policy", "codex",
                 "--policy", "scripted", "--policy-config", config, "--run-dir", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code == 2
    problems = [line for line in out.splitlines() if line.startswith("problem:")]
    # (a venv without an SDK or mcp adds a line of its own for that policy: the count is not fixed here)
    assert problems and not any("'tuner'" in line for line in problems), out
    assert "policy 'anthropic': needs environment variable 'ANTHROPIC_API_KEY', which is not set" in out
    assert "policy 'codex': needs program '/nonexistent/codex', which is not found" in out
    assert "policy 'codex': needs environment variable 'OPENAI_API_KEY'" in out
    assert "policy 'scripted': actions[0] {'kind': 'shel'} has unknown kind 'shel'" in out
    assert f"{len(problems)} problem(s) with the policies" in out and "--keep-going" in out
    assert not (tmp_path / "runs").exists()  # refused before the first run directory, let alone episode


def test_keep_going_starts_the_runs_anyway(tmp_path, capsys, monkeypatch, wide):
    # The runs themselves are stubbed: what is checked is that they start, in order, after the problems are listed.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    started = []

    def fake_run_task(args):
        started.append(args.policy)
        if args.policy == "anthropic":
            raise KernelGymError("anthropic cannot start")
        return 0, [], tmp_path
    monkeypatch.setattr(cli, "run_task", fake_run_task)
    monkeypatch.setattr(cli, "print_runs_table", lambda rows, interpreter: None)
    code = main(["run", "--task", "triton-softmax", "--policy", "anthropic", "--policy", "tuner", "--keep-going",
                 "--run-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert started == ["anthropic", "tuner"] and code == 2
    assert "ANTHROPIC_API_KEY" in out and "--keep-going: running anyway, despite 1 problem(s)" in out


def test_policies_without_problems_start_at_once(tmp_path, capsys, monkeypatch, wide):
    started = []
    monkeypatch.setattr(cli, "run_task", lambda args: (started.append(args.policy), (0, [], tmp_path))[1])
    monkeypatch.setattr(cli, "print_runs_table", lambda rows, interpreter: None)
    assert main(["run", "--task", "triton-softmax", "--policy", "scripted", "--policy", "tuner",
                 "--run-dir", str(tmp_path)]) == 0
    assert started == ["scripted", "tuner"] and "problem:" not in capsys.readouterr().out


def test_the_config_decides_which_key_and_binary_are_needed(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("MY_KEY_FOR_TEST", "sk-test")
    assert policy_problems("openai", api_key_env=None) == []  # a local server: no key
    assert policy_problems("anthropic", api_key_env="MY_KEY_FOR_TEST") == []
    (line,) = policy_problems("anthropic", api_key_env="UNSET_KEY_FOR_TEST")
    assert "'UNSET_KEY_FOR_TEST', which is not set" in line
    assert policy_problems("tuner") == [] and policy_problems("scripted") == []
    (line,) = policy_problems("no-such-policy")
    assert line.startswith("policy 'no-such-policy': Unknown policy")


def test_help_documents_keep_going(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--keep-going" in capsys.readouterr().out
