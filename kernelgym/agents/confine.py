"""`CLISandbox`: the bubblewrap sandbox an agent CLI runs in, and the only network it has.

The CLI policies (`kernelgym.agents.launcher`) start each CLI in one of these, per episode:

- **Files.** A read-only system (/usr, /etc, /bin, /lib*, /opt), this Python, the CLI's own installation (the
  ``node_modules`` folder its executable lies in, else that executable's folder), `relay.py`, and the paths of the
  config's ``sandbox_readonly``, all bound read-only. Writable: only the CLI's private 0700 directory (its ``$HOME``
  and working directory; its ``tmp`` folder is the sandbox's /tmp; the transcript is written by kernelgym from the
  CLI's stdout).
  Nothing else of the host is mounted: not the run directory, the workspaces, the task folders, the private unseen
  store, the repository, the user's home. The mounts are an allowlist, as for the env's own sandbox.
- **Processes.** Its own pid, IPC, UTS and cgroup namespaces, a new session, every capability dropped; started by
  root it runs as the unprivileged `kernelgym.sandbox.SANDBOX_UID` (setpriv, after bwrap mounted as root), as the
  env's commands do; started by an ordinary user, it runs as that user in a user namespace of its own (bwrap
  ``--unshare-all``: unprivileged user namespaces must be allowed, which `user_namespaces_work` checks once); the
  env sandboxes' seccomp filter (`kernelgym.seccomp`: no ptrace, no io_uring, no keyrings, no
  socket families but unix/inet/netlink). ``--die-with-parent``: bwrap is started by the launcher's reaper, which
  kernelgym's death kills, so the sandbox dies with kernelgym.
- **Network.** Its own network namespace (``--unshare-net``): a loopback device and nothing else, no route to the
  host or out. `relay.py` runs first inside and listens on the few loopback ports the CLI is configured for,
  relaying each to a unix socket bound in from outside (in a 0755 folder of the per-episode 0700 directory):
  ``mcp.sock``, served by the `MCPBridge` itself (the CLI's MCP URL is unchanged: the relay listens on the bridge's
  port number inside); ``model.sock``, where ``base_url`` is on loopback (a local model server, the tests' fakes),
  relayed to that host port; ``proxy.sock``, for a model API elsewhere: an HTTP proxy (`ModelProxy`, CONNECT for
  https and absolute-form requests for http) that connects only to the API's host and port (and the config's
  ``network_allow``), given to the CLI as ``HTTPS_PROXY``/``HTTP_PROXY``. Every other port and address is closed.
  Where the user who runs kernelgym is behind a proxy (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` in kernelgym's
  environment, an ``http://`` one, ``user:password@`` taken as Basic auth, ``NO_PROXY`` honoured), `ModelProxy`
  reaches the allowed hosts through it (`UpstreamProxy`): CONNECT through it for CONNECT, the absolute-form request
  handed to it for http. Any other kind of proxy there (``socks5://``, ``https://``) is refused when the sandbox is
  set up (`UpstreamProxyError`), and a proxy that refuses or cannot be reached is named in the 502 the CLI gets.

The CLIs' own flags that switch their tools off stay, as a second line: the sandbox holds when one of them fails.
"""
from __future__ import annotations

import base64
import fnmatch
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kernelgym import sandbox as host_sandbox
from kernelgym.agents import relay
from kernelgym.errors import KernelGymError, SandboxUnavailableError

