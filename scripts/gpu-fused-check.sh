#!/usr/bin/env bash
# gpu-fused-check.sh: one GPU machine call for the fused backend's whole
# models (issue 9): builds (Release, no LLVM) against the packages carried
# in .deps/ (scripts/gpu-deps.sh), runs the gpu_fused* tests, then `rnnc
# compare` fused against cuDNN at the issue's shapes.  Logs and JSON go to
# a folder packed into $OUT/results.tgz; a short table is printed last.
#   TESTS=0  skip the tests     COMPARE=0  skip the comparisons
#   ONLY=regex  only the comparisons whose name matches
#   TESTLIST="gpu_fused_model ..."  the tests to run (default all three;
#             gpu_fused_model also runs with RNNC_FUSED_CHUNK=3: many chunks,
#             and RNNC_FUSED_CHUNKS=7,1,11: chunks of unequal lengths, one of
#             a single step, which starts from a copy of FIN, not FIN itself)
#   SEQ=1     also the multi-layer comparisons with RNNC_FUSED_SHARE=1
#             (layers and directions one after another, on all SMs)
#   CHUNKS="8 25"  also the unidirectional stacks at these chunk lengths
#   REPEAT=n  the two stacks n - 1 more times, each in its own process, and
#             cuDNN's times over all of them (cuDNN's time for a stack moves
#             between processes in two groups, bench/results/h100/final-1127)
#   VARIANTS="BESIDE=0 CHUNK=7"  also every comparison (after ONLY) with
#             RNNC_FUSED_<variant> set, named compare_<name>_<variant>
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
gpu_env results.tgz
# Time every autotuning candidate: on a cold kernel cache the default 2 s
# leaves some uncompiled, so the figures would depend on the cache.
export RNNC_AUTOTUNE_MS=${RNNC_AUTOTUNE_MS:-40000}
gpu_machine
t0=$(date +%s)
gpu_configure &&
cmake --build build-gpu -j 16 --target rnnc_cli gpu_fused gpu_fused_model gpu_fused_large gpu_bundle \
      bench_fused_bench \
      >> "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - t0 )) s"
[ $rc -ne 0 ] && { grep -E "error" "$OUT/build.log" | head -20; exit 1; }

if [ "${TESTS:-1}" != 0 ]; then
  for t in ${TESTLIST:-gpu_fused_large gpu_fused_model gpu_fused}; do
    t1=$(date +%s)
    timeout "${TEST_TIMEOUT:-400}" build-gpu/tests/$t > "$OUT/$t.log" 2>&1
    echo "== $t rc=$? in $(( $(date +%s) - t1 )) s"
    grep -E "FAILED|ERROR|PASSED|rel err" "$OUT/$t.log" | head -12
    [ "$t" = gpu_fused_model ] || continue
    t1=$(date +%s)
    RNNC_FUSED_CHUNK=3 timeout "${TEST_TIMEOUT:-400}" build-gpu/tests/$t > "$OUT/${t}_chunk3.log" 2>&1
    echo "== $t (RNNC_FUSED_CHUNK=3) rc=$? in $(( $(date +%s) - t1 )) s"
    grep -E "FAILED|ERROR|PASSED|rel err" "$OUT/${t}_chunk3.log" | head -12
    t1=$(date +%s)
    RNNC_FUSED_CHUNKS=7,1,11 timeout "${TEST_TIMEOUT:-400}" build-gpu/tests/$t > "$OUT/${t}_cuts.log" 2>&1
    echo "== $t (RNNC_FUSED_CHUNKS=7,1,11) rc=$? in $(( $(date +%s) - t1 )) s"
    grep -E "FAILED|ERROR|PASSED|rel err" "$OUT/${t}_cuts.log" | head -12
  done
fi

cmp1() { local name=$1; shift
  timeout 120 build-gpu/rnnc compare --seq 100 --warmup 10 --iters 50 \
    --json "$OUT/compare_$name.json" --backends fused,cudnn "$@" > "$OUT/compare_$name.txt" 2>&1
  echo "== compare $name rc=$?"; grep -E "^(fused|cudnn) |rnnc compare" "$OUT/compare_$name.txt" | head -6
}
cmp() { local name=$1; shift
  [[ "$name" =~ ${ONLY:-.} ]] || return 0
  cmp1 "$name" "$@"
  for v in ${VARIANTS:-}; do
    ( export "RNNC_FUSED_$v"; cmp1 "${name}_${v/=/}" "$@" )
  done
}
if [ "${COMPARE:-1}" != 0 ]; then
  cmp lstm_l4_b64 --cell lstm --batch 64 --input-size 512 --hidden 512 --layers 4
  cmp lstm_l2_bi_b64 --cell lstm --batch 64 --input-size 512 --hidden 512 --layers 2 --bidirectional
  cmp lstm_len_b64 --cell lstm --batch 64 --input-size 512 --hidden 512 --lengths random:30
  cmp lstm_h1024_b64 --cell lstm --batch 64 --input-size 1024 --hidden 1024
  cmp lstm_h1024_b256 --cell lstm --batch 256 --input-size 1024 --hidden 1024
  cmp lstm_h512_b128 --cell lstm --batch 128 --input-size 512 --hidden 512
  cmp lstm_h512_b64 --cell lstm --batch 64 --input-size 512 --hidden 512
  cmp lstm_h2048_b64 --cell lstm --batch 64 --input-size 2048 --hidden 2048
  cmp lstm_l4_b1 --cell lstm --batch 1 --input-size 512 --hidden 512 --layers 4
  cmp gru_l2_bi_b64 --cell gru --batch 64 --input-size 512 --hidden 512 --layers 2 --bidirectional
  stacks() { local sfx=$1
    cmp lstm_l4_b64$sfx --cell lstm --batch 64 --input-size 512 --hidden 512 --layers 4
    cmp lstm_l2_bi_b64$sfx --cell lstm --batch 64 --input-size 512 --hidden 512 --layers 2 --bidirectional
  }
  [ "${SEQ:-0}" = 1 ] && RNNC_FUSED_SHARE=1 stacks _seq
  for c in ${CHUNKS:-}; do
    RNNC_FUSED_CHUNK=$c cmp lstm_l4_b64_c$c --cell lstm --batch 64 --input-size 512 --hidden 512 --layers 4
  done
  for ((r = 2; r <= ${REPEAT:-1}; r++)); do stacks _r$r; done
  if [ "${REPEAT:-1}" -gt 1 ]; then
    for m in lstm_l4_b64 lstm_l2_bi_b64; do
      for f in "$OUT"/compare_${m}.txt "$OUT"/compare_${m}_r*.txt; do
        awk '$1 == "fused" { fu = $2 } $1 == "cudnn" && $2 ~ /^[0-9.]+$/ { cu = $2 }
             END { if (fu && cu) printf "%s %s\n", fu, cu }' "$f"
      done | sort -k2 -n | awk -v m="$m" '{ c[NR] = $2; r = $2 / $1; if (NR == 1 || $1 < lo) lo = $1
                                             if (NR == 1 || $1 > hi) hi = $1; n17 += r >= 1.7 }
        END { printf "== %s over %d processes: cuDNN %s .. %s ms, median %s; fused %s .. %s; " \
              "at least 1.7x in %d\n", m, NR, c[1], c[NR], c[int((NR + 1) / 2)], lo, hi, n17 }'
    done | tee "$OUT/stacks_spread.txt"
  fi
fi
echo "total $(( $(date +%s) - t0 )) s"
