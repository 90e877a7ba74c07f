"""Every defence of the grader and the sandbox, in one place: what it blocks, why it and not another, where it
lives and the test that attacks it. `docs/THREAT_MODEL.md` lists the same entries.

Plain data, standard library only: this file imports nothing of the grader, so a rename there cannot break it
(tests/test_defences.py says which entry to update instead).

To add a defence:

1. Write the attack first, as ``tests/attacks/<attack>.py``, named after what it tries (``nan_output.py``, not
   ``test_compare.py``). Its module docstring starts with ``Attack:`` (``tests/attacks/conftest.py`` collects only
   such files) and says the attack, the defences it tests (each in single backticks, `` `name` ``), and the honest
   twin (a kernel or command that does the same legitimately); where a twin exists, a test asserts it scores
   normally. A payload (code run in the sandbox) is a string in that file, never a module of its own. The test must
   fail without the defence.
2. Add a `Defence` below, in the group it belongs to. ``attack_test`` names that file; several defences share one
   file only where they block the same attack. ``acts_on`` is its scope (`SCOPES`); one that acts on a grading
   (`IN_A_GRADE`) needs a result function in ``kernelgym/grader/checks.py``, which every grade's ``checks``
   reports by the defence's name (tests/test_grade_checks.py fails until it has one).
3. Add a row for it (its name in backticks, then anything) to the right table in ``docs/THREAT_MODEL.md`` and run
   ``python kernelgym/grader/defences.py docs/THREAT_MODEL.md``, which writes every defence's row from this registry
   (`render_threat_model`).

``tests/test_defences.py`` fails until all three agree: every entry has an attack file with a test function, whose
module docstring names it; every attack file is named by an entry; every ``lives_in`` resolves; and the threat
model lists every name. It loads this file by path (``importlib.util.spec_from_file_location``): importing it as
``kernelgym.grader.defences`` runs the package's ``__init__``, which imports the grader.

An attack that needs a GPU lives in ``benchmarks/attacks.py`` (run on the H200, not in CI): name it as
``benchmarks/attacks.py::<name>`` with ``runs_on="gpu"``; but prefer a CI test on the simulated device or the fake
CUDA fixtures of ``tests/conftest.py`` where one can show the defence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Defence:
    """One defence."""

    name: str
    """Short snake_case id, unique; what docs and tests call it."""
    blocks: str
    """The attack it blocks, in one line."""
    rationale: str
    """Why this defence, and not another."""
    lives_in: str
    """Where it is implemented: ``"module:qualname"`` (e.g. ``"kernelgym.grader.untrusted:read_untrusted"``) or
    ``"module"``."""
    attack_test: str
    """The test that performs the attack: ``"tests/attacks/<attack>.py"`` (or ``"benchmarks/attacks.py::<name>"``)."""
    runs_on: str
    """``"ci"`` (the suite, no GPU) or ``"gpu"`` (benchmarks/attacks.py on the H200)."""
    acts_on: str
    """What it acts on, one of `SCOPES`; those of `IN_A_GRADE` report a result in every grade's ``checks``, by
    name (kernelgym/grader/checks.py says how each is decided)."""


SCOPES: dict[str, str] = {
    "sandbox": "bubblewrap's confinement of every sandboxed process: the agent's commands and, in a grading, the "
               "candidate's process (off where GraderConfig.sandbox is 'none')",
    "process": "the limits and clean-up of every command's and harness's process, whichever the sandbox backend",
    "grading": "the trusted grader and the harness, on every grading",
    "env": "the env's own work outside gradings: file actions, the workspace's caps, run directories, task "
           "discovery, the agent's commands waiting for the baseline's observation",
    "agent_cli": "the agent CLIs' own sandbox (kernelgym/agents/confine.py)",
    "unseen": "the unseen-config evaluation, which reports its own coverage",
}
"""Every scope a defence may act on, and what it means."""

IN_A_GRADE = ("sandbox", "process", "grading")
"""The scopes whose defences act on a grading: each grade's ``checks`` holds every such defence's result by name."""


def _a(attack: str) -> str:
    return f"tests/attacks/{attack}.py"


DEFENCES: tuple[Defence, ...] = (
    # -- the sandbox: what code in it (the agent's commands, the candidate kernel) can reach ----------------------
    Defence("no_network", "code in the sandbox reaching the network, loopback services of the host included",
            "bwrap --unshare-all gives an empty network namespace: nothing to filter or keep up to date, and "
            "loopback is cut too (a firewall rule would leave 127.0.0.1)",
            "kernelgym.sandbox:BubblewrapSandbox.argv", _a("network_from_sandbox"), "ci", "sandbox"),
    Defence("read_only_system", "writing outside the workspace: the host's /etc and /usr, the venv, the run directory",
            "every system path is a read-only bind and only the workspace is bound writable; permissions alone would "
            "not hold for files the sandbox's user may write",
            "kernelgym.sandbox:BubblewrapSandbox._mounts", _a("write_outside_workspace"), "ci", "sandbox"),
    Defence("mount_allowlist", "reading private data: the task directories (reference, task.yaml), other episodes, "
            "the home directory, the grader's state",
            "mounts are an allowlist (system directories, this Python, the workspace): a blocklist misses whatever "
            "is added to the host later",
            "kernelgym.sandbox:BubblewrapSandbox._mounts", _a("read_private_files"), "ci", "sandbox"),
    Defence("clean_environment", "reading the host's environment variables (API keys) from the sandbox",
            "the environment is built fresh with a short passthrough list of device and safety switches; stripping "
            "known secret names would miss new ones",
            "kernelgym.sandbox:clean_env", _a("read_host_environment"), "ci", "process"),
    Defence("drop_all_capabilities", "root in the sandbox remounting the read-only binds writable and escaping",
            "--cap-drop ALL in every sandbox, shell commands included; started by root, the command runs as an "
            "unprivileged user with every capability, the bounding set included, cleared (unprivileged_sandbox_user)",
            "kernelgym.sandbox:BubblewrapSandbox.argv", _a("remount_readonly_binds"), "ci", "sandbox"),
    Defence("read_only_sysctls", "host root through /proc/sys (kernel.core_pattern runs a program as host root)",
            "sysctl files check only the uid, not capabilities, so dropping capabilities is not enough: /proc/sys and "
            "/proc/sysrq-trigger are bound read-only",
            "kernelgym.sandbox:BubblewrapSandbox._mounts", _a("write_host_sysctl"), "ci", "sandbox"),
    Defence("seccomp_process_access", "reaching into another process of the same user (bwrap's pid 1, the worker): "
            "ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise, kcmp; and io_uring",
            "a seccomp filter refuses the few system calls that reach into other processes, with EPERM (a program "
            "that probes them gets an error, not a crash); io_uring is refused because a filter cannot see its "
            "operations",
            "kernelgym.seccomp:program", _a("ptrace_from_sandbox"), "ci", "sandbox"),
    Defence("seccomp_socket_families", "a socket of a family the network namespace does not confine: AF_VSOCK to "
            "a virtual machine's host, AF_PACKET, Bluetooth, CAN",
            "the seccomp filter allows socket and socketpair only for AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, "
            "which the empty network namespace confines, and refuses the rest with EAFNOSUPPORT: an allow-list, so "
            "a family added to Linux later is refused too",
            "kernelgym.seccomp:program", _a("vsock_from_sandbox"), "ci", "sandbox"),
    Defence("static_check_depth", "an editable file whose syntax tree is too deep for the static check to walk, "
            "raising out of the grader, or nested so the check takes time quadratic in its size (98 nested classes, "
            "a 1 MB file: 390 s in the env's process)",
            "the check walks each tree once with an explicit stack (no recursion, linear in the file's size); a file "
            "Python's own parser cannot read is a finding of its own, so the provenance gate fails with that reason",
            "kernelgym.grader.provenance:check_source", _a("deep_syntax_tree"), "ci", "grading"),
    Defence("static_check_sandboxed", "the static check run in the trusted process on hostile input: a module a "
            "candidate names imported to resolve a chain (`import antigravity` ran webbrowser.open() as the env's "
            "user), or a file that keeps the check busy without end",
            "names are resolved against lists known ahead (provenance.MODULE_NAMES, allowed_names.py), never by "
            "importing; the check runs in a bwrap sandbox of its own (python -I -S, no kernelgym imported) under "
            "GraderConfig.static_check_timeout_s, and a check past its limit, or one that gives no result, fails "
            "compile saying so",
            "kernelgym.grader.static_check:run_static_check", _a("static_check_escape"), "ci", "grading"),
    Defence("linear_source_scans", "a native source written so the grader's scans of it take time quadratic in its "
            "size (hours for the 4 MiB cap)", "every scan of a C++ source is linear: patterns may end at the end of "
            "the text, and the tokenizer finds line ends without copying",
            "kernelgym.backends.cuda:own_kernel_names", _a("quadratic_cpp_scan"), "ci", "grading"),
    Defence("seccomp_keyrings", "reading or writing the kernel's keyrings, which no namespace confines: the host "
            "session keyring the sandbox inherits, and uid 65534's user keyring every root-started sandbox shares "
            "(a channel between episodes)",
            "the seccomp filter refuses keyctl, add_key and request_key with EPERM, as Docker's default profile does",
            "kernelgym.seccomp:program", _a("keyring_from_sandbox"), "ci", "sandbox"),
    Defence("seccomp_other_abis", "making the refused system calls through another ABI (int 0x80, x32), whose "
            "numbers differ",
            "the filter checks the ABI of every call first and refuses all but the native one, rather than listing "
            "each ABI's numbers",
            "kernelgym.seccomp:program", _a("int80_syscall_bypass"), "ci", "sandbox"),
    Defence("pid1_memory_masked", "rewriting bwrap's pid 1 through /proc/1/mem (no ptrace needed) to clear its "
            "parent-death signal and outlive the sandbox",
            "/proc/1/mem and /proc/1/task/1/mem are covered by /dev/null binds: pid 1 stays dumpable (bwrap's), so "
            "the file itself must be out of reach",
            "kernelgym.sandbox:PID1_MEMORY_MASK", _a("write_pid1_memory"), "ci", "sandbox"),
    Defence("pidfd_kill_sandbox_init", "a hijacked sandbox pid 1 leaving bwrap's process group and living on after "
            "the command or grading",
            "bwrap reports its pid 1 (--info-fd) and the env kills it by a pidfd: killing a pid namespace's init kills "
            "everything in it, whatever it did to its process group or parentage; still holds where the seccomp "
            "filter cannot be built",
            "kernelgym.sandbox:kill_group", _a("hijack_pid1"), "ci", "sandbox"),
    Defence("process_group_kill", "background children of a command surviving its timeout",
            "each command runs in its own session and the whole group is killed on timeout and on success: killing "
            "only the top process leaves the rest running",
            "kernelgym.sandbox:run_limited", _a("background_process_outlives_timeout"), "ci", "process"),
    Defence("output_head_tail_cut", "a command printing without end to exhaust the env's memory and the observation",
            "output is read as it comes and only its head and tail are kept, with a count of what was cut: a "
            "policy still sees the error at the end",
            "kernelgym.sandbox:run_limited", _a("flood_command_output"), "ci", "process"),
    Defence("address_space_limit", "one process allocating the host's memory",
            "RLIMIT_AS per process (not applied with a GPU, whose runtimes reserve far more address space than they "
            "use); the command's cgroup limits its whole tree's memory where no GPU is passed in (cgroup_pids_limit)",
            "kernelgym.sandbox:_set_limits", _a("exhaust_host_memory"), "ci", "process"),
    Defence("cgroup_pids_limit", "a command starting processes without end (a fork bomb: thousands in "
            "one step) or growing its whole tree's memory past the host's",
            "a cgroup per command counts its whole tree, which cannot leave it: pids.max (1024 by default, threads "
            "included) and, without a GPU, a memory limit (Limits.memory_bytes); RLIMIT_NPROC counts the user "
            "machine-wide and RLIMIT_AS one process. The step's output says when a limit was hit; the group is "
            "killed and removed with the command. Not applied where cgroups cannot be made (said by "
            "cgroups.unavailable_reason)",
            "kernelgym.cgroups:SandboxCgroup", _a("fork_bomb"), "ci", "process"),
    Defence("tmpfs_size_cap", "filling the sandbox's RAM-backed /tmp or /dev/shm, which RLIMIT_AS does not cover",
            "both are private tmpfs mounts with a size cap",
            "kernelgym.sandbox:BubblewrapSandbox._mounts", _a("exhaust_host_memory"), "ci", "sandbox"),
    Defence("no_descriptor_leak", "commands bwrap cannot start (a NUL byte in an argument) leaking a descriptor each, "
            "until the env runs out",
            "the --info-fd pipe and the seccomp memfd are closed in a finally, also where Popen raised",
            "kernelgym.sandbox:_spawn", _a("nul_byte_command"), "ci", "sandbox"),

    # -- the agent CLIs' own sandbox (claude-code, codex, cursor-agent: kernelgym/agents/confine.py) ----------------
    Defence("agent_cli_private_dir_only", "an agent CLI's own tools (a flag that failed to switch them off) writing "
            "outside its private directory: the workspace, the run directory, kernelgym's sources, the venv, the "
            "system, the host's /tmp",
            "the CLI runs in a bubblewrap sandbox of its own: read-only binds of the system, this Python and its own "
            "installation; only its private 0700 directory bound writable (its tmp/ is the sandbox's /tmp); its "
            "flags stay as a second line, since a flag's meaning changes between CLI versions",
            "kernelgym.agents.confine:CLISandbox._mounts", _a("agent_cli_writes_outside_its_directory"), "ci", "agent_cli"),
    Defence("agent_cli_mount_allowlist", "an agent CLI's own tools reading the run directory (trajectories, other "
            "episodes), the workspace or the task folders straight from the host, around the env's tools",
            "the CLI's mounts are an allowlist (system, this Python, its installation, relay.py, its private "
            "directory), as the env's sandbox's are: a blocklist misses what is added later",
            "kernelgym.agents.confine:CLISandbox._mounts", _a("agent_cli_reads_the_run_directory"), "ci", "agent_cli"),
    Defence("agent_cli_no_user_home", "an agent CLI's own tools reading the user's home: keys, the CLIs' logins, "
            "kernelgym's private unseen store (~/.local/share/kernelgym/private)",
            "the home is not mounted ($HOME is the private directory), and the CLI's installation is bound by "
            "itself: its node_modules folder or its own folder, never a folder that holds the home",
            "kernelgym.agents.confine:install_root", _a("agent_cli_reads_the_users_home"), "ci", "agent_cli"),
    Defence("agent_cli_network_namespace", "an agent CLI's own tools reaching a service of the host on loopback (or "
            "the host's other addresses) besides kernelgym's MCP server and its model API",
            "a network namespace per episode (bwrap --unshare-net) holding only relay.py's listeners, each relayed "
            "to a unix socket bound in (the MCP server, a loopback model server, the model proxy): nothing else "
            "to filter, and no firewall rule to keep in step with the host",
            "kernelgym.agents.confine:CLISandbox.argv", _a("agent_cli_reaches_another_loopback_port"), "ci", "agent_cli"),
    Defence("agent_cli_model_proxy_allowlist", "an agent CLI using the proxy to its remote model API to reach "
            "another host or a loopback port (CONNECT, or an absolute-form request)",
            "the proxy connects only to the model API's host and port (base_url, or the CLI's default API) and the "
            "config's network_allow, by name; anything else is answered 403. TLS stays end to end (CONNECT)",
            "kernelgym.agents.confine:ModelProxy", _a("agent_cli_reaches_another_loopback_port"), "ci", "agent_cli"),
    # -- the env's file actions, which run in the trusted process ---------------------------------------------------
    Defence("file_action_confinement", "a file action following a symlink out of the workspace, or an error that "
            "says where a link resolves (through /proc/self it names the env's own files)",
            "the path is resolved with symlinks followed and must lie inside the workspace; the final open uses "
            "O_NOFOLLOW against a link swapped in between; the error never names the target",
            "kernelgym.workspace:resolve_in_workspace", _a("symlink_escape_file_action"), "ci", "env"),
    Defence("file_action_regular_files", "a FIFO or device planted by a shell command hanging a file action",
            "files are opened O_NONBLOCK and only regular files are accepted, checked on the open descriptor",
            "kernelgym.env:_open_regular", _a("fifo_and_huge_workspace_files"), "ci", "env"),
    Defence("file_action_read_cap", "a huge (sparse) file read whole into the env by read_file or edit_file",
            "at most the observation's length is read; edit_file refuses longer files instead of cutting them",
            "kernelgym.env:_read_capped", _a("fifo_and_huge_workspace_files"), "ci", "env"),
    Defence("directories_count_against_cap", "filling the disk past the workspace cap with directories, or long-named "
            "empty files whose names live in their directory's blocks: the cap counted only files' blocks",
            "the size walk counts every entry's own allocated blocks, directories and the root included, links not "
            "followed (the reference grader's grading-directory check uses the same walk)",
            "kernelgym.grader.files:tree_bytes", _a("uncounted_directories_fill_disk"), "ci", "env"),
    Defence("workspace_file_cap", "spending the host's inodes from a shell step with empty files (a review made "
            "300,000 in one step: the byte cap counted 6 MiB and said nothing)",
            "the walk that counts the workspace's bytes counts its entries too (files, directories, links; none "
            "followed), linear and stopping at the caps, and a step that leaves more than workspace_cap_files gets "
            "an error note, as the byte cap does. Checked after the step, not a quota: a per-sandbox filesystem "
            "with an inode limit would be one, and needs root",
            "kernelgym.env:KernelArenaEnv._execute", _a("many_empty_files"), "ci", "env"),
    Defence("unprivileged_sandbox_user", "host root from a sandbox started by root (the default in containers): "
            "reading /etc/shadow, a setuid-root file left in the workspace, uid 0 mapped to host uid 0",
            "started by root, bwrap mounts without a user namespace (one could map only root to the sandbox's user) "
            "and setpriv drops to host uid 65534 with every capability cleared before the command; the files the "
            "trusted side writes are handed over to that user, links and multi-link files left alone",
            "kernelgym.sandbox:sandbox_user", _a("root_in_the_sandbox"), "ci", "sandbox"),
    Defence("owner_only_run_dirs", "a setuid file the agent (the sandbox's user) leaves for other host users",
            "episode and grading directories are created 0700, so nothing under them is reachable by another user "
            "whatever its mode",
            "kernelgym.env:KernelArenaEnv.reset", _a("setuid_file_for_host_users"), "ci", "env"),

    # -- the grading directory: what is copied in, and how the parent reads what the candidate wrote -----------------
    Defence("pristine_task_files", "editing the workspace's reference (or any public file) to agree with a wrong "
            "kernel",
            "only the editable files are taken from the workspace; every other file is copied pristine from the "
            "task, and the parent's reference is loaded from the task directory, never a workspace",
            "kernelgym.grader.files:copy_public", _a("tampered_reference"), "ci", "grading"),
    Defence("input_builder_from_pristine_copy", "a reference.py in the grading directory that builds degenerate "
            "inputs (zeros) for the candidate",
            "the harness loads the input builder from the read-only pristine baseline copy, before any candidate "
            "code runs, not from the grading directory the candidate can write",
            "kernelgym.grader.harness:prepare", _a("tampered_input_builder"), "ci", "grading"),
    Defence("no_symlinked_editable_files", "an editable file, or a directory on its path, that is a symlink to host "
            "or private data, copied into the grading directory by the trusted parent",
            "the parent's real path of the file's directory must be the workspace's, and the file is opened with "
            "O_NOFOLLOW: only the last component would be checked otherwise",
            "kernelgym.grader.files:copy_editable", _a("symlink_editable_file"), "ci", "grading"),
    Defence("editable_file_cap", "a huge, sparse or special editable file exhausting or hanging the parent that "
            "copies it",
            "read as a regular file of at most MAX_EDITABLE_BYTES; anything else is a compile-stage problem",
            "kernelgym.grader.files:copy_editable", _a("huge_editable_file"), "ci", "grading"),
    Defence("no_write_through_links", "a link planted in the grading directory redirecting the parent's writes to "
            "a host file",
            "the parent creates every file with O_EXCL | O_NOFOLLOW: it never writes through anything already there",
            "kernelgym.grader.files:write_new", _a("planted_link_in_grading_dir"), "ci", "grading"),
    Defence("sources_read_before_run", "the candidate swapping its own source file, after the copy, for a link to "
            "/proc/self/mem (or a FIFO) that the parent would read later",
            "the parent reads the editable sources once, as capped regular files, right after copying them in and "
            "before any candidate code runs; every later use (the static check, launch-option notes) takes that text",
            "kernelgym.grader.grader:Grader._editable_bytes", _a("swap_source_for_link"), "ci", "grading"),
    Defence("untrusted_file_reader", "a FIFO, directory, device or symlink in place of a result file, hanging the "
            "parent or pointing it at a host file",
            "every candidate-written file is opened O_NOFOLLOW | O_NONBLOCK and read only as a regular file under a "
            "size cap (outputs: copied once into a private memfd, which is checked and loaded); failures are grade "
            "messages",
            "kernelgym.grader.untrusted:read_untrusted", _a("fifo_result_file"), "ci", "grading"),
    Defence("candidate_text_capped", "nested or huge JSON in a result crashing the parser or the grade's "
            "serialization",
            "JSON errors (RecursionError included) are file errors, and the result is parsed at the boundary: "
            "every value the candidate reports reaches the grade as a string cut to its tail, never as a structure",
            "kernelgym.grader.protocol:parse_check_result", _a("nested_json_result"), "ci", "grading"),
    Defence("unpacked_size_cap", "a zip bomb as outputs.pt: a few MB on disk, gigabytes in the trusted parent "
            "(also behind a second central directory that Python's zipfile reads and torch's reader does not)",
            "the archive's total uncompressed size, as torch's own zip reader sees it, is checked before loading, "
            "against a cap from the references' sizes (GradingSession.max_output_bytes); the file must be a zip from "
            "its first byte",
            "kernelgym.grader.untrusted:load_tensors_untrusted", _a("zip_bomb_outputs"), "ci", "grading"),
    Defence("weights_only_load", "a pickle in outputs.pt that runs code in the trusted parent when loaded",
            "torch.load with weights_only=True: only tensors and plain containers are rebuilt, no code runs",
            "kernelgym.grader.untrusted:load_tensors_untrusted", _a("pickle_in_outputs"), "ci", "grading"),
    Defence("grading_dir_bound_alone", "the candidate renaming its grading directory and putting a symlink (to /) "
            "in its place, so the parent reads and writes elsewhere",
            "the prepared worker's sandbox binds only that grading directory, a mount point the candidate cannot "
            "rename or replace",
            "kernelgym.grader.preparing:Preparing.start_worker", _a("swap_grading_dir"), "ci", "grading"),
    Defence("outputs_reread_when_replaced", "the candidate writing outputs.pt itself, with the right answers, before "
            "the harness writes its own (wrong) one, so the early comparison grades the forgery",
            "the final comparison, made when no candidate code runs, checks each file's identity (inode, size, "
            "ctime, which a process cannot set) and compares again whatever changed since it was read early",
            "kernelgym.grader.session:GradingSession.compared", _a("forged_outputs_early"), "ci", "grading"),

    # -- the candidate's process and the trusted parent ---------------------------------------------------------------
    Defence("candidate_in_own_process", "a crash or an out-of-bounds write in the kernel taking the env down",
            "the candidate runs in a sandboxed process of its own; a dead process is a failed stage (compile before "
            "its import finished, correctness after)",
            "kernelgym.grader.runner:read_results", _a("crash_the_harness"), "ci", "grading"),
    Defence("import_recorded_by_file", "a module that cannot import printing the harness's \"candidate imported\" "
            "line before it kills its process, so its death reads as a runtime failure: 20 points for no import",
            "the harness records the import in a file beside the result; its output, which the candidate shares, "
            "decides nothing. Sources the static check refused (they may write that file) that die without a "
            "result fail compile. Left: such sources can forge a whole check result and keep 20 (never more: their "
            "correctness fails on the static finding)",
            "kernelgym.grader.runner:read_results", _a("forged_import_marker"), "ci", "grading"),
    Defence("interpreter_compile_errors", "a Triton kernel that cannot compile (a non-power-of-2 arange) passing "
            "the compile gate on the CPU interpreter, where Triton's checks raise at run time, wrapped in an "
            "InterpreterError: 20 points where a GPU gives 0",
            "an InterpreterError raised from inside triton.language (its semantic checks) is a compile error, as "
            "the same check is a CompilationError on a GPU; errors raised elsewhere stay run-time failures",
            "kernelgym.backends.triton:is_compile_error", _a("interpreter_compile_error"), "ci", "grading"),
    Defence("harness_timeout", "a kernel that never returns, hanging the grading",
            "the harness process runs under GraderConfig.timeout_s and its whole process group is killed at the "
            "limit; the grade says so",
            "kernelgym.grader.runner:FreshRunner.run", _a("hang_forever"), "ci", "grading"),
    Defence("correctness_in_trusted_parent", "patching allclose, the comparison or the reference in the candidate's "
            "process to pass a wrong output",
            "the harness only saves outputs; the parent compares them with a reference it computed itself from the "
            "pristine task, so nothing the candidate patches takes part in the decision",
            "kernelgym.grader.gates:correctness_gate", _a("patch_the_checker"), "ci", "grading"),
    Defence("every_config_every_element", "computing only part of the output, or only on some shapes",
            "every element of every seen config's output is compared with the reference, and a config that fails "
            "fails the gate; unseen configs (UnseenConfigEval) test shapes the agent never saw",
            "kernelgym.grader.gates:correctness_gate", _a("partial_output"), "ci", "grading"),

    # -- the warm worker and its reply ---------------------------------------------------------------------------------
    Defence("worker_reply_token", "the candidate writing a forged reply ('done', 'unprepared') into the worker's "
            "stdout through bwrap's pid 1 (/proc/1/fd/1)",
            "every reply must end with a random token sent with the request, which the worker read before any "
            "candidate code ran; words are read from the line's end, so junk in front does not spoil a real reply",
            "kernelgym.grader.worker:GraderWorker.request", _a("forged_worker_reply"), "ci", "grading"),
    Defence("no_retry_once_started", "a candidate that exits early, deletes its log and forges 'unprepared' to be "
            "run again in a fresh process (a second look at the inputs)",
            "the worker says 'started' and waits for the parent's 'go' before any candidate code runs; after that "
            "the parent takes no 'unprepared', and a result stands whatever the candidate did",
            "kernelgym.grader.worker:GraderWorker.request", _a("forged_worker_reply"), "ci", "grading"),
    Defence("one_run_per_worker", "a run queued through the worker's stdin (/proc/1/fd/0) and served after the reply, "
            "in a fork whose memory still holds the parent's token",
            "a worker that grades untrusted code exits after its one run (--one-run), and the grader stops it: "
            "nothing a candidate did to it reaches another run",
            "kernelgym.grader.harness:serve", _a("second_run"), "ci", "grading"),
    Defence("kill_others_before_reply", "processes the candidate left behind reading the worker's reply (and its "
            "token) from /proc/1/fd/1, or forging replies after it",
            "before each reply the worker kills every other process in its pid namespace and waits until none can "
            "run user code; the reply is one write",
            "kernelgym.grader.harness:_kill_others", _a("steal_worker_reply"), "ci", "grading"),
    Defence("bounded_reply_read", "the candidate writing to the worker's stdout forever, without a newline, to hang "
            "or exhaust the parent",
            "the parent reads raw chunks with the deadline checked on each and keeps at most MAX_REPLY_BYTES",
            "kernelgym.grader.worker:GraderWorker.request", _a("flood_worker_pipe"), "ci", "grading"),
    Defence("worker_not_dumpable", "the candidate (a child of the worker, same uid) opening the worker's "
            "/proc/<pid>/mem to change how later requests are served",
            "the worker makes itself non-dumpable (prctl PR_SET_DUMPABLE 0) at start; with every capability dropped, "
            "no process in the sandbox may open its memory",
            "kernelgym.grader.harness:serve", _a("worker_memory_from_candidate"), "ci", "grading"),

    # -- what the harness checks in the candidate's process ------------------------------------------------------------
    Defence("static_provenance_check", "PyTorch (or the task's reference) doing the work in the candidate's files, "
            "instead of or beside the candidate's kernels",
            "the syntax tree of every editable Python file is judged whole, before any candidate code runs: every "
            "function, class, decorator, default, annotation and module-level statement is held to the rules of "
            "provenance.RULES (each named, with its rationale, an example, an honest twin and its attack file; "
            "tests/test_provenance.py runs them all). Torch compute through any alias, computing tensor methods, code "
            "built at run time and any import of the reference are refused: a syntax tree, not regular expressions, "
            "so an alias does not slip through. Tensor arithmetic on the host is for the dynamic check where no "
            "outside observer runs, and for the outside observer on NVIDIA GPUs (outside_observer_kernels); C++ and "
            "CUDA sources are read as tokens (kernelgym.grader.provenance:check_cpp_source)",
            "kernelgym.grader.provenance:check_source", _a("pytorch_fallback_no_launch"), "ci", "grading"),
    Defence("private_reference_scratch_dir", "two gradings whose reference computations overlap (a prepared session "
            "given up, unseen evaluation) sharing fixed scratch file names: one compares against the other's "
            "reference, or loads a half-written file and raises out of step()",
            "each reference process writes its jobs and outputs in a temporary directory of its own, removed once "
            "read or on failure: nothing to coordinate",
            "kernelgym.grader.reference:run_reference_process", _a("shared_reference_scratch_files"), "ci", "grading"),
    Defence("grading_dir_disk_check", "filling the host's disk from the grading directory, the only one the "
            "candidate's process may write while graded (file after file, up to the time limit)",
            "once the harness is done the directory's size is counted (the walk stops at the cap) and reported in "
            "the grade; past GraderConfig.grading_dir_cap_bytes the grade fails correctness. After the run, not a "
            "quota, as the workspace cap",
            "kernelgym.grader.grader:Grader.grade", _a("fill_disk_from_grading_dir"), "ci", "grading"),
    Defence("grading_dir_file_cap", "spending the host's inodes from the candidate's process with empty files in "
            "its grading directory, which the byte cap barely sees",
            "the grading directory's entries are counted in the walk that counts its bytes (tree_usage) and "
            "reported in the grade; past GraderConfig.grading_dir_cap_files the grade fails correctness. After the "
            "run, not a quota, as the byte cap",
            "kernelgym.grader.grader:Grader.grade", _a("many_empty_files"), "ci", "grading"),
    Defence("kernel_bodies_checked", "Python in a kernel's body (on the CPU interpreter it runs as Python): the "
            "reference imported and the output written through a module-level list of the wrapper's tensors; numpy "
            "reached through `.handle.data`; a `triton.constexpr_function`, run on the host while a kernel compiles",
            "a kernel's body is held to what Triton compiles: only the statements Triton's frontend takes "
            "(kernel_statements), no names but its own, modules, the file's Triton functions and constant globals "
            "(kernel_names), and only Triton values' attributes (kernel_attributes: no `.handle`, no `.data`); "
            "constexpr functions are host code and judged as such",
            "kernelgym.grader.provenance:KERNEL_NODES", _a("python_in_interpreted_kernel_body"), "ci", "grading"),
    Defence("whole_file_judged", "code the check never read because nothing reached it by name: a function handed "
            "to a decorator, a decorated class's methods, a module-level `__getattr__` or a deleted entry point "
            "handing the harness an unchecked function, `import kernel` or `from kernel import helper` from kernel.py",
            "every statement of every editable file is judged whatever reaches it; decorators are Triton's only, "
            "classes plain, dunder bindings refused, the entry point defined once and never rebound, and the "
            "candidate's own modules are not importable",
            "kernelgym.grader.provenance:_FileChecker", _a("decorated_helper_computes"), "ci", "grading"),
    Defence("host_values_read_by_allow_list", "Python computing on the CPU interpreter's numpy arrays behind Triton "
            "values: a `triton.constexpr_function` called from a kernel body with its live values reads "
            "`.handle.data`; through `.ctypes._ctypes.pythonapi` it ran any Python, which planted an unchecked "
            "function the wrapper called by a name the file never binds",
            "a constexpr function is held to a kernel's rules; host code reads as values only tensor properties and "
            "attributes the file assigns (never handle, data, ctypes), an allow-list where a deny-list of torch "
            "method names missed numpy's; a name the file never binds and no builtin is, is refused",
            "kernelgym.grader.provenance:_FileChecker._host_value", _a("constexpr_function_reads_values"), "ci", "grading"),
    Defence("names_resolved_by_scope", "a global Triton's CPU interpreter writes into the kernel file (`np`) read "
            "where another scope's binding made the name look bound; `math` of a Triton value, a torch name imported "
            "into a kernel body, a list item assigned in one; an attribute the file assigns on an object of its own "
            "read on a tensor (`x._typed_storage`)",
            "names resolve by Python's scopes, and an interpreter global only where the file binds it for certain at "
            "its top level; in kernel bodies math takes constants and constexpr parameters, only triton and math "
            "imports are names, no item is assigned; the file's own attributes are read only on its own instances",
            "kernelgym.grader.provenance:_FileChecker._name", _a("interpreter_globals_and_kernel_python"), "ci", "grading"),
    Defence("dynamic_check_sees_suspension", "reading a tensor's values where no operator shows: `str()`, `repr()` "
            "or an f-string of a tensor runs torch's printing with every dispatch mode suspended, then Python "
            "computes on the printed digits",
            "the harness watches torch's own function that pops the dispatch modes while a checked call runs: any "
            "suspension of its record fails the call (honest wrappers print no tensors); the static check also "
            "refuses repr, ascii and format, and str() in kernel bodies",
            "kernelgym.grader.harness:recorded_call", _a("constexpr_function_reads_values"), "ci", "grading"),
    Defence("own_modules_not_importable", "the kernel file importing itself (`import kernel`, `from kernel import "
            "helper as h`) so that chains through its own module (`kernel.torch.nn.functional`) are not judged as "
            "module chains; an import inside a function; an imported name rebound",
            "imports are an allow-list of module paths (torch, triton, triton.language, math, os.path, typing, "
            "__future__), at module level only; the candidate's editable files and the reference are not on it; an "
            "imported name is bound nowhere else in the file",
            "kernelgym.grader.provenance:_FileChecker._check_import", _a("self_import_helper"), "ci", "grading"),
    Defence("entry_point_fixed", "the harness handed another function than the one the check read: the checked "
            "entry point deleted and a module-level `__getattr__` returning an unchecked one, or the name rebound "
            "later (directly or through `global`)",
            "the entry point is defined exactly once at the top level, undecorated, and bound, deleted or declared "
            "global nowhere else; dunder names (a module's `__getattr__`) are never bound",
            "kernelgym.grader.provenance:_FileChecker._check_entry_point", _a("entry_point_swapped"), "ci", "grading"),
    Defence("kernel_attributes_listed", "numpy reached inside a kernel body through a Triton value's "
            "`.handle.data` (on the CPU interpreter, the array behind it)",
            "a kernel body's attributes of its own values are an allow-list, Triton values' methods and attributes "
            "(allowed_names.TL_TENSOR_ATTRIBUTES), without `handle` or `data`",
            "kernelgym.grader.allowed_names:TL_TENSOR_ATTRIBUTES", _a("numpy_through_kernel_handle"), "ci", "grading"),
    Defence("source_bytes_judged", "a source Python versions read differently (a NUL byte: ValueError on 3.10, "
            "SyntaxError on 3.11), bytes that are not UTF-8 (the checked text, decoded with replacement, differs "
            "from the imported one), a file over the cap",
            "the check reads the bytes first: each of these fails compile with the file and line named",
            "kernelgym.grader.provenance:source_errors", _a("unreadable_source"), "ci", "grading"),
    Defence("refused_names_as_attributes", "a refused name reached as another module's attribute: "
            "`os.sys.modules` (the reference the harness loaded), `triton.runtime.cache.os.environ`, "
            "`triton.runtime.autotuner.builtins.exec`, `triton.testing.subprocess`",
            "imports are an allow-list, and a module's imports are its attributes: a chain of attributes rooted at an "
            "import is resolved against provenance.MODULE_NAMES, a table of each allowed module's names known ahead "
            "(never the installed modules): a name not listed ends the chain with a finding; a module, getattr or "
            "hasattr passed around as a value is refused",
            "kernelgym.grader.provenance:MODULE_NAMES", _a("reference_through_os_sys_modules"), "ci", "grading"),
    Defence("no_process_tricks_in_source", "a helper process or thread started by the candidate that rewrites the "
            "outputs after the harness saved them, works while the baseline is timed, or walks the garbage collector "
            "for the expected tensors",
            "a kernel wrapper has no use for fork, subprocess, threading, ctypes, gc or inspect: imports are an "
            "allow-list (torch, triton, math, os.path, typing), which closes the plain forms before any candidate "
            "code runs; obfuscated forms are left to the outside observer (its kernel list and the speedup "
            "cross-check)",
            "kernelgym.grader.provenance:_not_importable", _a("forked_helper_rewrites_outputs"), "ci", "grading"),
    Defence("stop_others_before_results", "a process forked by the candidate that rewrites a result file after the "
            "harness wrote it, before the sandbox is torn down",
            "the harness is alone in its pid namespace with the worker and bwrap's init: it can stop everything else "
            "before each write, which closes the window whatever the helper looks like; reading the files only after "
            "the sandbox is gone would not (the rewrite happens before that)",
            "kernelgym.grader.harness:_stop_others", _a("forked_helper_rewrites_outputs"), "ci", "grading"),
    Defence("triton_launch_required", "a Triton kernel defined but never launched, with a PyTorch fallback doing the "
            "work",
            "for Triton tasks a config fails when no @triton.jit function from the candidate's own files was "
            "launched, counted at run time where the static check reads only source; the counter lives in the "
            "candidate's process, which can bump it itself (README, known limits)",
            "kernelgym.backends.triton:LaunchCounter", _a("pytorch_fallback_no_launch"), "ci", "grading"),
    Defence("dynamic_torch_op_check", "PyTorch computing the outputs on the host beside a token launch of the "
            "candidate's kernel, where no outside observer runs (the CPU interpreter, AMD): tensor operators the "
            "static check cannot tell from integer arithmetic (`y[:] = x * w`), an index (`weight[ids]`), ATen "
            "called from a C++ binding; or popping the harness's mode to compute unseen",
            "the harness records every operator each checked call runs in a TorchDispatchMode of its own, bound "
            "before any candidate code is imported, which sees the wrapper, Triton's interpreter and kernel bodies "
            "alike; a config fails where one is not allocation, a view, a copy or a fill (protocol.ALLOWED_TORCH_OPS, "
            "and the task's allowed_torch_ops), or where the call left the dispatch-mode stack otherwise than it "
            "found it. Exited before the outputs are taken, so no_torch_mode_active still holds. Off where the "
            "observer runs, whose kernel list does this job. Thread-local (threads are refused statically); host "
            "reads that are no operator (`.tolist()`, `.numpy()`) and a private torch call that suspends the mode "
            "and restores it are left to the static check",
            "kernelgym.grader.harness:OpRecorder", _a("host_tensor_arithmetic"), "ci", "grading"),
    Defence("launch_arguments_checked", "a Python list (or any object) holding the wrapper's tensors passed into a "
            "Triton kernel: on the CPU interpreter the kernel's body gets it as it is and computes with torch "
            "methods on the tensors, while the launch counts as the candidate's own",
            "the launch counter's wrapper of JITFunction.run and InterpretedFunction.run refuses (TypeError naming "
            "the parameter) any argument of a candidate's kernel that is not exactly a torch.Tensor, an int, float, "
            "bool, str or None, a torch or Triton dtype, a tl.constexpr of one, or a plain tuple of those (Triton "
            "turns tuples' tensors into pointers), and a tensor for a tl.constexpr parameter; Triton's own "
            "TensorWrapper and TensorDescriptor of a plain tensor pass. Types, not the body: whatever the body does "
            "with a pointer stays Triton's",
            "kernelgym.backends.triton:launch_argument_checker", _a("tensor_list_into_kernel"), "ci", "grading"),
    Defence("outputs_own_memory", "an input returned as the output (or two outputs in one block), which the "
            "poison and the next input set overwrite, so the per-run check blames the baseline",
            "a returned output must have storage of its own, not an argument's or another output's; outputs written "
            "into an argument are declared with `arg` in task.yaml",
            "kernelgym.grader.harness:collect", _a("output_aliases_input"), "ci", "grading"),
    Defence("plain_tensor_outputs", "a tensor subclass as output, whose __torch_function__ computes lazily when the "
            "output is compared or copied out, outside the timed window",
            "outputs must be exactly torch.Tensor, checked at the check, at capture (no eager fallback for it) and "
            "in the timed runs; a plain tensor has no hook to run",
            "kernelgym.grader.harness:_plain", _a("tensor_subclass_output"), "ci", "grading"),
    Defence("no_torch_mode_active", "a torch function or dispatch mode entered at import, filling a returned "
            "(zero) tensor when the harness copies it out",
            "no mode may be active when an output is taken: a mode sees every torch call the harness makes",
            "kernelgym.grader.harness:_plain", _a("torch_mode_left_active"), "ci", "grading"),

    Defence("seed_out_of_reach", "reading the grading's seed (the check inputs' seed) to print it into the "
            "observation or to tell checked calls from timed ones",
            "the harness's request file is deleted as soon as it is read (by the forked child that builds the "
            "inputs, seed_not_in_candidate_memory), before any candidate code runs, and the request the candidate's "
            "process holds has no seed; the parent keeps its own copy",
            "kernelgym.grader.harness:main", _a("seed_from_request_file"), "ci", "grading"),
    Defence("seed_not_in_candidate_memory", "reading the grading's seed back from freed memory of the candidate's "
            "own process (uninitialised torch.empty or native allocations reuse freed chunks: the request's JSON "
            "text, the input builder's seeded generator) to print it into the observation",
            "a forked child reads the request, deletes its file and runs the input builder on the CPU (check, "
            "warm-up and verification inputs), then sends back the request without its seed and the inputs over a "
            "pipe; the parent moves them to the device. The seed never enters the candidate's process, so no "
            "memory there holds it, freed or live: zeroing buffers after use would miss copies made by json, the "
            "allocator and torch. The timing pool's perturbations, which nobody reproduces, come from a fresh "
            "secret",
            "kernelgym.grader.harness:in_forked_child", _a("seed_from_freed_memory"), "ci", "grading"),

    # -- the outside observer (NVIDIA GPUs: the CUPTI kernel tracer or Nsight Compute; observer.py, tracer.py) -------
    Defence("outside_observer_kernels", "PyTorch or a library computing the outputs while a token kernel of the "
            "candidate's runs beside it, in any form the static check cannot see",
            "the check runs once more under the kernel tracer (CUPTI) or Nsight Compute, which list every kernel the "
            "process ran; marker kernels "
            "launched by the harness cut the list per call, so each checked call's kernels are known without trusting "
            "anything the candidate's process says. Every kernel there and in its warm-up must be named in the "
            "candidate's sources (backend.own_kernel_names) or be PyTorch's fill or copy. Counting launches in-process "
            "(a counter the candidate can bump) or reading source (which cannot see every form) does not suffice",
            "kernelgym.grader.observer:foreign_kernels", _a("library_kernels_beside_token_kernel"), "ci", "grading"),
    Defence("speedup_cross_check", "a forged speedup: the candidate's process rewriting its timing, or slowing the "
            "baseline's runs, which are timed in that process",
            "the interleaved timing stays in the candidate's process (it is what keeps self-speedup noise at 0.4%), but "
            "a speedup more than 2% above 1 must agree within 25% with the ratio of the device times the profiler saw "
            "for the baseline's and the candidate's checked calls, which no code in the candidate's process produced; "
            "the threshold is fixed, not the run's own band, which a forged result reports",
            "kernelgym.grader.observer:cross_check", _a("forged_speedup"), "ci", "grading"),
    Defence("observer_report_complete", "tampering with the observed run: launching the marker kernel, killing the "
            "profiler before it lists a kernel, leaving no report",
            "the report must hold exactly 2 x configs + 2 markers, the observed check must succeed and the profiler "
            "exit 0, else the grading fails: the pristine baseline was observed on the same machine, so only the "
            "candidate can have made the difference (the profiler's frontend shares the candidate's sandbox: it "
            "cannot reach a process in bubblewrap's namespaces from outside)",
            "kernelgym.grader.observer:split", _a("forged_or_unfinished_observer_report"), "ci", "grading"),
    Defence("kernel_trace_complete", "tampering with the kernel tracer's trace: running kernels in a second process, "
            "dying or exiting before the trace's end line, making it drop records, or hiding work behind the "
            "harness's cache flush",
            "the trace must be one process's (one file), end with its end line, whose record count matches and whose "
            "dropped count is 0; the harness binds the tracer's flush before any candidate code runs and calls it "
            "after the last marker; every part of the run must end with the harness's flush, the only kernel dropped",
            "kernelgym.grader.tracer:parse_trace", _a("tampered_kernel_trace"), "ci", "grading"),
    Defence("kernel_timestamps_known", "library work recorded with unknown timestamps (CUPTI writes 0 where it "
            "could not time a kernel, e.g. for lack of device memory): sorted by start, it would land before the "
            "harness's first marker, where nothing is checked or timed",
            "a trace holding a kernel whose start or end is unknown (0) is refused: its place in the run, and so which "
            "call it belongs to, cannot be known; honest traces have every timestamp",
            "kernelgym.grader.tracer:parse_trace", _a("unknown_kernel_timestamps"), "ci", "grading"),
    Defence("untraced_process_exits", "a second process running the library work where the kernel tracer cannot "
            "create its trace (a file planted at its pid's name, a pid namespace of its own giving it the parent's "
            "pid): the tracer gave up quietly and CUDA ran on unseen, one trace in all",
            "a process that must be traced (KERNELGYM_TRACE_FILE set) and cannot create its trace exits inside cuInit, "
            "before any kernel (kernel_trace.cpp, InitializeInjection); one it can create shows as a second trace",
            "kernelgym.grader.tracer:SOURCE", _a("untraced_second_process"), "ci", "grading"),
    Defence("baseline_observed_alone", "the agent's commands loading the GPU while the pristine baseline is observed "
            "in the background after reset: its kernels, preempted, show longer device times, cached for the process, "
            "and every later speedup cross-check is wider",
            "the env runs no command of the agent's (shell, profile, bench) until the baseline's observation is done "
            "(Grader.wait_for_baseline); file actions run no code and do not wait. Observing the baseline at grading "
            "instead would cost its run in the first grading's submit-to-reward",
            "kernelgym.grader.observing:Observing.wait_for_baseline", _a("gpu_work_while_baseline_observed"), "ci", "env"),
    Defence("library_names_not_own", "naming a kernel of one's own like the library kernel one really calls, so the "
            "library's kernel passes as the candidate's",
            "own means defined in the sources, at file scope, and not named as vendor libraries name theirs "
            "(sm90_xmma..., nvjet..., cutlass...): a name is all the profiler gives",
            "kernelgym.grader.observer:is_own", _a("library_named_kernel"), "ci", "grading"),
    Defence("observed_run_reads_sources_first", "rewriting the kernel file in the grading directory during the "
            "check, so the observed run imports an honest kernel",
            "the observed run imports the editable files as read before any candidate code ran, from a directory of "
            "its own that no candidate sandbox binds writable",
            "kernelgym.grader.observing:Observing._observed_run", _a("rewrite_sources_before_observed_run"), "ci", "grading"),
    Defence("early_observer_death_is_infra", "another env's kernel filling the GPU's memory while this grading's "
            "observed run prepares, so that the run dies and the kernel is graded unobserved, or an honest one refused",
            "an observed run that dies before it says it prepared ran no candidate code: the grading is an "
            "infrastructure fault scoring 0 (retried or dropped), neither passed unobserved nor refused as the kernel's",
            "kernelgym.grader.observing:Observing.observe", _a("gpu_memory_filled_beside_the_observed_run"), "ci",
            "grading"),
    Defence("baseline_key_follows_configs", "a forged speedup on unseen configs, each graded on its own by one "
            "grader, cross-checked against the observed baseline of the first config graded (the baseline's key was "
            "made once per observer tool)",
            "the key of the baseline's observation is made per observer tool and configs",
            "kernelgym.grader.observing:Observing._baseline_key",
            _a("unseen_config_cross_checked_against_another_config"), "ci", "grading"),

    Defence("host_access_refused_in_source", "telling the observed run from the checked one (the file's path, the "
            "profiler's variables, the process's mapped libraries) to be honest only while observed; writing into "
            "Triton's cache; keying a cache by input values read on the host",
            "a kernel wrapper needs no files, environment or host reads of device values: the static check refuses "
            "`__file__`, `open`, os file and environment functions, file modules and `.item()` on the entry point's "
            "path, and in C++ `fopen`, streams, `getenv`, `dlopen`, processes and vendor library handles "
            "(CPP_HOST_NAMES); detection past it gains little (the observed outputs must be right with only the candidate's "
            "kernels, and the timing is cross-checked)",
            "kernelgym.grader.provenance:REFUSED_NAMES", _a("detect_the_observed_run"), "ci", "grading"),
    Defence("kernel_artifacts_only", "shared libraries the candidate planted in Triton's cache during its checked run "
            "(host launchers) loaded into the observed run: native code beside the profiler",
            "of that cache only compiled kernels and their metadata are copied (no `.so`, no links): the observed run "
            "builds its own launchers, and recompiling the kernels would cost the time the copy saves",
            "kernelgym.backends.triton:KERNEL_ARTIFACTS", _a("planted_triton_launcher"), "ci", "grading"),
    Defence("observed_cache_copy_bounded", "tens of thousands of empty files left in the checked run's Triton cache, "
            "which the parent copies for the observed run (beside its comparisons, before the verdict is known): a "
            "copy each on the trusted side",
            "the copy visits at most files.MAX_COPIED_ENTRIES entries (a cache holds a few files per kernel), and "
            "starts only where the compile gate, the static check and the disk check passed: a count cap, as the "
            "byte cap already was",
            "kernelgym.grader.files:copy_regular_files", _a("many_cache_files_for_the_observed_run"), "ci", "grading"),
    Defence("baseline_kernel_cache_before_candidate", "rewriting the baseline's compiled kernels in the grading "
            "directory's Triton cache so that later gradings, seeded from it, time a slower baseline",
            "the cache later gradings are seeded from is copied once, after the worker prepared a grading and before "
            "the go that lets candidate code run; later writes reach only the candidate's own grading",
            "kernelgym.grader.observing:Observing._keep_kernel_cache", _a("poisoned_baseline_kernel_cache"), "ci", "grading"),
    Defence("warmup_on_other_values", "doing the work in the observed warm-up call and returning it, cached by value, "
            "from a checked call that launches only a token kernel (tiny observed time: any forged speedup passes)",
            "the warm-up calls (where JIT compilation and autotuning happen) get inputs of the same shapes from "
            "another seed: nothing computed there answers the checked call",
            "kernelgym.grader.harness:_warm_up_all", _a("work_moved_to_warmup"), "ci", "grading"),

    # -- comparing with the reference ----------------------------------------------------------------------------------
    Defence("non_finite_never_pass", "NaN or Inf outputs passing a comparison (NaN compares False both ways)",
            "the elementwise test err <= bound is False for NaN, and NaN/Inf where the reference is finite is "
            "reported as such; where the reference itself is NaN anything goes",
            "kernelgym.grader.compare:_compare", _a("nan_output"), "ci", "grading"),
    Defence("relative_l2_guard", "constant or all-zero outputs clearing a loose absolute tolerance when the true "
            "values are tiny",
            "besides the elementwise bound, a relative L2 error above MAX_REL_L2 fails, over the reference's finite "
            "values (a NaN in the reference must not switch it off)",
            "kernelgym.grader.compare:MAX_REL_L2", _a("zero_output_small_values"), "ci", "grading"),
    Defence("trivial_output_task_check", "an all-zero or constant output passing because the task's tolerance "
            "or reference cannot tell it from a working kernel",
            "the grader checks the task, not only the candidate: on the seen configs, where a zero or constant "
            "output would pass the prepared reference, grading stops with a TaskSpecError naming the task",
            "kernelgym.grader.compare:trivial_output_passes", _a("zero_output_small_values"), "ci", "grading"),
    Defence("shape_and_dtype_match", "an output of a lower precision (or another shape) compared as if it were the "
            "config's",
            "the output's dtype must be the config's and its shape the reference's; the tolerance is per dtype",
            "kernelgym.grader.compare:_compare", _a("wrong_dtype_or_shape_output"), "ci", "grading"),
    Defence("dense_real_cpu_tensor_only", "an exotic tensor (meta, sparse, quantized, complex) or a non-tensor that "
            "makes the comparison misbehave",
            "only dense real strided CPU tensors are compared; any error while comparing is a failed comparison",
            "kernelgym.grader.compare:compare_output", _a("exotic_output_tensor"), "ci", "grading"),

    # -- timing (in the candidate's process; cross-checked by the outside observer on NVIDIA) -------------------------
    Defence("timer_bound_before_import", "patching torch.cuda.Event.record, synchronize, CUDAGraph.replay or "
            "Tensor.copy_/fill_ in the candidate's process to fake the timing or its checks",
            "the harness binds the functions its timing loop calls when it starts, before any candidate code runs, "
            "and calls only those; patching the harness module itself is not caught (README, known limits)",
            "kernelgym.grader.harness:time_pair", _a("patch_the_timer"), "ci", "grading"),
    Defence("baseline_prepared_before_import", "code the candidate runs at import slowing the baseline (patching its "
            "function or module) to inflate the speedup",
            "the baseline is loaded from the pristine copy and its CUDA graphs captured in `prepare`, before the "
            "candidate is imported; its timed runs replay those graphs",
            "kernelgym.grader.harness:prepare_baseline", _a("patch_the_baseline"), "ci", "grading"),
    Defence("every_timed_run_checked", "a kernel honest while checked and cheap while timed: it recognizes the "
            "verification inputs, or counts its calls",
            "in every block of timed runs one run, drawn at random, has its output compared with the baseline's "
            "output on the same inputs; both kernels are checked alike, so the work around their runs stays the "
            "same (GPU twin: benchmarks/attacks.py fingerprint)",
            "kernelgym.grader.harness:time_pair", _a("cheap_while_timed"), "ci", "grading"),
    Defence("timed_path_verified", "a kernel whose timed path (graph replay) computes something other than its "
            "checked call",
            "after timing, one more call made the way the timed ones were, on fresh verification inputs with a "
            "poisoned output, is compared with the reference by the parent",
            "kernelgym.grader.gates:performance_gate", _a("cheap_while_timed"), "ci", "grading"),
    Defence("fresh_inputs_every_run", "caching the output keyed by input pointer (the static buffers never move) "
            "and returning it on repeat calls",
            "before every timed run the next of GraderConfig.input_sets value sets is copied into the buffers, never "
            "the same twice in a row, and runs are checked; a cache keyed by content over the few sets is not caught "
            "(README, known limits)",
            "kernelgym.grader.harness:time_pair", _a("cached_output_on_repeat_calls"), "ci", "grading"),
    Defence("output_poisoned_with_nan", "returning an unwritten output that reuses the block where the right answer "
            "(the baseline's, or an earlier run's) still lies",
            "the graph's output block is filled with NaN before every timed run and the verification call: a run "
            "that writes nothing leaves NaN, which never passes",
            "kernelgym.grader.harness:Timed.poison", _a("unwritten_output_reuses_block"), "ci", "grading"),
    Defence("device_wide_sync_eager", "work on a side stream that the timer's stream never waits for",
            "graph capture requires all captured work to join the capture stream before capture ends; where "
            "capture fails, eager runs end with a device-wide synchronize before the end event, so work on any "
            "stream is inside the window",
            "kernelgym.grader.harness:time_pair", _a("side_stream_work"), "ci", "grading"),
    Defence("persisting_l2_reset", "a persisting-L2 carve-out set by the candidate that keeps its data in L2 "
            "through the cache flush",
            "the persisting-L2 limit is set to 0 and the persisting lines reset after the candidate's warm-up and "
            "capture, before its timed runs (where cuda-python is importable; the grade says when not)",
            "kernelgym.grader.harness:_persisting_l2_reset", _a("persisting_l2_carveout"), "ci", "grading"),
    Defence("untimed_work_outer_events", "work captured after the graph's end event (the capture's dependencies set "
            "back), which the in-graph events do not time",
            "events around each call are recorded beside the in-graph ones; where the candidate's graph spends "
            "longer outside its own events than the baseline's, both are timed by the outer events (GPU twin: "
            "benchmarks/attacks.py untimed_tail)",
            "kernelgym.grader.timing_stats:choose_runs", _a("untimed_tail"), "ci", "grading"),
    Defence("timing_numbers_validated", "a forged or malformed timing result (strings, Inf, negative or missing "
            "runs) claiming a speedup or crashing the parent",
            "the parent parses the result at the boundary (protocol.parse_time_result) and computes every "
            "statistic itself from the per-run times, each of which must be a finite positive number, in equal "
            "rounds; anything else fails the performance stage only",
            "kernelgym.grader.timing_stats:summarize", _a("forged_timing_result"), "ci", "grading"),
    Defence("roofline_ceiling", "a time faster than the hardware can move the bytes or do the FLOPs (a timing hole, "
            "or a forged result)",
            "achieved bandwidth and FLOP rate (by dtype) are computed from the task's roofline formulas; above the "
            "profile's peak the grading earns no speedup",
            "kernelgym.grader.gates:above_peak", _a("faster_than_peak"), "ci", "grading"),
    # -- unseen-config evaluation (kernelgym/unseen/, wrappers/unseen.py) -------------------------------------------
    Defence("unseen_coverage_reported", "a kernel right only where the unseen evaluation runs (zeros above the CPU "
            "interpreter's 2^18 elements, or for a dtype it does not run) claimed both_pass there, its reward kept "
            "by the gate",
            "the evaluation lists what of the config space its configs cannot reach (derived from the space: the "
            "interpreter's size budget, interpreter_dtypes), claims its quadrant only on what was covered "
            "(covered False), and the reward gate lets nothing through on partial coverage unless asked to "
            "(allow_partial_coverage, said in the gate). The attack is invisible on the interpreter; a GPU runs "
            "every region",
            "kernelgym.unseen.generator:interpreter_gaps", _a("zeros_where_unseen_is_not_run"), "ci", "unseen"),
    Defence("episodes_never_searched", "a task folder (or a graded episode) planted in the workspace, found later by "
            "a task search path that covers the run directory: a reference task whose scripts exit 0 replacing the "
            "real one for every later episode, a native one blocking it, a forged episode replayed",
            "task discovery (both formats) never descends into a folder holding an episode record, a second "
            "reference folder of one name is refused as kernelgym's own are, and the unseen replay reads only the "
            "run's own episodes/<id>/",
            "kernelgym.discovery:EPISODE_RECORD", _a("task_planted_in_a_workspace"), "ci", "env"),
)


# -- docs/THREAT_MODEL.md's tables, generated from the registry -------------------------------------------------------
_ROW = re.compile(r"^\|\s*`([a-z][a-z0-9_]*)`\s*\|.*$", re.M)
_SCOPE_ROW = re.compile(r"^\|\s*\*\*([a-z][a-z0-9_]*)\*\*\s*\|.*$", re.M)
_TWIN = re.compile(r"GPU twin: benchmarks/attacks\.py (\w+)")


def threat_model_row(d: Defence) -> str:
    """`d`'s row in docs/THREAT_MODEL.md's tables: name, what it blocks, where it lives, its attack test, where it
    runs (with its GPU twin in benchmarks/attacks.py, where its rationale names one), what it acts on."""
    test = (f"[`{d.attack_test.rsplit('/', 1)[-1]}`](../{d.attack_test})" if d.attack_test.startswith("tests/")
            else f"`{d.attack_test}`")
    twin = _TWIN.search(d.rationale)
    runs_on = d.runs_on + (f" (GPU twin: `benchmarks/attacks.py` {twin.group(1)})" if twin else "")
    return f"| `{d.name}` | {d.blocks} | `{d.lives_in}` | {test} | {runs_on} | {d.acts_on} |"


def scope_row(scope: str) -> str:
    """`scope`'s row in docs/THREAT_MODEL.md's table of scopes: its name, what it means, whether a grade reports its
    defences, and how many there are."""
    count = sum(d.acts_on == scope for d in DEFENCES)
    return f"| **{scope}** | {SCOPES[scope]} | {'yes' if scope in IN_A_GRADE else 'no'} | {count} |"


def render_threat_model(text: str) -> str:
    """`text` (docs/THREAT_MODEL.md) with every defence's table row, and every scope's (`scope_row`), rewritten
    from the registry; rows of other tables (names not in `DEFENCES`) are left as they are. tests/test_defences.py
    fails where the file differs from its rendering; ``python kernelgym/grader/defences.py docs/THREAT_MODEL.md``
    rewrites it."""
    by_name = {d.name: d for d in DEFENCES}
    text = _ROW.sub(lambda m: threat_model_row(by_name[m.group(1)]) if m.group(1) in by_name else m.group(0), text)
    return _SCOPE_ROW.sub(lambda m: scope_row(m.group(1)) if m.group(1) in SCOPES else m.group(0), text)


if __name__ == "__main__":
    import pathlib
    import sys

    path = pathlib.Path(sys.argv[1])
    path.write_text(render_threat_model(path.read_text()))
