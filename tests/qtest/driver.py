# SPDX-License-Identifier: GPL-2.0-or-later
"""The qtest back end of the one Python device API (tests/qrnic_api.py,
shared with the C-harness back end tests/qrnic_harness.py): a mini qrnic
driver whose every step is a guest-physical memory access, an MMIO access
to the device's BARs or a PCI configuration access in a real QEMU process.
Here: World (QEMU processes, time), the admin queue, and the rings and
records of EQs, CQs, QPs and SRQs in guest RAM.

    w = World.single(qemu_binary, ndev=2)      # one QEMU, two cabled devices
    a, b = w.devs                               # brought up: AQ, EQs, GIDs
    conn = qrnic_api.connect_rc(a, b)           # the one API's helper
    mr = a.reg_mr(conn.pda, 4096)
    conn.qa.post_send('RDMA_WRITE', [(mr, 0, 100)], remote=(rmr, 0))
    conn.cqa.wait(1)

Time: the device's bottom half runs whenever QEMU's main loop iterates,
which it does on its own; only the virtual clock (retransmission and RNR
timers) needs clock_step.  World.run_until() polls a condition and
advances every QEMU's virtual clock at about the pace of real time, so
timers fire when they would on a real machine and never early in bulk.
"""
import os
import ctypes
import random
import struct
import time

import qrnic_api as api
import qrnic_harness as h

from . import abi
from .pci import MmioAllocator, find_devices
from .qemu import Qemu

PAGE = 4096
E_TIMEOUT = h.E_TIMEOUT
RAM_ALLOC_BASE = 0x0100_0000        # above the legacy holes and ROM shadows


class WaitTimeout(AssertionError):
    pass


class GuestMemory:
    """Bump allocator for guest RAM of one QEMU (zeroes what it hands out)."""

    def __init__(self, qemu, base=RAM_ALLOC_BASE, limit=None):
        self.qemu = qemu
        self.next = base
        self.limit = limit if limit is not None else 0x2000_0000 - 0x10_0000

    def mark(self):
        """Remember the current end: release() frees everything allocated after it."""
        self._mark = self.next

    def release(self):
        self.next = self._mark

    def alloc(self, size, align=PAGE, zero=True):
        size = max(size, 1)
        a = (self.next + align - 1) & ~(align - 1)
        if a + size > self.limit:
            raise MemoryError(f'guest RAM exhausted ({size} bytes)')
        self.next = a + size
        if zero:
            self.qemu.memset(a, size, 0)
        return a


# ---- the world: QEMU processes and their devices ------------------------------------
class World:
    """QEMU processes, their qrnic devices, and a run loop over all of them."""

    def __init__(self, qemus, seed=0x9e1):
        self.qemus = list(qemus)
        self.devs = []
        self.rng = random.Random(seed)
        self.clock_rate = 1.0          # virtual ns per real ns while waiting
        self.max_step_ns = 20_000_000
        # Deterministic mode: run_until() advances the clocks by exactly this
        # many ns per poll instead of following real time, so the same test
        # gives the same virtual timeline every run (tests/test_qemu_timing.py).
        self.fixed_step_ns = None

    @classmethod
    def single(cls, binary, ndev=2, dev_opts='', extra_args=(), init=True, name='qemu',
               fixed_step_ns=None):
        """One QEMU, ndev qrnic devices on one hub (a back-to-back cable for 2).
        dev_opts: extra -device options for every device, or a list with
        one string per device.  Device i has id qrnic<i> (Device.qom_path).
        QRNIC_QTEST_DEV_OPTS in the environment goes before every device's
        options (e.g. unlocked-run=on to run the tier with it; a test's own
        value of the same property wins)."""
        args = []
        for i in range(ndev):
            opts = dev_opts[i] if isinstance(dev_opts, (list, tuple)) else dev_opts
            opts = ','.join(o for o in (os.environ.get('QRNIC_QTEST_DEV_OPTS', ''), opts) if o)
            args += ['-netdev', f'hubport,id=p{i},hubid=0',
                     '-device', f'qrnic,netdev=p{i},mac={mac_of(i)},id=qrnic{i}'
                     + (',' + opts if opts else '')]
        q = Qemu(binary, args + list(extra_args), name=name)
        w = cls([q])
        w.fixed_step_ns = fixed_step_ns
        try:
            w.attach(q, ndev, first_idx=0)
            for i, d in enumerate(w.devs):
                d.qom_path = f'/machine/peripheral/qrnic{i}'
            if init:
                for d in w.devs:
                    d.init()
        except BaseException:
            w.close()
            raise
        return w

    def attach(self, qemu, ndev, first_idx=None, bus=0, mmio=None):
        """Find ndev qrnic devices on `bus` of qemu, map their BARs (from
        `mmio`, default: the q35 PCI hole) and enable MSI-X."""
        found = find_devices(qemu, abi.PCI_VENDOR_ID, abi.PCI_DEVICE_ID, bus=bus)
        if len(found) != ndev:
            raise AssertionError(f'{qemu.name}: found {len(found)} qrnic devices on bus {bus}, '
                                 f'want {ndev}')
        if getattr(qemu, 'mem', None) is None:
            qemu.mem = GuestMemory(qemu)
            qemu.mmio = MmioAllocator()
        mem = qemu.mem
        idx = len(self.devs) if first_idx is None else first_idx
        out = []
        for p in found:
            d = Device(self, qemu, p, mem, idx)
            d.setup_pci(mmio or qemu.mmio)
            self.devs.append(d)
            out.append(d)
            idx += 1
        mem.mark()
        return out

    def detach(self, dev):
        self.devs.remove(dev)

    def reset_devices(self, init=True):
        """CTRL.RESET every device, free the guest memory used since attach(),
        and bring the devices up again (a clean slate for the next test)."""
        for d in self.devs:
            d.function_reset()
        for q in self.qemus:
            q.mem.release()
        if init:
            for d in self.devs:
                d.init()

    def system_reset(self, qemu=None):
        """QMP system_reset of one QEMU (default: all): PCI state is lost, so
        BARs and MSI-X are programmed again; driver state is forgotten."""
        for q in ([qemu] if qemu else self.qemus):
            q.system_reset()
            q.mem.release()
            for d in self.devs:
                if d.qemu is q:
                    d.after_system_reset()

    def close(self):
        """Close every QEMU; then raise the first error (a sanitizer report)."""
        first = None
        for q in self.qemus:
            try:
                q.close()
            except Exception as e:  # noqa: BLE001  (close the others first)
                first = first or e
        if first is not None:
            raise first

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def alive(self):
        return all(q.alive() for q in self.qemus)

    # -- time
    def step(self, ns):
        for q in self.qemus:
            q.clock_step(ns)

    def run_until(self, pred, timeout=30.0, what='condition'):
        """Poll pred() until true; meanwhile advance the virtual clocks at
        self.clock_rate x real time.  Returns True, or False on timeout."""
        t0 = last = time.monotonic()
        nap = 0.0
        while True:
            if pred():
                return True
            now = time.monotonic()
            if now - t0 > timeout:
                return False
            if self.fixed_step_ns is not None:
                for q in self.qemus:
                    q.clock_step(self.fixed_step_ns)
                continue
            step = int((now - last) * 1e9 * self.clock_rate)
            if step >= 10_000:
                step = min(step, self.max_step_ns)
                for q in self.qemus:
                    q.clock_step(step)
                last = now
            if nap:
                time.sleep(nap)
            nap = min(0.002, nap + 0.0001)

    def wait(self, pred, timeout=30.0, what='condition'):
        if not self.run_until(pred, timeout):
            raise WaitTimeout(f'timed out after {timeout}s waiting for {what}')

    def settle(self, rounds=20):
        """Let queued device work (bottom halves, packets) drain a little."""
        for _ in range(rounds):
            for q in self.qemus:
                q.clock()


