// Baseline: the PyTorch module (reference.py's SwiGLUMLP) run through ATen, the operations its forward runs, on
// PyTorch's current stream. This is the bar to beat, not an answer: the grader refuses torch/ATen compute (at::,
// torch:: ops, tensor methods that compute) in any source. Replace the body with kernels of your own in kernel.cu,
// keeping the signature and the PYBIND11_MODULE binding.
#include <torch/extension.h>

torch::Tensor swiglu_mlp(torch::Tensor x, torch::Tensor w_gate, torch::Tensor w_up, torch::Tensor w_down) {
  return at::linear(at::silu(at::linear(x, w_gate)) * at::linear(x, w_up), w_down);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("swiglu_mlp", &swiglu_mlp, "down(silu(x @ w_gate^T) * (x @ w_up^T)) @ ... : a new (tokens, hidden) tensor");
}
