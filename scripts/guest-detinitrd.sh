#!/usr/bin/env bash
# Build (and cache) the self-contained initramfs of the deterministic runner
# (scripts/qrnic_vm/det.py, `scripts/vm.py det-run`, docs/guest.md "Deterministic runs").
#
# Usage: scripts/guest-detinitrd.sh [IMAGE_DIR]
#   DIR=$(scripts/guest-detinitrd.sh)   # last stdout line: DIR/initrd.img, DIR/info.txt
#
# IMAGE_DIR is a guest image of scripts/guest-image.sh (default: run
# guest-image.sh and use the image it prints).  Everything the guest needs
# comes from that image's rootfs.img (read with debugfs; no loop mounts):
#   busybox (static), the modules ib_core, ib_uverbs and qrnic (the image
#   stores them decompressed, so busybox insmod loads them), libibverbs with
#   only the qrnic provider (libqrnic-rdmav34.so + qrnic.driver), perftest's
#   ib_* tools and every shared library they need (DT_NEEDED, recursively),
#   and /init = scripts/qrnic_vm/det/init.
# No block device, no agent: the runner appends a second cpio archive with the
# workload (/workload) and /init runs it.  Output dir:
#   $QRNIC_CACHE/guest/det/<key>/   key = image key + this script + det/init
# The newest $QRNIC_KEEP (default 3) are kept.
set -Eeuo pipefail

PROG=guest-detinitrd
SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
INIT=$REPO/scripts/qrnic_vm/det/init
CACHE=${QRNIC_CACHE:-/var/cache/qrnic}
D=$CACHE/guest/det
KEEP=${QRNIC_KEEP:-3}
BUSYBOX=/bin/busybox
MODULES=(ib_core ib_uverbs qrnic)
TOOLS=(ib_write_lat ib_write_bw ib_read_lat ib_send_lat)
LIBDIR=usr/lib/x86_64-linux-gnu

say() { echo "$PROG: $*" >&2; }
die() { echo "$PROG: ERROR: $*" >&2; exit 1; }

IMG=${1:-}
if [ -z "$IMG" ]; then
    IMG=$(bash "$REPO/scripts/guest-image.sh" --require-driver | tail -n1) || die "scripts/guest-image.sh failed"
fi
IMG=$(readlink -f "$IMG")
[ -f "$IMG/rootfs.img" ] && [ -f "$IMG/vmlinuz" ] || die "$IMG is not a guest image (no rootfs.img/vmlinuz)"
for t in debugfs readelf cpio; do command -v $t >/dev/null || die "$t not found (e2fsprogs, binutils, cpio)"; done
[ -x "$BUSYBOX" ] || die "$BUSYBOX missing (busybox-static)"

KEY=$( {
    echo "image $(basename "$IMG") $(stat -c %s.%Y "$IMG/rootfs.img")"
    sha256sum "$SCRIPT_PATH" "$INIT" "$BUSYBOX" | cut -c1-64
    } | sha256sum | cut -c1-16)
OUT=$D/$KEY
if [ -f "$OUT/initrd.img" ] && [ -f "$OUT/info.txt" ]; then
    touch "$OUT"
    say "up to date: $OUT"
    echo "$OUT"
    exit 0
fi

mkdir -p "$D"
exec 9>"$D/.lock"
flock 9
T=$(mktemp -d "$D/tmp.XXXXXX")
trap 'rm -rf "$T"' EXIT
R=$T/root       # the image's /usr and /etc
I=$T/initrd     # what goes into the cpio
mkdir -p "$R" "$I"
say "reading $IMG/rootfs.img"
debugfs -R "rdump /usr $R" "$IMG/rootfs.img" >/dev/null 2>&1 || die "debugfs rdump /usr failed"
debugfs -R "rdump /etc $R" "$IMG/rootfs.img" >/dev/null 2>&1 || die "debugfs rdump /etc failed"
KVER=$(ls "$R/usr/lib/modules" | head -n1)
[ -n "$KVER" ] || die "no /usr/lib/modules/<kver> in $IMG/rootfs.img"

mkdir -p "$I/bin" "$I/sbin" "$I/$LIBDIR/libibverbs" "$I/etc/libibverbs.d" "$I/lib/modules" \
         "$I/proc" "$I/sys" "$I/dev" "$I/run" "$I/tmp" "$I/root"
