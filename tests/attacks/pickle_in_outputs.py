"""Attack: outputs.pt is written by the candidate's process; a pickle in it can name any callable, which an ordinary
torch.load calls while loading, in the trusted parent. Here the payload only creates a marker file.

Defence: `weights_only_load` (the parent loads outputs with torch.load(weights_only=True): only tensors and plain
containers are rebuilt, no code runs; the file is a failed output, never an exception).
Honest twin: a dict of tensors, as the harness saves it, loads.
"""
import pytest
import torch

from kernelgym.grader.untrusted import UntrustedFileError, load_tensors_untrusted


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))  # called by an ordinary unpickler: creates the marker


def test_a_pickle_in_the_outputs_runs_no_code_in_the_parent(tmp_path):
    marker = tmp_path / "code-ran"
    torch.save({"0/out": _RunsCode(str(marker))}, tmp_path / "outputs.pt")
    with pytest.raises(UntrustedFileError, match="unreadable"):
        load_tensors_untrusted(tmp_path / "outputs.pt")
    assert not marker.exists()
    torch.save({"0/out": torch.ones(3)}, tmp_path / "honest.pt")
    assert torch.equal(load_tensors_untrusted(tmp_path / "honest.pt")["0/out"], torch.ones(3))
