// Binding of the from-scratch SwiGLU MLP (tests/kernels/cuda/swiglu-mlp/kernel.cu): allocation and a launch only.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t swiglu_mlp_launch(const void* x, const void* wg, const void* wu, const void* wd, void* h, void* y,
                              int64_t tokens, int64_t hidden, int64_t inter, int bf16, cudaStream_t stream);

torch::Tensor swiglu_mlp(torch::Tensor x, torch::Tensor w_gate, torch::Tensor w_up, torch::Tensor w_down) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && w_gate.is_contiguous() && w_up.is_contiguous() &&
              w_down.is_contiguous(), "swiglu_mlp: contiguous CUDA tensors");
  const int64_t tokens = x.size(0), hidden = x.size(1), inter = w_gate.size(0);
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor h = torch::empty({tokens, inter}, x.options());
  torch::Tensor y = torch::empty({tokens, hidden}, x.options());
  const cudaError_t err = swiglu_mlp_launch(x.data_ptr(), w_gate.data_ptr(), w_up.data_ptr(), w_down.data_ptr(),
                                            h.data_ptr(), y.data_ptr(), tokens, hidden, inter,
                                            x.scalar_type() == torch::kBFloat16, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "swiglu_mlp: ", cudaGetErrorString(err));
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("swiglu_mlp", &swiglu_mlp); }
