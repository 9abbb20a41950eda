#!/usr/bin/env bash
# Build the qrnic rdma-core provider (guest-driver/provider) for the guest's
# rdma-core 56.1 (Debian 13 trixie, private ABI IBVERBS_PRIVATE_34).
#
# Usage: scripts/build-provider.sh [--out DIR] [--force] [--no-test] [--sparse] [--help]
#   OUT=$(scripts/build-provider.sh)   # last stdout line = the output directory
#   cp $OUT/libqrnic-rdmav34.so /usr/lib/x86_64-linux-gnu/libibverbs/   # in the guest
#   cp $OUT/qrnic.driver /etc/libibverbs.d/
#
# Progress goes to stderr (and to a log file); stdout carries only the path of
# the output directory, which holds libqrnic-rdmav34.so, qrnic.driver
# ("driver qrnic") and qrnic_wqe_test.
#
# What it does (cached under $QRNIC_CACHE, default /var/cache/qrnic):
#   - installs the Debian build packages it needs (cmake, ninja-build, gcc,
#     pkg-config, ...) from the host's own apt sources;
#   - fetches rdma-core_56.1.orig.tar.gz once into dist/: "apt-get source
#     --download-only" through a PRIVATE apt list (apt-trixie/, a deb-src line
#     for trixie on the host's Debian mirror; the host's apt configuration is
#     not touched), falling back to the pool URL; checks its sha256;
#   - unpacks it once into rdma-core-56.1/ and adds
#     add_subdirectory(providers/qrnic) to its CMakeLists.txt (idempotent);
#   - copies guest-driver/provider/ into providers/qrnic/ and model/abi/*.h
#     into providers/qrnic/abi/ (only changed files are rewritten, stale ones
#     removed, so ninja rebuilds only what changed);
#   - configures rdma-core-56.1-build/ once (cmake -GNinja -DNO_MAN_PAGES=1
#     -DENABLE_RESOLVE_NEIGH=0 -DNO_PYVERBS=1 -DENABLE_STATIC=0
#     -DENABLE_VALGRIND=0 -DQRNIC_WERROR=1) and builds ONLY the targets qrnic-rdmav34 and
#     qrnic_wqe_test (plus libibverbs, which the provider links against);
#   - runs the tests (unless --no-test): qrnic_wqe_test (byte layouts) and,
#     when the project's meson build exists (scripts/test.sh), two tests on
#     simulated devices (libqrnic_harness.so): qrnic_model_test (the WQE/CQE/
#     doorbell encoders) and qrnic_provider_test (the whole provider through
#     its verbs ops, on a fake kernel built from the harness's admin queue);
#   - with --sparse, also builds the provider with rdma-core's sparse support
#     (a second build tree, rdma-core-56.1-sparse-build/, configured once with
#     CC=cgcc: rdma-core's annotated endian.h makes htole32() and friends
#     return __le32 etc., and the ABI headers' qrnic_le32 etc. are __le32 etc.
#     under __CHECKER__) and fails on any sparse or compiler warning in
#     providers/qrnic;
#   - checks with objdump -T that the .so needs only IBVERBS_PRIVATE_34 from
#     libibverbs and GLIBC versions <= 2.41 (the guest's glibc);
#   - copies the results to the output directory (default <repo>/build/provider).
#
# Environment:
#   QRNIC_CACHE            cache root (default /var/cache/qrnic)
#   QRNIC_JOBS             ninja -j (default: nproc)
#   QRNIC_RDMA_TARBALL     use this local rdma-core_56.1.orig.tar.gz instead of downloading
#   QRNIC_PROVIDER_OUT     output directory (same as --out)
#   QRNIC_BUILD_DIR        the project's meson build dir, for qrnic_model_test (default <repo>/build)
#   QRNIC_PROVIDER_SRC     provider sources (default guest-driver/provider; tests
#                          point it at a modified copy)
#
# Exit status is non-zero, with a message naming the log, on any failure.
set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/debian.sh"  # debian_mirror, pkg_installed, priv_apt
. "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"     # say, die, run

