// A from-scratch causal attention for the cuda-attention task (torch2cuda): a block of 64 threads per 64 queries of
// one (batch, head), each thread one query row with its output in registers and an online softmax in fp32; key and
// value tiles (32 KB of shared memory) staged in turn, tiles after the block's last query skipped. Correct, not tuned
// (no tensor cores): it shows the task can be answered without torch compute.
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int kRows = 64;  // queries (threads) per block

template <typename T, int D>
__global__ void attention_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                 T* __restrict__ o, int64_t seq, float scale) {
  constexpr int kKeys = 4096 / D;  // keys per tile: 64 for head_dim 64, 32 for 128
  __shared__ float ks[kKeys][D], vs[kKeys][D];
  const int64_t bh = blockIdx.y, i = static_cast<int64_t>(blockIdx.x) * kRows + threadIdx.x;
  const T* qb = q + bh * seq * D;
  const T* kb = k + bh * seq * D;
  const T* vb = v + bh * seq * D;
  float qr[D], acc[D];
  for (int d = 0; d < D; ++d) { qr[d] = i < seq ? to_float(qb[i * D + d]) * scale : 0.0f; acc[d] = 0.0f; }
  float m = -INFINITY, s = 0.0f;
  const int64_t last = min(seq, static_cast<int64_t>(blockIdx.x + 1) * kRows);  // keys past it are masked for all
  for (int64_t j0 = 0; j0 < last; j0 += kKeys) {
    for (int idx = threadIdx.x; idx < kKeys * D; idx += kRows) {
      const int r = idx / D, d = idx % D;
      const bool in = j0 + r < seq;
      ks[r][d] = in ? to_float(kb[(j0 + r) * D + d]) : 0.0f;
      vs[r][d] = in ? to_float(vb[(j0 + r) * D + d]) : 0.0f;
    }
    __syncthreads();
    for (int r = 0; r < kKeys && j0 + r <= i && i < seq; ++r) {
      float sc = 0.0f;
      for (int d = 0; d < D; ++d) sc += qr[d] * ks[r][d];
      const float mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
      s = s * corr + p;
      for (int d = 0; d < D; ++d) acc[d] = acc[d] * corr + p * vs[r][d];
      m = mn;
    }
    __syncthreads();
  }
  if (i < seq)
    for (int d = 0; d < D; ++d) o[bh * seq * D + i * D + d] = from_float<T>(acc[d] / s);
}

template <typename T>
static cudaError_t run(const void* q, const void* k, const void* v, void* o, int64_t bh, int64_t seq, int64_t d,
                       cudaStream_t stream) {
  const dim3 grid((seq + kRows - 1) / kRows, bh);
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  if (d == 64) attention_kernel<T, 64><<<grid, kRows, 0, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                                    static_cast<const T*>(v), static_cast<T*>(o), seq, scale);
  else if (d == 128) attention_kernel<T, 128><<<grid, kRows, 0, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), static_cast<T*>(o), seq, scale);
  else return cudaErrorInvalidValue;
  return cudaGetLastError();
}

// bh: batch * heads; d: head_dim (64 or 128). bf16: 1 for bfloat16, 0 for float16.
cudaError_t attention_launch(const void* q, const void* k, const void* v, void* o, int64_t bh, int64_t seq, int64_t d,
                             int bf16, cudaStream_t stream) {
  if (bh == 0 || seq == 0) return cudaSuccess;
  return bf16 ? run<__nv_bfloat16>(q, k, v, o, bh, seq, d, stream) : run<__half>(q, k, v, o, bh, seq, d, stream);
}
