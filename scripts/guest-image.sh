#!/usr/bin/env bash
# Build (and cache) the qrnic test guest: kernel, initramfs, root disk image.
#
# Usage: scripts/guest-image.sh [options]
#   IMG=$(scripts/guest-image.sh)     # last stdout line = the image directory:
#       IMG/vmlinuz  IMG/initrd.img  IMG/rootfs.img  IMG/info.txt
#
# Options:
#   --force            rebuild the disk image even if one with the same key exists
#   --force-rootfs     also redo the debootstrap stage
#   --no-driver        do not build/include qrnic.ko and the rdma-core provider
#   --require-driver   fail (exit 1) unless qrnic.ko AND the provider are included
#   --ko PATH          use this qrnic.ko (default: run scripts/build-kmod.sh)
#   --provider DIR     use DIR/libqrnic-rdmav34.so and DIR/qrnic.driver
#                      (default: run scripts/build-provider.sh)
#   --kernel-release   print the guest kernel release and exit
#   -h, --help
#
# What it builds (all under $QRNIC_CACHE/guest, default /var/cache/qrnic/guest):
#   kernel/   linux-image-6.12.95+deb12-amd64 from bookworm-backports, fetched
#             through a private apt list ($QRNIC_CACHE/apt-bpo; the host's apt
#             configuration is not touched) and unpacked with dpkg-deb -x;
#   rootfs-<key>.tar  Debian 13 (trixie) minbase + rdma-core, perftest,
#             pyverbs... made by debootstrap (~1.5 min), keyed by the package list;
#   images/<key>/     the bootable result, keyed by the rootfs key, the kernel,
#             qrnic.ko, the provider and the guest files (this script and
#             scripts/qrnic_vm/guest/*).  A rebuild when only the driver or the
#             provider changed takes ~20 s.  images/latest -> newest.
#     vmlinuz      the kernel
#     initrd.img   busybox-static + virtio_blk/ext4 modules (decompressed);
#                  /init mounts /dev/vda and switch_roots to /sbin/qrnic-init
#     rootfs.img   raw ext4 (mke2fs -d, no loop mounts) for virtio-blk
#     info.txt     what went in (driver and provider included or why not)
#   The newest $QRNIC_KEEP (default 3) images are kept, and any used in the last 3 hours.
# The guest's PID 1 is /sbin/qrnic-init (scripts/qrnic_vm/guest/qrnic-init);
# it loads the modules, configures the interfaces and runs the agent
# (scripts/qrnic_vm/guest/qrnic-agent).  See docs/guest.md.
#
# Environment: QRNIC_CACHE, QRNIC_KEEP, QRNIC_KO, QRNIC_PROVIDER_DIR (as --ko/--provider),
#   QRNIC_FULL_MODULES=1 (keep the whole module tree; by default hardware a q35
#   guest never has is left out, which makes depmod 3x faster).
# Progress goes to stderr and to $QRNIC_CACHE/guest/logs/; stdout carries only
# the image directory.
set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/debian.sh"  # debian_mirror, pkg_installed, priv_apt
. "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"     # say, die, run

KVER=6.12.95+deb12-amd64
KPKG=linux-image-$KVER
SUITE=trixie
VARIANT=minbase
INCLUDE=(rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest python3-pyverbs
         iproute2 kmod procps pciutils ethtool tcpdump strace
         # storage over RDMA (docs/storage.md): NVMe-oF host tool, I/O with
         # verification, NFS server and client tools, iSCSI initiator (iSER);
         # the LIO target (isert) is set up through configfs, no targetcli
         nvme-cli fio nfs-kernel-server nfs-common open-iscsi)
