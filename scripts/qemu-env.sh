# shellcheck shell=bash
# Source this file (bash): builds QEMU with qrnic if needed (scripts/build-qemu.sh)
# and exports
#   QRNIC_QEMU            path of qemu-system-x86_64 with the qrnic device
#   QRNIC_QEMU_DATA_ARGS  the -L options for the firmware QEMU needs at run time
# Example:
#   . scripts/qemu-env.sh && $QRNIC_QEMU $QRNIC_QEMU_DATA_ARGS -M q35 -device qrnic ...
if QRNIC_QEMU=$("$(dirname "${BASH_SOURCE[0]}")/build-qemu.sh" | tail -n1) && [ -x "$QRNIC_QEMU" ]; then
    export QRNIC_QEMU
    export QRNIC_QEMU_DATA_ARGS="-L /usr/share/seabios -L /usr/share/qemu -L /usr/lib/ipxe/qemu"
else
    echo "qemu-env.sh: scripts/build-qemu.sh failed" >&2
    unset QRNIC_QEMU
    false
fi
