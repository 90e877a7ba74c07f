"""Attack: a command prints its environment, where the host's variables (API keys of the policy's model, tokens)
would be, were they passed in.

Defence: `clean_environment` (the sandbox's environment is built fresh: PATH, HOME, locale, and a short passthrough
list of device and safety switches; bwrap itself starts with it).
Honest twin: the clean environment is there (PATH is set).
"""


def test_host_variables_invisible(box, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-123")
    monkeypatch.setenv("KG_HOST_VAR", "host-only")
    r = box.run("env")
    assert r.returncode == 0 and "PATH=" in r.output
    assert "sk-secret-123" not in r.output and "host-only" not in r.output