HOST_PKGS=(debootstrap busybox-static e2fsprogs kmod cpio xz-utils dpkg)
PROVIDER_SO=libqrnic-rdmav34.so
PROVIDER_DRIVER=qrnic.driver
# Modules the initramfs loads (with their dependencies) to mount the root.
INITRD_MODULES=(virtio_blk ext4)
# Kernel module directories left out of the guest (hardware a QEMU q35 guest
# never has): they are ~60% of the 4228 modules, and depmod, which decompresses
# every module, takes 11 s for the full tree (QRNIC_FULL_MODULES=1 keeps all).
PRUNE_MODULES=(sound drivers/media drivers/iio drivers/usb drivers/hid drivers/input/joystick
    drivers/input/touchscreen drivers/input/misc drivers/comedi drivers/gpu drivers/video drivers/mtd
    drivers/platform/chrome drivers/platform/surface drivers/leds drivers/w1 drivers/mmc
    drivers/bluetooth drivers/staging drivers/hwmon drivers/isdn drivers/net/wireless drivers/net/usb
    drivers/net/can drivers/net/ethernet drivers/net/wwan drivers/net/ieee802154 drivers/infiniband/hw
    drivers/scsi drivers/ata drivers/watchdog drivers/mfd drivers/power drivers/regulator drivers/pinctrl
    drivers/gnss drivers/nfc drivers/rtc net/wireless net/mac80211 net/bluetooth net/nfc net/ieee802154
    net/can fs/ocfs2 fs/gfs2 fs/xfs fs/btrfs fs/ntfs3 fs/f2fs fs/bcachefs)
# ... but these modules of a pruned directory are kept: the SCSI midlayer, disk
# and iSCSI transport that iSER (ib_iser) and the LIO target (target_core_mod
# needs scsi_common) stand on.
PRUNE_KEEP=(drivers/scsi/scsi_common.ko drivers/scsi/scsi_mod.ko drivers/scsi/sd_mod.ko
    drivers/scsi/sg.ko drivers/scsi/scsi_transport_iscsi.ko drivers/scsi/libiscsi.ko)

PROG=guest-image
SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
GUEST_FILES=$REPO/scripts/qrnic_vm/guest
CACHE=${QRNIC_CACHE:-/var/cache/qrnic}
G=$CACHE/guest
KEEP=${QRNIC_KEEP:-3}
APTDIR=$CACHE/apt-bpo
FORCE=0 FORCE_ROOTFS=0 NO_DRIVER=0 REQUIRE_DRIVER=0
KO=${QRNIC_KO:-} PROVIDER_DIR=${QRNIC_PROVIDER_DIR:-}
LOG=/dev/null

usage() { sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$SCRIPT_PATH"; }
while [ $# -gt 0 ]; do
    case $1 in
        --force) FORCE=1 ;;
        --force-rootfs) FORCE=1 FORCE_ROOTFS=1 ;;
        --no-driver) NO_DRIVER=1 ;;
        --require-driver) REQUIRE_DRIVER=1 ;;
        --ko) KO=${2:?--ko needs a path}; shift ;;
        --provider) PROVIDER_DIR=${2:?--provider needs a directory}; shift ;;
        --kernel-release) echo "$KVER"; exit 0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$PROG: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done

run() {  # run CMD...: output to the log only; keep CMD's status
    echo "+ $*" >>"$LOG"
    "$@" >>"$LOG" 2>&1
}
DIED=0 ERR_LINE=? TMPS=()
trap 'ERR_LINE=$LINENO' ERR
cleanup() {
    local rc=$?
    for t in "${TMPS[@]}"; do rm -rf "$t"; done
    if [ $rc -ne 0 ] && [ $DIED = 0 ]; then
        echo "$PROG: FAILED (exit $rc, line $ERR_LINE of $SCRIPT_PATH); log: $LOG" >&2
    fi
}
trap cleanup EXIT
T0=$SECONDS
since() { echo "$((SECONDS - $1))s"; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, device nodes in the root image)"
mkdir -p "$G/logs" "$G/images"
LOG=$G/logs/build-$(date +%Y%m%d-%H%M%S)-$$.log
: >"$LOG"
ln -sfn "$(basename "$LOG")" "$G/logs/latest.log"
# logs: keep the last 20
ls -1t "$G"/logs/build-*.log 2>/dev/null | tail -n +21 | xargs -r rm -f

