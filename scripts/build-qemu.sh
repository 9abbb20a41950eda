#!/usr/bin/env bash
# Build QEMU 10.0.2 (x86_64-softmmu) with the qrnic device compiled in.
#
# Usage: scripts/build-qemu.sh [--variant asan|fuzz] [--force] [--help]
#   QEMU=$(scripts/build-qemu.sh)      # last stdout line = path of qemu-system-x86_64
#   QEMU=$(scripts/build-qemu.sh --variant asan)  # the same, ASan+UBSan (clang)
#   FUZZ=$(scripts/build-qemu.sh --variant fuzz)  # path of qemu-fuzz-x86_64
#   $QEMU -M q35 -accel qtest -display none -nodefaults -device qrnic,help \
#         -L /usr/share/seabios -L /usr/share/qemu -L /usr/lib/ipxe/qemu
#
# Progress and messages go to stderr (and to a log file); stdout carries only
# the binary path.
#
# What it does (all cached under $QRNIC_CACHE, default /var/cache/qrnic):
#   - installs the Debian packages it needs (meson >= 1.5 and python3-pycotap
#     from bookworm-backports through a private apt source list, so the host's
#     apt configuration is left untouched), plus the runtime firmware packages
#     (seabios, ipxe-qemu, qemu-system-data);
#   - fetches qemu_10.0.2+ds.orig.tar.xz from the Debian pool once
#     (dist/), checks its sha256, unpacks and patches it once (qemu-10.0.2-src/);
#   - copies repo hw/*.{c,h,inc}, hw/trace-events, hw/meson.build, hw/Kconfig
#     and model/, firmware/ into <qemu-src>/hw/qrnic/ (only files whose content
#     changed are rewritten, so ninja rebuilds only what changed);
#   - keeps ONE configured build dir (qemu-10.0.2-build/) and runs ninja in it;
#   - copies the result to qemu-10.0.2-out/<key>/qemu-system-x86_64, where key
#     hashes the QEMU version, this script and the copied sources.  If that
#     file already exists the script prints it and exits at once.  The newest
#     $QRNIC_KEEP (default 3) results are kept.
#   - logs to logs/build-<time>.log (logs/latest.log points at the newest).
#
# Variants (docs/fuzzing.md section 7): asan and fuzz are one clang build with
# its own source tree qemu-10.0.2-src-fuzz (a hard-linked copy of the shared
# unpacked tree, so it costs no disk and its hw/qrnic can differ from the
# default build's), its own build dir qemu-10.0.2-build-fuzz, its own results
# qemu-10.0.2-out-fuzz/<key> (both binaries) and its own lock, so a long
# variant build never blocks the default one; ccache is shared.  clang-14,
# --enable-fuzzing --enable-asan --enable-ubsan, plus a "qrnic" entry in
# tests/qtest/fuzz/generic_fuzz_configs.h.  The variant names the binary:
#   asan  qemu-system-x86_64 (ASan+UBSan, LeakSanitizer at run time, plus the
#         fuzzer's coverage counters) for the qsan tier (scripts/test.sh);
#   fuzz  qemu-fuzz-x86_64 for "scripts/fuzz.sh qemu" and the qfuzz tier (run
#         it with --fuzz-target=generic-fuzz-qrnic).
# One build instead of two halves the cold build time CI pays for both tiers.
#
# Environment:
#   QRNIC_CACHE          cache root (default /var/cache/qrnic)
#   QRNIC_JOBS           ninja -j (default: nproc)
#   QRNIC_KEEP           how many keyed results to keep (default 3)
#   QRNIC_QEMU_TARBALL   use this local qemu_10.0.2+ds.orig.tar.xz instead of downloading
#
# Exit status is non-zero, with a message naming the log, on any failure.
set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/debian.sh"  # debian_mirror, pkg_installed, priv_apt
. "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"     # say, die, run

