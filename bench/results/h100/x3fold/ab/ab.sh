#!/usr/bin/env bash
# A/B: 2f6ae98 (abtest/old) against the working tree, same machine, interleaved.
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env ab.tgz
gpu_machine
gpu_configure && cmake --build build-gpu -j 16 --target rnnc_cli >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
cmake -S abtest/old -B build-old -DRNNC_WITH_LLVM=OFF -DRNNC_DEPS_PREFIX="$deps" -DCMAKE_BUILD_TYPE=Release -DRNNC_WERROR=OFF > "$OUT/build-old.log" 2>&1 &&
  cmake --build build-old -j 16 --target rnnc_cli >> "$OUT/build-old.log" 2>&1 || { tail -20 "$OUT/build-old.log"; exit 1; }
S="--seq 100 --input-size 512 --hidden 512 --batch 64 --warmup 10 --iters 50 --backends fused,cudnn"
L="--seq 100 --input-size 1024 --hidden 1024 --batch 64 --warmup 10 --iters 50 --backends fused,cudnn"
run() { local tag=$1 bin=$2 name=$3
  # shellcheck disable=SC2086
  line=$(env $ENVS RNNC_CACHE_DIR=/tmp/cache-$tag "$bin" compare $ARGS 2>&1 |
         awk '$1=="fused"{f=$2} $1=="cudnn"&&$2~/^[0-9.]+$/{c=$2} $1=="fused"{e=$5} END{print f, e, "cudnn", c}')
  echo "$name $tag $line" | tee -a "$OUT/ab.txt"; }
for rep in 1 2; do
  for tag in old f0 f1 f2 f3 f4; do
    bin=build-gpu/rnnc; [ $tag = old ] && bin=build-old/rnnc
    F="RNNC_EXP_FOLD=${tag#f}"; [ $tag = old ] && F=""
    ENVS="$F RNNC_AUTOTUNE=0 RNNC_FUSED_TILE=0,0,0,8,4" ARGS="--cell lstm --math 3xtf32 $S" run $tag $bin x3_b64_ffmastep
    ENVS="$F RNNC_AUTOTUNE=0 RNNC_FUSED_TILE=0,0,0,8,4" ARGS="--cell gru --math 3xtf32 $S" run $tag $bin x3_gru_ffmastep
    ENVS="$F RNNC_AUTOTUNE=0 RNNC_FUSED_TILE=0,32,512,8,4" ARGS="--cell lstm --math 3xtf32 $L" run $tag $bin x3_h1024
  done
done
