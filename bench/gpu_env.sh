# Sourced by bench/gpu_suite.sh and bench/gpu_probe.sh, in the project root: the kit's
# environment (.gpu/bin/env, or wheels in .whl/), the project on PYTHONPATH, Keras on JAX, and
# a check that DALI, pydantic, PyYAML, Keras and JAX import (exit 3 where they do not).
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
