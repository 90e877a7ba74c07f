# Source this on the lent GPU machine (no package access there): installs the carried wheels
# (.whl/) and unpacks Debian's bubblewrap (.deb/) into /tmp, then puts both on the paths.
set -e
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/bw
for f in .deb/*.deb; do dpkg -x "$f" /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH
export LD_LIBRARY_PATH=/tmp/bw/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1 KERNELGYM_CACHE_DIR=/tmp/kg-cache
set +e
