"""triton-matmul's input builder, which picks fp16/bf16 values from a table of normal quantiles with raw random bits
(cheap on the host's CPU): the same values for a seed, other values for another, N(0, 1) inputs with Gaussian
tails and B scaled by 1/sqrt(K); and with them the tolerance tells an fp32-accumulated GEMM from one that quantizes
its inputs to int8 (which inputs of a narrow range let pass)."""
import pytest
import torch

from kernelgym.discovery import get_task
from kernelgym.grader.compare import compare_output
from kernelgym.grader.reference import load_reference


@pytest.fixture(scope="module")
def task():
    return get_task("triton-matmul")


@pytest.fixture(scope="module")
def builder(task):
    return load_reference(task)[1]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_seed_gives_its_own_values_every_time(builder, dtype):
    cfg = {"M": 37, "N": 100, "K": 96, "dtype": dtype}
    a, b = builder(cfg, 5)
    again, other = builder(cfg, 5), builder(cfg, 6)
    assert a.dtype == b.dtype == getattr(torch, dtype) and a.shape == (37, 96) and b.shape == (96, 100)
    assert torch.equal(a, again[0]) and torch.equal(b, again[1])
    assert not torch.equal(a, other[0]) and not torch.equal(b, other[1])
    assert not torch.equal(builder(cfg, -1)[0], builder(cfg, 1)[0])  # a negative seed is a seed of its own


@pytest.mark.parametrize("K", [64, 4096, 65536])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_inputs_are_standard_normal_with_tails_and_c_has_unit_variance(builder, K, dtype):
    a, b = builder({"M": 1024, "N": 64, "K": K, "dtype": dtype}, 11)
    a32, b32 = a.float(), b.float() * K ** 0.5
    for x in (a32, b32):
        assert abs(x.mean().item()) < 0.05 and x.std().item() == pytest.approx(1.0, abs=0.05)
        assert torch.isfinite(x).all()
    assert a32.abs().max() > 3.5  # Gaussian tails, not a bounded range
    c = a.float() @ b.float()
    assert c.var().item() == pytest.approx(1.0, abs=0.25)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_tolerance_passes_fp32_accumulation_and_fails_int8_inputs(task, builder, dtype):
    reference = load_reference(task)[0]
    cfg = {"M": 64, "N": 512, "K": 4096, "dtype": dtype}
    tolerance = task.spec.tolerance_for(task.spec.outputs[0], cfg)

    def int8(a, b):  # W8A8: per-row and per-column absmax scales, exact integer accumulation
        sa, sb = 127 / a.float().abs().amax(1, keepdim=True), 127 / b.float().abs().amax(0, keepdim=True)
        qa, qb = (a.float() * sa).round(), (b.float() * sb).round()
        return ((qa.double() @ qb.double()) / sa.double() / sb.double()).to(a.dtype)

    for seed in (1, 2):
        a, b = builder(cfg, seed)
        ref = reference(a, b)
        chunked = sum(a[:, k:k + 512].float() @ b[k:k + 512].float() for k in range(0, 4096, 512)).to(a.dtype)
        assert compare_output(chunked, ref, dtype, "tolerance", tolerance)[0]
        ok, message, _ = compare_output(int8(a, b), ref, dtype, "tolerance", tolerance)
        assert not ok, message


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_values_drawn_in_chunks_are_those_of_one_draw(builder, dtype):
    """The builder draws and looks up its bits in chunks of 1 Mi values (host cost); the values must be those of one
    draw of every 64-bit word at once (4 values a word, the words of `a` then those of `b`), whatever the sizes: a
    chunk that drew a word more or less would shift every value after it."""
    import math

    import numpy as np

    cfg = {"M": 1025, "N": 3, "K": 1027, "dtype": dtype}  # a: 1 Mi + 2 values, an odd count across a chunk's end
    a, b = builder(cfg, 9)
    words = np.random.SFC64(9).random_raw(-(-a.numel() // 4) + -(-b.numel() // 4))
    raw_a = words[:-(-a.numel() // 4)].view(np.uint16)[:a.numel()]
    raw_b = words[-(-a.numel() // 4):].view(np.uint16)[:b.numel()]

    def table(std):
        levels = 1 << 16
        q = torch.special.ndtri((torch.arange(levels, dtype=torch.float64) + 0.5) / levels) * std
        return q.to(a.dtype)

    assert torch.equal(a.flatten(), table(1.0)[torch.from_numpy(raw_a.astype(np.int64))])
    assert torch.equal(b.flatten(), table(1.0 / math.sqrt(1027))[torch.from_numpy(raw_b.astype(np.int64))])
