// A from-scratch per-token cross-entropy for the cuda-cross-entropy task (torch2cuda): one 256-thread block per
// token, an online log-sum-exp per thread, (max, sum) pairs combined in a shared-memory tree. Correct, not tuned.
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
__global__ void cross_entropy_kernel(const T* __restrict__ logits, const int64_t* __restrict__ labels,
                                     float* __restrict__ loss, int64_t vocab) {
  __shared__ float sm[kThreads], ss[kThreads];
  const T* row = logits + blockIdx.x * vocab;
  float m = -INFINITY, s = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float v = to_float(row[j]);
    if (v > m) { s = s * expf(m - v) + 1.0f; m = v; } else { s += expf(v - m); }
  }
  sm[threadIdx.x] = m;
  ss[threadIdx.x] = s;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      const float m2 = sm[threadIdx.x + k], s2 = ss[threadIdx.x + k], m1 = sm[threadIdx.x], s1 = ss[threadIdx.x];
      const float mm = fmaxf(m1, m2);
      ss[threadIdx.x] = (s1 == 0.0f ? 0.0f : s1 * expf(m1 - mm)) + (s2 == 0.0f ? 0.0f : s2 * expf(m2 - mm));
      sm[threadIdx.x] = mm;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const int64_t label = labels[blockIdx.x];
    loss[blockIdx.x] = label == -100 ? 0.0f : sm[0] + logf(ss[0]) - to_float(row[label]);
  }
}

cudaError_t cross_entropy_launch(const void* logits, const int64_t* labels, float* loss, int64_t tokens,
                                 int64_t vocab, int dtype, cudaStream_t stream) {
  if (tokens == 0) return cudaSuccess;
  switch (dtype) {
    case 0: cross_entropy_kernel<float><<<tokens, kThreads, 0, stream>>>(static_cast<const float*>(logits), labels,
                                                                          loss, vocab); break;
    case 1: cross_entropy_kernel<__half><<<tokens, kThreads, 0, stream>>>(static_cast<const __half*>(logits), labels,
                                                                           loss, vocab); break;
    default: cross_entropy_kernel<__nv_bfloat16><<<tokens, kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(logits), labels, loss, vocab);
  }
  return cudaGetLastError();
}
