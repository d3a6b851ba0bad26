#!/usr/bin/env bash
# The short GPU run, the most important numbers first, planned for at most 8 minutes on a
# 16-core GPU host once the kit and the data are there (bench/README.md, "The GPU run"):
#   python -m bench.gpu_suite --make-data --data .gpu-data   # here: the data, to carry
#   bash bench/gpu_suite.sh             # the GPU host (reads .gpu-data when it is there)
#   bash bench/gpu_suite.sh --dry-run   # any machine: DALI's CPU operators, tiny sizes; fails
#                                       # when the GPU run's time plan is over 8 minutes
# (0) the window-decode canary in a child process (nvImageCodec#55), before anything decodes
# a window on the GPU; (i) `daliaug selftest --require-gpu --json` in its own process; (ii) (b)
# and (c) through DaliLoader and the JAX output at the defaults (every core), (b)'s loader
# with whole-image decoding too, then each row at every --threads x --loads point, against
# DALI's own rn50 pipeline as DALI's examples write it (b) and its auto_aug pipeline (c), DALI's
# decoder alone as the ceiling; detection (d), bench/detection.py's daliaug config on COCO
# JPEGs with boxes, through DaliLoader at the defaults only; (iii) the fit overhead: Keras' ResNet-50 on the JAX backend fed
# by make_dataset against one constant batch on the device. The driver is bench/gpu_suite.py
# (its flags pass through: --workload, --threads, --loads, --data). gpu-suite-<date>.json
# (GPU, cores, versions, every raw figure) and .md are written after every measured point, so
# a stop keeps what was measured; selftest.log and suite.log too, all under $OUT (default
# bench/results/gpu); the table is printed last. Exit 1 when decode windows went to the CPU
# or a target was missed, 3 when something the run needs is missing.
# Needs DALI, pydantic, PyYAML, Keras and JAX: from the project kit (.gpu/, see
# bench/README.md) or wheels placed in .whl/; no TensorFlow.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
DATA=()
if [ "${1:-}" != "--dry-run" ]; then
    nvidia-smi -L
    if [ -d .gpu-data ]; then DATA=(--data .gpu-data); fi
fi
"$PY" -m bench.gpu_suite --out "$OUT" "${DATA[@]}" "$@" 2> >(tee "$OUT/suite.log" >&2)