def mac_of(i):
    return f'52:54:00:5e:00:{i + 1:02x}'


# ---- the object model (tests/qrnic_api.py) over guest memory and MMIO --------------------
Pd, Ah = api.Pd, api.Ah


class _Obj:
    @property
    def q(self):
        return self.dev.qemu


class Eq(_Obj, api.Eq):
    def __init__(self, dev, eqn, log_depth, vector, ring):
        super().__init__(dev, eqn, log_depth, vector)
        self.ring = ring
        self.ci = 0

    def _ready(self, ci):
        slot = self.ring + (ci & ((1 << self.log_depth) - 1)) * abi.EQE_SIZE
        owner = self.q.readb(slot + abi.EQE_SIZE - 1)
        return (owner & 1) == (((ci >> self.log_depth) & 1) ^ 1)

    def _poll_raw(self, n):
        out = []
        while len(out) < n and self._ready(self.ci):
            slot = self.ring + (self.ci & ((1 << self.log_depth) - 1)) * abi.EQE_SIZE
            out.append(h.Eqe.from_buffer_copy(self.q.memread(slot, abi.EQE_SIZE)))
            self.ci += 1
        if out:
            self.dev.eq_db(self.eqn, self.ci)
        return out

    def arm(self):
        self.dev.eq_db(self.eqn, self.ci, arm=True)



def ring_at(base, pages, off):
    """Guest address of byte off of a ring: contiguous at base, or through
    its page list (ABI 1.8, spec 6.6.21)."""
    if not pages:
        return base + off
    return pages[off >> 12] + (off & 0xfff)


def listed_ring(dev, nbytes):
    """(ring base, pages, list address) of a new ring of nbytes: with
    dev.ring_pagelist and a ring of a page or more, its pages in reverse
    order behind a page list in guest RAM; else (base, None, base)."""
    base = dev.mem.alloc(nbytes)
    if not dev.ring_pagelist or nbytes < PAGE:
        return base, None, base
    n = nbytes // PAGE
    pages = [base + (n - 1 - i) * PAGE for i in range(n)]
    lst = dev.mem.alloc(8 * n, 8)
    dev.qemu.memwrite(lst, struct.pack(f'<{n}Q', *pages))
    return base, pages, lst


