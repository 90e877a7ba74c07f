import shutil

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELGYM_PRIVATE_DIR", str(tmp_path / "private"))


@pytest.fixture
def require_bwrap():
    # Not a skip: the suite's sandbox claims must be shown, so a missing bwrap fails loudly.
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is required for the test suite: apt-get install bubblewrap (.ci/run does this)")
