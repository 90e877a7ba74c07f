// Binding of the from-scratch causal attention (tests/kernels/cuda/attention/kernel.cu): allocation and a launch.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t attention_launch(const void* q, const void* k, const void* v, void* o, int64_t bh, int64_t seq, int64_t d,
                             int bf16, cudaStream_t stream);

torch::Tensor attention(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
  TORCH_CHECK(q.is_cuda() && q.dim() == 4 && q.is_contiguous() && k.is_contiguous() && v.is_contiguous(),
              "attention: contiguous (batch, heads, seq, head_dim) CUDA tensors");
  const c10::cuda::CUDAGuard guard(q.device());
  torch::Tensor o = torch::empty_like(q);
  const cudaError_t err = attention_launch(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                           q.size(0) * q.size(1), q.size(2), q.size(3),
                                           q.scalar_type() == torch::kBFloat16, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "attention: ", cudaGetErrorString(err));
  return o;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("attention", &attention); }