class Cq(_Obj, api.Cq):
    def __init__(self, dev, cqn, log_depth, ring, dbrec, uctx=0, flags=0, pages=None):
        super().__init__(dev, cqn, log_depth, flags)
        self.ring, self.dbrec, self.uctx = ring, dbrec, uctx
        self.pages = pages
        self.ci = 0
        self.size = self.cqe_size

    def _slot(self, i):
        return ring_at(self.ring, self.pages, (i & ((1 << self.log_depth) - 1)) * self.size)

    def _valid(self, raw, i):
        return (raw[abi.CQE_SIZE - 1] & 1) == (((i >> self.log_depth) & 1) ^ 1)

    def _read(self, n):
        """Up to n consecutive valid CQEs from ci, without consuming them (raw bytes)."""
        depth = 1 << self.log_depth
        out = []
        i = self.ci
        while len(out) < n:
            chunk = min(n - len(out), depth - (i & (depth - 1)), 64)
            data = self.q.memread(self._slot(i), chunk * self.size)
            for k in range(chunk):
                raw = data[k * self.size:(k + 1) * self.size]
                if not self._valid(raw, i):
                    return out
                out.append(raw)
                i += 1
        return out

    def peek(self):
        return len(self._read(1 << self.log_depth))

    def _poll_raw(self, n):
        out = []
        for raw in self._read(n):
            c = h.Cqe.from_buffer_copy(raw[:abi.CQE_SIZE])
            ts = struct.unpack_from('<Q', raw, 32)[0] if self.size > abi.CQE_SIZE else None
            out.append((c, ts))
            self.ci += 1
            self.dev._cqe_consumed(c)
        if out:
            self.update_ci()
        return out

    def update_ci(self, arm=False, solicited=False):
        if self.dbrec:
            self.q.writel(self.dbrec, self.ci)
        v = (self.cqn & abi.DB_QN_MASK) | ((self.ci & 0xffffffff) << 32)
        if arm:
            v |= abi.DB_CQ_ARM | (abi.DB_CQ_SOLICITED if solicited else 0)
        self.dev.db_write(self.uctx * h.DB_PAGE_SIZE + h.DB_CQ, v)

    def arm(self, solicited=False):
        self.update_ci(arm=True, solicited=solicited)

    def wait(self, n=1, timeout=30.0):
        """Wait until n CQEs are ready (or timeout) and poll them."""
        out = []

        def ready():
            out.extend(self.poll(n - len(out)))
            return len(out) >= n
        self.dev.world.run_until(ready, timeout)
        return out

    def resize(self, log_depth, check=True):
        """RESIZE_CQ (spec 6.6.17) to a fresh zeroed ring: on success poll
        from slot 0 of it; returns the CQEs carried over."""
        ring, pages, addr = listed_ring(self.dev, self.size << min(log_depth, 16))
        cmd = struct.pack('<BBHI', h.CMD['RESIZE_CQ'], 0, 0, 0) + \
            struct.pack('<IBB2sQQ', self.cqn, log_depth, h.CQ_F_PAGELIST if pages else 0, b'',
                        addr, 0)
        st, cqe = self.dev.admin(cmd)
        r = self.dev._result(st, cqe, 'resize_cq', check)
        if r is not None:
            self.ring, self.log_depth, self.ci, self.pages = ring, log_depth, 0, pages
        return r


class Mr(_Obj, api.Mr):
    """Registered guest memory: `pages` are the guest-physical pages in MR order."""

    def __init__(self, dev, key, pdn, iova, length, access, pages, page_shift, pbl_addr):
        super().__init__(dev, key, pdn, iova, length, access)
        self.pages, self.page_shift, self.pbl_addr = pages, page_shift, pbl_addr

    def bus_addr(self, off=0):
        ps = 1 << self.page_shift
        x = (self.iova & (ps - 1)) + off
        return self.pages[x >> self.page_shift] + (x & (ps - 1))

    def _chunks(self, off, n):
        ps = 1 << self.page_shift
        if off < 0 or off + n > self.length:
            raise ValueError(f'{self}: [{off}, {off + n}) outside the MR')
        while n:
            x = (self.iova & (ps - 1)) + off
            inpage = x & (ps - 1)
            k = min(n, ps - inpage)
            yield off, self.pages[x >> self.page_shift] + inpage, k
            off += k
            n -= k

    def write(self, off, data):
        data = bytes(data)
        pos = 0
        for _, a, k in self._chunks(off, len(data)):
            self.q.memwrite(a, data[pos:pos + k])
            pos += k

    def read(self, off=0, n=None):
        if n is None:
            n = self.length - off
        return b''.join(self.q.memread(a, k) for _, a, k in self._chunks(off, n))


