"""Start-up time an agent CLI's own sandbox adds to an episode (issue 30): the real CLI, sandboxed (``sandbox:
bwrap``) and not (``sandbox: none``), from `CLIAgentPolicy.reset` to its first MCP tool call reaching kernelgym.

    python benchmarks/agent_cli_startup.py [--n 5] [--cli claude codex]

The CLIs are driven by the fake model servers of tests/fakes/cli_servers.py (loopback, no key, no network), whose
first reply is a read_file call. The two modes alternate, so both see the same load; the load average before and
after is printed. What is measured: ``reset`` alone (the sandbox's folder, sockets, proxy and command line; the
process started) and reset to the first tool call (the CLI's own start, its first model request and its MCP
handshake, through the relays when sandboxed). Needs bwrap and the CLIs (`bash .ci/setup --agents`).
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelgym.agents.launcher import locate_binary  # noqa: E402
from kernelgym.policy import load_policy  # noqa: E402
from tests.fakes.cli_servers import FakeAnthropic, FakeOpenAI  # noqa: E402

CLIS = {"claude": ("claude-code", FakeAnthropic, "ANTHROPIC_API_KEY", ""),
        "codex": ("codex", FakeOpenAI, "OPENAI_API_KEY", "/v1")}


def one(cli: str, sandbox: str, folder: Path) -> tuple[float, float]:
    """(seconds in reset, seconds from reset to the first tool call) of one start of `cli`."""
    policy_name, fake_class, key_env, suffix = CLIS[cli]
    os.environ[key_env] = "sk-fake-benchmark-key"
    workspace = folder / f"{cli}-{sandbox}-{time.monotonic_ns()}" / "episodes" / "ep" / "workspace"
    workspace.mkdir(parents=True)
    with fake_class([("read_file", {"path": "kernel.py"})]) as fake:
        policy = load_policy(policy_name, base_url=fake.base_url + suffix, sandbox=sandbox, timeout_s=120)
        try:
            start = time.perf_counter()
            policy.reset({"prompt": "Read kernel.py."}, {"workspace": str(workspace)})
            reset = time.perf_counter() - start
            call = policy.bridge.calls.get(timeout=120)
            first = time.perf_counter() - start
            call.reply("ok")
        finally:
            policy.close()
    return reset, first


def _ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1e3:7.1f} ms (min {min(xs) * 1e3:.1f}, max {max(xs) * 1e3:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--cli", nargs="+", default=list(CLIS), choices=list(CLIS))
    args = parser.parse_args()
    import warnings
    warnings.simplefilter("ignore")  # sandbox='none' warns each time
    print(f"{platform.node()}: {os.cpu_count()} cores, {platform.platform()}, uid {os.geteuid()}, "
          f"load before {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        for cli in args.cli:
            if locate_binary(cli) is None:
                print(f"{cli}: not installed (bash .ci/setup --agents)")
                continue
            times = {"bwrap": [], "none": []}
            one(cli, "bwrap", Path(tmp))  # warm the page cache for both modes
            for _ in range(args.n):
                for mode in ("bwrap", "none"):
                    times[mode].append(one(cli, mode, Path(tmp)))
            for mode in ("bwrap", "none"):
                print(f"{cli:6} sandbox={mode:5}: reset {_ms([r for r, _ in times[mode]])}; "
                      f"to first tool call {_ms([f for _, f in times[mode]])}")
            added = statistics.median([f for _, f in times["bwrap"]]) - statistics.median([f for _, f in times["none"]])
            print(f"{cli:6} added by the sandbox (median to first tool call): {added * 1e3:+.1f} ms")
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
