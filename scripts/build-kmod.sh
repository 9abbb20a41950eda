#!/usr/bin/env bash
# Build the qrnic Linux kernel module (guest-driver/kernel) out of tree for
# the guest kernel, Debian bookworm-backports linux 6.12.95+deb12-amd64.
#
# Usage: scripts/build-kmod.sh [--clean] [--sparse] [--help] [OUTDIR]
#   KO=$(scripts/build-kmod.sh)      # last stdout line = path of qrnic.ko
#   OUTDIR defaults to build/kmod (relative to the repository root).
#
# Progress and compiler output go to stderr; stdout carries only the path.
#
# What it does:
#   - installs the host packages kbuild needs (gcc-12, the compiler the
#     target kernel was built with, make, libelf1, ...) when missing;
#   - fetches linux-headers-$KVER, linux-headers-<ver>-common and
#     linux-kbuild-<ver> from bookworm-backports through a private apt source
#     list (the host's apt configuration and dpkg database are left
#     untouched: linux-headers-$KVER depends on the kernel image, which this
#     host does not want), and unpacks them once under
#     $QRNIC_CACHE/kroot-$KVER;
#   - copies guest-driver/kernel into OUTDIR/src (only changed files, so
#     kbuild rebuilds only what changed), builds with W=1 and fails if the
#     compiler printed any warning (QRNIC_KMOD_ALLOW_WARNINGS=1 to relax);
#   - with --sparse, also runs sparse on every source file (make C=2; the
#     ABI fields are __le16/__le32/__le64/__be32 in the kernel, so sparse
#     checks every cpu_to_le*/le*_to_cpu) and fails if it printed any
#     warning or error for a qrnic file (guest-driver/kernel, model/abi);
#   - copies qrnic.ko to OUTDIR/qrnic.ko and prints that path.
#
# Environment:
#   QRNIC_CACHE                 cache root (default /var/cache/qrnic)
#   QRNIC_KDIR                  use this prepared kernel build dir instead
#   QRNIC_KMOD_ALLOW_WARNINGS   1: do not fail on compiler warnings
#   QRNIC_JOBS                  make -j (default: nproc)
#   QRNIC_KMOD_SRC              driver sources (default guest-driver/kernel;
#                               tests point it at a modified copy)
set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/debian.sh"  # debian_mirror, pkg_installed, priv_apt

KVER=6.12.95+deb12-amd64
KABI=6.12.95+deb12
KPKGVER=6.12.95-1~bpo12+1
HOST_PKGS=(gcc-12 make libc6-dev libelf1 pahole xz-utils kmod ca-certificates sparse)

PROG=build-kmod
SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
CACHE=${QRNIC_CACHE:-/var/cache/qrnic}
APTDIR=$CACHE/apt-bpo
DEBDIR=$CACHE/kmod-debs
KROOT=$CACHE/kroot-$KVER
JOBS=${QRNIC_JOBS:-$(nproc 2>/dev/null || echo 2)}
CLEAN=0
SPARSE=0
OUT=

say() { echo "$PROG: $*" >&2; }
die() { echo "$PROG: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$SCRIPT_PATH"; }

while (($#)); do
    case $1 in
        --clean) CLEAN=1 ;;
        --sparse) SPARSE=1 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) OUT=$1 ;;
    esac
    shift
done
OUT=${OUT:-$REPO/build/kmod}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# ---- host packages ---------------------------------------------------------
missing=()
for p in "${HOST_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    APT_OPTS=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=600 --no-install-recommends)
    apt-get install "${APT_OPTS[@]}" "${missing[@]}" >&2 \
        || { apt-get -q -o DPkg::Lock::Timeout=600 update >&2 && apt-get install "${APT_OPTS[@]}" "${missing[@]}" >&2; } \
        || die "apt-get install ${missing[*]} failed"
fi

# ---- kernel headers and kbuild (private apt list, unpacked, not installed) --

