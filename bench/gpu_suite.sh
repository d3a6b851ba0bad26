#!/usr/bin/env bash
# The short GPU run, the most important numbers first (sized for about five minutes on one GPU
# once the kit is on the host; not yet run on one):
#   bash bench/gpu_suite.sh             # the GPU host
#   bash bench/gpu_suite.sh --dry-run   # any machine: DALI's CPU operators, tiny sizes
# (i) `daliaug selftest --require-gpu --json`, which also counts the decoder of every JPEG
# decode window; (ii) (b) and (c) through DaliLoader and the JAX output at the defaults, against
# DALI's own hand-written rn50-style pipeline (b) and its auto_aug pipeline (c), each at its best
# point of a small num_threads x hw_decoder_load sweep, DALI's decoder alone as the ceiling;
# (iii) the fit overhead: Keras' ResNet-50 on the JAX backend fed by make_dataset against one
# constant batch on the device. The driver is bench/gpu_suite.py (its flags pass through:
# --workload, --threads, --loads). Writes gpu-suite-<date>.json (GPU, cores, versions, every
# raw figure) and .md, selftest.log and suite.log under $OUT (default bench/results/gpu) and
# prints the table last. Exit 1 when decode windows went to the CPU or a target was missed.
# Needs DALI, pydantic, PyYAML, Keras and JAX: from the project kit (.gpu/, see
# bench/README.md) or wheels placed in .whl/; no TensorFlow.
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
# Keras on JAX (no TensorFlow on the GPU host); JAX takes GPU memory as it needs it, leaving
# DALI its share.
export KERAS_BACKEND=jax XLA_PYTHON_CLIENT_PREALLOCATE=false TF_CPP_MIN_LOG_LEVEL=2
if ! "$PY" -c "import nvidia.dali, pydantic, yaml, keras, jax"; then
    echo "missing DALI, pydantic, PyYAML, Keras or JAX: see bench/README.md (GPU host)" >&2
    exit 3
fi
if [ "${1:-}" != "--dry-run" ]; then nvidia-smi -L; fi
"$PY" -m bench.gpu_suite --out "$OUT" "$@" 2> >(tee "$OUT/suite.log" >&2)
