// Baseline: the PyTorch module (reference.py's CausalAttention) run through ATen, the operations its forward runs,
// on PyTorch's current stream. This is the bar to beat, not an answer: the grader refuses torch/ATen compute (at::,
// torch:: ops, tensor methods that compute) in any source. Replace the body with kernels of your own in kernel.cu,
// keeping the signature and the PYBIND11_MODULE binding.
#include <cmath>
#include <torch/extension.h>

torch::Tensor attention(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
  const int64_t seq = q.size(-2);
  torch::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  torch::Tensor mask = at::ones({seq, seq}, q.options().dtype(torch::kBool)).triu(1);
  scores = scores.masked_fill(mask, -INFINITY);
  torch::Tensor p = at::softmax(scores.to(torch::kFloat), -1).to(q.scalar_type());
  return at::matmul(p, v);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("attention", &attention, "causal softmax(Q K^T / sqrt(d)) V; returns a new tensor of q's shape and dtype");
}
