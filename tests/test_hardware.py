"""Hardware profiles: all load; detection without a GPU; mismatches are clear errors; user folders."""
import warnings
from pathlib import Path

import pytest
import yaml

from kernelgym.errors import HardwareProfileError
from kernelgym.hardware import DEFAULT_HARDWARE_ROOT, all_profiles, detect_profile, load_profile


def test_profiles_load_and_have_docs():
    profiles = all_profiles()
    assert {"mi300x", "mi355x", "h100", "h200", "cpu-interpreter"} <= set(profiles)
    for p in profiles.values():
        assert p.reference_doc().strip(), p.id
        assert p.flush_bytes >= 2 * p.llc_bytes
    assert profiles["mi300x"].arch == "gfx942" and profiles["mi300x"].warp_size == 64
    assert {"waves_per_eu", "matrix_instr_nonkdim", "kpack"} <= set(profiles["mi355x"].triton_launch_options)
    assert "waves_per_eu" not in profiles["h200"].triton_launch_options


def test_no_gpu_detects_interpreter():
    assert detect_profile().interpreter  # CI has no GPU


def test_gpu_profile_without_gpu_is_error():
    with pytest.raises(HardwareProfileError, match="no GPU is visible"):
        detect_profile("h200")
    with pytest.raises(HardwareProfileError, match="unknown hardware profile 'h300'"):
        detect_profile("h300")


def test_amd_detection_by_arch_name(monkeypatch):
    monkeypatch.setattr("kernelgym.hardware._device_strings", lambda: ["AMD Instinct MI300X", "gfx942:sramecc+:xnack-"])
    assert detect_profile().id == "mi300x"
    with pytest.raises(HardwareProfileError, match="does not match the running device"):
        detect_profile("h200")


def test_flush_smaller_than_cache_rejected(tmp_path):
    raw = yaml.safe_load((DEFAULT_HARDWARE_ROOT / "h200.yaml").read_text())
    raw["flush_bytes"] = raw["llc_bytes"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(HardwareProfileError, match="flush_bytes"):
        load_profile(tmp_path / "bad.yaml")


def test_amd_launch_options_reported_on_nvidia_only():
    from kernelgym.launch_options import unsupported_launch_options
    src = "kernel[grid](x, BLOCK=128, num_warps=4, waves_per_eu=2, kpack=2)"
    profiles = all_profiles()
    assert unsupported_launch_options(src, profiles["mi300x"]) == []
    notes = unsupported_launch_options(src, profiles["h200"])
    assert len(notes) == 2 and "`kpack` is not supported on NVIDIA H200" in notes[0] and "waves_per_eu" in notes[1]
    assert unsupported_launch_options(src, profiles["cpu-interpreter"]) == []
    assert "maxnreg" in unsupported_launch_options("k[g](x, maxnreg=128)", profiles["mi355x"])[0]


def _user_profile(folder, pid="test-gpu", base="h200"):
    """A copy of a built-in profile (yaml + md) in `folder` under the id `pid`."""
    folder.mkdir(parents=True, exist_ok=True)
    raw = yaml.safe_load((DEFAULT_HARDWARE_ROOT / f"{base}.yaml").read_text())
    raw.update(id=pid, doc=f"{pid}.md", match=[f"Test GPU {pid}"])
    (folder / f"{pid}.yaml").write_text(yaml.safe_dump(raw))
    (folder / f"{pid}.md").write_text(f"# {pid}: the user's own reference document\n")
    return folder / f"{pid}.yaml"


def test_user_profiles_from_env_var(tmp_path, monkeypatch):
    from kernelgym.hardware import HARDWARE_PATH_ENV
    _user_profile(tmp_path / "hw")
    monkeypatch.setenv(HARDWARE_PATH_ENV, str(tmp_path / "hw"))
    prof = all_profiles()["test-gpu"]
    assert prof.source == tmp_path / "hw" / "test-gpu.yaml"
    assert prof.reference_doc().startswith("# test-gpu: the user's own")  # read beside its own yaml
    assert "h200" in all_profiles()  # built-ins stay
    monkeypatch.setattr("kernelgym.hardware._device_strings", lambda: ["Test GPU test-gpu"])
    assert detect_profile().id == "test-gpu"


def test_user_profile_reusing_an_id_is_an_error_naming_both(tmp_path):
    from kernelgym.discovery import DiscoveryWarning
    from kernelgym.hardware import discover_profiles, hardware_search_path
    dup = _user_profile(tmp_path / "hw", pid="h200")
    profiles, problems = discover_profiles(hardware_search_path(tmp_path / "hw"))
    assert profiles["h200"].source == DEFAULT_HARDWARE_ROOT / "h200.yaml"
    ((path, message),) = problems
    assert path == dup and str(DEFAULT_HARDWARE_ROOT / "h200.yaml") in message and str(dup) in message
    with pytest.raises(HardwareProfileError, match="hardware profile id 'h200' is already taken"), \
            pytest.warns(DiscoveryWarning, match="already taken"):
        detect_profile("h200", root=hardware_search_path(tmp_path / "hw"))


def test_broken_user_profile_is_skipped_with_a_warning(tmp_path):
    from kernelgym.discovery import DiscoveryWarning
    from kernelgym.hardware import hardware_search_path
    bad = _user_profile(tmp_path / "hw", pid="bad-gpu")
    bad.write_text(bad.read_text().replace("warp_size: 32", "warp_size: 0"))
    _user_profile(tmp_path / "hw", pid="named-wrong").rename(tmp_path / "hw" / "other-name.yaml")
    roots = hardware_search_path(tmp_path / "hw")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profiles = all_profiles(roots)
    assert "bad-gpu" not in profiles and "named-wrong" not in profiles and "h200" in profiles
    assert sorted(Path(str(w.message).split(": ")[1]).name for w in caught if w.category is DiscoveryWarning) == \
        ["bad-gpu.yaml", "other-name.yaml"]
    with pytest.raises(HardwareProfileError, match="warp_size"):
        detect_profile("bad-gpu", root=roots)
    with pytest.raises(HardwareProfileError, match="field `id` is 'named-wrong' but the file is named other-name.yaml"):
        load_profile(tmp_path / "hw" / "other-name.yaml")


def test_language_support_by_vendor(monkeypatch):
    from kernelgym.hardware import language_vendors
    profiles = all_profiles()
    assert all(p.supports("triton") for p in profiles.values())
    # The backend module's VENDORS decides (cuda: NVIDIA, and AMD where its backend hipifies).
    cuda = {p.id for p in profiles.values() if p.supports("cuda")}
    assert {"h100", "h200"} <= cuda and "cpu-interpreter" not in cuda
    assert language_vendors("cuda") == {"nvidia", "amd"}  # the backend's VENDORS, not a second table
    # A language without a backend module: the reference arena's HIP task types.
    assert {p.id for p in profiles.values() if p.supports("hip")} == {"mi300x", "mi355x"}
    assert not profiles["h200"].supports("fortran")
