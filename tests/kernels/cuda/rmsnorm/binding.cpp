// Binding of the from-scratch RMSNorm (tests/kernels/cuda/rmsnorm/kernel.cu): allocation and a launch only.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t rmsnorm_launch(const void* x, const void* w, void* y, int64_t rows, int64_t hidden, float eps, int bf16,
                           cudaStream_t stream);

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.is_contiguous() && weight.is_contiguous(), "rmsnorm: bad inputs");
  TORCH_CHECK(x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16, "rmsnorm: fp16 or bf16");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty_like(x);
  const cudaError_t err = rmsnorm_launch(x.data_ptr(), weight.data_ptr(), y.data_ptr(), x.size(0), x.size(1),
                                         static_cast<float>(eps), x.scalar_type() == torch::kBFloat16,
                                         c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "rmsnorm: ", cudaGetErrorString(err));
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("rmsnorm", &rmsnorm); }
