#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build and run the libFuzzer targets of the device model (docs/fuzzing.md).
#
# Usage: scripts/fuzz.sh [--seconds N] [--build-dir DIR] [--build-only] [--fresh] [target...]
#   targets: rx (tests/fuzz/fuzz_rx.c), guest (tests/fuzz/fuzz_guest.c), snapshot
#            (tests/fuzz/fuzz_snapshot.c); default all three; and qemu: QEMU's
#            generic-fuzz on the qrnic device (scripts/build-qemu.sh --variant fuzz)
#   --seconds N     run each target for N seconds (default 60)
#   --build-dir DIR where binaries, working corpora, logs and crash files go
#                   (default build-fuzz in the repository)
#   --build-only    build the targets and stop
#   --fresh         start from the seed corpus alone (drop what earlier runs found)
#
# The model, firmware, harness and fuzz sources are compiled with clang and
# -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined (the
# gcc/meson build is not touched).  clang-14 and libclang-rt-14-dev (its
# libFuzzer) are installed with apt-get when missing.  Each target starts
# from its seed corpus (tests/fuzz/corpus/<target>, copied into
# DIR/corpus/<target>, which keeps what earlier runs found), and the script
# prints per target: executions, exec/s, coverage (cov, ft) and whether it
# crashed.  Crash inputs land in DIR/crashes/<target>/; the exit status is
# 1 if any target crashed (or leaked, or hung), 2 on a usage or build error,
# 3 if clang/libFuzzer is missing and could not be installed.
#
# The qemu target runs qemu-fuzz-x86_64 --fuzz-target=generic-fuzz-qrnic
# (QEMU 10.0.2's generic-fuzz with the "qrnic" config that
# scripts/build-qemu.sh --variant fuzz adds: q35, -device qrnic on a hub-port
# netdev, MMIO/DMA/PCI-config fuzzing of qrnic's BARs), built with clang,
# ASan and UBSan; its seeds are tests/fuzz/corpus/qemu
# (tests/fuzz/make_qemu_corpus.py).  A cold build of that QEMU takes long
# (docs/fuzzing.md); later runs reuse it until hw/, model/ or firmware/ change.
# QRNIC_QEMU_FUZZ=/path/qemu-fuzz-x86_64 uses that binary instead.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=fuzz.sh
. "$ROOT/scripts/lib/debian.sh"   # pkg_installed

usage() {
    sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
bad() { echo "$PROG: $*" >&2; echo >&2; usage; }

SECONDS_PER=60
BUILD=$ROOT/build-fuzz
BUILD_ONLY=0
FRESH=0
TARGETS=()
while (($#)); do
    case $1 in
        --seconds)
            [ $# -ge 2 ] || bad "--seconds needs a value"
            [[ $2 =~ ^[1-9][0-9]*$ ]] || bad "--seconds: '$2' is not a positive whole number"
            SECONDS_PER=$2; shift 2 ;;
        --seconds=*)
            v=${1#*=}
            [[ $v =~ ^[1-9][0-9]*$ ]] || bad "--seconds: '$v' is not a positive whole number"
            SECONDS_PER=$v; shift ;;
        --build-dir)
            [ $# -ge 2 ] && [ -n "$2" ] || bad "--build-dir needs a directory"
            BUILD=$2; shift 2 ;;
        --build-dir=*)
            BUILD=${1#*=}; [ -n "$BUILD" ] || bad "--build-dir needs a directory"; shift ;;
        --build-only) BUILD_ONLY=1; shift ;;
        --fresh) FRESH=1; shift ;;
        -h|--help) usage ;;
        -*) bad "unknown option '$1'" ;;
        rx|fuzz_rx) TARGETS+=(rx); shift ;;
        guest|fuzz_guest) TARGETS+=(guest); shift ;;
        snapshot|fuzz_snapshot) TARGETS+=(snapshot); shift ;;
        qemu) TARGETS+=(qemu); shift ;;
        *) bad "unknown target '$1' (targets: rx, guest, snapshot, qemu)" ;;
    esac
