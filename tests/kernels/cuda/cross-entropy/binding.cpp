// Binding of the from-scratch cross-entropy (tests/kernels/cuda/cross-entropy/kernel.cu): allocation and a launch.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t cross_entropy_launch(const void* logits, const int64_t* labels, float* loss, int64_t tokens,
                                 int64_t vocab, int dtype, cudaStream_t stream);

torch::Tensor cross_entropy(torch::Tensor logits, torch::Tensor labels) {
  TORCH_CHECK(logits.is_cuda() && logits.dim() == 2 && logits.is_contiguous() && labels.is_contiguous(), "bad inputs");
  TORCH_CHECK(labels.scalar_type() == torch::kLong, "cross_entropy: int64 labels");
  const int dtype = logits.scalar_type() == torch::kFloat ? 0 : logits.scalar_type() == torch::kHalf ? 1 : 2;
  const c10::cuda::CUDAGuard guard(logits.device());
  torch::Tensor loss = torch::empty({logits.size(0)}, logits.options().dtype(torch::kFloat));
  const cudaError_t err = cross_entropy_launch(logits.data_ptr(), labels.data_ptr<int64_t>(),
                                               loss.data_ptr<float>(), logits.size(0), logits.size(1), dtype,
                                               c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "cross_entropy: ", cudaGetErrorString(err));
  return loss;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("cross_entropy", &cross_entropy); }
