# SPDX-License-Identifier: GPL-2.0-or-later
"""qtest tier support: drive the qrnic PCIe device inside a real QEMU.

qemu.py    the qtest/QMP client (one QEMU process)
pci.py     PCI config space, BAR placement, MSI-X into guest RAM
abi.py     qtest-only ABI constants (structures and commands come from qrnic_harness)
driver.py  the qtest back end of tests/qrnic_api.py (World, Device, Qp, Cq, Mr...)
"""
from .qemu import Qemu, QemuError, QtestFail, base_args, free_udp_ports  # noqa: F401
from .pci import PciDevice, MmioAllocator, find_devices  # noqa: F401
from .driver import World, Device, GuestMemory, mac_of  # noqa: F401
