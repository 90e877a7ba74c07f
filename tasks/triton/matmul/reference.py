"""PyTorch reference and input builder for the matmul task."""
import math

import numpy as np
import torch

# Per dtype: (the bits kept from the random draw: the sign, the exponent's lowest bit and the mantissa; the bits set:
# an exponent of 2^-1, so that with its lowest bit drawn a value lies in [0.5, 1) or [1, 2); the exponent's shift).
_PATTERNS = {torch.float16: (0x87FF, 0x3800, 10), torch.bfloat16: (0x80FF, 0x3F00, 7)}
# E[x^2] of a value with that pattern (7/24 + 7/6), for scaling B so that C has a variance near 1.
_SECOND_MOMENT = 1.4583


def _random_values(shape: tuple, dtype: torch.dtype, bits: np.random.BitGenerator, scale_log2: int = 0):
    """A CPU tensor of `shape` and `dtype` (float16 or bfloat16) whose values are +-[0.5, 2) * 2^-`scale_log2`,
    with a random sign, octave and mantissa each, taken straight from the raw bits of `bits` (no float draw: about
    8x cheaper on the CPU than torch.randn and a cast, which made matmul's five input sets per grading the host's
    largest cost)."""
    keep, base, exponent_shift = _PATTERNS[dtype]
    n = math.prod(shape)
    raw = bits.random_raw(-(-n // 4)).view(np.uint16)[:n]  # 4 values per 64-bit draw, every bit used
    np.bitwise_and(raw, keep, out=raw)
    np.bitwise_or(raw, base, out=raw)
    if scale_log2:  # the exponent stays >= 1 (normal numbers) for every K the config space allows
        np.subtract(raw, np.uint16(scale_log2 << exponent_shift), out=raw)
    return torch.from_numpy(raw).view(dtype).reshape(shape)


def make_inputs(config: dict, seed: int, device: str = "cpu") -> tuple:
    """Return (a, b) for `config` = {M, N, K, dtype}: a (M, K) and b (K, N) in `dtype` on `device`, drawn on the CPU
    from `seed` (the same values on every machine). Every element is +-[0.5, 2) with a random mantissa; b is scaled
    by a power of two near 1/sqrt(K * E[a^2] * E[b^2]), so C's elements have a variance between 0.5 and 2 for any
    K (zeros and constants fail the tolerance)."""
    dtype = getattr(torch, config["dtype"])
    M, N, K = config["M"], config["N"], config["K"]
    bits = np.random.SFC64(seed)
    a = _random_values((M, K), dtype, bits)
    b = _random_values((K, N), dtype, bits, round(math.log2(K * _SECOND_MOMENT ** 2) / 2))
    return a.to(device), b.to(device)


def matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b of the (fp16/bf16) inputs upcast to fp32, in fp32."""
    return a.float() @ b.float()
