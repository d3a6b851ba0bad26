#!/usr/bin/env bash
# Builds docker/Dockerfile and runs the image on a host with no Docker daemon, no registry of
# base images and no GPU (the development VM), with Debian's buildah (vfs storage, chroot
# isolation, as root), then records what happened in docker/record/ (or the folder given).
#   apt-get install -y buildah debootstrap && docker/build-here.sh
# When the bases (python:3.11-bookworm, python:3.11-slim-bookworm) are not in buildah's storage,
# stand-ins are made here: Debian bookworm by debootstrap with Debian's Python 3.11, tagged under
# the bases' names (the build stage's with g++ and Python's headers, as the real one has them).
# RUN steps reach the package indexes with this host's CA bundle mounted read-only; it is never
# copied into the image.
set -euo pipefail
cd "$(dirname "$0")/.."
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
RECORD=${1:-docker/record}
IMAGE=localhost/daliaug:0.2.0
BASE=docker.io/library/python:3.11-bookworm
RUNTIME=docker.io/library/python:3.11-slim-bookworm
CA=/etc/ssl/certs/ca-certificates.crt
mkdir -p "$RECORD"
exec > >(tee "$RECORD/build-here.log") 2>&1

has_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }

stand_in_runtime() {
    local root ctr
    root=$(mktemp -d)
    debootstrap --variant=minbase \
        --include=python3,python3-venv,python-is-python3,ca-certificates \
        bookworm "$root" http://deb.debian.org/debian
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    ctr=$(buildah from scratch)
    cp -a "$root"/. "$(buildah mount "$ctr")"/
    buildah umount "$ctr"
    rm -rf "$root"
    buildah config --env LANG=C.UTF-8 --cmd python3 "$ctr"
    buildah commit --rm "$ctr" "$RUNTIME"
}

stand_in_base() {
    local ctr
    ctr=$(buildah from --pull=never "$RUNTIME")
    buildah run "$ctr" -- sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends g++ python3-dev && rm -rf /var/lib/apt/lists/*'
    buildah commit --rm "$ctr" "$BASE"
}

echo "== bases"
has_image "$RUNTIME" || stand_in_runtime
has_image "$BASE" || stand_in_base
ctr=$(buildah from --pull=never "$RUNTIME")
buildah run "$ctr" -- python --version
buildah rm "$ctr"

echo "== build"
start=$(date +%s)
buildah bud --pull=never --volume "$CA:$CA:ro" \
    --build-arg BASE="$BASE" --build-arg RUNTIME="$RUNTIME" \
    -f docker/Dockerfile -t "$IMAGE" .
echo "build seconds: $(( $(date +%s) - start ))"
buildah images "$IMAGE"
buildah inspect --type image --format '{{range .Docker.History}}{{.CreatedBy}}{{"\n"}}{{end}}' "$IMAGE"

echo "== run (CPU)"
data=$(mktemp -d)
chmod 777 "$data"
ctr=$(buildah from --pull=never "$IMAGE")
run() { buildah run --volume "$data:/data" "$ctr" -- "$@"; }
run id
run sh -c 'touch /data/.start && sleep 1'
run python -c "import nvidia.dali.plugin.tf as p; print('TF plugin imports:', p.__name__)"
run daliaug demo
set +e
run daliaug selftest
echo "selftest exit code: $?"
set -e
echo "files written by the runs (outside /proc, /sys, /dev):"
run sh -c 'find / /data -xdev -newer /data/.start \( -type f -o -type d \) -print 2>/dev/null | sort'
buildah rm "$ctr"
rm -rf "$data"