QEMU_VERSION=10.0.2
QEMU_TARBALL=qemu_10.0.2+ds.orig.tar.xz
QEMU_TARBALL_SHA256=0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1
QEMU_POOL_PATH=pool/main/q/qemu/qemu_10.0.2%2bds.orig.tar.xz
QEMU_TARGET=qemu-system-x86_64
CONFIGURE_ARGS=(
    --target-list=x86_64-softmmu
    --without-default-features
    --disable-docs
    --disable-tools
    --disable-guest-agent
    --disable-werror
    --disable-install-blobs
    --python=/usr/bin/python3
)
# Debian packages: build tools and libraries (from the host's bookworm lists).
BUILD_PKGS=(gcc libc6-dev pkg-config ninja-build python3 python3-venv python3-setuptools
            libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev flex bison ccache
            xz-utils curl ca-certificates)
# From bookworm-backports (QEMU 10 needs meson >= 1.5).
BPO_PKGS=(meson python3-pycotap)
MESON_MIN=1.5
# Firmware QEMU needs at run time (-L /usr/share/seabios -L /usr/share/qemu -L /usr/lib/ipxe/qemu).
RUNTIME_PKGS=(seabios ipxe-qemu qemu-system-data)
# Extra packages of the clang variants (clang-14 and its sanitizer/libFuzzer runtimes).
CLANG_PKGS=(clang-14 libclang-rt-14-dev)

PROG=build-qemu
SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
CACHE=${QRNIC_CACHE:-/var/cache/qrnic}
JOBS=${QRNIC_JOBS:-$(nproc 2>/dev/null || echo 2)}
KEEP=${QRNIC_KEEP:-3}
SRC=$CACHE/qemu-$QEMU_VERSION-src
BLD=$CACHE/qemu-$QEMU_VERSION-build
OUT=$CACHE/qemu-$QEMU_VERSION-out
DIST=$CACHE/dist
APTDIR=$CACHE/apt
LOGDIR=$CACHE/logs
PY=/usr/bin/python3
LOG=/dev/null
FORCE=0
VARIANT=

usage() { sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$SCRIPT_PATH"; }

while (($#)); do
    case $1 in
        --force) FORCE=1 ;;
        --variant) [ $# -ge 2 ] || { echo "$PROG: --variant needs a value (asan or fuzz)" >&2; exit 2; }
                   VARIANT=$2; shift ;;
        --variant=*) VARIANT=${1#*=} ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$PROG: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
SHARED_SRC=$SRC
# The two clang variants are ONE build (configure --enable-fuzzing --enable-asan
# --enable-ubsan): its qemu-fuzz-x86_64 is the generic-fuzz binary, its
# qemu-system-x86_64 the sanitized emulator of the qsan tier (the same objects
# with SanitizerCoverage on top).  One cold clang build instead of two is what
# lets CI run both (docs/fuzzing.md).
# BUILT: every target the build publishes under its key.
BUILT=("$QEMU_TARGET")
case $VARIANT in
    '') ;;
    asan|fuzz)
        CONFIGURE_ARGS+=(--cc=clang-14 --cxx=clang++-14 --host-cc=clang-14 --enable-asan --enable-ubsan --enable-fuzzing)
        BUILD_PKGS+=("${CLANG_PKGS[@]}")
        BUILT=(qemu-fuzz-x86_64 qemu-system-x86_64)
        [ "$VARIANT" = asan ] || QEMU_TARGET=qemu-fuzz-x86_64 ;;
    *) echo "$PROG: unknown variant '$VARIANT' (asan or fuzz)" >&2; exit 2 ;;
esac
VDIR=${VARIANT:+fuzz}    # the variants' own source tree, build dir, results and lock
if [ -n "$VARIANT" ]; then
    SRC=$SRC-$VDIR
    BLD=$BLD-$VDIR
    OUT=$OUT-$VDIR
fi

