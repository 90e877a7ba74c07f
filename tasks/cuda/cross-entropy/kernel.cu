// Your kernels go here, with a host launcher that binding.cpp declares and calls (keep torch headers out of this
// file: they make nvcc slow). The baseline has none: binding.cpp runs the PyTorch module through ATen.
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
