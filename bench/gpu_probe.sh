#!/usr/bin/env bash
# The GPU probe (bench/gpu_probe.py): at most 6 minutes on a 16-core GPU host, after the kit
# and the data are there (the device calls, in order: bench/notes/gpu-probe.md).
#   bash bench/gpu_probe.sh --prepare [COMMIT]  # here, before the lease: the baseline's daliaug
#                                               # (git archive COMMIT, default fb09615) in
#                                               # $BASELINE (.gpu-baseline) and the data
#                                               # (.gpu-data: (b) and (d), as the suite's)
#   bash bench/gpu_probe.sh                     # the GPU host (reads .gpu-data, .gpu-baseline)
#   bash bench/gpu_probe.sh --dry-run           # any machine: DALI's CPU operators, tiny data;
#                                               # prepares the baseline where it is missing
# Writes gpu-probe-<date>.json and .md after every measured point, each step's log and
# probe.log under $OUT (default bench/results/gpu); prints the table last. Exit 1 when the plan
# is over 6 minutes, 3 when something the probe needs is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
BASELINE="${BASELINE:-.gpu-baseline}"

prepare() {  # the baseline's daliaug/ (its pipelines/ copied in, not linked) and its commit
    rm -rf "$BASELINE" && mkdir -p "$BASELINE" || return 3
    git archive "$1" daliaug pipelines | tar -x -C "$BASELINE" || return 3
    rm "$BASELINE/daliaug/pipelines" && mv "$BASELINE/pipelines" "$BASELINE/daliaug/pipelines"
    git rev-parse --short "$1" > "$BASELINE/COMMIT"
    echo "baseline $(cat "$BASELINE/COMMIT") in $BASELINE ($(du -sh "$BASELINE" | cut -f1))"
}

if [ "${1:-}" = "--prepare" ]; then
    prepare "${2:-fb09615}" || exit 3
    exec "${PYTHON:-python3}" -m bench.gpu_suite --make-data --data .gpu-data --workload b d
fi
source bench/gpu_env.sh
DATA=()
if [ "${1:-}" = "--dry-run" ]; then
    [ -f "$BASELINE/daliaug/__init__.py" ] || prepare "${BASELINE_COMMIT:-fb09615}" || exit 3
else
    nvidia-smi -L
    if [ -d .gpu-data ]; then DATA=(--data .gpu-data); fi
fi
"$PY" -m bench.gpu_probe --out "$OUT" --baseline "$BASELINE" "${DATA[@]}" "$@" \
    2> >(tee "$OUT/probe.log" >&2)