DIED=0 ERR_LINE='?'
trap 'ERR_LINE=$LINENO' ERR
trap 'rc=$?; if [ $rc -ne 0 ] && [ $DIED = 0 ]; then echo "$PROG: FAILED (exit $rc, line $ERR_LINE of $SCRIPT_PATH); log: $LOG" >&2; fi' EXIT

# ---------------------------------------------------------------------------
# Source tree content and key.  One Python helper computes the exact set of
# files that must appear in <qemu>/hw/qrnic (copied + generated), hashes it for
# the cache key, and (mode "sync") writes only the files whose content differs
# and deletes stale ones, so untouched files keep their mtime and ninja
# rebuilds only what changed.
# ---------------------------------------------------------------------------
read -r -d '' SYNC_PY <<'PYEOF' || true
import hashlib, os, sys

mode, repo, dest, salt = sys.argv[1:5]
SRC_EXT = ('.c', '.h', '.inc')

def read(p):
    with open(p, 'rb') as f:
        return f.read()

def skip_dir(d):
    return d.startswith('.') or d.startswith('build') or d == '__pycache__'

files = {}
hw = os.path.join(repo, 'hw')
for req in ('meson.build', 'Kconfig'):
    if not os.path.isfile(os.path.join(hw, req)):
        sys.exit('missing %s (QEMU glue for the device)' % os.path.join(hw, req))
for name in sorted(os.listdir(hw)):
    p = os.path.join(hw, name)
    if os.path.isfile(p) and not name.startswith('.') and (
            name.endswith(SRC_EXT) or name in ('trace-events', 'meson.build', 'Kconfig')):
        files[name] = read(p)
for sub in ('model', 'firmware'):
    base = os.path.join(repo, sub)
    for root, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not skip_dir(d))
        for name in sorted(names):
            if name.endswith(SRC_EXT) and not name.startswith('.'):
                p = os.path.join(root, name)
                files[os.path.relpath(p, repo).replace(os.sep, '/')] = read(p)

# Compiled: top-level .c of hw/, model/, firmware/ (subdirectories such as
# tests/ are copied for their headers but not compiled).
srcs = sorted(k for k in files if k.endswith('.c') and k.count('/') <= 1)
gen = b'# generated by scripts/build-qemu.sh\n'
files['sources.txt'] = ''.join(s + '\n' for s in srcs).encode()
if 'trace.h' not in files:
    files['trace.h'] = b'/* generated by scripts/build-qemu.sh */\n#include "trace/trace-hw_qrnic.h"\n'
if 'trace-events' not in files:
    files['trace-events'] = gen + b'# (the repo has no hw/trace-events yet)\n'

if mode == 'key':
    h = hashlib.sha256(salt.encode() + b'\0')
    for k in sorted(files):
        v = files[k]
        h.update(k.encode() + b'\0' + str(len(v)).encode() + b'\0' + v)
    print(h.hexdigest()[:16])
    sys.exit(0)

assert mode == 'sync'
changed = removed = 0
for k, v in sorted(files.items()):
    p = os.path.join(dest, k)
    try:
        if read(p) == v:
            continue
    except OSError:
        pass
    os.makedirs(os.path.dirname(p), exist_ok=True)
    tmp = p + '.qrnic-tmp'
    with open(tmp, 'wb') as f:
        f.write(v)
    os.replace(tmp, p)
    changed += 1
    print('  updated hw/qrnic/' + k)
for root, dirs, names in os.walk(dest, topdown=False):
    for name in names:
        p = os.path.join(root, name)
        if os.path.relpath(p, dest).replace(os.sep, '/') not in files:
            os.unlink(p)
            removed += 1
            print('  removed hw/qrnic/' + os.path.relpath(p, dest))
    if root != dest and not os.listdir(root):
        os.rmdir(root)
print('synced %d files into hw/qrnic (%d updated, %d removed; compiled: %s)'
      % (len(files), changed, removed, ' '.join(srcs) or 'none'))
PYEOF