#: The relay, run inside the sandbox by path with ``python -I -S``.
RELAY = Path(relay.__file__).resolve()
#: Where the per-episode socket folder is mounted inside the sandbox (read-only).
SOCKET_DIR = "/run/kernelgym"
#: The port the proxy to a remote model API listens on inside the sandbox (another when that one is taken).
PROXY_PORT = 3128
#: Longest request head the proxy reads before it refuses the connection.
MAX_HEAD = 65536
#: Seconds the proxy waits for a request head, and for the upstream connection.
PROXY_TIMEOUT_S = 30.0
#: System folders bound read-only (as the env's sandbox binds them).
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback (127.0.0.0/8, ::1, localhost)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_target(url: str) -> tuple[str, int, str]:
    """(host, port, scheme) of `url`, the port defaulted from the scheme (http 80, https 443).

    Raises:
        ValueError: not an http(s) URL with a host.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL with a host: {url!r}")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), parts.scheme


def _allowed(patterns: list[str], host: str, port: int) -> bool:
    """Whether ``host:port`` matches one of `patterns` (``host:port``, ``*.domain:port``; a bare host means 443)."""
    for pattern in patterns:
        name, _, want = pattern.rpartition(":") if pattern.rsplit(":", 1)[-1].isdigit() else (pattern, "", "443")
        if int(want) == port and fnmatch.fnmatchcase(host.lower(), name.lower()):
            return True
    return False


class UpstreamProxyError(KernelGymError):
    """The proxy kernelgym's environment names cannot carry the agent's model traffic (not an ``http://`` proxy)."""


@dataclass
class UpstreamProxy:
    """An ``http://`` proxy of the user's, which `ModelProxy` reaches the model API through.

    Args:
        host, port: where the proxy listens.
        auth: the ``Proxy-Authorization`` value (Basic, from the URL's ``user:password@``), or empty.
        source: the variable that named it (for error messages).
    """

    host: str
    port: int
    auth: str = ""
    source: str = ""

    @classmethod
    def from_env(cls, target_scheme: str, host: str, environ=None) -> "UpstreamProxy | None":
        """The proxy kernelgym's environment names for `target_scheme` (``https``: HTTPS_PROXY, then ALL_PROXY;
        ``http``: HTTP_PROXY, then ALL_PROXY; lower case before upper case, as curl reads them), None where there is
        none or ``NO_PROXY`` covers `host`.

        Raises:
            UpstreamProxyError: the variable names a proxy that is not ``http://`` (socks, https) or has no host.
        """
        environ = os.environ if environ is None else environ
        names = [f"{target_scheme}_proxy", f"{target_scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"]
        source, url = next(((n, environ[n]) for n in names if environ.get(n)), ("", ""))
        if not url or _no_proxy(environ.get("no_proxy") or environ.get("NO_PROXY") or "", host):
            return None
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http" or not parts.hostname:
            raise UpstreamProxyError(
                f"{source}={_without_password(url)!r}: the agent CLI's sandbox chains only an http:// proxy (one that "
                f"takes CONNECT) to reach its model API, not {parts.scheme}://. Set {source} to an http:// proxy, "
                f"or name a model server kernelgym reaches without one in base_url, or use sandbox='none'")
        auth = ""
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            auth = "Basic " + base64.b64encode(pair).decode()
        return cls(parts.hostname, parts.port or 80, auth, source)

    def connect(self, host: str, port: int) -> socket.socket:
        """A tunnel to host:port through this proxy (CONNECT answered 2xx).

        Raises:
            OSError: the proxy cannot be reached or refused the tunnel (its status line in the message).
        """
        sock = socket.create_connection((self.host, self.port), timeout=PROXY_TIMEOUT_S)
        try:
            target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            extra = f"Proxy-Authorization: {self.auth}\r\n" if self.auth else ""
            sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{extra}\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk or len(head) > MAX_HEAD:
                    raise OSError(f"the proxy closed the connection before answering CONNECT {target}")
                head += chunk
            status = head.split(b"\r\n", 1)[0].decode("latin-1")
            if len(status.split()) < 2 or not status.split()[1].startswith("2"):
                raise OSError(f"the proxy answered {status!r} to CONNECT {target}")
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)
        return sock

    def forward_head(self, head: bytes) -> bytes:
        """An absolute-form request head as this proxy takes it (its Proxy-Authorization added)."""
        if not self.auth:
            return head
        line, _, rest = head.partition(b"\r\n")
        return line + b"\r\nProxy-Authorization: " + self.auth.encode() + b"\r\n" + rest

    def __str__(self) -> str:
        return f"the proxy at {self.host}:{self.port} ({self.source})"


def _no_proxy(value: str, host: str) -> bool:
    """Whether the ``NO_PROXY`` list `value` covers `host` (``*``, a host, a ``.domain`` or ``domain`` suffix)."""
    host = host.strip("[]").lower()
    for entry in (e.strip().lower() for e in value.split(",")):
        entry = entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry  # host:port: the host
        if entry == "*" or (entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))):
            return True
    return False


