#!/usr/bin/env bash
# The GPU half of the benchmarks, in one command:
#   bash bench/gpu_suite.sh
# Writes JSON, markdown, PNGs and logs under $OUT (default bench/results/gpu):
#  1. `daliaug selftest --require-gpu --json` (selftest.json, the table in selftest.log);
#  2. the GPU tests (pytest -m gpu);
#  3. with TensorFlow's CUDA build: the suite users run (bench.run --suite gpu-tf):
#     make_dataset on the GPU through DALI's TensorFlow plugin, alone and feeding a ResNet-50
#     step in mixed precision, a tuned tf.data pipeline on the same host, DALI's decoder alone
#     with the pipeline's decode windows (the ceiling) and without, DaliLoader, and the thread
#     scaling; without TensorFlow: the DALI-only suite (bench.run --suite gpu);
#  4. the hw_decoder_load x num_threads sweep (bench.gpu_sweep);
#  5. with several GPUs and TensorFlow: model.fit under MirroredStrategy on 1, 2, 4... of them
#     (bench.replicas --backend gpu).
# Clocks are read after the GPU's queued work is waited for. Needs DALI (nvidia-dali-cuda120),
# pydantic and PyYAML: from the project kit (.gpu/, see bench/README.md) or wheels placed in
# .whl/; TensorFlow's CUDA build and DALI's plugin for 3 and 5.
# For a short lease, each step is bounded (STEP_TIMEOUT seconds, default none) and the
# benchmark sized by REPEATS (5), WORKLOADS ("b c"), THREADS ("1 4 16"), SCALING_REPEATS (2),
# SWEEP_LOADS ("0.65 0.8 0.9 0.99"), SWEEP_THREADS ("1 2 4 8 16") and SWEEP_TOOLS
# ("decode-gpu-roi loader-gpu"); SWEEP=0 skips step 4, STAGES=0 the DALI stage profile.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-bench/results/gpu}"
PY="${PYTHON:-python3}"
REPEATS="${REPEATS:-5}"
WORKLOADS="${WORKLOADS:-b c}"
THREADS="${THREADS:-1 4 16}"
SCALING_REPEATS="${SCALING_REPEATS:-2}"
bounded() { if [ -n "${STEP_TIMEOUT:-}" ]; then timeout -k 10 "$STEP_TIMEOUT" "$@"; else "$@"; fi; }
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
gpus=$(nvidia-smi -L | grep -c '^GPU')
tf_gpus=$("$PY" -c "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))" \
    2>/dev/null | tail -n 1)
tf_gpus=${tf_gpus:-0}

bounded "$PY" -m daliaug.cli selftest --require-gpu --json >"$OUT/selftest.json" \
    2> >(tee "$OUT/selftest.log" >&2)
selftest=$?
# The parity tests compare DALI with TensorFlow: only where TensorFlow is installed. Without
# it Keras cannot start on its default backend: the JAX and PyTorch outputs' tests run each
# with Keras on its own backend.
parity=()
if "$PY" -c "import tensorflow" 2>/dev/null; then parity=(tests/test_parity.py); fi
bounded "$PY" -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py tests/test_reference.py \
    tests/test_bench.py "${parity[@]}" 2>&1 | tee "$OUT/pytest-gpu.log"
tests=${PIPESTATUS[0]}
for framework in jax torch; do
    KERAS_BACKEND=$framework bounded "$PY" -m pytest -m gpu -q -p no:cacheprovider \
        tests/test_framework_outputs.py -k "$framework" 2>&1 | tee -a "$OUT/pytest-gpu.log"
    tests=$((tests || PIPESTATUS[0]))
done
if [ "$tf_gpus" -gt 0 ]; then suite=gpu-tf; else suite=gpu; fi
# shellcheck disable=SC2086  # the knobs are word lists
bounded "$PY" -m bench.run --suite "$suite" --workload $WORKLOADS --repeats "$REPEATS" \
    --scaling-repeats "$SCALING_REPEATS" --threads $THREADS --out "$OUT" \
    $([ "${STAGES:-1}" = 0 ] && echo --no-stages) 2>&1 \
    | tee "$OUT/bench.log" | tail -n 12
bench=${PIPESTATUS[0]}
sweep=0
if [ "${SWEEP:-1}" != 0 ]; then
    # shellcheck disable=SC2086
    bounded "$PY" -m bench.gpu_sweep --loads ${SWEEP_LOADS:-0.65 0.8 0.9 0.99} \
        --threads ${SWEEP_THREADS:-1 2 4 8 16} --tools ${SWEEP_TOOLS:-decode-gpu-roi loader-gpu} \
        --out "$OUT" 2>&1 | tee "$OUT/sweep.log" | tail -n 20
    sweep=${PIPESTATUS[0]}
fi
scaling=0
if [ "$gpus" -gt 1 ] && [ "$tf_gpus" -gt 1 ]; then
    counts=(1)
    while [ $((counts[-1] * 2)) -le "$gpus" ]; do counts+=($((counts[-1] * 2))); done
    if [ "${counts[-1]}" -ne "$gpus" ]; then counts+=("$gpus"); fi
    "$PY" -m bench.replicas --backend gpu --replicas "${counts[@]}" --out "$OUT" 2>&1 \
        | tee "$OUT/replicas.log" | tail -n 12
    scaling=${PIPESTATUS[0]}
fi
exit $((tests || bench || sweep || scaling || selftest))