# The key covers the QEMU version, this script (configure flags, generated
# files) and everything copied into hw/qrnic.
SALT="qemu-$QEMU_VERSION variant=${VDIR:-default} $(sha256sum "$SCRIPT_PATH" | cut -c1-64)"
compute_key() { "$PY" -c "$SYNC_PY" key "$REPO" "$SRC/hw/qrnic" "$SALT"; }


cached_result() {  # prints the cached binary for the current key, if any
    local key bin
    [ "$FORCE" = 0 ] || return 1
    [ -x "$PY" ] || return 1
    pkg_installed "${RUNTIME_PKGS[@]}" || return 1
    key=$(compute_key 2>/dev/null) || return 1
    bin=$OUT/$key/$QEMU_TARGET
    [ -x "$bin" ] || return 1
    touch "$OUT/$key" 2>/dev/null || true   # mark as recently used
    echo "$bin"
}

# ---- fast path: nothing changed since the last build ------------------------
if bin=$(cached_result); then
    echo "$PROG: up to date (cached build for these sources)" >&2
    echo "$bin"
    exit 0
fi

# ---- slow path ------------------------------------------------------------
mkdir -p "$CACHE" "$LOGDIR" || { echo "$PROG: ERROR: cannot create cache dir $CACHE" >&2; exit 1; }
LOG=$LOGDIR/build-$(date +%Y%m%d-%H%M%S)-$$.log
: >"$LOG"
ln -sfn "$(basename "$LOG")" "$LOGDIR/latest.log"
say "repo $REPO, cache $CACHE, log $LOG"

# One build at a time per cache (apt/dpkg, the shared source and build dirs).
# A variant whose packages and shared source are already there does not
# need it at all (the default build holds it for its whole ninja run); a
# variant takes its own lock first (its source tree, build dir and results).
if [ -n "$VARIANT" ]; then
    exec 8>"$CACHE/.lock-$VDIR"
    if ! flock -n 8; then
        say "another build-qemu.sh --variant asan/fuzz is running; waiting for it..."
        flock 8
    fi
    if bin=$(cached_result); then
        say "up to date (built by a concurrent run)"
        echo "$bin"
        exit 0
    fi
fi
SHARED_LOCK=1
if [ -n "$VARIANT" ] && [ -f "$SHARED_SRC/.qrnic-unpacked" ] \
   && pkg_installed "${BUILD_PKGS[@]}" "${RUNTIME_PKGS[@]}" "${BPO_PKGS[@]}" \
   && dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson)" ge "$MESON_MIN"; then
    SHARED_LOCK=0
else
    exec 9>"$CACHE/.lock"
    if ! flock -n 9; then
        say "another build-qemu.sh is running on $CACHE; waiting for it..."
        flock 9
    fi
fi

# Recheck: another process may just have built this.
if bin=$(cached_result); then
    say "up to date (built by a concurrent run)"
    echo "$bin"
    exit 0
fi

# ---- packages ----------------------------------------------------------------
export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q -o Dpkg::Use-Pty=0 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

MIRROR=$(debian_mirror)

# Private apt configuration for bookworm-backports: own source list and own
# package lists under $APTDIR; the host's sources and lists are not touched.
priv_apt "$APTDIR" "deb $MIRROR bookworm-backports main" "deb-src $MIRROR bookworm-backports main"
priv_apt_update() {
    say "apt-get update (private list: $MIRROR bookworm-backports)"
    run apt-get -q "${PRIV_APT[@]}" update || die "apt-get update of the private bookworm-backports list failed"
}

meson_ok() {
    pkg_installed meson || return 1
    local v; v=$(dpkg-query -W -f='${Version}' meson 2>/dev/null) || return 1
    dpkg --compare-versions "$v" ge "$MESON_MIN"
}

