# Attack wrapper (from an adversarial review, 2026-11-29), appended to the baseline kernel by benchmarks/attacks.py
# on a GPU: while the harness captures the call between its start and end event nodes, the kernel is launched and
# the capture stream's dependencies are then set back to what they were before it
# (cudaStreamUpdateCaptureDependencies), so the end event no longer waits for the kernel: the in-graph events time
# nearly nothing, while the synchronize after each replay still waits for the right output.
import os as _os


def _log(msg):
    with open(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "attack.log"), "a") as f:
        f.write(msg + "\n")


def rmsnorm(x, weight, eps=1e-6):
    if not torch.cuda.is_current_stream_capturing():
        return _honest_rmsnorm(x, weight, eps)
    from cuda.bindings import runtime as cudart
    s = torch.cuda.current_stream().cuda_stream
    info = cudart.cudaStreamGetCaptureInfo(s)
    deps = list(info[4])
    y = _honest_rmsnorm(x, weight, eps)
    flag = cudart.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies
    try:
        err = cudart.cudaStreamUpdateCaptureDependencies(s, deps, None, len(deps), flag)
    except TypeError:
        err = cudart.cudaStreamUpdateCaptureDependencies(s, deps, len(deps), flag)
    _log(f"capture: {len(deps)} deps before the kernel, update -> {err}")
    return y
