"""`CLIAgentPolicy`: a coding-agent CLI (Claude Code, Codex, Cursor's agent) as a step-level policy.

At `reset` the policy starts an `MCPBridge` and launches the CLI against it: in its own process group, in an empty
private (0700) temporary directory that holds nothing of the task (its working directory and $HOME), with a clean
environment (PATH, HOME, TMPDIR, the API key and what the CLI's own config adds; nothing of kernelgym's). The bridge
takes only requests that carry its per-episode bearer token; each CLI gets the token in a 0600 config file in its
private directory or in an environment variable, never on its command line (which any local process can read). On
Linux the CLI runs under a small reaper process (kernelgym/agents/reaper.py, the group's leader) that gets a
parent-death signal (PR_SET_PDEATHSIG) and then kills the whole group, so a killed kernelgym leaves neither the CLI
nor its helpers behind. The kernel sends that signal when the *thread* that started the process exits: call `reset`
from a long-lived thread (the main thread, as rollout does), not from a short-lived worker thread. The task prompt goes
to the CLI with the config's iteration guidance. Each `act()` returns the CLI's next tool call as an env action and
delivers the previous step's observation as that call's result, so the CLI sees the env one step at a time.

The episode ends:
- with ``submit``: the call's result says the kernel is being graded; the CLI gets `exit_grace_s` seconds to
  finish (its transcript then holds its final usage), then its process group is killed.
- when the CLI exits without submitting, its `timeout_s` runs out, or its transcript reports
  `give_up_after_api_errors` times in a row that its model API cannot be reached (its process group is killed):
  `act()` returns ``{"kind": "submit", "truncate": True}``, which ends the episode truncated; the kernel is graded
  as it stands. The step info then carries a ``policy_error`` (how the session ended, the CLI's last API errors
  and the end of its stderr), which rollout makes the episode's ``policy_error``.

The CLI's stdout (stream-json or JSONL) is kept as ``<run_dir>/agent_transcripts/<episode_id>.jsonl`` beside
``trajectories.jsonl``, its stderr as ``<episode_id>.stderr.log``, and ``<episode_id>.summary.json`` holds the
command line (the prompt elided), exit code, how the session ended and the token totals. The API key and the bridge's
token are replaced by ``[redacted]`` in all three; the folder is 0700 and the files 0600. Tokens come from parsing that stream (`parse_event` of each CLI's policy) and are
reported per step through `take_step_info`.
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.agent_tools import MissingApiKeyError, redact, remember_secret
from kernelgym import seccomp
from kernelgym.agents.bridge import MCPBridge, ToolCall
from kernelgym.agents.confine import CLISandbox
from kernelgym.errors import KernelGymError
from kernelgym.usage import TOKEN_FIELDS, PriceTable, StepUsage, token_count

#: Where `bash .ci/setup --agents` installs the npm CLIs (their executables are in node_modules/.bin).
LOCAL_AGENTS_DIR = Path(__file__).resolve().parents[2] / ".agents"
#: The action that ends an episode truncated (the CLI stopped without submitting); the kernel is graded.
TRUNCATE_ACTION = {"kind": "submit", "truncate": True}
#: Seconds act() waits for the transcript to announce a tool call that already reached the MCP server.
TRANSCRIPT_LAG_S = 1.0
SUBMITTED_REPLY = ("submitted: the kernel is being graded and the episode is over. Stop now; no more tool calls "
                   "are taken.")
#: The variable that carries the bridge's bearer token to a CLI that reads it from its environment (Codex).
MCP_TOKEN_ENV = "KERNELGYM_MCP_TOKEN"
#: prctl(2) option: the signal a process gets when the thread that forked it exits.
PR_SET_PDEATHSIG = 1
#: Runs the CLI and kills its group when kernelgym dies (see its docstring).
REAPER = Path(__file__).resolve().parent / "reaper.py"
#: Lines of the CLI's stderr, and API errors from its transcript, kept for the policy error of an episode it ended
#: without submitting (the last ones say why).
TAIL_LINES = 5
#: Characters kept of one such line (a CLI may print a whole HTTP body).
TAIL_LINE_CHARS = 300


@dataclass
class ApiTrouble:
    """A transcript event in which the CLI reports trouble with its model API (see `CLIAgentPolicy.api_trouble`)."""

    message: str
    """What the CLI said, for the episode's policy error (e.g. "API retry 3/10: connection error")."""
    retry: bool = False
    """The CLI retries a request because of it: counted in the step's usage.retries."""
    unreachable: bool = False
    """A failure that does not fix itself by waiting (no connection at all, a refused key): `give_up_after_api_errors`
    of these in a row, with no model reply between them, end the session early."""


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by this user only (0600, also when the file already existed)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