done
((${#TARGETS[@]})) || TARGETS=(rx guest snapshot)
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
MODEL_TARGETS=() QEMU_FUZZ=0
for t in "${TARGETS[@]}"; do
    if [ "$t" = qemu ]; then QEMU_FUZZ=1; else MODEL_TARGETS+=("$t"); fi
done

# ---- QEMU's generic-fuzz (target qemu) -------------------------------------------------
QEMU_FUZZ_BIN=
if ((QEMU_FUZZ)) && [ -n "${QRNIC_QEMU_FUZZ:-}" ]; then
    [ -x "$QRNIC_QEMU_FUZZ" ] || { echo "$PROG: QRNIC_QEMU_FUZZ=$QRNIC_QEMU_FUZZ is not executable" >&2; exit 2; }
    QEMU_FUZZ_BIN=$QRNIC_QEMU_FUZZ
elif ((QEMU_FUZZ)); then
    mkdir -p "$BUILD/logs"
    echo "$PROG: building qemu-fuzz-x86_64 (scripts/build-qemu.sh --variant fuzz; log $BUILD/logs/build-qemu-fuzz.log)" >&2
    QEMU_FUZZ_BIN=$(bash "$ROOT/scripts/build-qemu.sh" --variant fuzz 2>"$BUILD/logs/build-qemu-fuzz.log" | tail -n1) \
        || { tail -n 20 "$BUILD/logs/build-qemu-fuzz.log" >&2; echo "$PROG: building qemu-fuzz-x86_64 failed" >&2; exit 2; }
    [ -x "$QEMU_FUZZ_BIN" ] || { echo "$PROG: no qemu-fuzz-x86_64 ('$QEMU_FUZZ_BIN')" >&2; exit 2; }
    echo "$PROG: built $QEMU_FUZZ_BIN" >&2
fi
if ((${#MODEL_TARGETS[@]} == 0)); then
    ((BUILD_ONLY)) && exit 0
else

# ---- compiler and libFuzzer ------------------------------------------------------
CC=${QRNIC_FUZZ_CC:-clang-14}
SAN=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)

links_libfuzzer() {
    local t
    t=$(mktemp -d)
    echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n > 1; }' \
        >"$t/t.c"
    "$CC" "${SAN[@]}" "$t/t.c" -o "$t/t" >/dev/null 2>&1
    local rc=$?
    rm -rf "$t"
    return $rc
}

if ! command -v "$CC" >/dev/null 2>&1 || ! links_libfuzzer; then
    PKGS=(clang-14 libclang-rt-14-dev)
    if ! pkg_installed "${PKGS[@]}"; then
        echo "$PROG: installing ${PKGS[*]}" >&2
        SUDO=
        [ "$(id -u)" = 0 ] || SUDO=sudo
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get update -q >&2 || true
        $SUDO apt-get install -y -q "${PKGS[@]}" >&2 \
            || { echo "$PROG: apt-get install ${PKGS[*]} failed" >&2; exit 3; }
    fi
    command -v "$CC" >/dev/null 2>&1 || { echo "$PROG: $CC not found" >&2; exit 3; }
    links_libfuzzer || { echo "$PROG: $CC cannot link -fsanitize=fuzzer (libclang-rt-14-dev?)" >&2; exit 3; }
fi

# ---- build ---------------------------------------------------------------------------
CFLAGS=(-g -O1 -fno-omit-frame-pointer -std=gnu11 "${SAN[@]}"
        -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
        -Wno-sign-compare -Wno-unknown-attributes -Werror=implicit-function-declaration
        -I"$ROOT/model" -I"$ROOT/model/abi" -I"$ROOT/firmware" -I"$ROOT/tests/harness"
        -I"$ROOT/tests/fuzz")
OBJ=$BUILD/obj
mkdir -p "$OBJ"
# A change of compiler or flags rebuilds everything.
STAMP="$CC ${CFLAGS[*]}"
if [ "$(cat "$OBJ/flags" 2>/dev/null)" != "$STAMP" ]; then
    rm -f "$OBJ"/*.o
    printf '%s' "$STAMP" >"$OBJ/flags"
fi
LIB_SRC=("$ROOT"/model/*.c "$ROOT"/firmware/*.c "$ROOT/tests/harness/harness.c"
         "$ROOT/tests/fuzz/fuzz_common.c")
HEADERS=("$ROOT"/model/*.h "$ROOT"/model/abi/*.h "$ROOT"/firmware/*.h "$ROOT"/tests/harness/*.h
         "$ROOT"/tests/fuzz/*.h)
newest_header=$(ls -t "${HEADERS[@]}" | head -n1)

obj_of() { local b=${1#"$ROOT"/}; echo "$OBJ/${b//\//_}.o"; }

compile() {   # compile SRC: into its object if out of date
    local src=$1 o
    o=$(obj_of "$src")
    if [ -f "$o" ] && [ "$o" -nt "$src" ] && [ "$o" -nt "$newest_header" ]; then
        return 0
    fi
    "$CC" "${CFLAGS[@]}" -c "$src" -o "$o.tmp" && mv "$o.tmp" "$o"
}

ALL_SRC=("${LIB_SRC[@]}")
for t in "${MODEL_TARGETS[@]}"; do ALL_SRC+=("$ROOT/tests/fuzz/fuzz_$t.c"); done
# two compilers at a time (the machine is shared)
pids=()
fail=0
for src in "${ALL_SRC[@]}"; do
    compile "$src" &
    pids+=($!)
    if ((${#pids[@]} >= 2)); then
        wait "${pids[0]}" || fail=1
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
((fail == 0)) || { echo "$PROG: compilation failed" >&2; exit 2; }

LIB_OBJ=()
for src in "${LIB_SRC[@]}"; do LIB_OBJ+=("$(obj_of "$src")"); done
for t in "${MODEL_TARGETS[@]}"; do
    bin=$BUILD/fuzz_$t
    main=$(obj_of "$ROOT/tests/fuzz/fuzz_$t.c")
    relink=0
    [ -x "$bin" ] || relink=1
    for o in "$main" "${LIB_OBJ[@]}"; do [ "$o" -nt "$bin" ] && relink=1; done
    if ((relink)); then
        "$CC" "${SAN[@]}" "$main" "${LIB_OBJ[@]}" -o "$bin.tmp" -lm \
            || { echo "$PROG: linking fuzz_$t failed" >&2; exit 2; }
        mv "$bin.tmp" "$bin"
    fi
done
echo "$PROG: built ${MODEL_TARGETS[*]/#/$BUILD/fuzz_}" >&2
((BUILD_ONLY)) && exit 0
fi

# ---- run -----------------------------------------------------------------------------
max_len() { case $1 in rx) echo 16384 ;; snapshot) echo 32768 ;; *) echo 4096 ;; esac; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=32:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
printf '%-12s %12s %9s %7s %8s  %s\n' target execs exec/s cov ft result
for t in "${TARGETS[@]}"; do
    corpus=$BUILD/corpus/$t
    crashes=$BUILD/crashes/$t
    log=$BUILD/logs/fuzz_$t.log
    ((FRESH)) && rm -rf "$corpus"
    mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
    cp -n "$ROOT/tests/fuzz/corpus/$t"/* "$corpus"/ 2>/dev/null || true
    before=$(ls "$crashes" | wc -l)
    set +e
    if [ "$t" = qemu ]; then
        # generic-fuzz keeps one QEMU for all inputs (reset between them), so
        # libFuzzer's per-input leak check is off here (QEMU's and glib's
        # lazily made caches would show as leaks); LeakSanitizer still runs
        # at exit.  QEMU_FUZZ_ARGS/QEMU_FUZZ_OBJECTS come from the config.
        (cd "$BUILD" && "$QEMU_FUZZ_BIN" --fuzz-target=generic-fuzz-qrnic \
            -max_total_time="$SECONDS_PER" -max_len=4096 -timeout=30 -rss_limit_mb=4096 \
            -detect_leaks=0 -print_final_stats=1 -artifact_prefix="$crashes/" \
            "$corpus") >"$log" 2>&1
    else
        "$BUILD/fuzz_$t" -max_total_time="$SECONDS_PER" -max_len="$(max_len "$t")" \
            -timeout=30 -rss_limit_mb=2560 -detect_leaks=1 -print_final_stats=1 \
            -use_value_profile=1 -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1
    fi
    rc=$?
    set -e
    after=$(ls "$crashes" | wc -l)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
    last=$(grep -E '^#[0-9]+' "$log" | grep -E ' cov: ' | tail -n1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    result=ok
    if [ "$rc" != 0 ] || [ "$after" -gt "$before" ]; then
        result="CRASH (exit $rc): $(ls -t "$crashes" | head -n1 | sed "s|^|$crashes/|"), log $log"
        status=1
    fi
    name=fuzz_$t; [ "$t" = qemu ] && name=qemu-generic
    printf '%-12s %12s %9s %7s %8s  %s\n' "$name" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
        "${ft:-?}" "$result"
done
exit "$status"