RDMA_VERSION=56.1
RDMA_DEB_VERSION=56.1-1
RDMA_TARBALL=rdma-core_56.1.orig.tar.gz
RDMA_TARBALL_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8
RDMA_POOL_PATH=pool/main/r/rdma-core/rdma-core_56.1.orig.tar.gz
PABI=34                 # IBVERBS_PABI_VERSION of rdma-core 56
GUEST_GLIBC=2.41        # Debian 13 trixie
TARGET=qrnic-rdmav$PABI
CMAKE_ARGS=(
    -GNinja
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DNO_MAN_PAGES=1
    -DENABLE_RESOLVE_NEIGH=0
    -DNO_PYVERBS=1
    -DENABLE_STATIC=0
    -DENABLE_VALGRIND=0
    -DQRNIC_WERROR=1        # warnings in providers/qrnic are errors
)
BUILD_PKGS=(gcc libc6-dev cmake ninja-build pkg-config python3 binutils curl ca-certificates tar gzip)

PROG=build-provider
SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
CACHE=${QRNIC_CACHE:-/var/cache/qrnic}
JOBS=${QRNIC_JOBS:-$(nproc 2>/dev/null || echo 2)}
OUT=${QRNIC_PROVIDER_OUT:-$REPO/build/provider}
SRC=$CACHE/rdma-core-$RDMA_VERSION
BLD=$CACHE/rdma-core-$RDMA_VERSION-build
DIST=$CACHE/dist
APTDIR=$CACHE/apt-trixie
LOGDIR=$CACHE/logs
PROVIDER_SRC=${QRNIC_PROVIDER_SRC:-$REPO/guest-driver/provider}
ABI_SRC=$REPO/model/abi
MESON_BUILD=${QRNIC_BUILD_DIR:-$REPO/build}
LOG=/dev/null
FORCE=0
RUN_TEST=1
SPARSE=0

usage() { sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$SCRIPT_PATH"; }

while [ $# -gt 0 ]; do
    case $1 in
        --out) [ $# -ge 2 ] || { echo "$PROG: --out needs a directory" >&2; exit 2; }
               OUT=$2; shift ;;
        --out=*) OUT=${1#--out=} ;;
        --force) FORCE=1 ;;
        --no-test) RUN_TEST=0 ;;
        --sparse) SPARSE=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$PROG: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac

DIED=0 ERR_LINE=?
trap 'ERR_LINE=$LINENO' ERR
trap 'rc=$?; if [ $rc -ne 0 ] && [ $DIED = 0 ]; then echo "$PROG: FAILED (exit $rc, line $ERR_LINE of $SCRIPT_PATH); log: $LOG" >&2; fi' EXIT

[ -f "$PROVIDER_SRC/CMakeLists.txt" ] || die "missing $PROVIDER_SRC/CMakeLists.txt"
[ -f "$ABI_SRC/qrnic_uverbs.h" ] || die "missing $ABI_SRC/qrnic_uverbs.h"

mkdir -p "$CACHE" "$LOGDIR" || { echo "$PROG: ERROR: cannot create cache dir $CACHE" >&2; exit 1; }
LOG=$LOGDIR/provider-$(date +%Y%m%d-%H%M%S)-$$.log
: >"$LOG"
ln -sfn "$(basename "$LOG")" "$LOGDIR/provider-latest.log"
say "repo $REPO, cache $CACHE, log $LOG"

# One run at a time per cache (shared source and build trees).
exec 9>"$CACHE/.provider.lock"
if ! flock -n 9; then
    say "another build-provider.sh is running on $CACHE; waiting for it..."
    flock 9
fi

# ---- packages ----------------------------------------------------------------
export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300
          -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)


