# SPDX-License-Identifier: GPL-2.0-or-later
"""PCI configuration through qtest: what firmware would do, done by hand.

`-accel qtest` runs no firmware, so nobody assigned BARs or enabled the
device: find it on bus 0 (config mechanism #1, ports 0xcf8/0xcfc), size and
place its BARs in the q35 32-bit PCI hole, enable memory space and bus
mastering, and set up MSI-X with each table entry's message address in
guest RAM, so that an interrupt becomes a 4-byte memory write we can see
(as QEMU's libqos MSI-X tests do).
"""
from .qemu import QemuError

CFG_ADDR, CFG_DATA = 0xcf8, 0xcfc
PCI_VENDOR_ID, PCI_DEVICE_ID, PCI_COMMAND, PCI_STATUS = 0x00, 0x02, 0x04, 0x06
PCI_REVISION_ID, PCI_CLASS_PROG = 0x08, 0x09
PCI_SUBSYSTEM_VENDOR_ID, PCI_SUBSYSTEM_ID = 0x2c, 0x2e
PCI_CAPABILITY_LIST, PCI_INTERRUPT_PIN = 0x34, 0x3d
PCI_COMMAND_MEMORY, PCI_COMMAND_MASTER = 0x2, 0x4
PCI_STATUS_CAP_LIST = 0x10
PCI_CAP_ID_EXP, PCI_CAP_ID_MSIX = 0x10, 0x11
MSIX_FLAGS_ENABLE, MSIX_FLAGS_MASKALL = 0x8000, 0x4000
MSIX_ENTRY_SIZE = 16

# Where BARs go: the q35 PCI hole below 4 GiB (above MMCONFIG at 0xb0000000).
MMIO_BASE, MMIO_LIMIT = 0xe000_0000, 0xfec0_0000


class MmioAllocator:
    def __init__(self, base=MMIO_BASE, limit=MMIO_LIMIT):
        self.base = self.next = base
        self.limit = limit

    def alloc(self, size):
        a = (self.next + size - 1) & ~(size - 1)
        if a + size > self.limit:
            raise QemuError('PCI MMIO hole exhausted')
        self.next = a + size
        return a


