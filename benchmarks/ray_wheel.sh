#!/usr/bin/env bash
# Builds a small ray wheel, plus the wheels of ray's dependencies the device machine lacks, for
# benchmarks/gpu_issue26.sh. The device machine has no ray and is sent at most 64 MiB of working tree; ray's
# cp312 wheel is 79 MB. benchmarks/strip_wheel.py leaves out what kernelgym never imports (ray/jars, a 32 MB Java
# jar; rllib, data, serve, tune, train, llm; the dashboard's web page, not served under
# ray.init(include_dashboard=False)), strips the ELF symbol tables and recompresses: about 24 MB.
#
#   bash benchmarks/ray_wheel.sh               # cp312 (the device machine's Python) into .raywhl/ (gitignored)
#   bash benchmarks/ray_wheel.sh 3.11 DIR      # this machine's Python, to check the stripped wheel here
#
# The version is the one installed in .venv, and so are the dependencies' (jsonschema, jsonschema-specifications,
# referencing, rpds-py; the device machine already has attrs, click, filelock, msgpack, packaging, protobuf, pyyaml,
# requests, aiohttp, grpcio). Install there with: pip install --no-index --no-deps .raywhl/*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER=${1:-3.12}
OUT=${2:-.raywhl}
TAG=cp${PYVER/./}
version() { .venv/bin/python -c "import importlib.metadata as m; print(m.version('$1'))"; }
RAY=$(version ray)
DEPS="jsonschema==$(version jsonschema) jsonschema-specifications==$(version jsonschema-specifications) \
referencing==$(version referencing) rpds-py==$(version rpds-py)"
DL=$(mktemp -d)
trap 'rm -rf "$DL"' EXIT
echo "== downloading ray==$RAY and $DEPS for $TAG manylinux2014_x86_64"
# shellcheck disable=SC2086  # DEPS is a list of requirements
.venv/bin/pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux2014_x86_64 -d "$DL" "ray==$RAY" $DEPS
rm -rf "$OUT" && mkdir -p "$OUT"
for whl in "$DL"/*.whl; do
  case "$(basename "$whl")" in ray-*) ;; *) cp "$whl" "$OUT"/ ;; esac
done
echo "== stripping the ray wheel"
.venv/bin/python benchmarks/strip_wheel.py "$DL"/ray-"$RAY"-"$TAG"-*.whl "$OUT" \
  --drop ray/jars --drop ray/rllib --drop ray/data --drop ray/serve --drop ray/tune --drop ray/train \
  --drop ray/llm --drop ray/dashboard/client
ls -l "$OUT"
du -sh "$OUT"
