#!/usr/bin/env bash
# The GPU half of the benchmarks, in one command, for a GPU host that has no TensorFlow:
#   bash bench/gpu_suite.sh
# Writes JSON, markdown, PNGs and logs under $OUT (default bench/results/gpu), runs the GPU
# tests (pytest -m gpu) after `daliaug selftest --require-gpu`, then the DALI-only suite
# (DaliLoader on the GPU and on the CPU, nvJPEG and CPU decoding alone), and prints its short
# table last. Needs DALI (nvidia-dali-cuda120 or -cuda130), pydantic and PyYAML: from the
# project kit (.gpu/, see bench/README.md) or wheels placed in .whl/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-bench/results/gpu}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
# DALI, pydantic and Keras shipped with ../shared/gpu/pack and installed by .gpu/bin/recv
if [ -f .gpu/bin/env ]; then source .gpu/bin/env; fi
if ! "$PY" -c "import nvidia.dali, pydantic, yaml" 2>/dev/null && compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
export DALIAUG_CACHE="${DALIAUG_CACHE:-/tmp/daliaug-cache}"
if ! "$PY" -c "import nvidia.dali, pydantic, yaml"; then
    echo "missing DALI, pydantic or PyYAML: see bench/README.md (GPU host)" >&2
    exit 3
fi
nvidia-smi -L
"$PY" -m daliaug.cli selftest --require-gpu 2>&1 | tee "$OUT/selftest.log"
selftest=${PIPESTATUS[0]}
"$PY" -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py tests/test_reference.py \
    tests/test_bench.py 2>&1 \
    | tee "$OUT/pytest-gpu.log"
tests=${PIPESTATUS[0]}
"$PY" -m bench.run --suite gpu --workload a b --repeats 5 --scaling-repeats 2 \
    --threads 1 4 16 --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -n 12
bench=${PIPESTATUS[0]}
exit $((tests || bench || selftest))
