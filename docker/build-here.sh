#!/usr/bin/env bash
# Builds docker/Dockerfile and runs the image on a host with no Docker daemon, no registry of
# base images and no GPU (the development VM), with Debian's buildah (vfs storage, chroot
# isolation, as root), and records what happened in docker/record/ (or the folder given):
#   apt-get install -y buildah debootstrap && docker/build-here.sh
# Where the bases (python:3.11-bookworm, python:3.11-slim-bookworm) are not in buildah's storage,
# stand-ins are made here: Debian bookworm by debootstrap with Debian's Python 3.11, tagged under
# the bases' names (the build stage's with g++ and Python's headers, as the real one has them).
# RUN steps reach the package indexes with this host's CA bundle mounted read-only; it is never
# copied into the image. The image then runs on the CPU: the TF plugin's import, `daliaug demo`,
# `daliaug selftest --require-gpu` (exit 4: no GPU), and what the runs wrote, as user 1000.
set -euo pipefail
cd "$(dirname "$0")/.."
RECORD=${1:-docker/record}
IMAGE=localhost/daliaug:0.2.0
BASE=docker.io/library/python:3.11-bookworm
RUNTIME=docker.io/library/python:3.11-slim-bookworm
CA=/etc/ssl/certs/ca-certificates.crt
CACHE=/home/daliaug/.cache/daliaug
mkdir -p "$RECORD"
exec > >(tee "$RECORD/build-here.log") 2>&1

bh() { buildah --storage-driver vfs "$@"; }
has_image() { bh inspect --type image "$1" >/dev/null 2>&1; }
seconds() { echo "$(( $(date +%s) - $1 )) s"; }

stand_in_runtime() {
    local root ctr
    root=$(mktemp -d)
    debootstrap --variant=minbase \
        --include=python3,python3-venv,python-is-python3,ca-certificates \
        bookworm "$root" http://deb.debian.org/debian
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    ctr=$(bh from scratch)
    cp -a "$root"/. "$(bh mount "$ctr")"/
    bh umount "$ctr"
    rm -rf "$root"
    bh config --env LANG=C.UTF-8 --cmd python3 "$ctr"
    bh commit --rm "$ctr" "$RUNTIME"
}

stand_in_base() {
    local ctr
    ctr=$(bh from --pull=never "$RUNTIME")
    bh run --isolation chroot "$ctr" -- sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends g++ python3-dev && rm -rf /var/lib/apt/lists/*'
    bh commit --rm "$ctr" "$BASE"
}

echo "== tree: $(git rev-parse HEAD) $(git status --short -- docker daliaug pipelines pyproject.toml README.md | wc -l) changed paths"
echo "== host: $(nproc) cores, $(buildah --version), storage $(bh info --format '{{.store.GraphDriverName}}')"
echo "== bases"
start=$(date +%s)
has_image "$RUNTIME" || stand_in_runtime
has_image "$BASE" || stand_in_base
echo "bases: $(seconds "$start")"

echo "== build"
start=$(date +%s)
bh bud --isolation chroot --pull=never --volume "$CA:$CA:ro" \
    --build-arg BASE="$BASE" --build-arg RUNTIME="$RUNTIME" \
    -f docker/Dockerfile -t "$IMAGE" .
echo "build: $(seconds "$start")"
bh images
bh inspect --type image --format '{{range .Docker.History}}{{.CreatedBy}}{{"\n"}}{{end}}' "$IMAGE"

echo "== run (CPU)"
data=$(mktemp -d)
chmod 777 "$data"
ctr=$(bh from --pull=never "$IMAGE")
run() { bh run --isolation chroot --volume "$data:/data" "$ctr" -- "$@"; }
run id
run sh -c 'python --version; command -v gcc g++ cc c++ || echo "no compiler"; ls ~/.cache/pip /root/.cache/pip 2>&1 | head -2'
run sh -c 'du -sh /opt/venv; du -sm /opt/venv/lib/python3.11/site-packages/* | sort -n | tail -4'
run sh -c 'touch /data/.start && sleep 1'
run python -c "import nvidia.dali.plugin.tf as p; print('TF plugin imports:', p.__name__)"
start=$(date +%s)
run daliaug demo
echo "demo: $(seconds "$start")"
set +e
run daliaug selftest --require-gpu
echo "selftest --require-gpu exit code: $?"
set -e
echo "written by the runs outside /data and $CACHE (buildah run itself writes /etc/hostname,"
echo "/etc/hosts, /etc/resolv.conf and /run/.containerenv, as root):"
run sh -c "find / -xdev -newer /data/.start ! -path '/data*' ! -path '$CACHE*' -print | sort"
echo "written to /data and $CACHE (first levels):"
run sh -c "find /data $CACHE -maxdepth 1 -newer /data/.start -print | sort"
echo "owners of what was written there: $(run sh -c "find /data $CACHE -newer /data/.start -printf '%u\n' | sort | uniq -c")"
bh rm "$ctr"
rm -rf "$data"