def _without_password(url: str) -> str:
    """`url` with any password replaced by ``***`` (for error messages)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


class _UnixListener:
    """A listening unix socket at `path` (mode 0666 in its folder) whose connections `handle(conn)` takes, each in
    a daemon thread."""

    def __init__(self, path: Path, handle):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        os.chmod(path, 0o666)  # the sandbox's user connects; the 0700 episode folder keeps host users out
        self.sock.listen(64)
        self._handle = handle
        threading.Thread(target=self._loop, daemon=True, name=f"agent-net-{path.name}").start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class TcpForward(_UnixListener):
    """``model.sock``: each connection relayed to (host, port) on the host (a model server on loopback)."""

    def __init__(self, path: Path, host: str, port: int):
        self.target = (host.strip("[]"), port)
        super().__init__(path, self._relay)

    def _relay(self, conn: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=PROXY_TIMEOUT_S)
            upstream.settimeout(None)
        except OSError:
            conn.close()
            return
        relay.pipe(conn, upstream)


class ModelProxy(_UnixListener):
    """``proxy.sock``: an HTTP proxy that connects only to the hosts `allow` names (``host:port`` patterns).

    ``CONNECT host:port`` (https) is answered 200 and relayed; an absolute-form request (``GET http://host/...``) is
    relayed to that host as it is (HTTP/1.1 servers take the absolute form). Anything else is answered 403 (a host
    not allowed) or 400, and closed. `log` keeps ``(host, port, allowed)`` for each request, for the tests.

    `upstream` maps a scheme (``https`` for CONNECT, ``http`` for an absolute-form request) to the user's own proxy
    (`UpstreamProxy.from_env`, taken per host), through which the allowed hosts are reached; None: read from
    kernelgym's environment. A proxy that fails is named in the 502 answer.

    Raises:
        UpstreamProxyError: kernelgym's environment names a proxy that cannot be chained (see `UpstreamProxy`).
    """

    def __init__(self, path: Path, allow: list[str], environ=None):
        self.allow = list(allow)
        self.log: list[tuple[str, int, bool]] = []
        self.environ = dict(os.environ if environ is None else environ)
        for pattern in self.allow:  # a proxy that cannot be chained fails here, before the CLI starts
            host = pattern.rpartition(":")[0] if pattern.rsplit(":", 1)[-1].isdigit() else pattern
            for scheme in ("https", "http"):
                UpstreamProxy.from_env(scheme, host.replace("*", "x"), self.environ)
        super().__init__(path, self._serve)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(PROXY_TIMEOUT_S)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                head += chunk
        except OSError:
            conn.close()
            return
        end = head.find(b"\r\n\r\n")
        try:
            method, target, _version = head[:head.find(b"\r\n")].decode("latin-1").split(" ")
            if method == "CONNECT":
                host, _, port_text = target.rpartition(":")
                host, port = host.strip("[]"), int(port_text)
            else:
                host, port, scheme = url_target(target)
                if scheme != "http":
                    raise ValueError(target)
        except ValueError:
            return self._refuse(conn, 400, "kernelgym: not a proxy request")
        if end < 0:
            return self._refuse(conn, 400, "kernelgym: request head too long")
        allowed = _allowed(self.allow, host, port)
        self.log.append((host, port, allowed))
        if not allowed:
            return self._refuse(conn, 403, f"kernelgym: the agent's sandbox reaches only {', '.join(self.allow)}")
        via = UpstreamProxy.from_env("https" if method == "CONNECT" else "http", host, self.environ)
        try:
            if via is None:
                upstream = socket.create_connection((host, port), timeout=PROXY_TIMEOUT_S)
                upstream.settimeout(None)
            elif method == "CONNECT":
                upstream = via.connect(host, port)
            else:
                upstream = socket.create_connection((via.host, via.port), timeout=PROXY_TIMEOUT_S)
                upstream.settimeout(None)
                head = via.forward_head(head)
        except OSError as e:
            through = f" through {via}" if via else ""
            return self._refuse(conn, 502, f"kernelgym: cannot connect to {host}:{port}{through}: {e}")
        conn.settimeout(None)
        if method == "CONNECT":
            try:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            except OSError:
                upstream.close()
                conn.close()
                return
            relay.pipe(conn, upstream, first=head[end + 4:])
        else:
            relay.pipe(conn, upstream, first=head)

    @staticmethod
    def _refuse(conn: socket.socket, status: int, text: str) -> None:
        body = text.encode()
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
        try:
            conn.sendall(f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {len(body)}\r\n"
                         f"connection: close\r\n\r\n".encode() + body)
        except OSError:
            pass
        conn.close()


def install_root(binary: str) -> Path:
    """The folder of the CLI's installation bound read-only into the sandbox: the ``node_modules`` folder its
    executable (links resolved) lies in (an npm install: the launcher script and its native binary), else the
    executable's folder (Cursor's installer: the binary beside its bundle), or the executable alone where that
    folder is the user's home or the root."""
    real = Path(os.path.realpath(binary))
    for parent in real.parents:
        if parent.name == "node_modules":
            return parent
    folder = real.parent
    home = Path.home().resolve()
    if folder in (Path("/"), home) or home.is_relative_to(folder):
        return real
    return folder


