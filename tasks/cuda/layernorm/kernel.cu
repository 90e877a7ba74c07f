// LayerNorm over the last dimension of a contiguous x of shape (rows, hidden), with weight and bias of shape
// (hidden,): y = (x - mean) / sqrt(var + eps) * weight + bias, statistics in fp32 (var the biased variance).
// Baseline: one 256-thread block per row, reading the row three times (mean, centred variance, output), each
// reduction a tree in shared memory. No warp shuffles, so nothing depends on the warp size (32 on NVIDIA, 64 on
// AMD). No torch headers here; binding.cpp holds the PyTorch side.
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

constexpr int kThreads = 256;

// Tree sum of `v` over the block (kThreads threads) in shared memory; every thread gets the result.
__device__ float block_sum(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();  // shared[] is reused by the next reduction
  return r;
}

template <typename T>
__global__ void layernorm_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                 T* __restrict__ y, int64_t hidden, float eps) {
  __shared__ float shared[kThreads];
  const T* row = x + blockIdx.x * hidden;
  T* out = y + blockIdx.x * hidden;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < hidden; j += kThreads) s += to_float(row[j]);
  const float mean = block_sum(s, shared) / static_cast<float>(hidden);
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < hidden; j += kThreads) {
    const float c = to_float(row[j]) - mean;
    q += c * c;
  }
  const float rstd = rsqrtf(block_sum(q, shared) / static_cast<float>(hidden) + eps);
  for (int64_t j = threadIdx.x; j < hidden; j += kThreads) {
    out[j] = from_float<T>((to_float(row[j]) - mean) * rstd * to_float(weight[j]) + to_float(bias[j]));
  }
}

template <typename T>
static void launch(const void* x, const void* w, const void* b, void* y, int64_t rows, int64_t hidden, float eps,
                   cudaStream_t stream) {
  layernorm_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b), static_cast<T*>(y), hidden, eps);
}

// dtype: 0 float32, 1 float16, 2 bfloat16 (binding.cpp maps torch's dtype). Returns the launch's error status.
cudaError_t layernorm_launch(const void* x, const void* w, const void* b, void* y, int64_t rows, int64_t hidden,
                             float eps, int dtype, cudaStream_t stream) {
  if (rows == 0 || hidden == 0) return cudaSuccess;
  switch (dtype) {
    case 0: launch<float>(x, w, b, y, rows, hidden, eps, stream); break;
    case 1: launch<__half>(x, w, b, y, rows, hidden, eps, stream); break;
    case 2: launch<__nv_bfloat16>(x, w, b, y, rows, hidden, eps, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