ensure_packages() {
    local missing=() p
    for p in "${BUILD_PKGS[@]}"; do
        pkg_installed "$p" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing: ${missing[*]}"
    if ! run apt-get install "${APT_OPTS[@]}" --no-install-recommends "${missing[@]}"; then
        say "install failed; running apt-get update and retrying"
        run apt-get -q -o DPkg::Lock::Timeout=300 update || true
        run apt-get install "${APT_OPTS[@]}" --no-install-recommends "${missing[@]}" \
            || die "apt-get install ${missing[*]} failed"
    fi
}
ensure_packages

MIRROR=$(debian_mirror)

# Private apt configuration: own source list (deb-src trixie) and own lists
# under $APTDIR; the host's sources and lists are not touched.
priv_apt "$APTDIR" "deb-src $MIRROR trixie main"
priv_apt_update() {
    say "apt-get update (private list: deb-src $MIRROR trixie main)"
    run apt-get -q "${PRIV_APT[@]}" update
}

# ---- rdma-core source: download once, unpack + patch once ---------------------
tarball_ok() { [ -f "$1" ] && echo "$RDMA_TARBALL_SHA256  $1" | sha256sum -c --status; }

fetch_tarball() {
    local f=$DIST/$RDMA_TARBALL tmp u
    mkdir -p "$DIST"
    if [ -n "${QRNIC_RDMA_TARBALL:-}" ]; then
        [ -f "$QRNIC_RDMA_TARBALL" ] || die "QRNIC_RDMA_TARBALL=$QRNIC_RDMA_TARBALL does not exist"
        cp "$QRNIC_RDMA_TARBALL" "$f.part"
        mv "$f.part" "$f"
    fi
    tarball_ok "$f" && return 0
    rm -f "$f"
    # 1. apt-get source --download-only through the private trixie list.
    if priv_apt_update; then
        tmp=$(mktemp -d "$DIST/apt-source.XXXXXX")
        chmod 755 "$tmp"   # apt's download sandbox user must be able to write
        # The .dsc may answer 404 (apt then exits non-zero) while the orig
        # tarball itself arrives: what counts is the tarball and its sha256.
        (cd "$tmp" && run apt-get -q "${PRIV_APT[@]}" -o APT::Sandbox::User=root source --download-only \
            "rdma-core=$RDMA_DEB_VERSION") || say "apt-get source reported errors"
        if tarball_ok "$tmp/$RDMA_TARBALL"; then
            mv "$tmp/$RDMA_TARBALL" "$f"
            rm -rf "$tmp"
            return 0
        fi
        rm -rf "$tmp"
        say "apt-get source did not bring $RDMA_TARBALL; fetching it from the pool"
    else
        say "private apt-get update failed; fetching the orig tarball from the pool"
    fi
    # 2. The pool URL: the one apt prints, then the one built from the mirror.
    local urls=() p
    p=$(apt-get "${PRIV_APT[@]}" source --print-uris "rdma-core=$RDMA_DEB_VERSION" 2>/dev/null \
          | grep -o "'[^']*/$RDMA_TARBALL'" | tr -d "'" | head -n1 || true)
    [ -n "$p" ] && urls+=("$p")
    [ "$p" = "$MIRROR/$RDMA_POOL_PATH" ] || urls+=("$MIRROR/$RDMA_POOL_PATH")
    for u in "${urls[@]}"; do
        say "downloading $u"
        if run curl -fL --retry 3 --connect-timeout 30 -sS -o "$f.part" "$u"; then
            if tarball_ok "$f.part"; then
                mv "$f.part" "$f"
                return 0
            fi
            say "sha256 mismatch for $u"
        fi
        rm -f "$f.part"
    done
    die "could not download $RDMA_TARBALL (sha256 $RDMA_TARBALL_SHA256); put it somewhere and set QRNIC_RDMA_TARBALL=/path/to/it"
}

