#!/usr/bin/env bash
# Build everything and run the qrnic demo: a guest with two qrnic ports
# cabled back-to-back (topology T1), the Linux driver and the rdma-core
# provider, and the stock RDMA tools between the two ports.
#
# Usage: scripts/run-demo.sh [-t T1|T2] [--smp N] [--mem MiB]
#
# Steps (each stops the demo with a message naming what failed):
#   1. scripts/build-qemu.sh       QEMU 10.0.2 with the qrnic device
#   2. scripts/build-kmod.sh       qrnic.ko for the guest kernel
#   3. scripts/build-provider.sh   libqrnic-rdmav34.so for the guest's rdma-core
#   4. scripts/guest-image.sh      the guest (kernel, initramfs, root image)
#   5. scripts/vm.py demo          boot, then ibv_devinfo, ib_write_bw,
#                                  ib_read_lat, ib_atomic_bw, rping; summary table
# A first run takes ~10 min (QEMU, rdma-core and the Debian root file system
# are built or fetched once, then cached under /var/cache/qrnic); later runs
# take well under a minute.  Logs: /tmp/qrnic-runs/<time>-<pid>/ (serial
# console, dmesg, QEMU, agent) and the build logs each step names.
set -Eeuo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$REPO"
T0=$SECONDS
step() { echo "run-demo: [$1/5] $2" >&2; }
fail() { echo "run-demo: FAILED at step $1: $2" >&2; exit 1; }
# last line of a build script's stdout (the path it built)
last() { awk 'NF' | tail -n1; }

case ${1:-} in -h|--help) sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac

step 1 "QEMU with the qrnic device (scripts/build-qemu.sh)"
QEMU=$(bash scripts/build-qemu.sh | last) && [ -x "$QEMU" ] \
    || fail 1 "scripts/build-qemu.sh did not produce qemu-system-x86_64 (see its messages above)"

step 2 "kernel driver (scripts/build-kmod.sh)"
[ -f scripts/build-kmod.sh ] || fail 2 "scripts/build-kmod.sh does not exist yet (the kernel driver is not there)"
KO=$(bash scripts/build-kmod.sh | last) && [ -f "$KO" ] \
    || fail 2 "scripts/build-kmod.sh did not produce qrnic.ko (see its messages above)"

step 3 "rdma-core provider (scripts/build-provider.sh)"
[ -f scripts/build-provider.sh ] || fail 3 "scripts/build-provider.sh does not exist yet (the provider is not there)"
PROV=$(bash scripts/build-provider.sh | last) && [ -e "$PROV" ] \
    || fail 3 "scripts/build-provider.sh did not produce the provider (see its messages above)"
[ -d "$PROV" ] || PROV=$(dirname "$PROV")

step 4 "guest image (scripts/guest-image.sh)"
IMG=$(bash scripts/guest-image.sh --require-driver --ko "$KO" --provider "$PROV" | last) && [ -d "$IMG" ] \
    || fail 4 "scripts/guest-image.sh could not build an image with the driver and the provider (see above)"

step 5 "boot and demo (scripts/vm.py demo $*)"
export QRNIC_QEMU=$QEMU QRNIC_GUEST_IMAGE=$IMG
rc=0
python3 scripts/vm.py demo "$@" || rc=$?
case $rc in
    0) echo "run-demo: all steps passed ($((SECONDS - T0)) s)" >&2 ;;
    1) fail 5 "some demo tools failed (table above; logs in the run directory it names)" ;;
    2) fail 5 "a prerequisite is missing (message above)" ;;
    *) fail 5 "the guest did not boot or the agent failed (exit $rc; message above)" ;;
esac