class PciDevice:
    def __init__(self, qemu, bus, devfn):
        self.qemu = qemu
        self.bus, self.devfn = bus, devfn
        self.bars = {}          # index -> (address, size, is64)
        self.msix_cap = None
        self.msix_vectors = 0
        self.msix_table = None  # guest physical address of the table

    def __repr__(self):
        return f'<PciDevice {self.bus:02x}:{self.devfn >> 3:02x}.{self.devfn & 7}>'

    # -- config space (legacy mechanism: first 256 bytes)
    def _addr(self, off):
        return 0x8000_0000 | (self.bus << 16) | (self.devfn << 8) | (off & 0xfc)

    def cfg_read(self, off, size=4):
        self.qemu.outl(CFG_ADDR, self._addr(off))
        port = CFG_DATA + (off & 3)
        return {1: self.qemu.inb, 2: self.qemu.inw, 4: self.qemu.inl}[size](port)

    def cfg_write(self, off, val, size=4):
        self.qemu.outl(CFG_ADDR, self._addr(off))
        port = CFG_DATA + (off & 3)
        {1: self.qemu.outb, 2: self.qemu.outw, 4: self.qemu.outl}[size](port, val)

    @property
    def vendor_id(self):
        return self.cfg_read(PCI_VENDOR_ID, 2)

    @property
    def device_id(self):
        return self.cfg_read(PCI_DEVICE_ID, 2)

    def capabilities(self):
        """[(cap id, offset)] of the standard capability list."""
        out = []
        if not self.cfg_read(PCI_STATUS, 2) & PCI_STATUS_CAP_LIST:
            return out
        ptr = self.cfg_read(PCI_CAPABILITY_LIST, 1) & ~3
        seen = set()
        while ptr and ptr not in seen and len(out) < 48:
            seen.add(ptr)
            out.append((self.cfg_read(ptr, 1), ptr))
            ptr = self.cfg_read(ptr + 1, 1) & ~3
        return out

    def find_cap(self, cap_id):
        for cid, off in self.capabilities():
            if cid == cap_id:
                return off
        return None

    # -- BARs
    def size_bar(self, i):
        """(size, is64, is_io) of BAR i, by the write-all-ones probe."""
        off = 0x10 + 4 * i
        orig = self.cfg_read(off)
        self.cfg_write(off, 0xffffffff)
        lo = self.cfg_read(off)
        self.cfg_write(off, orig)
        if lo == 0:
            return 0, False, False
        if lo & 1:
            return (~(lo & ~3) + 1) & 0xffff, False, True
        is64 = (lo & 6) == 4
        mask = lo & ~0xf
        if is64:
            orig_hi = self.cfg_read(off + 4)
            self.cfg_write(off + 4, 0xffffffff)
            hi = self.cfg_read(off + 4)
            self.cfg_write(off + 4, orig_hi)
            mask |= hi << 32
            return (~mask + 1) & 0xffff_ffff_ffff_ffff, True, False
        return (~mask + 1) & 0xffff_ffff, False, False

    def map_bars(self, allocator):
        """Assign every memory BAR an address; enable memory space and bus master."""
        i = 0
        while i < 6:
            size, is64, io = self.size_bar(i)
            if size and not io:
                a = allocator.alloc(size)
                self.cfg_write(0x10 + 4 * i, a & 0xffffffff)
                if is64:
                    self.cfg_write(0x14 + 4 * i, a >> 32)
                self.bars[i] = (a, size, is64)
            i += 2 if is64 else 1
        self.enable()
        return self.bars

    def enable(self, memory=True, master=True):
        cmd = self.cfg_read(PCI_COMMAND, 2)
        cmd |= (PCI_COMMAND_MEMORY if memory else 0) | (PCI_COMMAND_MASTER if master else 0)
        self.cfg_write(PCI_COMMAND, cmd, 2)

    def bar_addr(self, i):
        return self.bars[i][0]

    def reprogram_bars(self):
        """Write the BAR addresses chosen by map_bars() again (after a reset)."""
        for i, (a, _, is64) in self.bars.items():
            self.cfg_write(0x10 + 4 * i, a & 0xffffffff)
            if is64:
                self.cfg_write(0x14 + 4 * i, a >> 32)
        self.enable()

    # -- MSI-X
    def msix_info(self):
        cap = self.find_cap(PCI_CAP_ID_MSIX)
        if cap is None:
            raise QemuError(f'{self}: no MSI-X capability')
        ctrl = self.cfg_read(cap + 2, 2)
        table = self.cfg_read(cap + 4)
        pba = self.cfg_read(cap + 8)
        return {'cap': cap, 'vectors': (ctrl & 0x7ff) + 1, 'table_bir': table & 7,
                'table_off': table & ~7, 'pba_bir': pba & 7, 'pba_off': pba & ~7,
                'ctrl': ctrl}

    def msix_enable(self, msg_addr_of, data_of=lambda v: 0x4000 + v):
        """Enable MSI-X; vector v writes data_of(v) (4 bytes) to msg_addr_of(v)."""
        info = self.msix_info()
        self.msix_cap = info['cap']
        self.msix_vectors = info['vectors']
        self.msix_table = self.bar_addr(info['table_bir']) + info['table_off']
        self.msix_pba = self.bar_addr(info['pba_bir']) + info['pba_off']
        # enable with the function masked, program the table, then unmask
        self.cfg_write(self.msix_cap + 2, info['ctrl'] | MSIX_FLAGS_ENABLE | MSIX_FLAGS_MASKALL, 2)
        for v in range(self.msix_vectors):
            self.msix_program(v, msg_addr_of(v), data_of(v))
        self.cfg_write(self.msix_cap + 2,
                       (info['ctrl'] | MSIX_FLAGS_ENABLE) & ~MSIX_FLAGS_MASKALL, 2)

    def msix_program(self, v, addr, data, masked=False):
        e = self.msix_table + v * MSIX_ENTRY_SIZE
        q = self.qemu
        q.writel(e + 0, addr & 0xffffffff)
        q.writel(e + 4, addr >> 32)
        q.writel(e + 8, data)
        q.writel(e + 12, 1 if masked else 0)

    def msix_mask(self, v, masked=True):
        self.qemu.writel(self.msix_table + v * MSIX_ENTRY_SIZE + 12, 1 if masked else 0)

    def msix_pending(self, v):
        return bool(self.qemu.readq(self.msix_pba + (v // 64) * 8) >> (v % 64) & 1)

    def msix_enabled(self):
        return bool(self.cfg_read(self.msix_cap + 2, 2) & MSIX_FLAGS_ENABLE)


def setup_bridge(bridge, secondary, mmio, window=16 << 20):
    """Program a PCI-PCI bridge (e.g. a pcie-root-port) as firmware would:
    bus numbers primary 0 / secondary = subordinate = `secondary`, a
    non-prefetchable memory window of `window` bytes taken from `mmio`,
    I/O and prefetchable windows closed, memory + bus master enabled.
    Returns an MmioAllocator for the BARs of the devices behind it."""
    base = mmio.alloc(window)
    bridge.cfg_write(0x18, bridge.bus | (secondary << 8) | (secondary << 16))
    bridge.cfg_write(0x1c, 0xf0, 1)                       # I/O base > limit: closed
    bridge.cfg_write(0x1d, 0x00, 1)
    bridge.cfg_write(0x20, (base >> 16) & 0xfff0, 2)      # memory base / limit (1 MiB units)
    bridge.cfg_write(0x22, ((base + window - 1) >> 16) & 0xfff0, 2)
    bridge.cfg_write(0x24, 0xfff0, 2)                     # prefetchable: closed
    bridge.cfg_write(0x26, 0x0000, 2)
    bridge.cfg_write(0x28, 0xffffffff)
    bridge.cfg_write(0x2c, 0)
    bridge.enable()
    return MmioAllocator(base, base + window)


def find_devices(qemu, vendor, device, bus=0):
    """All functions on `bus` with this vendor/device ID."""
    out = []
    for slot in range(32):
        for fn in range(8):
            d = PciDevice(qemu, bus, (slot << 3) | fn)
            vd = d.cfg_read(0)
            if vd == 0xffffffff or vd == 0:
                if fn == 0:
                    break
                continue
            if (vd & 0xffff, vd >> 16) == (vendor, device):
                out.append(d)
            if fn == 0 and not d.cfg_read(0x0e, 1) & 0x80:
                break       # single-function device
    return out
