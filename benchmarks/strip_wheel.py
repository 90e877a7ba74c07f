"""Make a smaller copy of a wheel: leave out subpackages, strip ELF symbol tables, recompress; RECORD is rewritten.

    python benchmarks/strip_wheel.py IN.whl OUT_DIR --drop ray/jars --drop ray/rllib ...

Used by benchmarks/ray_wheel.sh for the device machine, which is sent at most 64 MiB of working tree: the ray wheel
is 79 MB, most of it a Java jar, the libraries kernelgym does not use, and symbol tables. Stripping symbols
(``strip --strip-unneeded``) keeps what the dynamic loader needs. The entries are LZMA-compressed (``zipfile``,
and so pip, reads them; the wheel spec asks only for a ZIP archive), which makes the binaries a fifth smaller
than deflate. The output keeps the input's file name, so pip reads its tags as before.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path


def _record_hash(data: bytes) -> str:
    """A RECORD hash field: ``sha256=`` and the urlsafe base64 digest without padding (the wheel spec's form)."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _strip_elf(data: bytes) -> bytes:
    """`data` (an ELF file) with its symbol tables and debug sections removed, as the loader still needs it."""
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        subprocess.run(["strip", "--strip-unneeded", f.name], check=True)
        return Path(f.name).read_bytes()


def strip_wheel(wheel: Path, out_dir: Path, drop: list[str], strip_symbols: bool = True) -> Path:
    """Write the smaller copy of `wheel` into `out_dir`; returns its path.

    Args:
        wheel: the input .whl. out_dir: where the copy goes (made if missing; same file name).
        drop: path prefixes inside the wheel to leave out (``ray/jars``); each must match at least one entry.
        strip_symbols: strip every ELF file's symbol tables.

    Raises:
        ValueError: a `drop` prefix matches nothing (a typo, or a version whose layout changed).
        FileNotFoundError: ``strip`` (binutils) is missing and `strip_symbols` is set.
    """
    if strip_symbols and shutil.which("strip") is None:
        raise FileNotFoundError("`strip` (binutils) is needed to strip symbols: apt-get install binutils")
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / wheel.name
    prefixes = [p.rstrip("/") + "/" for p in drop]
    used = set()
    records: list[str] = []
    record_name = None
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_LZMA) as dst:
        for info in src.infolist():
            name = info.filename
            hit = next((p for p in prefixes if name.startswith(p)), None)
            if hit:
                used.add(hit)
                continue
            if name.endswith(".dist-info/RECORD"):
                record_name = name
                continue
            data = src.read(name)
            if strip_symbols and data[:4] == b"\x7fELF":
                data = _strip_elf(data)
            copy = zipfile.ZipInfo(name, date_time=info.date_time)
            copy.external_attr = info.external_attr  # keeps the executables' mode bits
            copy.compress_type = zipfile.ZIP_LZMA
            dst.writestr(copy, data)
            records.append(f"{name},{_record_hash(data)},{len(data)}")
        if record_name is None:
            raise ValueError(f"{wheel}: no .dist-info/RECORD; not a wheel")
        records.append(f"{record_name},,")
        dst.writestr(record_name, "\n".join(records) + "\n")
    missing = [p for p in prefixes if p not in used]
    if missing:
        out.unlink()
        raise ValueError(f"{wheel}: --drop {', '.join(missing)} matched no entry")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--drop", action="append", default=[], metavar="PREFIX", help="a path inside the wheel")
    parser.add_argument("--keep-symbols", action="store_true", help="do not strip ELF symbol tables")
    args = parser.parse_args()
    out = strip_wheel(args.wheel, args.out_dir, args.drop, strip_symbols=not args.keep_symbols)
    print(f"{out}: {out.stat().st_size / 1e6:.1f} MB (from {args.wheel.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
