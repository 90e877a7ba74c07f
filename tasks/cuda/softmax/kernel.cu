// Row softmax over a contiguous x of shape (rows, cols): y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)),
// computed in fp32. Baseline: one 256-thread block per row reading the row three times (maximum, sum of
// exponentials, output), each reduction a tree in shared memory. No warp shuffles, so nothing depends on the warp
// size (32 on NVIDIA, 64 on AMD). No torch headers here; binding.cpp holds the PyTorch side.
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

// Tree reduction of `v` over the block (kThreads threads) in shared memory; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float o = shared[threadIdx.x + s];
      shared[threadIdx.x] = kMax ? fmaxf(shared[threadIdx.x], o) : shared[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();  // shared[] is reused by the next reduction
  return r;
}

template <typename T>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  __shared__ float shared[kThreads];
  const T* row = x + blockIdx.x * cols;
  T* out = y + blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) m = fmaxf(m, to_float(row[j]));
  m = block_reduce<true>(m, shared);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) s += expf(to_float(row[j]) - m);
  s = block_reduce<false>(s, shared);
  const float inv = 1.0f / s;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) out[j] = from_float<T>(expf(to_float(row[j]) - m) * inv);
}

template <typename T>
static void launch(const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  softmax_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                             static_cast<T*>(y), cols);
}

// dtype: 0 float32, 1 float16, 2 bfloat16 (binding.cpp maps torch's dtype). Returns the launch's error status.
cudaError_t softmax_launch(const void* x, void* y, int64_t rows, int64_t cols, int dtype, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (dtype) {
    case 0: launch<float>(x, y, rows, cols, stream); break;
    case 1: launch<__half>(x, y, rows, cols, stream); break;
    case 2: launch<__nv_bfloat16>(x, y, rows, cols, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
