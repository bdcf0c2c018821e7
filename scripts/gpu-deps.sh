#!/usr/bin/env bash
# gpu-deps.sh: unpacks the Debian packages rnnc builds with into .deps/, to be
# carried to a GPU machine that has no package registry (scripts/gpu-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
(cd .deps/debs && apt-get download libcjson1 libcjson-dev libxxhash0 libxxhash-dev libcmocka0 libcmocka-dev)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps; done
