// GELU, exact (erf) form, over a contiguous tensor: y = 0.5 * x * (1 + erf(x / sqrt(2))).
// Baseline: one element per thread, scalar loads and stores, fp32 math. No torch headers here (they make nvcc
// slow); binding.cpp holds the PyTorch side and calls gelu_launch.
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__global__ void gelu_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float v = to_float(x[i]);
    y[i] = from_float<T>(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
  }
}

template <typename T>
static void launch(const void* x, void* y, int64_t n, cudaStream_t stream) {
  const int threads = 128;
  const int64_t blocks = (n + threads - 1) / threads;
  gelu_kernel<T><<<static_cast<unsigned int>(blocks), threads, 0, stream>>>(static_cast<const T*>(x),
                                                                              static_cast<T*>(y), n);
}

// dtype: 0 float32, 1 float16, 2 bfloat16 (binding.cpp maps torch's dtype). Returns the launch's error status.
cudaError_t gelu_launch(const void* x, void* y, int64_t n, int dtype, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (dtype) {
    case 0: launch<float>(x, y, n, stream); break;
    case 1: launch<__half>(x, y, n, stream); break;
    case 2: launch<__nv_bfloat16>(x, y, n, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
