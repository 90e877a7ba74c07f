// Baseline: the PyTorch module (reference.py's PerTokenCrossEntropy) run through ATen, the operations its forward
// runs, on PyTorch's current stream. This is the bar to beat, not an answer: the grader refuses torch/ATen compute
// (at::, torch:: ops, tensor methods that compute) in any source. Replace the body with kernels of your own in
// kernel.cu, keeping the signature and the PYBIND11_MODULE binding.
#include <torch/extension.h>

torch::Tensor cross_entropy(torch::Tensor logits, torch::Tensor labels) {
  return at::cross_entropy_loss(logits.to(torch::kFloat), labels, /*weight=*/{}, at::Reduction::None,
                                /*ignore_index=*/-100);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("cross_entropy", &cross_entropy, "per-token cross-entropy (ignore_index -100); returns fp32 (tokens,)");
}
