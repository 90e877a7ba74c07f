// A from-scratch SwiGLU MLP for the cuda-swiglu-mlp task (torch2cuda): two 16 x 16 shared-memory tiled GEMMs on
// CUDA cores with fp32 accumulation, the first computing the gate and up tiles together with silu(g) * u fused in
// its epilogue. Correct, not tuned (no tensor cores): it shows the task can be answered without torch compute.
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int kTile = 16;

// C[m, n] = sum_k A[m, k] * B[n, k] (both K-contiguous, as nn.Linear's weight); with kGlu, B2 is a second weight and
// C = silu(A B^T) * (A B2^T).
template <typename T, bool kGlu>
__global__ void gemm_nt_kernel(const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ b2,
                               T* __restrict__ c, int64_t m, int64_t n, int64_t k) {
  __shared__ float ta[kTile][kTile + 1], tb[kTile][kTile + 1], tb2[kTile][kTile + 1];
  const int64_t row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  const int64_t brow = blockIdx.x * kTile + threadIdx.y;  // the B row this thread loads
  float acc = 0.0f, acc2 = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    const int64_t kk = k0 + threadIdx.x;
    ta[threadIdx.y][threadIdx.x] = row < m && kk < k ? to_float(a[row * k + kk]) : 0.0f;
    tb[threadIdx.y][threadIdx.x] = brow < n && kk < k ? to_float(b[brow * k + kk]) : 0.0f;
    if (kGlu) tb2[threadIdx.y][threadIdx.x] = brow < n && kk < k ? to_float(b2[brow * k + kk]) : 0.0f;
    __syncthreads();
    for (int j = 0; j < kTile; ++j) {
      acc += ta[threadIdx.y][j] * tb[threadIdx.x][j];
      if (kGlu) acc2 += ta[threadIdx.y][j] * tb2[threadIdx.x][j];
    }
    __syncthreads();
  }
  if (row < m && col < n) {
    const float out = kGlu ? acc / (1.0f + expf(-acc)) * acc2 : acc;
    c[row * n + col] = from_float<T>(out);
  }
}

template <typename T>
static cudaError_t run(const void* x, const void* wg, const void* wu, const void* wd, void* h, void* y,
                       int64_t tokens, int64_t hidden, int64_t inter, cudaStream_t stream) {
  const dim3 threads(kTile, kTile);
  const dim3 grid1((inter + kTile - 1) / kTile, (tokens + kTile - 1) / kTile);
  gemm_nt_kernel<T, true><<<grid1, threads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(wg),
                                                         static_cast<const T*>(wu), static_cast<T*>(h), tokens, inter,
                                                         hidden);
  const dim3 grid2((hidden + kTile - 1) / kTile, (tokens + kTile - 1) / kTile);
  gemm_nt_kernel<T, false><<<grid2, threads, 0, stream>>>(static_cast<const T*>(h), static_cast<const T*>(wd),
                                                          nullptr, static_cast<T*>(y), tokens, hidden, inter);
  return cudaGetLastError();
}

// h: a (tokens, inter) scratch buffer of the dtype. bf16: 1 for bfloat16, 0 for float16.
cudaError_t swiglu_mlp_launch(const void* x, const void* wg, const void* wu, const void* wd, void* h, void* y,
                              int64_t tokens, int64_t hidden, int64_t inter, int bf16, cudaStream_t stream) {
  if (tokens == 0) return cudaSuccess;
  return bf16 ? run<__nv_bfloat16>(x, wg, wu, wd, h, y, tokens, hidden, inter, stream)
              : run<__half>(x, wg, wu, wd, h, y, tokens, hidden, inter, stream);
}
