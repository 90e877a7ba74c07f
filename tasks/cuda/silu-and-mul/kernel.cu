// SiLU-and-mul (SwiGLU's gate) over a contiguous x of shape (tokens, 2 * d): y[t, j] = silu(x[t, j]) * x[t, d + j],
// silu(a) = a / (1 + exp(-a)). Baseline: one output element per thread, scalar loads and stores, fp32 math. No torch
// headers here (they make nvcc slow); binding.cpp holds the PyTorch side and calls silu_and_mul_launch.
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
__global__ void silu_and_mul_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t tokens, int64_t d) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < tokens * d) {
    const int64_t t = i / d, j = i - t * d;
    const float a = to_float(x[t * 2 * d + j]);
    const float b = to_float(x[t * 2 * d + d + j]);
    y[i] = from_float<T>(a / (1.0f + expf(-a)) * b);
  }
}

template <typename T>
static void launch(const void* x, void* y, int64_t tokens, int64_t d, cudaStream_t stream) {
  const int threads = 128;
  const int64_t blocks = (tokens * d + threads - 1) / threads;
  silu_and_mul_kernel<T><<<static_cast<unsigned int>(blocks), threads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), tokens, d);
}

// dtype: 0 float32, 1 float16, 2 bfloat16 (binding.cpp maps torch's dtype). Returns the launch's error status.
cudaError_t silu_and_mul_launch(const void* x, void* y, int64_t tokens, int64_t d, int dtype, cudaStream_t stream) {
  if (tokens == 0 || d == 0) return cudaSuccess;
  switch (dtype) {
    case 0: launch<float>(x, y, tokens, d, stream); break;
    case 1: launch<__half>(x, y, tokens, d, stream); break;
    case 2: launch<__nv_bfloat16>(x, y, tokens, d, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
