# gpu-env.sh: what every scripts/gpu-*.sh call does before its own work;
# sourced from the repository root.
#   gpu_env ARCHIVE [json]  logs go to a temporary folder, $OUT from here on,
#       packed into ARCHIVE in the caller's $OUT (FINAL) at exit, since $OUT
#       brings back at most 8 files (json: the *.json files are copied there
#       too); the packages of .deps/ (scripts/gpu-deps.sh) are copied to
#       $deps, out of the tree (CMake refuses include paths inside it), and
#       put on the library path; the kernel cache lives in /tmp.
#   gpu_machine   the GPU, driver, cuDNN and CUDA versions into $OUT/machine.txt
#   gpu_configure the Release build in build-gpu without LLVM (none there),
#       against $deps; its log starts $OUT/build.log

gpu_pack() {
  tar -C "$OUT" -czf "$FINAL/$GPU_ARCHIVE" .
  if [ -n "$GPU_JSON" ]; then cp "$OUT"/*.json "$FINAL"/ 2>/dev/null; fi
  return 0
}

gpu_env() {
  FINAL=${OUT:-/tmp/rnnc-gpu-out}
  OUT=$(mktemp -d)
  GPU_ARCHIVE=$1 GPU_JSON=${2:-}
  trap gpu_pack EXIT
  mkdir -p "$FINAL"
  deps=/tmp/rnnc-deps
  rm -rf "$deps" && cp -r .deps "$deps"
  export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export RNNC_CACHE_DIR=${RNNC_CACHE_DIR:-/tmp/rnnc-cache}
}

gpu_machine() {
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    ls /usr/local/cuda/lib64 2>/dev/null | grep -E 'libcudnn\.so\.[0-9]+\.'
    find / -name 'libcudnn.so.9*' -path '*lib*' 2>/dev/null | head -3
    nvcc --version | tail -2; } > "$OUT/machine.txt" 2>&1
}

gpu_configure() {
  cmake -S . -B build-gpu -DRNNC_WITH_LLVM=OFF -DRNNC_DEPS_PREFIX="$deps" \
        -DCMAKE_BUILD_TYPE=Release -DRNNC_WERROR=OFF > "$OUT/build.log" 2>&1
}
