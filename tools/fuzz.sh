#!/usr/bin/env bash
# tools/fuzz.sh: the one-command fuzz run of the layout parser and algebra (tests/fuzz).
#
#   tools/fuzz.sh [SECONDS] [LIBFUZZER_ARGS...]
#
# Configures build-fuzz with clang and -Dfuzz=true (the library is compiled with
# -fsanitize=fuzzer-no-link,address,undefined), builds fuzz_layout, copies the seed corpus
# tests/fuzz/corpus/layout into fuzz-out/corpus (kept between runs, so the corpus grows) and
# fuzzes for SECONDS (default 600) with the dictionary tests/fuzz/layout.dict and
# -max_len=512. Crash, leak, timeout and OOM inputs land in fuzz-out/crashes/, the log in
# fuzz-out/fuzz.log. Prints the final exec count and the crash files; the exit status is the
# fuzzer's (0 when nothing was found). Extra arguments go to libFuzzer, e.g. -fork=4
# -ignore_crashes=1 to keep going after a crash, or -seed=1.
#
# Reproduce a crash: build-fuzz/tests/fuzz/fuzz_layout fuzz-out/crashes/crash-...
#
# tools/fuzz.sh SECONDS builder [LIBFUZZER_ARGS...] runs fuzz_builder instead (the kernel
# builder, codegen and sampled NVRTC; see tests/fuzz/fuzz_builder.c): seeds from
# tests/fuzz/corpus/builder, no dictionary, -max_len=1024, output in fuzz-out-builder/.
# "layout" selects the default harness explicitly.
#
# On a fresh Debian 12 the script installs what it needs (clang-14, libclang-rt-14-dev for
# the libFuzzer and sanitizer runtimes, meson, ninja, pkg-config, libuv1-dev, libxxhash-dev,
# libdlpack-dev) with apt-get when run as root; the CUDA headers (cuda.h, nvrtc.h) the build also needs are
# not installed by it (see -Dcuda-root).
#
# Environment: BUILD_DIR (default build-fuzz), OUT_DIR (default fuzz-out), CC (default clang,
# else clang-14), TIRX_FUZZ_LAX=1 (only the algebraic invariants, see fuzz_layout.c),
# TIRX_FUZZ_OPS=5,25,26 (fuzz_layout runs only these operations) and TIRX_FUZZ_COUNTS=1 (it
# prints how often each operation ran when it exits: the per-operation counts; a run stopped by
# a signal prints none), TIRX_FUZZ_CMP=0 (see below: no comparison tracing).
#
# The script needs bash; run as `sh tools/fuzz.sh ...` it re-executes itself with bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=${1:-600}
if [[ $# -gt 0 ]]; then shift; fi
target=layout
if [[ ${1:-} == layout || ${1:-} == builder ]]; then target=$1; shift; fi
if ! [[ $seconds =~ ^[0-9]+$ ]]; then
  echo "usage: tools/fuzz.sh [SECONDS] [layout|builder] [LIBFUZZER_ARGS...]" >&2
  exit 2
fi
build=${BUILD_DIR:-build-fuzz}
# TIRX_FUZZ_CMP=0: a build without libFuzzer's comparison tracing (-fno-sanitize-coverage=
# trace-cmp; edge coverage, ASan and UBSan stay), in build-fuzz-nocmp. For long counting runs
# of the costly operations (the scope brute forces), where the trace hooks in their loops take
# about 80% of the time (measured: 4.9x the executions of scope_team a second); the default
# build guides the fuzzer better and is the one to grow the corpus with.
if [[ ${TIRX_FUZZ_CMP:-1} == 0 ]]; then
  build=${BUILD_DIR:-build-fuzz-nocmp}
  export CFLAGS="${CFLAGS:+$CFLAGS }-fno-sanitize-coverage=trace-cmp"
fi
out=${OUT_DIR:-fuzz-out}
fuzz_args=(-dict=tests/fuzz/layout.dict -max_len=512)
if [[ $target == builder ]]; then
  out=${OUT_DIR:-fuzz-out-builder}
  fuzz_args=(-max_len=1024)
fi

say() { printf 'fuzz.sh: %s\n' "$*"; }

# ---- toolchain ------------------------------------------------------------------------------
pick_cc() {
  if [[ -n ${CC:-} ]]; then echo "$CC"; return; fi
  for c in clang clang-14; do
    if command -v "$c" >/dev/null 2>&1; then echo "$c"; return; fi
  done
  echo clang
}

can_link_fuzzer() {
  local tmp
  tmp=$(mktemp -d)
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n ? 0 : 0; }' \
    >"$tmp/t.c"
  local rc=0
  "$1" -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" >/dev/null 2>&1 || rc=1
  rm -rf "$tmp"
  return $rc
}

missing=()
cc=$(pick_cc)
if ! command -v "$cc" >/dev/null 2>&1 || ! can_link_fuzzer "$cc"; then
  missing+=(clang-14 libclang-rt-14-dev)
fi
command -v meson >/dev/null 2>&1 || missing+=(meson)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --exists libuv || missing+=(libuv1-dev)
  pkg-config --exists libxxhash || missing+=(libxxhash-dev)
fi
# DLPack is one header (the library's tensor arguments), found by its path, not pkg-config.
[[ -f /usr/include/dlpack/dlpack.h ]] || missing+=(libdlpack-dev)
if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
    # A fresh install may have only the versioned name (clang-14), and pkg-config may have
    # been missing before: look again.
    [[ -n ${CC:-} ]] || cc=$(pick_cc)
    command -v pkg-config >/dev/null 2>&1 && {
      pkg-config --exists libuv || apt-get install -y -qq --no-install-recommends libuv1-dev
      pkg-config --exists libxxhash || apt-get install -y -qq --no-install-recommends libxxhash-dev
    }
  else
    say "missing: ${missing[*]}; install them (Debian: apt-get install ${missing[*]}) or run as root" >&2
    exit 1
  fi
fi
if ! can_link_fuzzer "$cc"; then
  say "$cc cannot link -fsanitize=fuzzer,address,undefined (install libclang-rt-14-dev)" >&2
  exit 1
fi

# ---- build ------------------------------------------------------------------------------------
if [[ -f $build/build.ninja ]]; then
  meson configure "$build" -Dfuzz=true -Dtests=disabled >/dev/null
else
  say "configuring $build with CC=$cc"
  CC=$cc meson setup "$build" -Dfuzz=true -Dtests=disabled
fi
ninja -C "$build" "tests/fuzz/fuzz_$target"
fuzzer=$build/tests/fuzz/fuzz_$target

# ---- run --------------------------------------------------------------------------------------
mkdir -p "$out/corpus" "$out/crashes"
cp -n "tests/fuzz/corpus/$target"/* "$out/corpus/" 2>/dev/null || true
before=$(find "$out/crashes" -type f | wc -l)

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
say "fuzzing for ${seconds}s: $fuzzer $out/corpus (log: $out/fuzz.log)"
set +e
"$fuzzer" "$out/corpus" "${fuzz_args[@]}" -timeout=25 \
  -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/crashes/" "$@" \
  2>&1 | tee "$out/fuzz.log"
rc=${PIPESTATUS[0]}
set -e

# ---- summary -----------------------------------------------------------------------------------
execs=$(grep -E 'stat::number_of_executed_units' "$out/fuzz.log" | tail -1 | awk '{print $2}' ||
  true)
if [[ -z $execs ]]; then # fork mode prints no final stats: take the last status line
  execs=$(grep -oE '^#[0-9]+' "$out/fuzz.log" | tail -1 | tr -d '#' || true)
fi
echo
say "exit status $rc; executions: ${execs:-unknown}; corpus: $(find "$out/corpus" -type f | wc -l) files"
after=$(find "$out/crashes" -type f | wc -l)
if [[ $after -gt 0 ]]; then
  say "crash files in $out/crashes ($((after - before)) new this run):"
  find "$out/crashes" -type f -printf '  %p (%s bytes)\n' | sort
  say "reproduce with: $fuzzer <file>"
else
  say "no crashes"
fi
exit "$rc"
