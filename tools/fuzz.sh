#!/usr/bin/env bash
# Builds the libFuzzer target (tools/fuzz/README.md) in build/fuzz and runs it
# for SECONDS seconds over the committed seed corpus and the working corpus
# build/fuzz/corpus, which keeps what earlier runs found. Any further
# arguments go to libFuzzer (e.g. -max_len=4096 -fork=2). Crashing inputs are
# written to build/fuzz/artifacts/; the exit status is libFuzzer's (non-zero
# on a finding).
#
#   tools/fuzz.sh 1800                 # half an hour
#   build/fuzz/plait_fuzz_compiler build/fuzz/artifacts/crash-...   # replay one
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
  echo "usage: tools/fuzz.sh SECONDS [libFuzzer options...]" >&2
  exit 64
fi
seconds=$1
shift

root=$(cd "$(dirname "$0")/.." && pwd)
build=${PLAIT_FUZZ_BUILD:-$root/build/fuzz}
cxx=${CLANGXX:-clang++}

# -O1 with line tables: a third less build time than -O2 -g under the
# sanitizers, and stack traces still name lines.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_COMPILER="$cxx" \
  -DPLAIT_FUZZ=ON -DPLAIT_BUILD_TESTS=OFF -DPLAIT_BUILD_PYTHON=OFF >/dev/null
ninja -C "$build" --quiet plait_fuzz_compiler

mkdir -p "$build/corpus" "$build/artifacts"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# -timeout: one input compiling for longer is a hang, a finding. Under the
# sanitizers a 4 KiB kernel of many broadcasting slices takes 16 s on this
# machine (its versioned code is megabytes, linear in its size), so the limit
# is twice that.
exec "$build/plait_fuzz_compiler" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
  -dict="$root/tools/fuzz/plait.dict" -artifact_prefix="$build/artifacts/" -print_final_stats=1 \
  "$@" "$build/corpus" "$root/tools/fuzz/corpus"