# add_subdirectory(providers/qrnic) right after the rxe provider (idempotent).
patch_tree() {
    local cm=$1/CMakeLists.txt
    grep -q '^add_subdirectory(providers/qrnic)$' "$cm" && return 0
    grep -q '^add_subdirectory(providers/rxe)$' "$cm" \
        || die "unexpected rdma-core layout: no add_subdirectory(providers/rxe) in $cm"
    sed -i 's|^add_subdirectory(providers/rxe)$|add_subdirectory(providers/qrnic)\n&|' "$cm"
    grep -q '^add_subdirectory(providers/qrnic)$' "$cm" || die "could not patch $cm"
    say "patched CMakeLists.txt: add_subdirectory(providers/qrnic)"
}

if [ "$FORCE" = 1 ] || [ ! -f "$SRC/.qrnic-unpacked" ]; then
    fetch_tarball
    say "unpacking $RDMA_TARBALL into $SRC"
    tmp=$SRC.tmp.$$
    rm -rf "$tmp" "$SRC" "$BLD"
    mkdir -p "$tmp"
    run tar -xzf "$DIST/$RDMA_TARBALL" -C "$tmp" --strip-components=1 || die "unpacking $RDMA_TARBALL failed"
    grep -q "VERSION \"$RDMA_VERSION\"" "$tmp/CMakeLists.txt" \
        || die "unexpected tarball content (not rdma-core $RDMA_VERSION)"
    grep -q "IBVERBS_PABI_VERSION \"$PABI\"" "$tmp/CMakeLists.txt" \
        || die "unexpected tarball content (IBVERBS_PABI_VERSION is not $PABI)"
    patch_tree "$tmp"
    echo "$RDMA_TARBALL $RDMA_TARBALL_SHA256" >"$tmp/.qrnic-unpacked"
    mv "$tmp" "$SRC"
fi
patch_tree "$SRC"   # no-op unless something was lost

# ---- our sources -> providers/qrnic ---------------------------------------
# Write only files whose content differs; delete files that are no longer ours.
read -r -d '' SYNC_PY <<'PYEOF' || true
import os, sys
prov, abi, dest = sys.argv[1:4]
files = {}
for root, dirs, names in os.walk(prov):
    dirs[:] = sorted(d for d in dirs if not d.startswith('.') and d != 'abi')
    for n in sorted(names):
        if n.startswith('.') or n.endswith(('.o', '.so', '~')):
            continue
        p = os.path.join(root, n)
        files[os.path.relpath(p, prov)] = open(p, 'rb').read()
for n in sorted(os.listdir(abi)):
    if n.endswith('.h'):
        files[os.path.join('abi', n)] = open(os.path.join(abi, n), 'rb').read()
changed = removed = 0
for k, v in sorted(files.items()):
    p = os.path.join(dest, k)
    try:
        if open(p, 'rb').read() == v:
            continue
    except OSError:
        pass
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p + '.tmp', 'wb') as f:
        f.write(v)
    os.replace(p + '.tmp', p)
    changed += 1
    print('  updated providers/qrnic/' + k)
for root, dirs, names in os.walk(dest, topdown=False):
    for n in names:
        p = os.path.join(root, n)
        if os.path.relpath(p, dest) not in files:
            os.unlink(p)
            removed += 1
            print('  removed providers/qrnic/' + os.path.relpath(p, dest))
    if root != dest and not os.listdir(root):
        os.rmdir(root)
print('synced %d files into providers/qrnic (%d updated, %d removed)' % (len(files), changed, removed))
PYEOF
mkdir -p "$SRC/providers/qrnic"
run python3 -c "$SYNC_PY" "$PROVIDER_SRC" "$ABI_SRC" "$SRC/providers/qrnic" \
    || die "copying the provider into $SRC/providers/qrnic failed"

# ---- configure (once per flags) -------------------------------------------
CONF_STAMP="$RDMA_VERSION ${CMAKE_ARGS[*]} cmake=$(cmake --version | head -n1) cc=$(gcc -dumpfullversion 2>/dev/null)"
if [ "$FORCE" = 1 ] || [ ! -f "$BLD/.qrnic-configured" ] || [ "$(cat "$BLD/.qrnic-configured")" != "$CONF_STAMP" ]; then
    say "configuring rdma-core in $BLD"
    rm -rf "$BLD"
    mkdir -p "$BLD"
    (cd "$BLD" && run cmake "${CMAKE_ARGS[@]}" "$SRC") || die "cmake configure failed"
    echo "$CONF_STAMP" >"$BLD/.qrnic-configured"
