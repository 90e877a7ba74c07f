// Baseline: the PyTorch module (reference.py's RMSNorm) run through ATen, the operations its forward runs, on
// PyTorch's current stream. This is the bar to beat, not an answer: the grader refuses torch/ATen compute (at::,
// torch:: ops, tensor methods that compute) in any source. Replace the body with kernels of your own in kernel.cu,
// keeping the signature and the PYBIND11_MODULE binding.
#include <torch/extension.h>

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps) {
  torch::Tensor xf = x.to(torch::kFloat);
  torch::Tensor variance = xf.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (xf * torch::rsqrt(variance + eps)).to(x.scalar_type());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("rmsnorm", &rmsnorm, "RMSNorm over the last dimension; returns a new tensor of x's shape and dtype");
}