def open_private_append(path: Path):
    """`path` opened for appending text, created 0600 (transcripts: the CLI's output may hold task text)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


def _die_with_parent_hook(sig: int = signal.SIGTERM):
    """A `preexec_fn` that makes the child get `sig` when the thread that forked it dies (Linux), or None.

    libc's prctl is looked up here, in the parent: the hook runs between fork and exec, where loading a library
    could deadlock on a lock another thread held at the fork. If the parent died before prctl took effect, the
    child is already orphaned: it exits at once instead of running unattended.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    return hook


class MissingBinaryError(KernelGymError):
    """The CLI's executable was not found; the message says how to install it."""


@dataclass
class CLIAgentConfig:
    """Fields every CLI policy shares; each policy's config subclasses this with its own defaults."""

    binary: str = ""
    """The CLI's executable: a path, or a name looked up in .agents/node_modules/.bin (what
    `bash .ci/setup --agents` installs), then on PATH."""
    model: str = ""
    """The model the CLI uses (its --model); empty: the CLI's default."""
    effort: str = ""
    """Reasoning effort (Claude Code: low/medium/high/xhigh/max; Codex: minimal/low/medium/high); empty: the
    CLI's default."""
    timeout_s: float = 1800.0
    """Seconds the CLI may run in all; then its whole process group is killed and the episode ends truncated (with a
    policy error saying so)."""
    give_up_after_api_errors: int = 5
    """Consecutive reports in the CLI's transcript that its model API cannot be reached (no connection, a refused
    key), with no model reply between them, after which the session is stopped and the episode ends with a policy
    error quoting them: a wrong base_url or key does not fix itself, and the CLI would otherwise retry for minutes.
    Rate limits and server errors (429, 5xx) are left to the CLI's own retries. 0: never give up early."""
    exit_grace_s: float = 30.0
    """Seconds the CLI gets to finish after submit (its final message and usage) before its group is killed."""
    iteration_guidance: str = (
        "You act only through the kernelgym MCP tools: each tool call is one step in the task's workspace, and its "
        "result is that step's output. Your own file, shell and web tools are switched off, and your working "
        "directory holds nothing of the task. Iterate: read the kernel, change it, run `python check.py` with the "
        "shell tool, and keep what is correct and faster. Call the submit tool once when you are done; it ends "
        "the episode.")
    """Text added after the task prompt: how to act and iterate."""
    extra_args: list[str] = field(default_factory=list)
    """More command-line arguments for the CLI, added last."""
    api_key_env: str = ""
    """Name of the environment variable holding the API key; its value goes to the CLI's environment only."""
    base_url: str = ""
    """The model API's base URL (a proxy, a local server); empty: the CLI's default."""
    pass_env: list[str] = field(default_factory=list)
    """Names of further environment variables passed to the CLI; nothing else is. In the sandbox the proxy
    variables (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, ALL_PROXY) are kernelgym's own (`kernelgym.agents.confine`)."""
    sandbox: str = "bwrap"
    """``"bwrap"``: the CLI runs in a bubblewrap sandbox of its own, with only its private directory writable and
    a network that reaches only kernelgym's MCP server and its model API (`kernelgym.agents.confine`). ``"none"``:
    on the host as the user running kernelgym, relying on the CLI's own flags alone (warns)."""
    sandbox_readonly: list[str] = field(default_factory=list)
    """More paths bound read-only into the CLI's sandbox, at the same place (its own installation, the system and
    this Python are already there)."""
    network_allow: list[str] = field(default_factory=list)
    """More ``host:port`` (or ``*.domain:port``) the sandbox's proxy connects to, besides the model API of
    `base_url` (or the CLI's default API)."""
    prices_as_of: str | None = None
    """The date the price table was read from the provider's pricing page."""
    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    """Model -> {input, output, cached_input, cache_write}: USD per million tokens (see kernelgym.usage)."""