fi

# ---- build only the provider (and libibverbs) and the unit test ----------------
say "building $TARGET and qrnic_wqe_test"
run ninja -C "$BLD" -j "$JOBS" "$TARGET" qrnic_wqe_test || die "build failed"
SO=$BLD/lib/lib$TARGET.so
TEST_BIN=$BLD/providers/qrnic/qrnic_wqe_test
[ -f "$SO" ] || die "build produced no $SO"

if [ "$RUN_TEST" = 1 ]; then
    say "running qrnic_wqe_test"
    run "$TEST_BIN" || die "qrnic_wqe_test failed"
fi

# Tests against the device model (libqrnic_harness.so of the project's meson
# build, refreshed with ninja when that build is configured):
#   qrnic_model_test     the WQE/CQE/doorbell encoders drive two simulated devices;
#   qrnic_provider_test  the whole provider (qrnic.c, verbs.c) through its
#                        verbs_context_ops, on a fake kernel that creates the
#                        objects on the simulated devices.
# Compiled with rdma-core's own warning flags, warnings are errors.
RDMA_WARN=(-Wall -Wextra -Wno-sign-compare -Wno-unused-parameter -Wmissing-prototypes
           -Wmissing-declarations -Wwrite-strings -Wformat=2 -Wcast-function-type
           -Wformat-nonliteral -Wdate-time -Wnested-externs -Wshadow -Wstrict-prototypes
           -Wold-style-definition -Wredundant-decls -Werror)
MODEL_TESTS=()
if [ "$RUN_TEST" = 1 ]; then
    if [ -f "$MESON_BUILD/build.ninja" ]; then
        HARNESS=$MESON_BUILD/tests/harness/libqrnic_harness.so
        HDIR=$(dirname "$HARNESS")
        run ninja -C "$MESON_BUILD" tests/harness/libqrnic_harness.so || die "building $HARNESS failed"
        CFLAGS_T=(-std=gnu11 -O2 -g "${RDMA_WARN[@]}" -I"$PROVIDER_SRC" -I"$REPO/model/abi"
                  -I"$REPO/model" -I"$REPO/firmware" -I"$REPO/tests/harness" -I"$BLD/include")
        LIBS_T=(-L"$HDIR" -lqrnic_harness -Wl,-rpath,"$HDIR" -lpthread)
        say "building qrnic_model_test and qrnic_provider_test"
        run gcc "${CFLAGS_T[@]}" "$PROVIDER_SRC/tests/qrnic_model_test.c" \
            -o "$BLD/qrnic_model_test" "${LIBS_T[@]}" || die "building qrnic_model_test failed"
        run gcc "${CFLAGS_T[@]}" "$PROVIDER_SRC/tests/qrnic_provider_test.c" \
            "$PROVIDER_SRC/qrnic.c" "$PROVIDER_SRC/verbs.c" \
            -o "$BLD/qrnic_provider_test" "${LIBS_T[@]}" || die "building qrnic_provider_test failed"
        MODEL_TESTS=("$BLD/qrnic_model_test" "$BLD/qrnic_provider_test")
        for t in "${MODEL_TESTS[@]}"; do
            say "running $(basename "$t")"
            run "$t" || die "$(basename "$t") failed"
        done
    else
        say "model tests skipped: no meson build in $MESON_BUILD (run scripts/test.sh once)"
    fi
fi

