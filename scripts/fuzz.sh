#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan + UBSan, in build-fuzz) and runs each
# one, or the ones named, for a given time on a scratch copy of its seed corpus
# (tests/fuzz/corpus/<target>, with tests/fuzz/dict/<target>.dict), so the repository is not
# modified. Prints per target: executions, exec/s, peak RSS, wall time and the result; exits
# non-zero when any target crashed, timed out, ran out of memory or leaked. Inputs that
# failed are kept in build-fuzz/findings/<target>/ with the target's log.
#
# usage: scripts/fuzz.sh [--seconds N | --runs N] [--parallel N] [--keep DIR] [--build-dir DIR] [--list] [target...]
#        scripts/fuzz.sh --make-corpus [DIR...]
#   --seconds N     fuzz each target for N seconds (default 60)
#   --runs N        fuzz each target for N executions instead
#   --parallel N    fuzz N targets at once (default: the number of cores; each target is one process)
#   --keep DIR      keep each target's grown corpus in DIR/<target> (for --make-corpus DIR)
#   --list          print the targets and exit
#   --make-corpus   rewrite tests/fuzz/corpus/ from the seed writer (tests/fuzz/make_seeds.cpp),
#                   the corpus already there and the corpora in DIR.../<target>, each reduced
#                   to the inputs that add coverage (libFuzzer -merge=1)
# Environment: VKF_FUZZ_FLAGS adds libFuzzer flags to every run (e.g. "-jobs=2 -workers=2").
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

targets_all=(safetensors checkpoint_index model_config npy gguf tokenizer quantized_checkpoint pipeline_cache limits
  device_selector json bench_results serve_request gbnf sequence_state)
# Largest input each target is given (libFuzzer -max_len): well above its seeds, small enough
# that one execution stays in milliseconds.
declare -A max_len=(
  [safetensors]=65536 [checkpoint_index]=16384 [model_config]=16384 [npy]=16384 [gguf]=65536 [tokenizer]=65536
  [quantized_checkpoint]=65536 [pipeline_cache]=4096 [limits]=1024 [device_selector]=256 [json]=65536
  [bench_results]=65536 [serve_request]=16384 [gbnf]=4096 [sequence_state]=16384
)

seconds=60
runs=""
keep=""
build=build-fuzz
parallel=$(nproc)
make_corpus=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --keep) keep=$(realpath -m "$2"); shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --list) printf '%s\n' "${targets_all[@]}"; exit 0 ;;
    --make-corpus) make_corpus=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
extra_dirs=()
if [ "$make_corpus" = 1 ]; then
  extra_dirs=("${targets[@]+"${targets[@]}"}")
  targets=()
fi
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${targets_all[@]}")
fi
for t in "${targets[@]}"; do
  if [ -z "${max_len[$t]:-}" ]; then
    echo "fuzz.sh: no fuzz target '$t' (--list names them)" >&2
    exit 2
  fi
done

# --- build ---------------------------------------------------------------------------------
bash scripts/deps.sh
cxx=$(command -v clang++-14 || command -v clang++ || true)
cc=$(command -v clang-14 || command -v clang || true)
runtime=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -n 1 || true)
if [ -z "$cxx" ] || [ -z "$cc" ] || { [ "$(uname -m)" = x86_64 ] && [ -z "$runtime" ]; }; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  echo "fuzz.sh: installing clang and libFuzzer (clang libclang-rt-14-dev)"
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev
  cxx=$(command -v clang++-14 || command -v clang++)
  cc=$(command -v clang-14 || command -v clang)
fi
build_start=$(date +%s)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_FUZZ=ON \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$build" --parallel "$(nproc)" --target vkf_fuzz
echo "fuzz.sh: built in $(($(date +%s) - build_start)) s"
bin="$root/$build/tests/fuzz"

# The targets' scratch directories and the scratch corpora go here, and go at the end.
scratch=$(mktemp -d "$( [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/vkf-fuzz-run-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export VKF_FUZZ_SCRATCH="$scratch"
# Sanitizer reports stop the run with the stack; libFuzzer sets the rest.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

common_flags=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 -print_final_stats=1)