exec 9>"$G/.lock"
if ! flock -n 9; then
    say "another guest-image.sh is running; waiting for it..."
    flock 9
fi

# ---- host packages ---------------------------------------------------------------
missing=()
for p in "${HOST_PKGS[@]}"; do pkg_installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing host packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    run apt-get install -y -q --no-install-recommends "${missing[@]}" \
        || { run apt-get -q update; run apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
        || die "apt-get install ${missing[*]} failed"
fi
for t in debootstrap mke2fs depmod modprobe cpio xz dpkg-deb; do
    command -v "$t" >/dev/null || die "$t not found after installing ${HOST_PKGS[*]}"
done
BUSYBOX=/bin/busybox
# Not `| grep -q`: under pipefail, grep -q exits at the match and busybox, which writes its
# list one line per write(2), dies of SIGPIPE on the rest (seen in CI: 2 in 300 on one core).
[ -x "$BUSYBOX" ] && "$BUSYBOX" --list 2>/dev/null | grep -x switch_root >/dev/null \
    || die "$BUSYBOX (busybox-static) missing or without switch_root"
file -L "$BUSYBOX" 2>/dev/null | grep -q 'dynamically linked' \
    && die "$BUSYBOX is dynamically linked; install busybox-static"

MIRROR=$(debian_mirror)

# ---- kernel ----------------------------------------------------------------------
KDIR=$G/kernel/$KVER
KSTAMP="v2 unxz"   # modules are stored decompressed (see below)
fetch_kernel() {
    local deb
    deb=$(ls -1 "$APTDIR/archives/${KPKG}_"*_amd64.deb 2>/dev/null | tail -n1 || true)
    if [ -z "$deb" ]; then
        mkdir -p "$APTDIR/archives"
        priv_apt "$APTDIR" "deb $MIRROR bookworm-backports main"
        say "apt-get update (private list $APTDIR/sources.list: $MIRROR bookworm-backports)"
        run apt-get -q "${PRIV_APT[@]}" update || die "apt-get update of the private bookworm-backports list failed"
        say "downloading $KPKG"
        (cd "$APTDIR/archives" && run apt-get -q "${PRIV_APT[@]}" download "$KPKG") \
            || die "apt-get download $KPKG failed (is it still in bookworm-backports on $MIRROR?)"
        deb=$(ls -1 "$APTDIR/archives/${KPKG}_"*_amd64.deb | tail -n1)
    fi
    say "unpacking $(basename "$deb")"
    rm -rf "$KDIR.tmp"
    mkdir -p "$KDIR.tmp"
    run dpkg-deb -x "$deb" "$KDIR.tmp" || die "dpkg-deb -x $deb failed"
    [ -f "$KDIR.tmp/boot/vmlinuz-$KVER" ] || die "$deb has no boot/vmlinuz-$KVER"
    # Decompress the modules once, here: under TCG the guest's modprobe spends
    # most of its time in xz (and depmod, which reads every module, runs 3x
    # faster).  kmod loads plain .ko the same way; signatures are kept.
    say "decompressing the kernel modules"
    find "$KDIR.tmp/lib/modules/$KVER" -name '*.ko.xz' -print0 | xargs -0 -r -n 64 -P "$(nproc)" xz -d \
        || die "xz -d of the kernel modules failed"
    # modules.dep for the host's modprobe (initramfs dependency order)
    run depmod -b "$KDIR.tmp" "$KVER" || die "depmod for the unpacked kernel failed"
    basename "$deb" >"$KDIR.tmp/.deb"
    echo "$KSTAMP" >"$KDIR.tmp/.stamp"
    rm -rf "$KDIR"
    mv "$KDIR.tmp" "$KDIR"
}
[ -f "$KDIR/.deb" ] && [ "$(cat "$KDIR/.stamp" 2>/dev/null)" = "$KSTAMP" ] || fetch_kernel
KDEB=$(cat "$KDIR/.deb")

# ---- rootfs (debootstrap), keyed by the package list ------------------------------
ROOTFS_RECIPE="v1 $SUITE $VARIANT ${INCLUDE[*]} trim=doc,man,locale,apt-lists"
ROOTFS_KEY=$(echo "$ROOTFS_RECIPE" | sha256sum | cut -c1-12)
ROOTFS_TAR=$G/rootfs-$ROOTFS_KEY.tar
if [ "$FORCE_ROOTFS" = 1 ] || [ ! -f "$ROOTFS_TAR" ]; then
    t=$SECONDS
    R=$G/rootfs-$ROOTFS_KEY.tmp
    TMPS+=("$R")
    rm -rf "$R"
    say "debootstrap $SUITE ($VARIANT + ${#INCLUDE[@]} packages) from $MIRROR; takes ~1.5 min"
    run debootstrap --variant="$VARIANT" --include="$(IFS=,; echo "${INCLUDE[*]}")" \
        "$SUITE" "$R" "$MIRROR" \
        || die "debootstrap failed (see the log; $R/debootstrap/debootstrap.log if present)"
    # Trim what a test guest never reads.
    rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/cache/apt/*.bin "$R"/var/lib/apt/lists/* \
           "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/info/*
    find "$R/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null || true
    echo "$ROOTFS_RECIPE" >"$R/etc/qrnic-rootfs"
    run tar -C "$R" --numeric-owner -cf "$ROOTFS_TAR.tmp" . || die "tar of the rootfs failed"
    mv "$ROOTFS_TAR.tmp" "$ROOTFS_TAR"
    rm -rf "$R"
    # keep this one and the newest other (another branch with another package
    # list would otherwise redo its debootstrap after every build of this one)
    for old in $(ls -1t "$G"/rootfs-*.tar | grep -vx "$ROOTFS_TAR" | tail -n +2); do rm -f "$old"; done
    say "rootfs $ROOTFS_KEY ready in $(since $t) ($(du -m "$ROOTFS_TAR" | cut -f1) MB tar)"
fi
touch "$ROOTFS_TAR"   # the newest used, for the pruning above

# ---- driver and provider -------------------------------------------------------------
DRIVER_NOTE="not included (--no-driver)" PROVIDER_NOTE="not included (--no-driver)"
KO_FILE= PROV_SO= PROV_DRV=

# last_path OUTPUT: the last non-empty line of OUTPUT that is an existing path
last_path() { printf '%s\n' "$1" | awk 'NF' | tail -n1; }

locate_ko() {
    local out p
    if [ -n "$KO" ]; then
        [ -f "$KO" ] || { DRIVER_NOTE="not included: --ko/QRNIC_KO $KO does not exist"; return 1; }
        KO_FILE=$(readlink -f "$KO"); return 0
    fi
    if [ ! -f "$REPO/scripts/build-kmod.sh" ]; then
        DRIVER_NOTE="not included: scripts/build-kmod.sh does not exist yet"; return 1
    fi
    say "running scripts/build-kmod.sh"
    if ! out=$(bash "$REPO/scripts/build-kmod.sh" 2>>"$LOG"); then
        DRIVER_NOTE="not included: scripts/build-kmod.sh failed (see $LOG)"; return 1
    fi
    p=$(last_path "$out")
    if [ -d "$p" ]; then p=$(find "$p" -name qrnic.ko -print -quit); fi
    if [ -z "$p" ] || [ ! -f "$p" ]; then
        p=$(find "$REPO/guest-driver/kernel" -name qrnic.ko -newer "$REPO/scripts/build-kmod.sh" -print -quit 2>/dev/null \
            || true)
        [ -n "$p" ] || p=$(find "$REPO/guest-driver/kernel" -name qrnic.ko -print -quit 2>/dev/null || true)
    fi
    [ -n "$p" ] && [ -f "$p" ] || { DRIVER_NOTE="not included: build-kmod.sh succeeded but no qrnic.ko found"; return 1; }
    KO_FILE=$(readlink -f "$p")
}

locate_provider() {
    local out p d
    if [ -z "$PROVIDER_DIR" ]; then
        if [ ! -f "$REPO/scripts/build-provider.sh" ]; then
            PROVIDER_NOTE="not included: scripts/build-provider.sh does not exist yet"; return 1
        fi
        say "running scripts/build-provider.sh"
        if ! out=$(bash "$REPO/scripts/build-provider.sh" 2>>"$LOG"); then
            PROVIDER_NOTE="not included: scripts/build-provider.sh failed (see $LOG)"; return 1
        fi
        p=$(last_path "$out")
        if [ -f "$p" ]; then d=$(dirname "$p"); elif [ -d "$p" ]; then d=$p; else d=$REPO/guest-driver/provider; fi
    else
        d=$PROVIDER_DIR
    fi
    PROV_SO=$(find "$d" -name "$PROVIDER_SO" -print -quit 2>/dev/null || true)
    [ -n "$PROV_SO" ] || PROV_SO=$(find "$REPO/guest-driver/provider" -name "$PROVIDER_SO" -print -quit 2>/dev/null || true)
    [ -n "$PROV_SO" ] || { PROVIDER_NOTE="not included: no $PROVIDER_SO under $d"; return 1; }
    PROV_SO=$(readlink -f "$PROV_SO")
    PROV_DRV=$(find "$(dirname "$PROV_SO")" "$d" -maxdepth 3 -name "$PROVIDER_DRIVER" -print -quit 2>/dev/null || true)
    [ -n "$PROV_DRV" ] && PROV_DRV=$(readlink -f "$PROV_DRV")
}

if [ "$NO_DRIVER" = 0 ]; then
    if locate_ko; then
        vm=$(modinfo -F vermagic "$KO_FILE" 2>/dev/null | awk '{print $1}')
        if [ "$vm" != "$KVER" ]; then
            DRIVER_NOTE="not included: $KO_FILE is built for kernel '${vm:-?}', the guest runs $KVER"
            KO_FILE=
        else
            DRIVER_NOTE="included: $KO_FILE (sha256 $(sha256sum "$KO_FILE" | cut -c1-16))"
        fi
    fi
    if locate_provider; then
        PROVIDER_NOTE="included: $PROV_SO (sha256 $(sha256sum "$PROV_SO" | cut -c1-16))${PROV_DRV:+, $PROV_DRV}"
    fi
fi
say "qrnic.ko: $DRIVER_NOTE"
say "provider: $PROVIDER_NOTE"
if [ "$REQUIRE_DRIVER" = 1 ] && { [ -z "$KO_FILE" ] || [ -z "$PROV_SO" ]; }; then
    die "--require-driver: qrnic.ko $DRIVER_NOTE; provider $PROVIDER_NOTE"
fi

# ---- image key -------------------------------------------------------------------
hash_of() { if [ -n "$1" ] && [ -f "$1" ]; then sha256sum "$1" | cut -c1-64; else echo none; fi; }
IMAGE_KEY=$( {
    echo "rootfs $ROOTFS_KEY kernel $KDEB $KSTAMP full_modules=${QRNIC_FULL_MODULES:-0}"
    echo "ko $(hash_of "$KO_FILE") so $(hash_of "$PROV_SO") drv $(hash_of "$PROV_DRV")"
    sha256sum "$SCRIPT_PATH" | cut -c1-64
    for f in "$GUEST_FILES"/*; do echo "$(basename "$f") $(hash_of "$f")"; done
    } | sha256sum | cut -c1-16)
OUT=$G/images/$IMAGE_KEY
if [ "$FORCE" = 0 ] && [ -f "$OUT/info.txt" ] && [ -f "$OUT/rootfs.img" ]; then
    touch "$OUT"
    ln -sfn "$IMAGE_KEY" "$G/images/latest"
    say "up to date: $OUT"
    echo "$OUT"
    exit 0
fi

# ---- stage the root file system ------------------------------------------------------
t=$SECONDS
S=$G/stage.$$
TMPS+=("$S")
rm -rf "$S"
mkdir -p "$S"
say "staging the root file system"
run tar -C "$S" --numeric-owner -xf "$ROOTFS_TAR" || die "unpacking $ROOTFS_TAR failed"
MODDIR=$S/usr/lib/modules/$KVER
mkdir -p "$S/usr/lib/modules"
cp -a "$KDIR/lib/modules/$KVER" "$MODDIR"
if [ "${QRNIC_FULL_MODULES:-0}" != 1 ]; then
    for d in "${PRUNE_MODULES[@]}"; do rm -rf "${MODDIR:?}/kernel/$d"; done
    for m in "${PRUNE_KEEP[@]}"; do
        [ -f "$KDIR/lib/modules/$KVER/kernel/$m" ] || die "PRUNE_KEEP: $m not in $KDEB"
        install -m 0644 -D "$KDIR/lib/modules/$KVER/kernel/$m" "$MODDIR/kernel/$m"
    done
fi
if [ -n "$KO_FILE" ]; then
    mkdir -p "$MODDIR/extra"
    install -m 0644 "$KO_FILE" "$MODDIR/extra/qrnic.ko"
fi
run depmod -b "$S" "$KVER" || die "depmod -b $S $KVER failed"
[ -z "$KO_FILE" ] || grep -q '^extra/qrnic.ko:' "$MODDIR/modules.dep" || die "depmod did not pick up extra/qrnic.ko"
if [ -n "$PROV_SO" ]; then
    install -m 0644 "$PROV_SO" "$S/usr/lib/x86_64-linux-gnu/libibverbs/$PROVIDER_SO"
    if [ -n "$PROV_DRV" ]; then
        install -m 0644 "$PROV_DRV" "$S/etc/libibverbs.d/$PROVIDER_DRIVER"
    else
        echo "driver qrnic" >"$S/etc/libibverbs.d/$PROVIDER_DRIVER"
        PROVIDER_NOTE="$PROVIDER_NOTE (qrnic.driver generated: 'driver qrnic')"
    fi
    # Does it load against the guest's libibverbs (symbol versions, libc)?
    if ! chk=$(chroot "$S" /usr/bin/python3 -c "
import ctypes, os
ctypes.CDLL('libibverbs.so.1', mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL('/usr/lib/x86_64-linux-gnu/libibverbs/$PROVIDER_SO', mode=os.RTLD_NOW | os.RTLD_GLOBAL)" 2>&1); then
        say "WARNING: $PROVIDER_SO does not load in the guest: $(echo "$chk" | tail -n1)"
        PROVIDER_NOTE="$PROVIDER_NOTE; WARNING: does not dlopen in the guest: $(echo "$chk" | tail -n1)"
    fi
fi
install -m 0755 "$GUEST_FILES/qrnic-init" "$S/usr/sbin/qrnic-init"
install -m 0755 -D "$GUEST_FILES/qrnic-agent" "$S/usr/local/sbin/qrnic-agent"
install -m 0755 -D "$GUEST_FILES/qrnic-netup" "$S/usr/local/sbin/qrnic-netup"
install -m 0755 -D "$BUSYBOX" "$S/usr/local/bin/busybox"
echo qrnic-guest >"$S/etc/hostname"
cat >"$S/etc/hosts" <<'EOF'
127.0.0.1	localhost
10.0.0.1	vm0
10.0.0.2	vm1
EOF
: >"$S/etc/fstab"
sed -i 's/^root:[^:]*:/root::/' "$S/etc/shadow"
ln -sfn /proc/self/mounts "$S/etc/mtab"
{
    echo "image $IMAGE_KEY built $(date -Is) by scripts/guest-image.sh"
    echo "kernel $KVER ($KDEB)"
    echo "rootfs $ROOTFS_KEY: $ROOTFS_RECIPE"
    echo "qrnic.ko: $DRIVER_NOTE"
    echo "provider: $PROVIDER_NOTE"
    echo "repo HEAD: $(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo none)"
} >"$S/etc/qrnic-image"
say "staged in $(since $t)"

# ---- initramfs -------------------------------------------------------------------
t=$SECONDS
I=$G/initrd.$$
TMPS+=("$I")
rm -rf "$I"
mkdir -p "$I/bin" "$I/lib/modules" "$I/proc" "$I/sys" "$I/dev" "$I/newroot"
cp "$BUSYBOX" "$I/bin/busybox"
install -m 0755 "$GUEST_FILES/initramfs-init" "$I/init"
deps=$(modprobe -d "$KDIR" -S "$KVER" --show-depends -a "${INITRD_MODULES[@]}") \
    || die "modprobe --show-depends ${INITRD_MODULES[*]} failed for $KDIR"
: >"$I/modules.load"
while read -r kind path _; do
    [ "$kind" = insmod ] || continue           # "builtin X" needs nothing
    name=$(basename "$path"); name=${name%.xz}; name=${name%.zst}; name=${name%.gz}
    grep -qx "$name" "$I/modules.load" && continue
    # needs SSE4.2, which QEMU's default TCG CPU lacks; crc32c_generic does the job
    [ "$name" = crc32c-intel.ko ] && continue
    case $path in
        *.xz) xz -dc "$path" >"$I/lib/modules/$name" ;;
        *.zst) zstd -qdc "$path" >"$I/lib/modules/$name" ;;
        *) cp "$path" "$I/lib/modules/$name" ;;
    esac
    echo "$name" >>"$I/modules.load"
done <<<"$deps"
[ -s "$I/modules.load" ] || die "no modules for the initramfs (modprobe --show-depends said: $deps)"
mkdir -p "$OUT.tmp"
TMPS+=("$OUT.tmp")
rm -rf "${OUT:?}.tmp"/*
(cd "$I" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$OUT.tmp/initrd.img" \
    || die "cpio of the initramfs failed"
say "initramfs: $(tr '\n' ' ' <"$I/modules.load")($(du -k "$OUT.tmp/initrd.img" | cut -f1) KiB) in $(since $t)"

# ---- disk image ------------------------------------------------------------------
t=$SECONDS
used=$(du -sm "$S" | cut -f1)
size=$(( (used * 5 / 4 + 384 + 63) / 64 * 64 ))
run mke2fs -q -F -t ext4 -L qrnic-root -O ^has_journal -E root_owner=0:0 -d "$S" \
    "$OUT.tmp/rootfs.img" "${size}M" || die "mke2fs -d failed"
say "rootfs.img: ${size} MiB (${used} MiB used) in $(since $t)"
cp "$KDIR/boot/vmlinuz-$KVER" "$OUT.tmp/vmlinuz"
{
    cat "$S/etc/qrnic-image"
    echo "initrd modules: $(tr '\n' ' ' <"$I/modules.load")"
    echo "rootfs.img: ${size} MiB"
} >"$OUT.tmp/info.txt"
rm -rf "$S" "$I"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
ln -sfn "$IMAGE_KEY" "$G/images/latest"
# Beyond the newest $KEEP, an image is pruned only when it has not been used for
# 3 hours (a use touches it, above): parallel worktrees each build their own
# image, and a test that booted from one must not lose it under its feet.
for old in $(ls -1dt "$G"/images/*/ 2>/dev/null | sed 's:/$::' \
               | { grep -v -e '\.tmp$' -e '/latest$' -e "/$IMAGE_KEY\$" || true; } | tail -n +"$KEEP"); do
    if [ -n "$(find "$old" -maxdepth 0 -mmin -180 2>/dev/null)" ]; then
        continue
    fi
    say "pruning old image $(basename "$old")"
    rm -rf "$old"
done
say "done in $(since $T0): $OUT"
echo "$OUT"
