#!/usr/bin/env bash
# Pack kcodec and what Spark's Python workers need into one relocatable archive.
#   pack.sh OUT_DIR [WHEEL]
# Builds the kcodec wheel from this checkout unless WHEEL is given, installs it with
# pyarrow and pandas into a fresh virtual environment and packs that with venv-pack into
# OUT_DIR/kcodec-env.tar.gz. Every node must have the same base Python at the same path
# (venv-pack keeps the environment's link to it); pyspark itself is not packed, Spark puts
# its own on the workers' path.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
wheel=${2:-}
python=${PYTHON:-python}
if [ -z "$wheel" ]; then
    checkout="$(cd "$(dirname "$0")/../.." && pwd)"
    "$python" -m pip wheel --no-deps --quiet --wheel-dir "$out/wheels" "$checkout"
    wheel=$(ls "$out"/wheels/kcodec-*.whl)
fi
rm -rf "$out/kcodec-env" "$out/kcodec-env.tar.gz"
"$python" -m venv --without-pip "$out/kcodec-env"
"$python" -m pip --python "$out/kcodec-env/bin/python" install --quiet \
    "$wheel[arrow]" "pandas>=2.2,<3"
"$python" -m venv_pack --prefix "$out/kcodec-env" --output "$out/kcodec-env.tar.gz" --quiet
rm -rf "$out/kcodec-env"
echo "$out/kcodec-env.tar.gz"