ensure_packages() {
    local missing=() p
    for p in "${BUILD_PKGS[@]}" "${RUNTIME_PKGS[@]}"; do
        pkg_installed "$p" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing: ${missing[*]}"
        if ! run apt-get install "${APT_OPTS[@]}" --no-install-recommends "${missing[@]}"; then
            say "install failed; running apt-get update and retrying"
            run apt-get -q update || true
            run apt-get install "${APT_OPTS[@]}" --no-install-recommends "${missing[@]}" \
                || die "apt-get install ${missing[*]} failed"
        fi
    fi
    if ! meson_ok || ! pkg_installed python3-pycotap; then
        priv_apt_update
        say "installing from bookworm-backports: ${BPO_PKGS[*]}"
        run apt-get install "${APT_OPTS[@]}" --no-install-recommends "${PRIV_APT[@]}" \
            -t bookworm-backports "${BPO_PKGS[@]}" \
            || die "apt-get install -t bookworm-backports ${BPO_PKGS[*]} failed"
        meson_ok || die "meson >= $MESON_MIN still not installed"
    fi
}
ensure_packages

# ---- QEMU source: download once, unpack + patch once -------------------------
fetch_tarball() {
    local f=$DIST/$QEMU_TARBALL
    mkdir -p "$DIST"
    if [ -n "${QRNIC_QEMU_TARBALL:-}" ]; then
        [ -f "$QRNIC_QEMU_TARBALL" ] || die "QRNIC_QEMU_TARBALL=$QRNIC_QEMU_TARBALL does not exist"
        cp "$QRNIC_QEMU_TARBALL" "$f.part"
        mv "$f.part" "$f"
    fi
    if [ -f "$f" ] && echo "$QEMU_TARBALL_SHA256  $f" | sha256sum -c --status; then
        return 0
    fi
    rm -f "$f"
    # The .dsc of the backport answers 404 on the mirror, so "apt-get source"
    # fails; the orig tarball itself is in the pool.  Fetch it from the
    # mirror the host uses; fall back to the pool URL apt prints.
    local urls=("$MIRROR/$QEMU_POOL_PATH") u
    if [ -d "$APTDIR/lists" ] || priv_apt_update; then
        u=$(apt-get "${PRIV_APT[@]}" source --print-uris "qemu/bookworm-backports" 2>/dev/null \
              | grep -o "'[^']*_${QEMU_VERSION}%2bds\.orig\.tar\.xz'" | tr -d "'" | head -n1 || true)
        [ -n "$u" ] && [ "$u" != "${urls[0]}" ] && urls+=("$u")
    fi
    for u in "${urls[@]}"; do
        say "downloading $u"
        if run curl -fL --retry 3 --connect-timeout 30 -sS -o "$f.part" "$u"; then
            if echo "$QEMU_TARBALL_SHA256  $f.part" | sha256sum -c --status; then
                mv "$f.part" "$f"
                return 0
            fi
            say "sha256 mismatch for $u"
        fi
        rm -f "$f.part"
    done
    die "could not download $QEMU_TARBALL (sha256 $QEMU_TARBALL_SHA256); put it somewhere and set QRNIC_QEMU_TARBALL=/path/to/it"
}