# --- seed corpus ---------------------------------------------------------------------------
if [ "$make_corpus" = 1 ]; then
  seeds="$scratch/seeds"
  "$bin/vkf_fuzz_seeds" "$seeds" "$root"
  for t in "${targets[@]}"; do
    corpus="tests/fuzz/corpus/$t"
    inputs=("$seeds/$t")
    if [ -d "$corpus" ]; then
      cp -r "$corpus" "$scratch/old-$t"
      inputs+=("$scratch/old-$t")
    fi
    for d in "${extra_dirs[@]+"${extra_dirs[@]}"}"; do
      if [ -d "$d/$t" ]; then
        inputs+=("$d/$t")
      fi
    done
    rm -rf "$corpus" && mkdir -p "$corpus"
    "$bin/fuzz_$t" -merge=1 "${common_flags[@]}" -max_len="${max_len[$t]}" "$corpus" "${inputs[@]}" \
      >"$scratch/merge-$t.log" 2>&1 || { cat "$scratch/merge-$t.log"; exit 1; }
    # Inputs keep their seed's name where they are one; regression inputs are kept whatever
    # coverage they add (the runs replay them).
    for d in "${inputs[@]}"; do
      for f in "$d"/*; do
        [ -f "$f" ] || continue
        sha=$(sha1sum "$f" | cut -d' ' -f1)
        name=$(basename "$f")
        if [ -f "$corpus/$sha" ] && [ "$name" != "$sha" ]; then
          mv "$corpus/$sha" "$corpus/$name"
        fi
        if [[ "$name" == regression-* ]]; then
          cp "$f" "$corpus/$name"
          rm -f "$corpus/$sha"
        fi
      done
    done
    printf '%-22s %4d inputs %8d bytes\n' "$t" "$(ls "$corpus" | wc -l)" "$(cat "$corpus"/* | wc -c)"
  done
  echo "fuzz.sh: tests/fuzz/corpus/ rewritten ($(du -sh tests/fuzz/corpus | cut -f1))"
  exit 0
fi

# --- runs ----------------------------------------------------------------------------------
findings="$root/$build/findings"
limit_flag=(-max_total_time="$seconds")
if [ -n "$runs" ]; then
  limit_flag=(-runs="$runs")
fi
read -r -a user_flags <<<"${VKF_FUZZ_FLAGS:-}"
# fuzz_target T: fuzzes T on a scratch copy of its corpus and writes its table row to
# $scratch/row-T (and T to $scratch/failed-T on a finding). Each target is one process on one
# core, so the targets run --parallel at a time (default: the machine's cores).
fuzz_target() {
  local t=$1
  local work="$scratch/$t"
  mkdir -p "$work/corpus"
  if [ -d "tests/fuzz/corpus/$t" ]; then
    cp -r "tests/fuzz/corpus/$t/." "$work/corpus/"
  fi
  local dict=()
  if [ -f "tests/fuzz/dict/$t.dict" ]; then
    dict=(-dict="$root/tests/fuzz/dict/$t.dict")
  fi
  rm -rf "${findings:?}/$t" && mkdir -p "$findings/$t"
  local log="$findings/$t/fuzz.log"
  echo "fuzz.sh: $t ($([ -n "$runs" ] && echo "$runs runs" || echo "$seconds s"))"
  local start status=0
  start=$(date +%s%N)
  (cd "$work" && "$bin/fuzz_$t" "${common_flags[@]}" "${limit_flag[@]}" -max_len="${max_len[$t]}" "${dict[@]}" \
    -artifact_prefix="$findings/$t/" "${user_flags[@]+"${user_flags[@]}"}" corpus) >"$log" 2>&1 || status=$?
  local wall_ms=$((($(date +%s%N) - start) / 1000000))
  if [ -n "$keep" ]; then
    rm -rf "${keep:?}/$t" && mkdir -p "$keep" && cp -r "$work/corpus" "$keep/$t"
  fi
  # libFuzzer's final statistics (summed over workers with -jobs).
  logs() { cat "$log" "$work"/fuzz-*.log 2>/dev/null || true; }
  stat_sum() { logs | awk -v key="stat::$1:" '$1 == key {s += $2} END {print s + 0}'; }
  local execs per_second rss result=ok
  execs=$(stat_sum number_of_executed_units)
  per_second=$(stat_sum average_exec_per_sec)
  rss=$(logs | awk '$1 == "stat::peak_rss_mb:" && $2 > m {m = $2} END {print m + 0}')
  if [ "$status" -ne 0 ] || ls "$findings/$t" | grep -qE '^(crash|timeout|oom|leak)-'; then
    if ls "$findings/$t" | grep -q '^oom-' || grep -q "ERROR: libFuzzer: out-of-memory" "$log"; then
      result=OOM
    elif ls "$findings/$t" | grep -q '^timeout-' || grep -q "ERROR: libFuzzer: timeout" "$log"; then
      result=TIMEOUT
    elif ls "$findings/$t" | grep -q '^leak-' || grep -q "LeakSanitizer" "$log"; then
      result=LEAK
    else
      result=CRASH
    fi
    echo "$t" >"$scratch/failed-$t"
    grep -m1 -B2 -A30 -E "ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:|fuzz: " "$log" || tail -n 40 "$log"
  fi
  printf '%-22s %12s %9s %8s MB %6d.%d s  %s\n' "$t" "$execs" "$per_second" "$rss" $((wall_ms / 1000)) \
    $((wall_ms % 1000 / 100)) "$result" >"$scratch/row-$t"
}
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_target "$t" &
  running=$((running + 1))
done
wait
failed=()
rows=()
for t in "${targets[@]}"; do
  rows+=("$(cat "$scratch/row-$t")")
  if [ -f "$scratch/failed-$t" ]; then
    failed+=("$t")
  fi
done

printf '\n%-22s %12s %9s %11s %10s  %s\n' target executions "exec/s" "peak RSS" wall result
printf '%s\n' "${rows[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}; inputs and logs in $findings/<target>/"
  exit 1
fi
echo "fuzz.sh: no findings"
