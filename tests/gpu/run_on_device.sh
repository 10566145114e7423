#!/usr/bin/env bash
# Runs the CUDA tests on a machine with an NVIDIA GPU (H100/H200; CUDA
# toolkit, PyTorch and CuPy installed; no network needed):
#   1. builds and installs plait into the current Python environment
#      (pip install --no-build-isolation --no-deps .; needs scikit-build-core,
#      nanobind, numpy and pytest already installed),
#   2. runs tests/gpu with pytest (GPU tests and the compile tests),
#   3. runs the GPU tests under compute-sanitizer memcheck, then racecheck.
# Each step's log goes to $OUT/<step>.log ($OUT defaults to ./gpu-test-logs);
# a summary is printed and written to $OUT/summary.txt. Exit status: 0 when
# every step passed.
#
# usage: tests/gpu/run_on_device.sh [pytest arguments, e.g. -k vector_add]
# environment: OUT, PYTHON (default python3), CUDA_HOME (default /usr/local/cuda),
#              SKIP_SANITIZER=1 to stop after step 2.
set -uo pipefail
cd "$(dirname "$0")/../.."

OUT=${OUT:-$PWD/gpu-test-logs}
PYTHON=${PYTHON:-python3}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$OUT"
export PATH="$CUDA_HOME/bin:$PATH"
# Kernels' host parts are built by the system compiler. (The GPU image's
# default $CXX, /opt/gcc, links libstdc++ statically; the extension keeps
# that copy to itself, python/CMakeLists.txt, so either compiler builds it.)
if [ -x /usr/bin/g++ ]; then
  export PLAIT_CXX=/usr/bin/g++
fi
# One cache for all steps: kernels built by step 2 are reused under the sanitizers.
export PLAIT_CACHE_DIR
PLAIT_CACHE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/plait-gpu-cache-XXXXXX")
trap 'rm -rf "$PLAIT_CACHE_DIR"' EXIT

summary="$OUT/summary.txt"
: > "$summary"
failed=0

# step NAME COMMAND...: runs COMMAND with its output in $OUT/NAME.log.
step() {
  local name=$1
  shift
  local start=$SECONDS
  echo "== $name: $*" | tee -a "$summary"
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "   exit $rc after $((SECONDS - start)) s; last lines of $OUT/$name.log:" | tee -a "$summary"
  tail -n 5 "$OUT/$name.log" | sed 's/^/     /' | tee -a "$summary"
  [ "$rc" -eq 0 ] || failed=1
  return "$rc"
}

step device sh -c "nvidia-smi; $PYTHON -c 'import sys; print(sys.version)'; nvcc --version"
step build "$PYTHON" -m pip install --no-build-isolation --no-deps -v . || { echo "build failed"; exit 1; }

SCRIPTS=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
export PLAIT_PLAITC="$SCRIPTS/plaitc"
step availability "$PYTHON" -c 'import plait; print("cuda_available:", plait.cuda_available(), plait.cuda_unavailable_reason()); print(plait._core.cuda_device())'

step pytest "$PYTHON" -m pytest tests/gpu -v -rs -p no:cacheprovider "$@"

if [ "${SKIP_SANITIZER:-0}" != 1 ]; then
  SANITIZER=$(command -v compute-sanitizer || echo "$CUDA_HOME/bin/compute-sanitizer")
  for tool in memcheck racecheck; do
    step "sanitizer-$tool" "$SANITIZER" --tool "$tool" --error-exitcode 99 --target-processes all \
      --print-limit 50 "$PYTHON" -m pytest tests/gpu/test_cuda_run.py -q -p no:cacheprovider "$@"
  done
fi

echo "== overall: $([ "$failed" = 0 ] && echo PASSED || echo FAILED) (logs in $OUT)" | tee -a "$summary"
exit "$failed"