cp "$BUSYBOX" "$I/bin/busybox"
install -m 0755 "$INIT" "$I/init"

# modules in dependency order (the image's modules.dep)
MD=$R/usr/lib/modules/$KVER
: >"$I/modules.load"
add_mod() {
    local m=$1 path dep
    path=$(awk -F: -v m="$m" '{n=$1; sub(".*/", "", n); sub("\\.ko.*$", "", n); gsub("-", "_", n)} n==m {print $1; exit}' "$MD/modules.dep")
    [ -n "$path" ] || die "module $m not in $MD/modules.dep"
    for dep in $(awk -F: -v p="$path" '$1==p {print $2}' "$MD/modules.dep"); do
        dep=$(basename "$dep"); dep=${dep%%.ko*}; add_mod "${dep//-/_}"
    done
    grep -qx "$(basename "$path")" "$I/modules.load" && return 0
    case $path in
        *.ko) cp "$MD/$path" "$I/lib/modules/" ;;
        *.ko.xz) xz -dc "$MD/$path" >"$I/lib/modules/$(basename "${path%.xz}")"; path=${path%.xz} ;;
        *) die "$path: unsupported module compression" ;;
    esac
    basename "$path" >>"$I/modules.load"
}
for m in "${MODULES[@]}"; do add_mod "$m"; done

# programs and their shared libraries (DT_NEEDED, recursively)
declare -A SEEN=()
add_elf() {  # add_elf PATH-IN-R
    local f=$1 n lib
    [ -n "${SEEN[$f]:-}" ] && return 0
    SEEN[$f]=1
    mkdir -p "$I/$(dirname "$f")"
    cp -L "$R/$f" "$I/$f"
    for n in $(readelf -d "$R/$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        lib=$LIBDIR/$n
        [ -e "$R/$lib" ] || die "$f needs $n, not in /$LIBDIR of the image"
        add_elf "$lib"
    done
}
for t in "${TOOLS[@]}"; do add_elf "usr/bin/$t"; done
add_elf "$LIBDIR/libibverbs/libqrnic-rdmav34.so"
interp=$(readelf -l "$R/usr/bin/ib_write_lat" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
[ -n "$interp" ] || die "no ELF interpreter in ib_write_lat"
ld=$LIBDIR/$(basename "$interp")
[ -e "$R/$ld" ] || die "ELF interpreter $interp: no /$ld in the image"
add_elf "$ld"
mkdir -p "$I/$(dirname "${interp#/}")"
[ -e "$I/${interp#/}" ] || ln -s "/$ld" "$I/${interp#/}"
cp "$R/etc/libibverbs.d/qrnic.driver" "$I/etc/libibverbs.d/"
printf '127.0.0.1\tlocalhost\n10.0.0.1\tvm0\n10.0.0.2\tvm1\n' >"$I/etc/hosts"
echo 'root:x:0:0:root:/root:/bin/sh' >"$I/etc/passwd"
echo 'root:x:0:' >"$I/etc/group"
echo "hosts: files" >"$I/etc/nsswitch.conf"

# every file of the archive stamped 0 (a fixed mtime: nothing host-timed in the guest)
find "$I" -exec touch -h -d @0 {} +
mkdir -p "$T/out"
(cd "$I" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$T/out/initrd.img" \
    || die "cpio failed"
{
    echo "det initramfs $KEY built $(date -Is) by scripts/guest-detinitrd.sh"
    echo "from image $IMG (kernel $KVER)"
    echo "modules: $(tr '\n' ' ' <"$I/modules.load")"
    echo "tools: ${TOOLS[*]}"
    echo "size: $(du -k "$T/out/initrd.img" | cut -f1) KiB"
} >"$T/out/info.txt"
ln -s "$IMG/vmlinuz" "$T/out/vmlinuz"
rm -rf "$OUT"
mv "$T/out" "$OUT"
for old in $(ls -1dt "$D"/*/ 2>/dev/null | sed 's:/$::' | grep -v -e '/tmp\.' -e "/$KEY\$" | tail -n +"$KEEP"); do
    rm -rf "$old"
done
say "$(tail -n1 "$OUT/info.txt"): $OUT"
echo "$OUT"