prepare_kroot() {
    local pkgs=("linux-headers-$KVER" "linux-headers-$KABI-common" "linux-kbuild-$KABI")
    local p f need=0
    mkdir -p "$DEBDIR"
    for p in "${pkgs[@]}"; do
        compgen -G "$DEBDIR/${p}_${KPKGVER}_*.deb" >/dev/null || need=1
    done
    if ((need)); then
        priv_apt "$APTDIR" "deb $(debian_mirror) bookworm-backports main"
        say "apt-get update (private list $APTDIR/sources.list)"
        apt-get -q "${PRIV_APT[@]}" update >&2 || die "apt-get update of the private list failed"
        say "downloading ${pkgs[*]} ($KPKGVER)"
        (cd "$DEBDIR" && apt-get -q "${PRIV_APT[@]}" download "${pkgs[@]/%/=$KPKGVER}" >&2) \
            || die "apt-get download failed (is $KPKGVER still on the mirror?)"
    fi
    say "unpacking into $KROOT"
    rm -rf "$KROOT.tmp"
    mkdir -p "$KROOT.tmp"
    for p in "${pkgs[@]}"; do
        f=$(compgen -G "$DEBDIR/${p}_${KPKGVER}_*.deb" | head -n1)
        dpkg-deb -x "$f" "$KROOT.tmp"
    done
    # The per-flavour Makefile includes the common one by absolute path.
    echo "include $KROOT/usr/src/linux-headers-$KABI-common/Makefile" \
        >"$KROOT.tmp/usr/src/linux-headers-$KVER/Makefile"
    rm -rf "$KROOT"
    mv "$KROOT.tmp" "$KROOT"
    # the include above names the final location; fix it after the move
    echo "include $KROOT/usr/src/linux-headers-$KABI-common/Makefile" \
        >"$KROOT/usr/src/linux-headers-$KVER/Makefile"
    touch "$KROOT/.complete"
}

if [ -n "${QRNIC_KDIR:-}" ]; then
    KDIR=$QRNIC_KDIR
else
    KDIR=$KROOT/usr/src/linux-headers-$KVER
    if [ ! -e "$KROOT/.complete" ]; then
        mkdir -p "$CACHE"
        exec 9>"$CACHE/.build-kmod.lock"
        flock 9
        [ -e "$KROOT/.complete" ] || prepare_kroot
        exec 9>&-
    fi
fi
[ -f "$KDIR/Makefile" ] || die "no kernel build dir at $KDIR"

# ---- build -------------------------------------------------------------------
SRC=${QRNIC_KMOD_SRC:-$REPO/guest-driver/kernel}
ABI=$REPO/model/abi
[ -f "$SRC/Kbuild" ] || die "no $SRC/Kbuild"
BLD=$OUT/src
if ((CLEAN)); then rm -rf "$BLD"; fi
mkdir -p "$BLD"
# Copy only files whose content changed (keeps mtimes, so make stays incremental).
for f in "$SRC"/*.c "$SRC"/*.h "$SRC"/Kbuild; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$BLD/$(basename "$f")" || cp "$f" "$BLD/"
done
for f in "$BLD"/*.c "$BLD"/*.h; do
    [ -e "$f" ] || continue
    [ -e "$SRC/$(basename "$f")" ] || rm -f "$f" "${f%.*}.o"
done

LOG=$OUT/build.log
CHECK=()
((SPARSE)) && CHECK=(C=2)	# C=2: check every source, also those up to date
say "building in $BLD against $KDIR (W=1${CHECK:+, sparse})"
set +e
make -C "$KDIR" M="$BLD" QRNIC_ABI_DIR="$ABI" W=1 "${CHECK[@]}" -j"$JOBS" modules >"$LOG" 2>&1
rc=$?
set -e
cat "$LOG" >&2
((rc == 0)) || die "make failed (log: $LOG)"
if ((SPARSE)); then
    # sparse and gcc print "file:line:col: warning|error: ..."; ours are the
    # files of $BLD (the driver copy) and $ABI (the shared ABI headers)
    nours=$(grep -c -E "^($BLD|$ABI)/[^:]+:[0-9]+:[0-9]+: (warning|error):" "$LOG" || true)
    ((nours == 0)) || die "sparse: $nours warning(s) in qrnic files (log: $LOG)"
    say "sparse: no warning in qrnic files"
fi
nwarn=$(grep -c -E 'warning:|WARNING:' "$LOG" || true)
if ((nwarn)) && [ "${QRNIC_KMOD_ALLOW_WARNINGS:-0}" != 1 ]; then
    die "$nwarn compiler warning(s) (log: $LOG); QRNIC_KMOD_ALLOW_WARNINGS=1 to accept"
fi
cp "$BLD/qrnic.ko" "$OUT/qrnic.ko"
say "built $(modinfo -F vermagic "$OUT/qrnic.ko" 2>/dev/null || echo "$KVER")"
echo "$OUT/qrnic.ko"