def locate_binary(binary: str) -> str | None:
    """Where the CLI `binary` is: a path as given, else in .agents/node_modules/.bin (what `bash .ci/setup --agents`
    installs), beside this Python (the setup links the CLIs into .venv/bin), or on PATH; None when nowhere."""
    if os.sep in binary:
        return str(Path(binary).resolve()) if os.access(binary, os.X_OK) else None
    for folder in (LOCAL_AGENTS_DIR / "node_modules" / ".bin", Path(sys.executable).parent):
        if os.access(folder / binary, os.X_OK) and (folder / binary).is_file():
            return str(folder / binary)
    return shutil.which(binary)


def find_binary(binary: str, install_hint: str) -> str:
    """`locate_binary(binary)`, or an error saying how to install it.

    Raises:
        MissingBinaryError: found nowhere; the message carries `install_hint`.
    """
    found = locate_binary(binary)
    if found is None:
        where = "" if os.sep in binary else f" (looked in {LOCAL_AGENTS_DIR / 'node_modules' / '.bin'}, beside " \
                                            f"{sys.executable} and on PATH)"
        raise MissingBinaryError(f"{binary!r} is not installed{where}. {install_hint}")
    return found


class CLIAgentPolicy:
    """The shared part of the CLI policies (see the module docstring). Subclasses set `name`, `install_hint`,
    `default_binary` and implement `command(...)` and `parse_event(event)`; they may extend `child_env`."""

    name = "cli-agent"
    install_hint = ""
    #: Extra environment the CLI always gets (telemetry and auto-update off).
    fixed_env: dict[str, str] = {}
    #: The model API the CLI talks to when `base_url` is empty: the one host (and port) its sandbox's proxy lets
    #: it reach (besides `network_allow`); empty: none.
    default_api_url = ""

    def __init__(self, config: CLIAgentConfig):
        self.config = config
        self.prices = PriceTable(config.prices, config.prices_as_of)
        self.bridge: MCPBridge | None = None
        self.proc: subprocess.Popen | None = None
        self._pending: ToolCall | None = None
        self._lock = threading.Lock()
        self._announced = threading.Condition(self._lock)
        self._calls_announced = self._calls_handed = 0
        self._usage = StepUsage(cost_usd=0.0)
        self._step_info: dict[str, Any] = {}
        self._readers: list[threading.Thread] = []
        self._secret = ""
        self._mcp_token = ""
        self._summary: dict[str, Any] = {}
        self._home: Path | None = None
        self.box: CLISandbox | None = None
        self._deadline = 0.0
        self._stderr_tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._api_errors: deque[list] = deque(maxlen=TAIL_LINES)  # [message, times in a row]
        self._unreachable_in_a_row = 0
        self._replied_since_error = False
        self._give_up: str | None = None

    # -- subclass hooks ---------------------------------------------------------------------------------------------
    def command(self, binary: str, prompt: str, mcp_url: str, home: Path, token: str) -> tuple[list[str], str | None]:
        """(argv, text for the CLI's stdin or None) that start the CLI on `prompt` with the MCP server at `mcp_url`;
        `home` is the empty private directory that is its $HOME and working directory (config files may be written
        there, with `write_private`). Every request to the server must carry ``Authorization: Bearer <token>``;
        the token must not be put in argv (world-readable in /proc/<pid>/cmdline): write it to a config file in
        `home`, or have `child_env` put it in the CLI's environment."""
        raise NotImplementedError

    def parse_event(self, event: dict[str, Any]) -> StepUsage | None:
        """The usage one transcript event reports (None for events that report none)."""
        raise NotImplementedError

    def tool_calls_in(self, event: dict[str, Any]) -> int:
        """How many tool calls a transcript event announces (0 by default). A CLI may call the MCP tool before its
        transcript line about the call is read; `act()` waits up to `TRANSCRIPT_LAG_S` for the line, so the reply's
        usage lands on the step of its own tool call."""
        return 0

    def parse_totals(self, event: dict[str, Any]) -> StepUsage | None:
        """The session's token totals, for a CLI whose last event states them (None: this event does not). Tokens
        beyond what `parse_event` reported so far are added to the current step, so the episode's totals match the
        CLI's own."""
        return None

    def api_trouble(self, event: dict[str, Any]) -> ApiTrouble | None:
        """The trouble with its model API a transcript event reports (a retry, a connection failure, a final API
        error), or None (the default: the CLI reports none that is known). Used for the policy error of a session
        that ends without submitting, for usage.retries, and to give up early (`give_up_after_api_errors`)."""
        return None

    def child_env(self, home: Path, key: str) -> dict[str, str]:
        """The CLI's whole environment: a clean one, with the key under `config.api_key_env`."""
        binary_dirs = [os.path.dirname(p) for p in (shutil.which("node"),) if p]
        path = os.pathsep.join(dict.fromkeys([*binary_dirs, "/usr/local/bin", "/usr/bin", "/bin"]))
        env = {"HOME": str(home), "PATH": path, "TMPDIR": str(home / "tmp"), "LANG": "C.UTF-8",
               "USER": "kernelgym-agent", "NO_COLOR": "1", **self.fixed_env}
        for name in self.config.pass_env:
            if name in os.environ:
                env[name] = os.environ[name]
        if self.config.api_key_env:
            env[self.config.api_key_env] = key
        return env

    # -- the Policy interface -------------------------------------------------------------------------------------
    def reset(self, observation: dict[str, str], info: dict[str, Any]) -> None:
        """Launch the CLI on the task prompt (`observation["prompt"]`) against a fresh MCP bridge.

        Raises:
            MissingBinaryError: the CLI is not installed.
            MissingApiKeyError: `config.api_key_env` names an unset variable.
        """
        self.close()
        binary = find_binary(self.config.binary, self.install_hint)
        key = ""
        if self.config.api_key_env:
            key = os.environ.get(self.config.api_key_env, "")
            if not key:
                raise MissingApiKeyError(f"{self.name} needs an API key: export {self.config.api_key_env}=<your "
                                         f"key>, or name another variable with api_key_env in the policy config")
        self._secret = key
        remember_secret(key)
        workspace = Path(info.get("workspace") or ".")
        episode_id = workspace.parent.name or f"episode-{int(time.time())}"
        out_dir = workspace.parent.parent.parent / "agent_transcripts"  # <run_dir>/episodes/<id>/workspace
        out_dir.mkdir(parents=True, exist_ok=True)
        out_dir.chmod(0o700)  # transcripts hold the task, the model's words and the kernel: this user's only
        self.transcript_path = out_dir / f"{episode_id}.jsonl"
        if self.config.sandbox == "bwrap":
            self.box = CLISandbox(self.name, binary, readonly=list(self.config.sandbox_readonly),
                                  network_allow=list(self.config.network_allow))
            self._home = self.box.home  # in the sandbox's 0700 folder, which the reaper removes
        elif self.config.sandbox == "none":
            warnings.warn(f"kernelgym: {self.name} runs unsandboxed (sandbox='none'): only its own flags keep its "
                          f"tools off, with this user's files and network in reach", stacklevel=2)
            self._home = Path(tempfile.mkdtemp(prefix=f"kernelgym-{self.name}-"))  # 0700
            (self._home / "tmp").mkdir(mode=0o700)
        else:
            raise KernelGymError(f"{self.name}: sandbox must be 'bwrap' or 'none', not {self.config.sandbox!r}")
        self.bridge = MCPBridge()
        url = self.bridge.start(unix_socket=self.box.socket_path("mcp") if self.box else None)
        self._mcp_token = self.bridge.token
        if self.box is not None:
            self.box.forward_mcp(int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]))
            self.box.route_model(self.config.base_url or self.default_api_url)
        prompt = observation.get("prompt", "")
        if self.config.iteration_guidance:
            prompt = f"{prompt}\n\n{self.config.iteration_guidance}"
        argv, stdin_text = self.command(binary, prompt, url, self._home, self._mcp_token)
        argv = [*argv, *self.config.extra_args]
        self._usage, self._step_info, self._pending = StepUsage(cost_usd=0.0), {}, None
        self._calls_announced = self._calls_handed = 0
        self._stderr_tail.clear()
        self._api_errors.clear()
        self._unreachable_in_a_row, self._give_up, self._replied_since_error = 0, None, False
        self._summary = {"policy": self.name, "episode_id": episode_id, "binary": binary,
                         "argv": [a if a != prompt else "<prompt>" for a in argv],
                         "started": time.time(), "ended": None, "exit_code": None, "ending": None}
        if any(self._mcp_token in a for a in argv):  # a policy bug; argv is readable by every local process
            raise KernelGymError(f"{self.name}: the MCP bearer token must not be on the CLI's command line")
        hook = _die_with_parent_hook()
        env = self.child_env(self._home, key)
        keep: list[int] = []
        if self.box is not None:
            env.update(self.box.env)
            self.box.hand_over()  # started by root: the private directory, config files included, to its user
            filter_fd = seccomp.program_fd()
            keep = [filter_fd] if filter_fd is not None else []
            argv = self.box.argv(argv, filter_fd)
        # self.proc is the reaper (the group's leader) where there is a parent-death signal, else the CLI itself
        remove = str(self.box.root if self.box is not None else self._home)
        launch = ([sys.executable, "-I", str(REAPER), str(os.getpid()), "--remove", remove,
                   *(a for fd in keep for a in ("--keep-fd", str(fd))), *argv] if hook else argv)
        try:
            self.proc = subprocess.Popen(launch, cwd=self._home, env=env,
                                         stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                         preexec_fn=hook, pass_fds=keep)
        finally:
            for fd in keep:
                os.close(fd)
        self._deadline = time.monotonic() + self.config.timeout_s
        self._readers = [threading.Thread(target=self._read_stdout, args=(self.proc.stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(self.proc.stderr,
                                          out_dir / f"{episode_id}.stderr.log"), daemon=True)]
        for t in self._readers:
            t.start()
        if stdin_text is not None:
            threading.Thread(target=self._write_stdin, args=(self.proc.stdin, stdin_text), daemon=True).start()

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> dict[str, Any] | str:
        """The CLI's next tool call as an env action, after delivering `observation["output"]` as the result of
        the previous one (on submit, after the CLI finished or `exit_grace_s` ran out). ``{"kind": "submit",
        "truncate": True}`` when the CLI exited without submitting or ran out of time (its process group is
        killed)."""
        if self.proc is None or self.bridge is None:
            return TRUNCATE_ACTION
        if self._pending is not None:
            self._pending.reply(observation.get("output", ""))
            self._pending = None
        start = time.monotonic()
        call = self._next_call()
        waited = time.monotonic() - start
        if call is None:
            self._finish("exited without submitting" if self._summary["ending"] is None else self._summary["ending"])
            self._note_usage(waited, final=True)
            self._step_info["note"] = f"{self.name} {self._summary['ending']}; the episode ends truncated"
            # The session ended without a submit: a policy error (rollout puts it in the result, `kernelgym run`
            # prints it), with what the CLI last said about why, so a wrong base_url or key reads as one.
            self._step_info["policy_error"] = self._ended_without_submit()
            return TRUNCATE_ACTION
        self._step_info["tool_call"] = {"name": call.name, "arguments": call.arguments}
        self._calls_handed += 1
        with self._announced:
            self._announced.wait_for(lambda: self._calls_announced >= self._calls_handed, timeout=TRANSCRIPT_LAG_S)
        waited = time.monotonic() - start
        if call.name == "submit":
            # The submit tool takes no arguments: a bare submit, which the env always accepts, so the episode
            # cannot end truncated on a submit the env would refuse (e.g. {"config": "zzz"}) after the CLI is gone.
            call.reply(SUBMITTED_REPLY)
            self.bridge.end_episode()
            self._wait_exit(self.config.exit_grace_s)
            self._finish("submitted")
            self._note_usage(time.monotonic() - start, final=True)
            return {"kind": "submit"}
        self._pending = call
        self._note_usage(waited)
        return call.action

    def take_step_info(self) -> dict[str, Any]:
        """What the last act() did (see kernelgym.policy.Policy): ``usage`` (tokens the CLI's transcript reported
        since the previous act, priced from the config's table), ``tool_call`` ({name, arguments}) and ``note``
        when the CLI stopped without submitting. Cleared by the call."""
        out, self._step_info = self._step_info, {}
        return out

    def close(self) -> None:
        """Stop the CLI (its whole process group), the MCP bridge and the readers; write the transcript summary and
        remove the temporary directory."""
        if self.proc is not None:
            self._finish(self._summary.get("ending") or "closed")
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None
        if self.box is not None:
            self.box.close()  # its socket servers, and its folder with the private directory
            self.box = None
        elif self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
        self._home = None
        self.proc = None

    # -- internals -------------------------------------------------------------------------------------------------
    def _next_call(self) -> ToolCall | None:
        """The next tool call, or None once the CLI has exited (calls it left queued are still handed out) or its
        time is up (then its group is killed)."""
        while True:
            # The deadline first: a CLI that calls tools back to back never leaves the queue empty.
            if time.monotonic() > self._deadline:
                self._summary["ending"] = f"timed out after {self.config.timeout_s:g} s (process group killed)"
                self._kill_group()
                return None
            if self._give_up is not None:  # set by the transcript reader (see _note_trouble)
                self._summary["ending"] = self._give_up
                self._kill_group()
                return None
            try:
                return self.bridge.calls.get(timeout=0.1)
            except queue.Empty:
                pass
            if self.proc.poll() is not None:
                try:  # a call that arrived just before the exit
                    return self.bridge.calls.get(timeout=0.2)
                except queue.Empty:
                    return None

    def _wait_exit(self, grace_s: float) -> None:
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._kill_group()

    def _kill_group(self) -> None:
        """SIGTERM to the CLI's whole process group, SIGKILL 3 s later if it is still there."""
        for sig, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def _finish(self, ending: str) -> None:
        """Make sure the CLI and its group are gone, let the readers drain, and write the summary (once)."""
        if self._summary.get("ended"):
            return
        if self.proc.poll() is None:
            self._kill_group()
        else:
            try:  # helpers the CLI forked may outlive it in its group
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for t in self._readers:
            t.join(timeout=5)
        self._summary.update(ended=time.time(), exit_code=self.proc.returncode, ending=ending)
        self._write_summary()

    def _write_summary(self) -> None:
        summary_path = self.transcript_path.with_suffix(".summary.json")
        write_private(summary_path, self._redact(json.dumps(self._summary, indent=1, default=str)))

    def _note_usage(self, waited_s: float, final: bool = False) -> None:
        if final and "cli_reported_cost_usd" in self._summary:  # the CLI's own estimate for the whole session
            self._step_info["cli_reported_cost_usd"] = self._summary["cli_reported_cost_usd"]
        with self._lock:
            usage, self._usage = self._usage, StepUsage(cost_usd=0.0)
        usage.wall_s = waited_s
        if usage.api_calls or usage.input_tokens or usage.output_tokens:
            self.prices.priced(usage)
        self._step_info["usage"] = usage
        self._step_info["transcript"] = str(self.transcript_path)

    def _redact(self, text: str) -> str:
        """`text` without the API key or the bridge's token (kernelgym.agent_tools.redact)."""
        return redact(text, self._secret, self._mcp_token)

    def _ended_without_submit(self) -> str:
        """The policy error of a session that ended without a submit: how it ended (exit code, timeout, gave up),
        then the CLI's last API errors from its transcript and the last lines of its stderr, redacted."""
        code = self._summary.get("exit_code")
        text = f"{self.name} {self._summary['ending']}"
        if code is not None and "timed out" not in text and "gave up" not in text:
            text += f" (exit code {code})"
        if self._api_errors:
            text += "; its last errors: " + " | ".join(m if n == 1 else f"{m} (x{n})" for m, n in self._api_errors)
        if self._stderr_tail:
            text += "; the end of its stderr: " + " | ".join(self._stderr_tail)
        if not self._api_errors and not self._stderr_tail:
            text += "; it reported no error (see its transcript)"
        text += f"; transcript: {self.transcript_path}"  # not in [...]: rich, which prints it, reads that as markup
        self._summary["policy_error"] = self._redact(text)
        self._write_summary()
        return self._summary["policy_error"]

    def _note_trouble(self, trouble: ApiTrouble | None, replied: bool) -> None:
        """Count one transcript event's API trouble (reader thread): keep its message, count a retry, and after
        `give_up_after_api_errors` unreachable reports in a row set `_give_up` for act() to stop the session. A
        model reply (usage or a tool call) in between resets the count."""
        if replied:
            self._unreachable_in_a_row = 0
            self._replied_since_error = True
        if trouble is None:
            return
        message = self._redact(" ".join(str(trouble.message).split()))[:TAIL_LINE_CHARS]
        last = self._api_errors[-1] if self._api_errors and not self._replied_since_error else None
        if last is not None and last[0] == message:  # a CLI repeats the same line per retry: say it once, counted
            last[1] += 1
        else:
            self._api_errors.append([message, 1])
        self._replied_since_error = False
        with self._lock:
            if trouble.retry:
                self._usage.retries += 1
                totals = self._summary.setdefault("usage", StepUsage(cost_usd=0.0).to_dict())
                totals["retries"] = totals.get("retries", 0) + 1
        if trouble.unreachable:
            self._unreachable_in_a_row += 1
            limit = self.config.give_up_after_api_errors
            if limit and self._unreachable_in_a_row >= limit and self._give_up is None:
                self._give_up = (f"gave up: {self._unreachable_in_a_row} errors in a row say its model API cannot be "
                                 f"reached (give_up_after_api_errors: {limit}; check base_url and the key; "
                                 f"process group killed)")

    def _write_stdin(self, pipe, text: str) -> None:
        try:
            pipe.write(text.encode())
            pipe.close()
        except OSError:  # the CLI exited before reading its prompt; its exit code tells why
            pass

    def _read_stdout(self, pipe) -> None:
        """Copy the CLI's stdout to the transcript (redacted) and account its usage, line by line, until EOF.

        Each line is parsed as the CLI wrote it (redacting first could break the JSON) and handled in its own
        try: a line the parsers choke on is noted in the transcript and skipped. The reader must never stop
        early: a CLI whose stdout pipe fills up blocks until its timeout."""
        totals = self._summary.setdefault("usage", StepUsage(cost_usd=0.0).to_dict())
        with open_private_append(self.transcript_path) as out:
            for raw in pipe:
                line = raw.decode("utf-8", errors="replace")
                try:
                    out.write(self._redact(line if line.endswith("\n") else line + "\n"))
                    out.flush()
                    self._account(line, totals)
                except Exception as e:  # noqa: BLE001 - one bad line must not stop the draining
                    try:
                        out.write(json.dumps({"kernelgym_note": f"line not accounted: {type(e).__name__}: "
                                              f"{self._redact(str(e))[:300]}"}) + "\n")
                        out.flush()
                    except (OSError, ValueError):
                        pass

    def _account(self, line: str, totals: dict[str, Any]) -> None:
        """Add the usage and tool-call announcements of one transcript line (raw, not redacted)."""
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            return
        if not isinstance(event, dict):
            return
        cost = event.get("total_cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
            self._summary["cli_reported_cost_usd"] = cost
        usage = self.parse_event(event)
        stated = self.parse_totals(event)
        if stated is not None:
            usage = StepUsage(**{k: max(0, token_count(getattr(stated, k)) - totals[k]) for k in TOKEN_FIELDS},
                              cost_usd=0.0, model=stated.model)
        if usage is not None:
            # coerced again here: a policy's parser that lets a bad value through must not poison the totals
            usage = StepUsage(**{k: token_count(getattr(usage, k)) for k in (*TOKEN_FIELDS, "api_calls")},
                              cost_usd=0.0, model=usage.model if isinstance(usage.model, str) else None)
            with self._lock:
                self._usage = self._usage + usage
                for k in (*TOKEN_FIELDS, "api_calls"):
                    totals[k] += getattr(usage, k)
                totals["model"] = usage.model or totals.get("model")
        announced = token_count(self.tool_calls_in(event))  # after its usage: act() takes both together
        if announced:
            with self._announced:
                self._calls_announced += announced
                self._announced.notify_all()
        replied = announced > 0 or (usage is not None and (usage.api_calls > 0 or usage.output_tokens > 0))
        self._note_trouble(self.api_trouble(event), replied)

    def _read_stderr(self, pipe, path: Path) -> None:
        """Copy the CLI's stderr to its log (redacted), keeping its last non-empty lines for the policy error."""
        with open_private_append(path) as out:
            for raw in pipe:
                line = self._redact(raw.decode("utf-8", errors="replace"))
                out.write(line)
                out.flush()
                if line.strip():
                    self._stderr_tail.append(" ".join(line.split())[:TAIL_LINE_CHARS])