# patch_file FILE MARKER_REGEX SED_SCRIPT WHAT: apply SED_SCRIPT unless MARKER
# is already present (so the file is never rewritten needlessly), then check.
patch_file() {
    local file=$1 marker=$2 script=$3 what=$4 name=${1#"$SRC"*/}
    grep -qE "$marker" "$file" && return 0
    sed -i -e "$script" "$file"
    grep -qE "$marker" "$file" || die "could not patch $file ($what): QEMU tree layout unexpected"
    say "patched $name: $what"
}

patch_qemu_tree() {
    local t=$1
    # The +ds tarball has no edk2 blobs: never try to unpack them.
    if grep -q 'unpack_edk2_blobs = bzip2' "$t/meson.build"; then
        sed -i -e 's/^\( *\)unpack_edk2_blobs = bzip2\.found()$/\1unpack_edk2_blobs = false  # qrnic: +ds tarball has no edk2 blobs/' "$t/meson.build"
        grep -q 'unpack_edk2_blobs = bzip2' "$t/meson.build" \
            && die "could not patch unpack_edk2_blobs in $t/meson.build"
        say "patched meson.build: unpack_edk2_blobs = false"
    fi
    # Trace events of hw/qrnic (trace.h -> trace/trace-hw_qrnic.h).
    patch_file "$t/meson.build" "^ *'hw/qrnic',$" \
        "s|^\( *\)'hw/nvme',\$|&\n\1'hw/qrnic',|" "trace_events_subdirs += hw/qrnic"
    patch_file "$t/hw/meson.build" "^subdir\('qrnic'\)$" \
        "s|^subdir('nvme')\$|&\nsubdir('qrnic')|" "subdir('qrnic')"
    patch_file "$t/hw/Kconfig" '^source qrnic/Kconfig$' \
        's|^source nvme/Kconfig$|&\nsource qrnic/Kconfig|' "source qrnic/Kconfig"
}

if [ ! -f "$SHARED_SRC/.qrnic-unpacked" ]; then
    fetch_tarball
    say "unpacking $QEMU_TARBALL into $SHARED_SRC"
    tmp=$SHARED_SRC.tmp.$$
    rm -rf "$tmp" "$SHARED_SRC"
    mkdir -p "$tmp"
    run tar -xJf "$DIST/$QEMU_TARBALL" -C "$tmp" --strip-components=1 || die "unpacking $QEMU_TARBALL failed"
    [ -f "$tmp/VERSION" ] && [ "$(cat "$tmp/VERSION")" = "$QEMU_VERSION" ] \
        || die "unexpected tarball content (VERSION is not $QEMU_VERSION)"
    patch_qemu_tree "$tmp"
    echo "$QEMU_TARBALL $QEMU_TARBALL_SHA256" >"$tmp/.qrnic-unpacked"
    mv "$tmp" "$SHARED_SRC"
fi
# no-op unless something was lost (a variant without the shared lock leaves it be)
[ "$SHARED_LOCK" = 0 ] || patch_qemu_tree "$SHARED_SRC"

# generic-fuzz config "qrnic" (fuzz variant only): the device on q35 with a
# netdev that needs no host resources (a hub port with nothing else on the
# hub, so transmitted frames are dropped), MMIO/PIO/DMA fuzzing restricted to
# qrnic's BARs (regions named qrnic-*) and the device itself.
QRNIC_FUZZ_CONFIG='    {\n        .name = "qrnic",  /* added by qrnic scripts/build-qemu.sh, v2 */\n        .args = "-machine q35 -nodefaults -L /usr/share/seabios -L /usr/share/qemu "\n        "-netdev hubport,id=net0,hubid=0 -device qrnic,netdev=net0",\n        .objects = "qrnic*",\n    },'
if [ -n "$VARIANT" ]; then
    # Own source tree: hard links into the shared one (no disk, seconds to
    # make).  sed -i and the sync below replace files rather than write into
    # them, so the shared tree is never modified through a link.
    if [ ! -f "$SRC/.qrnic-unpacked" ]; then
        say "making $SRC (hard-linked copy of $SHARED_SRC)"
        rm -rf "$SRC" "$SRC.tmp.$$"
        cp -al "$SHARED_SRC" "$SRC.tmp.$$" || die "cp -al $SHARED_SRC failed"
        rm -rf "$SRC.tmp.$$/hw/qrnic"   # synced below from this repo
        mv "$SRC.tmp.$$" "$SRC"
    fi
    if [ "$VDIR" = fuzz ]; then
        # Start from the shared (unpatched) header unless it has this very
        # version of the entry (an older one would give two "qrnic" targets).
        cfg=tests/qtest/fuzz/generic_fuzz_configs.h
        if ! grep -q '"qrnic",  /\* added by qrnic scripts/build-qemu.sh, v2 \*/' "$SRC/$cfg"; then
            cp "$SHARED_SRC/$cfg" "$SRC/$cfg.tmp" && mv "$SRC/$cfg.tmp" "$SRC/$cfg"
        fi
        patch_file "$SRC/$cfg" '"qrnic",  /\* added by qrnic scripts/build-qemu.sh, v2 \*/' \
            "s|^const generic_fuzz_config predefined_configs\[\] = {\$|&\n$QRNIC_FUZZ_CONFIG|" \
            "generic-fuzz config qrnic"
    fi
    # From here on only this variant's dirs are used.
    [ "$SHARED_LOCK" = 0 ] || flock -u 9
fi

# ---- our sources -> <qemu>/hw/qrnic ---------------------------------------
KEY=$(compute_key) || die "cannot compute the source key (see above)"
say "source key $KEY"
run "$PY" -c "$SYNC_PY" sync "$REPO" "$SRC/hw/qrnic" "$SALT" || die "copying sources into $SRC/hw/qrnic failed"

# ---- configure (once per configure flags) -----------------------------------
export PATH=/usr/lib/ccache:$PATH
export CCACHE_DIR=${CCACHE_DIR:-$CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-3G}
CONF_STAMP="$QEMU_VERSION ${CONFIGURE_ARGS[*]} meson=$(dpkg-query -W -f='${Version}' meson) cc=$(gcc -dumpfullversion 2>/dev/null)"
[ -z "$VARIANT" ] || CONF_STAMP+=" clang=$(clang-14 -dumpversion 2>/dev/null)"
if [ ! -f "$BLD/.qrnic-configured" ] || [ "$(cat "$BLD/.qrnic-configured")" != "$CONF_STAMP" ]; then
    say "configuring QEMU in $BLD"
    rm -rf "$BLD"
    mkdir -p "$BLD"
    (cd "$BLD" && run "$SRC/configure" "${CONFIGURE_ARGS[@]}") || die "QEMU configure failed"
    echo "$CONF_STAMP" >"$BLD/.qrnic-configured"
fi

# ---- build --------------------------------------------------------------
say "building ${BUILT[*]} (ninja -j$JOBS; a cold build takes several minutes)"
start=$SECONDS
run ninja -C "$BLD" -j "$JOBS" "${BUILT[@]}" \
    || die "QEMU build failed (in messages, <qemu-src>/hw/qrnic/{model,firmware}/F is the repo's {model,firmware}/F and hw/qrnic/F is the repo's hw/F)"
say "ninja finished in $((SECONDS - start))s"
for t in "${BUILT[@]}"; do
    [ -x "$BLD/$t" ] || die "build finished but $BLD/$t is missing"
done
grep -q 'hw/qrnic' "$BLD/build.ninja" || die "hw/qrnic is not part of the QEMU build (Kconfig/meson glue?)"

# ---- publish the result under its key, prune old ones ------------------------
mkdir -p "$OUT"
rm -rf "${OUT:?}/${KEY:?}" "$OUT/$KEY.tmp"
mkdir -p "$OUT/$KEY.tmp"
for t in "${BUILT[@]}"; do
    cp "$BLD/$t" "$OUT/$KEY.tmp/$t"
done
{
    echo "key: $KEY"
    echo "built: $(date -Is)"
    echo "repo: $REPO"
    echo "repo HEAD: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo none)"
    echo "qemu: $QEMU_VERSION (${CONFIGURE_ARGS[*]})"
    echo "log: $LOG"
} >"$OUT/$KEY.tmp/info.txt"
mv "$OUT/$KEY.tmp" "$OUT/$KEY"
for old in $(ls -1dt "$OUT"/*/ 2>/dev/null | sed 's:/$::' | { grep -v -e '\.tmp$' -e "/$KEY\$" || true; } \
               | tail -n +"$KEEP"); do
    say "pruning old result $(basename "$old")"
    rm -rf "$old"
done

say "done: $OUT/$KEY/$QEMU_TARGET"
echo "$OUT/$KEY/$QEMU_TARGET"