class Qp(_Obj, api.Qp):
    def __init__(self, dev, qpn, qp_type, pd, send_cq, recv_cq, sq_log, sq_shift, rq_log,
                 rq_shift, sq_addr, rq_addr, uctx=0):
        super().__init__(dev, qpn, qp_type, pd, send_cq, recv_cq, sq_log, sq_shift, rq_log,
                         rq_shift)
        self.sq_addr, self.rq_addr, self.uctx = sq_addr, rq_addr, uctx
        self.sq_pages = self.rq_pages = None     # page lists (ABI 1.8), set by create_qp
        self.sq_pi = self.sq_ci = self.rq_pi = self.rq_ci = 0

    def _modify_attr(self, a):
        st, _ = self.dev.admin(abi.command('MODIFY_QP', abi.CmdModifyQp(qpn=self.qpn, attr=a)))
        if st == 0 and (a.attr_mask & h.QP_ATTR['STATE']) and a.qp_state == h.QPS['RESET']:
            self.sq_pi = self.sq_ci = self.rq_pi = self.rq_ci = 0
        return st

    # -- data path
    def _db(self, off, idx):
        self.dev.db_write(self.uctx * h.DB_PAGE_SIZE + off,
                          (self.qpn & abi.DB_QN_MASK) | ((idx & 0xffffffff) << 32))

    def ring_sq(self):
        self._db(h.DB_SQ, self.sq_pi)

    def ring_rq(self):
        self._db(h.DB_RQ, self.rq_pi)

    def ring_bf(self, nwords=0, buf=0, skip=0, page=None, pi=None, size=8):
        """BlueFlame (spec 3.2.1) for the WQE last put on the ring: its
        first nwords 8-byte words (0: header + inline data or SGEs) but
        those whose bit is set in skip, stored with size-byte writes into BF
        buffer buf of doorbell page 'page' (default: the QP's), then the
        control word with producer index pi (default: the ring's)."""
        idx = self.sq_pi - 1
        stride = 1 << self.sq_shift
        wqe = self.q.memread(ring_at(self.sq_addr, self.sq_pages,
                                     (idx & ((1 << self.sq_log) - 1)) << self.sq_shift),
                             min(stride, 256))
        if not nwords:
            flags, nsge, inl = wqe[1], wqe[2], struct.unpack_from('<I', wqe, 4)[0]
            n = 64 + (inl if flags & h.WQE_F_INLINE else 16 * nsge)
            nwords = min((n + 7) // 8, 32)
        page = self.uctx if page is None else page
        base = page * h.DB_PAGE_SIZE + abi.DB_BF_BASE + buf * abi.DB_BF_STRIDE
        for i in range(min(nwords, 32)):
            if skip & (1 << i):
                continue
            for j in range(0, 8, size):
                self.dev.db_write(base + 8 * i + j,
                                  int.from_bytes(wqe[8 * i + j:8 * i + j + size], 'little'), size)
        pi = self.sq_pi if pi is None else pi
        self.dev.db_write(base + abi.BF_CTRL, (self.qpn & abi.DB_QN_MASK) | ((nwords & 0xff) << 24) |
                          ((pi & 0xffffffff) << 32))

    def _put(self, slot, sq, ring):
        log, shift, base, pages = \
            (self.sq_log, self.sq_shift, self.sq_addr, self.sq_pages) if sq else \
            (self.rq_log, self.rq_shift, self.rq_addr, self.rq_pages)
        pi, ci = (self.sq_pi, self.sq_ci) if sq else (self.rq_pi, self.rq_ci)
        if pi - ci >= (1 << log):
            raise h.HarnessError(f'{self}: {"SQ" if sq else "RQ"} full')
        stride = 1 << shift
        slot = bytearray(bytes(slot)[:stride].ljust(stride, b'\0'))
        for off, val in self.dev._wqe_patch:
            slot[off:off + len(val)] = val
        self.dev._wqe_patch = []
        self.q.memwrite(ring_at(base, pages, (pi & ((1 << log) - 1)) << shift),
                        bytes(slot[:stride]))
        if sq:
            self.sq_pi += 1
            if ring:
                self.ring_sq()
        else:
            self.rq_pi += 1
            if ring:
                self.ring_rq()
        return pi

    def _post_send(self, op, flags, wr_id, addrs, lens, keys, inl, imm, rkey, raddr, cmp_add,
                   swap, ahn, remote_qpn, qkey, xrc_srqn, ring, check):
        w = h.SendWqe(opcode=op, flags=flags, num_sge=len(addrs),
                      inline_len=len(inl) if inl is not None else 0, wr_id=wr_id,
                      imm_data=struct.unpack('<I', struct.pack('>I', imm & 0xffffffff))[0],
                      rkey=rkey, remote_addr=raddr, compare_add=cmp_add, swap=swap, ah=ahn,
                      remote_qpn=remote_qpn, remote_qkey=qkey, xrc_srqn=xrc_srqn)
        body = inl if inl is not None else b''.join(
            bytes(h.Sge(addr=a, length=ln, lkey=k)) for a, ln, k in zip(addrs, lens, keys))
        stride = 1 << self.sq_shift
        if abi.SEND_WQE_SIZE + len(body) > stride:
            if check:
                raise h.HarnessError(f'post_send: WQE does not fit the {stride}-byte stride')
            return -1
        return self._put(bytes(w) + body, True, ring)

    def post_send_raw(self, wqe_bytes, ring=True):
        return self._put(wqe_bytes, True, ring)

    def _post_recv(self, wr_id, addrs, lens, keys, ring, check):
        body = bytes(h.RecvWqe(wr_id=wr_id, num_sge=len(addrs))) + b''.join(
            bytes(h.Sge(addr=a, length=ln, lkey=k)) for a, ln, k in zip(addrs, lens, keys))
        if len(body) > (1 << self.rq_shift):
            if check:
                raise h.HarnessError('post_recv: WQE does not fit the stride')
            return -1
        return self._put(body, False, ring)

    def post_recv_raw(self, wqe_bytes, ring=True):
        return self._put(wqe_bytes, False, ring)


class Srq(_Obj, api.Srq):
    """A shared receive queue driven through its ring and QRNIC_DB_SRQ."""

    def __init__(self, dev, srqn, log_depth, wqe_shift, ring, rec, uctx, pages=None):
        super().__init__(dev, srqn, log_depth)
        self.wqe_shift = wqe_shift
        self.ring, self.rec, self.uctx = ring, rec, uctx
        self.pages = pages
        self.pi = 0

    @property
    def ci(self):
        """The consumer index the device wrote to the record."""
        return struct.unpack('<I', self.dev.qemu.memread(self.rec, 4))[0]

    def _post(self, wr_id, addrs, lens, keys, ring, check):
        body = bytes(h.RecvWqe(wr_id=wr_id, num_sge=len(addrs))) + b''.join(
            bytes(h.Sge(addr=a, length=ln, lkey=k)) for a, ln, k in zip(addrs, lens, keys))
        stride = 1 << self.wqe_shift
        assert len(body) <= stride and self.pi - self.ci < (1 << self.log_depth)
        self.dev.qemu.memwrite(ring_at(self.ring, self.pages,
                                       (self.pi & ((1 << self.log_depth) - 1))
                                       << self.wqe_shift), body.ljust(stride, b'\0'))
        self.pi += 1
        if ring:
            self.ring_db()
        return self.pi - 1

    def ring_db(self, pi=None):
        self.dev.db_write(self.uctx * h.DB_PAGE_SIZE + h.DB_SRQ,
                          (self.srqn & abi.DB_QN_MASK) | (((self.pi if pi is None else pi)
                                                          & 0xffffffff) << 32))


# ---- the device -------------------------------------------------------------------------
def parse_counters(obj):
    """The counters of a QOM counter-struct property (host-calls, dma-maps; qom-get returns
    an object of unsigned integers) as a dict of ints; anything else is an error."""
    if not isinstance(obj, dict) or not all(isinstance(v, int) for v in obj.values()):
        raise TypeError('not a QOM counter struct: %r' % (obj,))
    return dict(obj)


class Device(api.Device):
    """One qrnic PCI function in one QEMU, and the driver state for it."""

    def __init__(self, world, qemu, pci, mem, idx):
        self.world, self.qemu, self.pci, self.mem, self.idx = world, qemu, pci, mem, idx
        self.async_eq = self.comp_eq = None
        self.ring_pagelist = False   # rings of a page or more as page lists (ABI 1.8)
        self.attr = None
        self.gids = {}
        self.aq_log = 0
        self.aq_sq = self.aq_cq = 0
        self.aq_pi = self.aq_ci = 0
        self.next_cmd_id = 1
        self.last_cqe_d = None
        self.admin_timeout = 20.0
        self.qps = {}
        self._wqe_patch = []
        self._cmd_patch = []
        self.scratch = 0
        self.msi_base = 0
        self.qom_path = None        # /machine/peripheral/<id> when the device has an id

    def __repr__(self):
        return f'<qtest Device {self.idx} {self.qemu.name} {self.pci}>'

    # -- QOM (QMP qom-get / qom-set on the device object)
    def qom_get(self, prop):
        return self.qemu.qmp('qom-get', path=self.qom_path, property=prop)

    def qom_counters(self, prop):
        """A counter-struct property (host-calls, dma-maps) as a dict of ints."""
        return parse_counters(self.qom_get(prop))

    def qom_set(self, prop, value):
        return self.qemu.qmp('qom-set', path=self.qom_path, property=prop, value=value)

    def mem_alloc(self, size, align=4096):
        return self.mem.alloc(size, align)

    def mem_write(self, addr, data):
        self.qemu.memwrite(addr, bytes(data))

    def mem_read(self, addr, n):
        return self.qemu.memread(addr, n)

    def fault(self, rules):
        """Add fault rules through QMP (qom-set fault); returns the new rules'
        ids (as the harness's Device.fault / fault_plan)."""
        before = {r['id'] for r in self.qom_get('fault-rules')}
        self.qom_set('fault', rules)
        return [r['id'] for r in self.qom_get('fault-rules') if r['id'] not in before]

    def fault_rule(self, rid):
        return next((r for r in self.qom_get('fault-rules') if r['id'] == rid), None)

    # -- PCI
    def setup_pci(self, mmio):
        self.pci.map_bars(mmio)
        self.regs = self.pci.bar_addr(abi.BAR_REGS)
        self.db = self.pci.bar_addr(abi.BAR_DB)
        self.msi_base = self.mem.alloc(PAGE)
        self.pci.msix_enable(self.msi_addr)

    def after_system_reset(self):
        self.pci.reprogram_bars()
        self.irq_clear()
        self.pci.msix_enable(self.msi_addr)
        self.forget()

    def function_reset(self):
        """CTRL.RESET (full function reset) and forget the driver state."""
        self.reg_write('CTRL', h.CTRL_RESET)
        self.world.wait(lambda: self.reg_read('STATUS') == h.STATUS_READY, 10,
                        'STATUS == READY after CTRL.RESET')
        self.irq_clear()
        self.forget()

    def msi_addr(self, vector):
        return self.msi_base + 16 * vector

    def irq_fired(self, vector, clear=True):
        """Whether MSI-X vector `vector` wrote its message since the last clear."""
        v = self.qemu.readl(self.msi_addr(vector))
        if v and clear:
            self.qemu.writel(self.msi_addr(vector), 0)
        return v != 0

    def irq_clear(self, vector=None):
        for v in ([vector] if vector is not None else range(self.pci.msix_vectors)):
            self.qemu.writel(self.msi_addr(v), 0)

    def irq_wait(self, vector, timeout=10.0):
        return self.world.run_until(lambda: self.irq_fired(vector), timeout)

    # -- registers and doorbells
    def reg_read(self, off, size=4):
        if isinstance(off, str):
            off = h.REG[off]
        return self.qemu.read_sized(self.regs + off, size)

    def reg_write(self, off, val, size=4):
        if isinstance(off, str):
            off = h.REG[off]
        self.qemu.write_sized(self.regs + off, val, size)

    def db_read(self, off, size=8):
        return self.qemu.read_sized(self.db + off, size)

    def db_write(self, off, val, size=8):
        self.qemu.write_sized(self.db + off, val, size)

    def eq_db(self, eqn, ci, arm=False):
        self.reg_write('EQ_DB', (eqn & 0xffff) | (abi.EQ_DB_ARM if arm else 0) |
                       ((ci & 0xffffffff) << 32), 8)

    @property
    def mac(self):
        lo, hi = self.reg_read('MAC_LO'), self.reg_read('MAC_HI')
        return struct.pack('<IH', lo, hi & 0xffff)

    # -- bring-up
    def bringup(self, aq_log=5):
        v = self.reg_read('VERSION')
        assert v >> 16 == h.ABI_MAJOR, f'ABI version {v:#x}'
        assert self.reg_read('STATUS') & h.STATUS_READY
        self.aq_log = aq_log
        self.aq_sq = self.mem.alloc(abi.AQ_SQE_SIZE << aq_log)
        self.aq_cq = self.mem.alloc(abi.AQ_CQE_SIZE << aq_log)
        self.aq_pi = self.aq_ci = 0
        if not self.scratch:
            self.scratch = self.mem.alloc(PAGE)
        self.reg_write('AQ_CTRL', 0)
        self.reg_write('AQ_SQ_BASE_LO', self.aq_sq & 0xffffffff)
        self.reg_write('AQ_SQ_BASE_HI', self.aq_sq >> 32)
        self.reg_write('AQ_CQ_BASE_LO', self.aq_cq & 0xffffffff)
        self.reg_write('AQ_CQ_BASE_HI', self.aq_cq >> 32)
        self.reg_write('AQ_CTRL', aq_log | h.AQ_CTRL_ENABLE)
        self.reg_write('CTRL', h.CTRL_ENABLE)

        def up():
            st, aqs = self.reg_read('STATUS'), self.reg_read('AQ_STATUS')
            return (st & h.STATUS_ENABLED and aqs & h.AQ_STATUS_ENABLED) or \
                st & h.STATUS_FATAL or aqs & h.AQ_STATUS_ERROR
        self.world.run_until(up, 10)
        st, aqs = self.reg_read('STATUS'), self.reg_read('AQ_STATUS')
        assert st & h.STATUS_ENABLED and not st & h.STATUS_FATAL, f'STATUS {st:#x}'
        assert aqs == h.AQ_STATUS_ENABLED, f'AQ_STATUS {aqs:#x}'

    def forget(self):
        """Drop driver state (after a device reset)."""
        self.async_eq = self.comp_eq = None
        self.aq_pi = self.aq_ci = 0
        self.aq_log = 0
        self.scratch = 0
        self.gids = {}
        self.qps = {}
        self._wqe_patch = []
        self._cmd_patch = []

    # -- admin queue
    def _patch_cmd(self, off, value):
        self._cmd_patch.append((off, value))

    def _patch_wqe(self, off, value):
        self._wqe_patch.append((off, value))

    def _aq_ready(self):
        mask = (1 << self.aq_log) - 1
        owner = self.qemu.readb(self.aq_cq + (self.aq_ci & mask) * abi.AQ_CQE_SIZE + 31)
        return (owner & 1) == (((self.aq_ci >> self.aq_log) & 1) ^ 1)

    def admin_submit(self, cmd, raw=False):
        """Write one command and ring AQ_SQ_DB; returns the cmd_id used."""
        if not self.aq_log:
            raise h.HarnessError('admin queue not set up')
        mask = (1 << self.aq_log) - 1
        buf = bytearray(bytes(cmd).ljust(abi.AQ_SQE_SIZE, b'\0')[:abi.AQ_SQE_SIZE])
        if not raw:
            cid = self.next_cmd_id
            self.next_cmd_id = (self.next_cmd_id + 1) & 0xffff or 1
            buf[2:4] = struct.pack('<H', cid)
        for off, val in self._cmd_patch:
            buf[off:off + len(val)] = val[:max(0, abi.AQ_SQE_SIZE - off)]
        self._cmd_patch = []
        self.qemu.memwrite(self.aq_sq + (self.aq_pi & mask) * abi.AQ_SQE_SIZE, bytes(buf))
        self.aq_pi = (self.aq_pi + 1) & 0xffffffff
        self.reg_write('AQ_SQ_DB', self.aq_pi)
        return struct.unpack_from('<H', buf, 2)[0]

    def admin_reap(self, timeout=None):
        """Wait for the next admin CQE; returns its dict or None on timeout."""
        if not self.world.run_until(self._aq_ready, self.admin_timeout if timeout is None
                                    else timeout):
            return None
        mask = (1 << self.aq_log) - 1
        raw = self.qemu.memread(self.aq_cq + (self.aq_ci & mask) * abi.AQ_CQE_SIZE,
                                abi.AQ_CQE_SIZE)
        self.aq_ci = (self.aq_ci + 1) & 0xffffffff
        return h.to_dict(h.AqCqe.from_buffer_copy(raw))

    def admin(self, cmd, raw=False, timeout=None):
        """Submit 128 command bytes and wait for its completion: (status, cqe dict).
        status is E_TIMEOUT (-1000) when no completion arrives."""
        cid = self.admin_submit(cmd, raw)
        while True:
            cqe = self.admin_reap(timeout)
            if cqe is None:
                return E_TIMEOUT, None
            if raw or cqe['cmd_id'] == cid:
                break
        self.last_cqe_d = cqe
        return cqe['status'], cqe

    def last_cqe(self):
        return self.last_cqe_d

    @property
    def last_status(self):
        return self.last_cqe_d['status']

    def _admin_detail(self, st):
        return self.last_cqe_d['detail'] if self.last_cqe_d and st > 0 else None

    def query(self, opcode, struct_type, port=0, check=True):
        n = ctypes.sizeof(struct_type)
        self.qemu.memset(self.scratch, PAGE, 0)
        st, _ = self.admin(abi.command(opcode, abi.CmdQuery(resp_addr=self.scratch,
                                                            resp_len=n, port=port)))
        if self._status(st, f'query {opcode}', check):
            return None
        return h.to_dict(struct_type.from_buffer_copy(self.qemu.memread(self.scratch, n)))

    def query_stats(self, check=True):
        n = len(abi.STAT_NAMES)
        self.qemu.memset(self.scratch, PAGE, 0)
        st, _ = self.admin(abi.command('QUERY_STATS', abi.CmdQuery(resp_addr=self.scratch,
                                                                   resp_len=8 * n)))
        if self._status(st, 'query_stats', check):
            return None
        vals = struct.unpack(f'<{n}Q', self.qemu.memread(self.scratch, 8 * n))
        return dict(zip(abi.STAT_NAMES, vals))

    def stat(self, name):
        return self.query_stats()[name]

    stats = query_stats

    def _query_handle(self, opcode, handle, struct_type, check):
        n = ctypes.sizeof(struct_type)
        self.qemu.memset(self.scratch, PAGE, 0)
        st, _ = self.admin(abi.command(opcode, abi.CmdQueryQp(handle=handle, resp_len=n,
                                                              resp_addr=self.scratch)))
        if self._status(st, f'{opcode} {handle}', check):
            return None
        return h.to_dict(struct_type.from_buffer_copy(self.qemu.memread(self.scratch, n)))

    def destroy(self, opcode, handle, check=True):
        st, _ = self.admin(abi.command(opcode, abi.CmdHandle(handle=handle)))
        if st == 0 and opcode == 'DESTROY_QP':
            self.qps.pop(handle, None)
        return self._status(st, f'{opcode} {handle}', check)

    def create_eq(self, log_depth=8, vector=2, async_events=False, ring=None, check=True):
        if ring is None:
            ring = self.mem.alloc(abi.EQE_SIZE << min(log_depth, 16))
        st, cqe = self.admin(abi.command('CREATE_EQ', abi.CmdCreateEq(
            log_depth=log_depth, vector=vector, flags=abi.EQ_F_ASYNC if async_events else 0,
            ring_addr=ring)))
        r = self._result(st, cqe, 'create_eq', check)
        return None if r is None else Eq(self, r, log_depth, vector, ring)

    def create_cq(self, log_depth=8, eq=None, uctx=0, dbrec=True, ring=None, check=True,
                  timestamp=False):
        """timestamp: CQ_F_TIMESTAMP, 64-byte CQEs (their poll() dicts carry
        'timestamp', ABI 1.7)."""
        eqn = api._num(eq, 'eqn') if eq is not None else (self.comp_eq.eqn if self.comp_eq
                                                           else 0)
        flags = h.CQ_F_TIMESTAMP if timestamp else 0
        pages, addr = None, ring
        if ring is None:
            ring, pages, addr = listed_ring(
                self, (64 if timestamp else abi.CQE_SIZE) << min(log_depth, 16))
        rec = self.mem.alloc(64, 64) if dbrec else 0
        st, cqe = self.admin(abi.command('CREATE_CQ', abi.CmdCreateCq(
            uctx=uctx, eqn=eqn, log_depth=log_depth,
            flags=flags | (h.CQ_F_PAGELIST if pages else 0), ring_addr=addr, dbrec_addr=rec)))
        r = self._result(st, cqe, 'create_cq', check)
        return None if r is None else Cq(self, r, log_depth, ring, rec, uctx, flags, pages)

    def create_srq(self, pd, log_depth=6, wqe_shift=9, limit=0, uctx=0, dbrec=True, check=True):
        """An SRQ (spec 12.10), by default with a consumer record."""
        ring, pages, addr = listed_ring(self, 1 << min(log_depth + wqe_shift, 24))
        rec = self.mem.alloc(64, 64) if dbrec else 0
        st, cqe = self.admin(abi.command('CREATE_SRQ', abi.CmdCreateSrq(
            uctx=uctx, pdn=api._num(pd, 'pdn'), log_depth=log_depth,
            wqe_shift=wqe_shift, limit=limit, ring_addr=addr, dbrec_addr=rec,
            flags=h.SRQ_F_PAGELIST if pages else 0)))
        r = self._result(st, cqe, 'create_srq', check)
        return None if r is None else Srq(self, r, log_depth, wqe_shift, ring, rec, uctx, pages)

    def create_xrc_ini(self, pd, send_cq, sq_log=6, sq_shift=9, uctx=0, check=True):
        """An XRC INI QP: an SQ, no receive CQ, no RQ, no SRQ."""
        sq_addr = self.mem.alloc(1 << min(sq_log + sq_shift, 24))
        st, cqe = self.admin(abi.command('CREATE_QP', abi.CmdCreateQp(
            uctx=uctx, pdn=api._num(pd, 'pdn'),
            send_cqn=api._num(send_cq, 'cqn'), recv_cqn=0,
            qp_type=h.QPT['XRC_INI'], sq_log_depth=sq_log, sq_wqe_shift=sq_shift,
            sq_addr=sq_addr)))
        r = self._result(st, cqe, 'create_qp', check)
        if r is None:
            return None
        qp = Qp(self, r, h.QPT['XRC_INI'], pd if hasattr(pd, 'pdn') else None, send_cq, None,
                sq_log, sq_shift, 0, 0, sq_addr, 0, uctx)
        self.qps[r] = qp
        return qp

    def create_xrc_tgt(self, xrcd, uctx=0, check=True):
        """An XRC TGT QP of domain xrcd: no PD, CQs or rings."""
        st, cqe = self.admin(abi.command('CREATE_QP', abi.CmdCreateQp(
            uctx=uctx, qp_type=h.QPT['XRC_TGT'], srqn=xrcd)))
        r = self._result(st, cqe, 'create_qp', check)
        if r is None:
            return None
        return Qp(self, r, h.QPT['XRC_TGT'], None, None, None, 0, 0, 0, 0, 0, 0, uctx)

    def create_qp(self, pd, send_cq, recv_cq=None, qp_type='RC', sq_log=6, sq_shift=9,
                  rq_log=6, rq_shift=9, uctx=0, flags=0, sq_addr=None, rq_addr=None,
                  srq=None, check=True):
        recv_cq = recv_cq or send_cq
        if srq is not None:
            rq_log, rq_shift, rq_addr = 0, 0, 0
        t = h.QPT[qp_type] if isinstance(qp_type, str) else qp_type
        pdn = api._num(pd, 'pdn')
        scq = api._num(send_cq, 'cqn')
        rcq = api._num(recv_cq, 'cqn')
        sq_pages = rq_pages = None
        sq_arg, rq_arg = sq_addr, rq_addr
        if sq_addr is None:
            sq_addr, sq_pages, sq_arg = listed_ring(self, 1 << min(sq_log + sq_shift, 24))
        if rq_addr is None and rq_log:
            rq_addr, rq_pages, rq_arg = listed_ring(self, 1 << min(rq_log + rq_shift, 24))
        elif rq_addr is None:
            rq_addr = rq_arg = 0
        flags |= (h.QP_F_SQ_PAGELIST if sq_pages else 0) | \
            (h.QP_F_RQ_PAGELIST if rq_pages else 0)
        st, cqe = self.admin(abi.command('CREATE_QP', abi.CmdCreateQp(
            uctx=uctx, pdn=pdn, send_cqn=scq, recv_cqn=rcq, qp_type=t, sq_log_depth=sq_log,
            sq_wqe_shift=sq_shift, rq_log_depth=rq_log, rq_wqe_shift=rq_shift if rq_log else 0,
            flags=flags, srqn=srq.srqn if srq is not None else 0, sq_addr=sq_arg,
            rq_addr=rq_arg)))
        r = self._result(st, cqe, 'create_qp', check)
        if r is None:
            return None
        qp = Qp(self, r, t, pd if hasattr(pd, 'pdn') else None, send_cq, recv_cq, sq_log,
                sq_shift, rq_log, rq_shift, sq_addr, rq_addr, uctx)
        qp.sq_pages, qp.rq_pages = sq_pages, rq_pages
        self.qps[r] = qp
        return qp

    def reg_mr(self, pd, length, access=h.ACCESS_ALL, iova=None, page_shift=12, levels=None,
               shuffle=True, contig=False, phys=False, check=True):
        """Register `length` bytes of fresh guest RAM (zeroed): 4 KiB pages,
        shuffled physical order behind a 1/2-level PBL by default."""
        ps = 1 << page_shift
        if phys:
            base = self.mem.alloc(length, ps)
            iova = base if iova is None else iova
        elif iova is None:
            iova = 0x7f00_0000_0000 + self.world.rng.randrange(0, 1 << 20) * PAGE \
                + self.world.rng.randrange(0, 64) * 8
        off = iova & (ps - 1)
        npages = (off + length + ps - 1) >> page_shift if length else 0
        if phys:
            pages = [(iova & ~(ps - 1)) + i * ps for i in range(npages)]
        else:
            block = self.mem.alloc(npages * ps, ps)
            pages = [block + i * ps for i in range(npages)]
            if shuffle and not contig and levels != 0:
                self.world.rng.shuffle(pages)
        if levels is None:
            levels = 0 if phys else (1 if npages <= abi.PBL_ENTRIES else 2)
        if phys or levels == 0:
            pbl = pages[0] if pages else 0
            if levels == 0 and not phys and pages != sorted(pages):
                raise ValueError('levels=0 needs contiguous pages')
        else:
            pbl = self._build_pbl(pages, levels)
        st, cqe = self.admin(abi.command('REG_MR', abi.CmdRegMr(
            pdn=api._num(pd, 'pdn'), access=access,
            flags=abi.MR_F_PHYS if phys else 0, page_shift=page_shift, pbl_levels=levels,
            iova=iova, length=length, pbl_addr=pbl, npages=0 if phys else npages)))
        k = self._result(st, cqe, 'reg_mr', check)
        if k is None:
            return None
        return Mr(self, k, api._num(pd, 'pdn'), iova, length, access, pages,
                  page_shift, pbl)

    def _build_pbl(self, pages, levels):
        per = abi.PBL_ENTRIES
        if levels == 1:
            top = self.mem.alloc(PAGE)
            self.qemu.memwrite(top, struct.pack(f'<{min(len(pages), per)}Q', *pages[:per]))
            return top
        cover = per ** (levels - 1)
        subs = [self._build_pbl(pages[i:i + cover], levels - 1)
                for i in range(0, len(pages), cover)][:per]
        top = self.mem.alloc(PAGE)
        self.qemu.memwrite(top, struct.pack(f'<{len(subs)}Q', *subs))
        return top

    # -- CQE bookkeeping: free SQ/RQ slots as completions come back
    def _cqe_consumed(self, c):
        qp = self.qps.get(c.qpn)
        if not qp:
            return
        send = (c.flags & h.CQE_F_SEND) or c.opcode < 128
        if send:
            m = (1 << qp.sq_log) - 1
            idx = qp.sq_ci + ((c.wqe_index - qp.sq_ci) & m)
            if idx - qp.sq_ci < qp.sq_pi - qp.sq_ci:
                qp.sq_ci = idx + 1
        elif qp.rq_ci != qp.rq_pi:
            qp.rq_ci += 1

