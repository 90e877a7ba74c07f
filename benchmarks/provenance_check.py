"""Provenance on a GPU after the static check's rewrite (issue 22): the rmsnorm baseline still grades 220 +- 1%, and
each attack class the review scored 120 with on the CPU interpreter scores 20 or 0 on the GPU, both with the default
settings (static check on) and with the static check off (the outside observer alone must fail it). Writes JSON to
--out.

    python benchmarks/provenance_check.py --out provenance.json [--n 5]
"""
import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from observer_check import grade, show  # noqa: E402

from kernelgym.discovery import get_task  # noqa: E402
from kernelgym.grader import GraderConfig  # noqa: E402
from kernelgym.hardware import detect_profile  # noqa: E402


def _attack_module(name):
    """tests/attacks/<name>.py, loaded by path (its payloads are strings; nothing of them runs here)."""
    path = HERE.parent / "tests" / "attacks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"attack_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def attacks():
    """{class name: kernel.py source} of the attack classes that need no interpreter to mean something."""
    deco = _attack_module("decorated_helper_computes")
    own = _attack_module("self_import_helper")
    entry = _attack_module("entry_point_swapped")
    host = _attack_module("host_tensor_arithmetic")
    out = {f"decorator_{k}": deco._cheat(*v) for k, v in deco.ATTACKS.items()}
    prefix, ret = own.ATTACKS["import_self_then_helper"]
    out["self_import_chain"] = prefix + own.BASELINE.replace(own.RET, ret)
    out["entry_point_module_getattr"] = entry.BASELINE + entry.FALLBACK.replace(
        "    return x\n", "    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * "
                         "weight.float()).to(x.dtype)\n") + entry.ATTACKS["delete_then_module_getattr"]
    for name in dir(host):
        if name.isupper() and isinstance(getattr(host, name), str) and "def rmsnorm" in getattr(host, name) \
                and name not in ("BASELINE", "TWIN", "HONEST"):
            out[f"host_{name.lower()}"] = getattr(host, name)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="provenance.json")
    ap.add_argument("--n", type=int, default=5, help="gradings of the baseline")
    args = ap.parse_args()
    hw = detect_profile()
    out = {"machine": hw.name, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": {}}

    def run(name, files, config):
        try:
            r = grade("triton-rmsnorm", files, config, hw, label=name)
            show(name, r)
        except Exception as e:  # noqa: BLE001 - one failure must not lose the other measurements
            r = {"error": f"{type(e).__name__}: {e}"}
            print(f"== {name}: ERROR {r['error']}", flush=True)
        out["runs"][name] = r
        Path(args.out).write_text(json.dumps(out, indent=1, default=str))
        return r

    scores = [run(f"baseline_{i}", {}, GraderConfig()).get("score") for i in range(args.n)]
    for name, src in attacks().items():
        run(f"{name}_default", {"kernel.py": src}, GraderConfig())
        run(f"{name}_observer_alone", {"kernel.py": src}, GraderConfig(static_check=False))
    ok = [s for s in scores if s is not None]
    out["summary"] = {
        "baseline_scores": scores,
        "baseline_median": statistics.median(ok) if ok else None,
        "baseline_within_1pct_of_220": all(abs(s - 220) <= 2.2 for s in ok) and bool(ok),
        "attack_scores": {k: v.get("score") for k, v in out["runs"].items() if not k.startswith("baseline")},
        "attacks_all_at_most_20": all((v.get("score") is not None and v["score"] <= 20)
                                      for k, v in out["runs"].items() if not k.startswith("baseline")),
    }
    print(json.dumps(out["summary"], indent=1), flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
