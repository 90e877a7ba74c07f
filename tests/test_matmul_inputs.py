"""triton-matmul's input builder, which draws fp16/bf16 values from raw random bits (cheap on the host's CPU): the
same values for a seed, other values for another, every element a normal number in +-[0.5, 2) (B scaled), and C's
variance near 1 for any K, so that the tolerance tells a working kernel from one that computes nothing."""
import pytest
import torch

from kernelgym.discovery import get_task
from kernelgym.grader.reference import load_reference


@pytest.fixture(scope="module")
def builder():
    return load_reference(get_task("triton-matmul"))[1]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_seed_gives_its_own_values_every_time(builder, dtype):
    cfg = {"M": 37, "N": 100, "K": 96, "dtype": dtype}
    a, b = builder(cfg, 5)
    again, other = builder(cfg, 5), builder(cfg, 6)
    assert a.dtype == b.dtype == getattr(torch, dtype) and a.shape == (37, 96) and b.shape == (96, 100)
    assert torch.equal(a, again[0]) and torch.equal(b, again[1])
    assert not torch.equal(a, other[0]) and not torch.equal(b, other[1])
    assert (a.float() != 0).all() and (b.float() != 0).all()


@pytest.mark.parametrize("K", [1, 3, 64, 200, 4096, 28672, 65536])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_every_element_is_bounded_and_c_has_a_variance_near_one(builder, K, dtype):
    a, b = builder({"M": 512, "N": 64, "K": K, "dtype": dtype}, 11)
    magnitudes = a.float().abs()
    assert magnitudes.min() >= 0.5 and magnitudes.max() < 2.0
    assert (a < 0).float().mean().item() == pytest.approx(0.5, abs=0.1)  # signs drawn, not fixed
    assert (magnitudes >= 1.0).float().mean().item() == pytest.approx(0.5, abs=0.1)  # both octaves drawn
    scale = b.float().abs().max().item()
    assert b.float().abs().min() >= scale / 4 and torch.isfinite(b.float()).all()
    assert (b.float().abs() >= torch.finfo(getattr(torch, dtype)).tiny).all()  # no subnormals from the scaling
    c = a.float() @ b.float()
    assert 0.3 < c.var().item() < 3.0 and abs(c.mean().item()) < 0.5