_USERNS_CHECKED: set[str] = set()


def user_namespaces_work(bwrap: str) -> None:
    """Check, once per process and bwrap, that bwrap can make the user namespace a non-root kernelgym's sandbox
    needs (``--unshare-all`` as this user); a few ms, against an episode that would otherwise end at once with
    bwrap's words as its policy error.

    Raises:
        SandboxUnavailableError: bwrap cannot (unprivileged user namespaces are off here); its message, and the ways
            out, are in the error.
    """
    if bwrap in _USERNS_CHECKED:
        return
    probe = subprocess.run([bwrap, "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True, text=True,
                           timeout=30)
    if probe.returncode != 0:
        raise SandboxUnavailableError(
            f"the agent CLIs' sandbox cannot start as uid {os.geteuid()}: bwrap cannot make a user namespace here "
            f"({(probe.stderr or probe.stdout).strip() or f'exit code {probe.returncode}'}). Allow unprivileged "
            f"user namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0; on "
            f"Ubuntu 23.10+ an AppArmor profile for bwrap, or kernel.apparmor_restrict_unprivileged_userns=0), "
            f"run kernelgym as root, or set sandbox='none' in the policy config (the CLI's flags alone then)")
    _USERNS_CHECKED.add(bwrap)


@dataclass
class CLISandbox:
    """One episode's sandbox for an agent CLI (see the module docstring).

    Args:
        name: the policy's name (in the temporary folder's name).
        binary: the CLI's executable (its installation is bound read-only, `install_root`).
        readonly: more paths bound read-only at the same place (``sandbox_readonly``).
        network_allow: more ``host:port`` patterns the model proxy connects to (``network_allow``).

    `root` (0700) holds `home` (the CLI's private directory) and the sockets; the launcher's reaper removes `root`
    if kernelgym dies. Call `forward_mcp`, `route_model`, then `argv`; `close` at the end of the episode.

    Raises:
        SandboxUnavailableError: bubblewrap is not installed or cannot make a sandbox here.
    """

    name: str
    binary: str
    readonly: list[str] = field(default_factory=list)
    network_allow: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.bwrap = shutil.which("bwrap")
        if self.bwrap is None:
            raise SandboxUnavailableError(f"the agent CLIs run in a bubblewrap sandbox and `bwrap` is not on PATH. "
                                          f"{host_sandbox.INSTALL_HINT} (for the CLI policies: sandbox='none')")
        self.user = host_sandbox.sandbox_user()
        if self.user is None:
            user_namespaces_work(self.bwrap)
        self.root = Path(tempfile.mkdtemp(prefix=f"kernelgym-{self.name}-"))  # 0700
        self.home = self.root / "home"
        self.home.mkdir(mode=0o700)
        (self.home / "tmp").mkdir(mode=0o700)
        self.sockets = self.root / "sockets"
        self.sockets.mkdir(mode=0o755)  # the sandbox's user enters it; root (0700) keeps the host's users out
        self.listen: list[tuple[str, int, str]] = []  # (host, port, socket name) the relay listens on inside
        self.env: dict[str, str] = {}
        self.proxy: ModelProxy | None = None
        self._servers: list[_UnixListener] = []

    def socket_path(self, name: str) -> Path:
        """The host path of socket `name` (``<name>.sock`` in the socket folder)."""
        return self.sockets / f"{name}.sock"

    def forward_mcp(self, port: int) -> None:
        """Relay 127.0.0.1:`port` inside to ``mcp.sock`` (the `MCPBridge` listens there too)."""
        self.listen.append(("127.0.0.1", port, "mcp"))

    def route_model(self, url: str) -> None:
        """Make the model API at `url` reachable, and nothing else: a loopback `url` through ``model.sock`` on the
        same port inside; any other through `ModelProxy` (its host and port, and `network_allow`), named to the
        CLI in ``HTTPS_PROXY``/``HTTP_PROXY`` (loopback excluded through ``NO_PROXY``). An empty `url` with an
        empty `network_allow`: no model endpoint at all."""
        allow = list(self.network_allow)
        if url:
            host, port, _ = url_target(url)
            if is_loopback(host):
                if any(p == port for _, p, _ in self.listen):
                    raise ValueError(f"base_url {url!r} points at kernelgym's own MCP server")
                self._servers.append(TcpForward(self.socket_path("model"), host, port))
                self.listen.append(("127.0.0.1", port, "model"))
                if host.strip("[]") in ("localhost", "::1"):
                    self.listen.append(("[::1]", port, "model"))
            else:
                allow.insert(0, f"{host}:{port}")
        if allow:
            self.proxy = ModelProxy(self.socket_path("proxy"), allow)
            self._servers.append(self.proxy)
            port = next(p for p in range(PROXY_PORT, PROXY_PORT + 8) if all(p != q for _, q, _ in self.listen))
            self.listen.append(("127.0.0.1", port, "proxy"))
            proxy = f"http://127.0.0.1:{port}"
            for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
                self.env[name] = proxy
        for name in ("NO_PROXY", "no_proxy"):
            self.env[name] = "127.0.0.1,localhost,::1"
        for name in ("ALL_PROXY", "all_proxy"):
            self.env[name] = ""

    def hand_over(self) -> None:
        """Started by root: give the private directory (and what the launcher wrote into it) to the sandbox's user."""
        if self.user:
            host_sandbox.hand_over(self.home, *self.user)

    def _mounts(self) -> list[str]:
        args: list[str] = []
        made = {"/tmp", "/dev", "/proc"}
        binds: list[str] = []

        def bind(how: str, src: str, dest: str) -> None:
            # The folders leading to a bind are made 0755, so that the sandbox's user (not root) reaches it
            parts = Path(dest).parts
            for i in range(2, len(parts)):
                up = str(Path(*parts[:i]))
                if up not in made and not any(up == b or up.startswith(b + "/") for b in binds):
                    args.extend(["--perms", "0755", "--dir", up])
                    made.add(up)
            args.extend([how, src, dest])
            binds.append(dest)

        for top in SYSTEM_DIRS:
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                bind("--ro-bind", top, top)
        args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", *host_sandbox.PID1_MEMORY_MASK,
                 *host_sandbox.KEYS_MASK, "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
                 "--dev", "/dev", "--bind", str(self.home / "tmp"), "/tmp"]  # /tmp: in the private directory
        system = tuple(d + "/" for d in SYSTEM_DIRS)
        extra = {sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
                 str(install_root(self.binary)), str(RELAY),
                 *(os.path.abspath(p) for p in self.readonly), *(os.path.realpath(p) for p in self.readonly)}
        for p in sorted(extra):
            if not p.startswith(system) and p not in SYSTEM_DIRS and os.path.exists(p):
                bind("--ro-bind", p, p)
        bind("--bind", str(self.home), str(self.home))
        bind("--ro-bind", str(self.sockets), SOCKET_DIR)
        return args

    def argv(self, cmd: list[str], seccomp_fd: int | None = None) -> list[str]:
        """The bwrap command line that runs `cmd` (the CLI's argv) in this sandbox, behind `relay.py`."""
        if self.user:
            unshare = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
            keep = [a for cap in host_sandbox.DROP_CAPS for a in ("--cap-add", cap)]
            drop = host_sandbox._drop_to(*self.user, [])
        else:
            unshare, keep, drop = ["--unshare-all"], [], []
        listen = [a for host, port, name in self.listen for a in ("--listen", f"{host}:{port}={SOCKET_DIR}/{name}.sock")]
        python = shutil.which("python3", path="/usr/bin:/bin") or host_sandbox.PYTHON
        filter_args = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
        return [self.bwrap, *unshare, "--die-with-parent", "--new-session", "--hostname", "kernelgym-agent",
                "--cap-drop", "ALL", *keep, *filter_args, *self._mounts(), "--chdir", str(self.home), "--",
                *drop, python, "-I", "-S", str(RELAY), *listen, "--", *cmd]

    def close(self) -> None:
        """Stop the socket servers and remove `root` (the private directory with it)."""
        for server in self._servers:
            server.close()
        self._servers = []
        shutil.rmtree(self.root, ignore_errors=True)