# ---- sparse (optional): a second tree configured with CC=cgcc ------------------
if [ "$SPARSE" = 1 ]; then
    command -v cgcc >/dev/null || {
        say "installing sparse"
        run apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends sparse \
            || die "apt-get install sparse failed"
    }
    SBLD=$CACHE/rdma-core-$RDMA_VERSION-sparse-build
    SSTAMP="$CONF_STAMP sparse=$(sparse --version 2>/dev/null)"
    if [ "$FORCE" = 1 ] || [ ! -f "$SBLD/.qrnic-configured" ] || [ "$(cat "$SBLD/.qrnic-configured")" != "$SSTAMP" ]; then
        say "configuring rdma-core for sparse in $SBLD (CC=cgcc)"
        rm -rf "$SBLD"
        mkdir -p "$SBLD"
        (cd "$SBLD" && export CC=cgcc && run cmake "${CMAKE_ARGS[@]}" "$SRC") || die "cmake configure (sparse) failed"
        # rdma-core's RDMA_CheckSparse: the test program fails under sparse
        grep -q '^HAVE_NO_SPARSE:INTERNAL=$' "$SBLD/CMakeCache.txt" \
            || die "rdma-core did not detect sparse in $SBLD"
        echo "$SSTAMP" >"$SBLD/.qrnic-configured"
    fi
    # check every provider file, not only those changed since the last run
    find "$SBLD/providers/qrnic" -name '*.o' -delete 2>/dev/null || true
    SLOG=$SBLD/qrnic-sparse.log
    say "sparse: building $TARGET and qrnic_wqe_test in $SBLD"
    ninja -C "$SBLD" -j "$JOBS" "$TARGET" qrnic_wqe_test >"$SLOG" 2>&1 \
        || { cat "$SLOG" >>"$LOG"; die "sparse build failed (log: $SLOG)"; }
    cat "$SLOG" >>"$LOG"
    nsp=$(grep -c -E "^($SRC/)?providers/qrnic/[^:]+:[0-9]+:[0-9]+: (warning|error):" "$SLOG" || true)
    if [ "$nsp" != 0 ]; then
        grep -E "^($SRC/)?providers/qrnic/[^:]+:[0-9]+:[0-9]+: (warning|error):" "$SLOG" >&2
        die "sparse: $nsp warning(s) in providers/qrnic (log: $SLOG)"
    fi
    say "sparse: no warning in providers/qrnic"
fi

# ---- ABI check: only IBVERBS_PRIVATE_34 and GLIBC <= the guest's --------------
check_symbols() {
    local so=$1 bad=0 v
    local vers
    vers=$(objdump -T "$so" | awk '$0 ~ /\*UND\*/ {for (i=1;i<=NF;i++) if ($i ~ /^\(?[A-Z_]+_[0-9.]+\)?$/) {gsub(/[()]/,"",$i); print $i}}' | sort -u)
    for v in $vers; do
        case $v in
            IBVERBS_PRIVATE_$PABI) ;;
            GLIBC_*)
                if [ "$(printf '%s\n%s\n' "${v#GLIBC_}" "$GUEST_GLIBC" | sort -V | tail -n1)" != "$GUEST_GLIBC" ]; then
                    say "needs $v, newer than the guest's GLIBC_$GUEST_GLIBC"; bad=1
                fi ;;
            *) say "unexpected symbol version $v"; bad=1 ;;
        esac
    done
    [ -n "$vers" ] || { say "objdump -T found no versioned symbols"; bad=1; }
    say "symbol versions needed: $(echo $vers)"
    return $bad
}
check_symbols "$SO" || die "$SO needs symbols the guest's rdma-core $RDMA_VERSION / glibc $GUEST_GLIBC may not have"

# ---- results -----------------------------------------------------------------
mkdir -p "$OUT"
cp -f "$SO" "$OUT/lib$TARGET.so.tmp" && mv -f "$OUT/lib$TARGET.so.tmp" "$OUT/lib$TARGET.so"
echo "driver qrnic" >"$OUT/qrnic.driver"
cp -f "$TEST_BIN" "$OUT/qrnic_wqe_test"
say "built $OUT/lib$TARGET.so (install into <libdir>/libibverbs/) and $OUT/qrnic.driver (into /etc/libibverbs.d/)"
echo "$OUT"
