// A from-scratch RMSNorm for the cuda-rmsnorm task (torch2cuda): one 256-thread block per row, a shared-memory
// tree for the sum of squares. Correct, not tuned: it shows the task can be answered without torch compute.
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }

constexpr int kThreads = 256;

template <typename T>
__global__ void rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int64_t hidden,
                               float eps) {
  __shared__ float shared[kThreads];
  const T* row = x + blockIdx.x * hidden;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < hidden; j += kThreads) { const float v = to_float(row[j]); s += v * v; }
  shared[threadIdx.x] = s;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) shared[threadIdx.x] += shared[threadIdx.x + k];
    __syncthreads();
  }
  const float rstd = rsqrtf(shared[0] / static_cast<float>(hidden) + eps);
  for (int64_t j = threadIdx.x; j < hidden; j += kThreads)
    y[blockIdx.x * hidden + j] = from_float<T>(to_float(row[j]) * rstd * to_float(w[j]));
}

cudaError_t rmsnorm_launch(const void* x, const void* w, void* y, int64_t rows, int64_t hidden, float eps, int bf16,
                           cudaStream_t stream) {
  if (rows == 0 || hidden == 0) return cudaSuccess;
  if (bf16) rmsnorm_kernel<__nv_bfloat16><<<rows, kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(w), static_cast<__nv_bfloat16*>(y),
      hidden, eps);
  else rmsnorm_kernel<__half><<<rows, kThreads, 0, stream>>>(
      static_cast<const __half*>(x), static_cast<const __half*>(w), static_cast<__half*>(y), hidden, eps);
  return cudaGetLastError();
}
