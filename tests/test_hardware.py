"""Hardware profiles: all load; detection without a GPU; mismatches are clear errors."""
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
