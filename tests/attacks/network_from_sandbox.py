"""Attack: code in the sandbox (a shell command, or the candidate kernel) connects to the network: here to a server
on the host's loopback, the part of the network a firewall rule most easily leaves open (to exfiltrate, fetch
answers, or talk to a service of the host).

Defence: `no_network` (bwrap --unshare-all: an empty network namespace, loopback included).
Honest twin: the same connection made outside the sandbox succeeds (the test can fail).
"""
import socket


def test_loopback_network_blocked(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('CONNECTED')"
        # Outside the sandbox the same connection works, so the test can fail.
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        r = box.run(["python", "-c", code])
        assert "CONNECTED" not in r.output and r.returncode != 0
    finally:
        server.close()
