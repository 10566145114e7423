#!/usr/bin/env bash
# Runs the random-kernel differential tests (docs/testing.md, "Random
# kernels") in WORKERS processes for about SECONDS seconds: each process runs
# batches of BATCH kernels, each batch drawn from its own seed (SEED_BASE +
# 1000 * worker + batch), so that a failing batch is repeated with
#   PLAIT_RANDOM_KERNELS=BATCH PLAIT_RANDOM_KERNELS_SEED=<seed> pytest <test file>
# Writes DIR/<target>_batches.txt (one line per batch: seed, kernels, pytest's
# exit status; 124 is a batch cut off at the end of the time) and the log of
# every batch that did not pass, DIR/<target>_<seed>.log.
#
#   tools/random_kernels.sh cpu 14 40 1800 100000 /tmp/random-cpu
#   tools/random_kernels.sh cuda 5 20 1800 400000 /tmp/random-cuda
#
# PYTHON (default python3) is the interpreter with plait installed.
set -uo pipefail

if [[ $# -ne 6 || ! $1 =~ ^(cpu|cuda)$ ]]; then
  echo "usage: tools/random_kernels.sh cpu|cuda WORKERS BATCH SECONDS SEED_BASE DIR" >&2
  exit 64
fi
target=$1 workers=$2 batch=$3 seconds=$4 base=$5 out=$6
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
test=$root/tests/python/test_random_kernels.py
[[ $target == cuda ]] && test=$root/tests/gpu/test_cuda_random_kernels.py
mkdir -p "$out"
end=$((SECONDS + seconds))

worker() {
  local w=$1 b=0 seed log rc
  while ((SECONDS < end)); do
    seed=$((base + w * 1000 + b))
    log=$out/${target}_${seed}.log
    # A batch may run a minute past the end before it is cut off.
    PLAIT_RANDOM_KERNELS=$batch PLAIT_RANDOM_KERNELS_SEED=$seed \
      timeout $((end - SECONDS + 60)) "$python" -m pytest "$test" -q -p no:cacheprovider >"$log" 2>&1
    rc=$?
    echo "$target seed=$seed kernels=$batch rc=$rc" >>"$out/${target}_batches.txt"
    ((rc == 0)) && rm -f "$log"
    b=$((b + 1))
  done
}

for w in $(seq 1 "$workers"); do worker "$w" & done
wait
echo "$target: $(awk '{print $4}' "$out/${target}_batches.txt" | sort | uniq -c | tr -s ' \n' ' ')"
