# Found by an adversarial review (2026-11-29): a candidate that returns zeros (wrong) but, at import, writes
# outputs.pt itself with the reference's answers (from request.json's seed and the pristine reference.py in the
# grading directory). The parent's early comparison read that first version; the harness's later outputs.pt (the
# zeros) was never read. Used by tests/test_grader.py.
import json, os, torch, triton, triton.language as tl, importlib.util, time
_d = os.path.dirname(os.path.abspath(__file__))

@triton.jit
def rmsnorm_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32).to(y_ptr.dtype.element_ty), mask=offs < n)

def _forge():
    req = json.load(open(os.path.join(_d, "request.json")))
    spec = importlib.util.spec_from_file_location("ref_", os.path.join(_d, "reference.py"))
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    outs = {}
    for i, cfg in enumerate(req["configs"]):
        x, w, eps = m.make_inputs(cfg, req["seed"] + i, "cpu")
        outs[f"{i}/out"] = m.rmsnorm_reference(x, w, eps).to(x.dtype)
    path = os.path.join(_d, "outputs.pt")
    torch.save(outs, path + ".x")
    os.replace(path + ".x", path)
    time.sleep(0.3)  # let the parent's early-compare thread (5 ms poll) read and memoize it
_forge()

def rmsnorm(x, weight, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)  # satisfies the launch counter
    return y  # all zeros: wrong
