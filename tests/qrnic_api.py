# SPDX-License-Identifier: GPL-2.0-or-later
"""The qrnic device API in Python, once, for both test back ends.

Two back ends drive a qrnic device from tests:
  - tests/qrnic_harness.py: ctypes over the C model library and its C test
    driver (tests/harness/harness.c, also used by the C tests and qrnic-sim);
  - tests/qtest/driver.py: MMIO, doorbells and guest memory of a real QEMU
    process over qtest.
Both expose the same object model (Device, Pd, Ah, Eq, Cq, Srq, Mr, FastMr,
Mw, Qp, and the connect_rc/create_ud helpers), defined here.  What is
device logic lives here once: the admin commands that carry no driver
state (PD, AH, GIDs, user contexts, XRC domains, multicast, CQ moderation,
SRQ limits, fast-registration MRs, memory windows), the MODIFY_QP attribute
mask, the send/receive WQE arguments, the CQE/EQE dicts, fast registration
and window binding WQEs, the QP state transitions and connection set-up.

A back end subclasses these classes and provides only what differs:
  Device: admin(cmd, raw) -> (status, cqe dict), mem_alloc/mem_read/mem_write,
          reg_read/reg_write, db_read/db_write, _admin_detail(status),
          _patch_cmd/_patch_wqe(offset, bytes), and the ring-owning
          operations (bringup, create_eq/cq/qp/srq/xrc_*, reg_mr, destroy,
          query, query_stats, _query_handle).  On the harness the rings belong to the C
          test driver, so those stay calls into it; on qtest they are
          written here in Python over guest memory.
  Eq/Cq:  _poll_raw(n) (the next EQEs / (CQE, timestamp) pairs, consumed), arm()
  Srq:    _post(wr_id, addrs, lens, keys, ring, check)
  Mr:     read/write/bus_addr
  Qp:     _modify_attr(attr) -> status, _post_send(...), _post_recv(...),
          ring_sq/ring_rq/ring_bf

The constants and ctypes ABI structures come from qrnic_harness (they are
checked there against the C layout table); this module is imported by it.
"""
import ctypes
import struct


def _cmd(opcode, body=b''):
    """A command of opcode (name) with a struct-packed body: the layouts that
    have no ctypes mirror in qrnic_harness (CMD_MIRRORS)."""
    return struct.pack('<BBHI', h.CMD[opcode], 0, 0, 0) + body


# ---- dicts from ABI records ---------------------------------------------------------------
def cqe_dict(c):
    d = h.to_dict(c)
    del d['rsvd']
    d['status_name'] = h.wc_status_name(c.status)
    d['opcode_name'] = h.WC_OP.get(c.opcode, str(c.opcode))
    d['vendor_err_name'] = h.VERR[c.vendor_err] if c.vendor_err < len(h.VERR) \
        else str(c.vendor_err)
    d['imm'] = struct.unpack('>I', struct.pack('<I', c.imm_data))[0]  # network order value
    if c.flags & h.CQE_F_WITH_INV:
        d['invalidated_rkey'] = c.imm_data  # host order
    return d


def eqe_dict(e):
    d = h.to_dict(e)
    d['type_name'] = 'COMPLETION' if e.type == 0 else 'ASYNC'
    d['event'] = h.EV_NAME.get(e.subtype, str(e.subtype)) if e.type == 1 else None
    return d


def make_av(dgid, dmac, net_type=None, sgid_index=0, hop_limit=0, traffic_class=0, flow_label=0):
    if isinstance(dgid, str):
        dgid = h.gid_v6(dgid) if ':' in dgid else h.gid_v4(dgid)
    if net_type is None:
        net_type = h.NET_IPV4 if dgid[:12] == b'\0' * 10 + b'\xff\xff' else h.NET_IPV6
    av = h.Av()
    ctypes.memmove(av.dgid, bytes(dgid), 16)
    ctypes.memmove(av.dmac, bytes(dmac), 6)
    av.net_type = net_type
    av.sgid_index = sgid_index
    av.hop_limit = hop_limit
    av.traffic_class = traffic_class
    av.flow_label = flow_label
    return av


def _sge_list(sges):
    """[(mr, off, len[, lkey])] or raw [(addr, len, lkey)] -> (addrs, lens, keys)."""
    addrs, lens, keys = [], [], []
    for s in sges:
        if hasattr(s[0], 'lkey'):
            addrs.append(s[0].addr(s[1]))
            lens.append(s[2])
            keys.append(s[3] if len(s) > 3 else s[0].lkey)
        else:
            addrs.append(s[0])
            lens.append(s[1])
            keys.append(s[2])
    return addrs, lens, keys


def _num(obj, attr):
    """An object's number (pd.pdn, cq.cqn...) or the number itself."""
    return getattr(obj, attr, obj)


# ---- the device ---------------------------------------------------------------------------
class Device:
    """What every back end's Device shares: bring-up order and the admin
    commands that need no ring state."""

    def init(self, aq_log=5, eq_log=8):
        """Bring-up, query device, async EQ (vector 1), completion EQ (vector 2),
        GID 0 = ::ffff:10.0.0.<idx+1>, GID 1 = fd00::<idx+1>."""
        self.bringup(aq_log)
        self.attr = self.query_device()
        nv = self.reg_read('NUM_VECTORS')
        self.async_eq = self.create_eq(eq_log, vector=min(1, nv - 1), async_events=True)
        self.comp_eq = self.create_eq(eq_log, vector=min(2, nv - 1))
        self.async_eq.arm()
        self.comp_eq.arm()
        self.set_gid(0, h.gid_v4(f'10.0.0.{self.idx + 1}'), h.NET_IPV4)
        self.set_gid(1, h.gid_v6(f'fd00::{self.idx + 1}'), h.NET_IPV6)
        return self

    # -- test hooks: bytes of the next command / WQE a helper builds
    def patch_next_cmd(self, where, value):
        """Overwrite bytes of the next admin command a helper builds.
        where: byte offset or a field path for cmd_offset(); value: bytes or int
        (an int is written with the field's size when known, else 4 bytes)."""
        off = where if isinstance(where, int) else h.cmd_offset(where)
        if isinstance(value, int):
            size = 4 if isinstance(where, int) else h._cmd_field_size(where)
            value = value.to_bytes(size, 'little')
        self._patch_cmd(off, bytes(value))

    def patch_next_wqe(self, where, value):
        """Overwrite bytes of the next WQE (send or receive) a post helper
        builds.  where: byte offset or a SendWqe field name."""
        size = 4
        if isinstance(where, str):
            f = getattr(h.SendWqe, where)
            where, size = f.offset, f.size
        if isinstance(value, int):
            value = value.to_bytes(size, 'little')
        self._patch_wqe(where, bytes(value))

    # -- admin results
    def _status(self, st, what, check):
        if st != 0 and check:
            raise h.AdminError(what, st, self._admin_detail(st))
        return st

    def _result(self, st, cqe, what, check):
        """result[0] of a successful command (a handle), else None or AdminError."""
        if st != 0:
            self._status(st, what, check)
            return None
        return cqe['result'][0]

    def _run(self, opcode, body=None):
        """Run a command with a mirrored body: (status, cqe)."""
        return self.admin(h.command(opcode, body))

    # -- queries
    def query_device(self, check=True):
        return self.query('QUERY_DEVICE', h.DeviceAttr, check=check)

    def query_port(self, port=1, check=True):
        return self.query('QUERY_PORT', h.PortAttr, port=port, check=check)

    def query_mr(self, key, check=True):
        return self._query_handle('QUERY_MR', key, h.MptEntry, check)

    def clock(self, db_page=None):
        """The device clock (ns): one 64-bit read of REG_CLOCK_LO, or of
        the doorbell page db_page's QRNIC_DB_CLOCK."""
        if db_page is None:
            return self.reg_read(h.REG_CLOCK_LO, 8)
        return self.db_read(db_page * h.DB_PAGE_SIZE + h.DB_CLOCK, 8)

    # -- GIDs
    def set_gid(self, index, gid, net_type=None, valid=True, check=True):
        if isinstance(gid, str):
            gid = h.gid_v6(gid) if ':' in gid else h.gid_v4(gid)
        if net_type is None:
            net_type = h.NET_IPV4 if gid[:12] == b'\0' * 10 + b'\xff\xff' else h.NET_IPV6
        body = h.CmdGid(index=index, valid=1 if valid else 0, net_type=net_type)
        ctypes.memmove(body.gid, bytes(gid), 16)
        st, _ = self._run('SET_GID', body)
        if st == 0:
            if valid:
                self.gids[index] = (bytes(gid), net_type)
            else:
                self.gids.pop(index, None)
        return self._status(st, 'set_gid', check)

    def query_gid(self, index, check=True):
        st, cqe = self._run('QUERY_GID', h.CmdGid(index=index))
        if self._status(st, 'query_gid', check):
            return None
        return struct.pack('<4I', *cqe['result'])

    # -- objects without rings
    def alloc_uctx(self, check=True):
        st, cqe = self._run('ALLOC_UCTX')
        return self._result(st, cqe, 'alloc_uctx', check)

    def alloc_pd(self, uctx=0, check=True):
        st, cqe = self._run('CREATE_PD', h.CmdCreatePd(uctx=uctx))
        r = self._result(st, cqe, 'create_pd', check)
        return None if r is None else self.Pd(self, r, uctx)

    def create_ah(self, pd, dgid, dmac, net_type=None, sgid_index=0, hop_limit=0,
                  traffic_class=0, flow_label=0, check=True):
        av = make_av(dgid, dmac, net_type, sgid_index, hop_limit, traffic_class, flow_label)
        st, cqe = self._run('CREATE_AH', h.CmdCreateAh(pdn=_num(pd, 'pdn'), av=av))
        r = self._result(st, cqe, 'create_ah', check)
        return None if r is None else self.Ah(self, r)

    def ah_to(self, pd, peer, gid_index=0, **kw):
        gid, nt = peer.gids[gid_index]
        return self.create_ah(pd, gid, peer.mac, nt, sgid_index=gid_index, **kw)

    def _mcast(self, op, qp, gid, check):
        st, _ = self.admin(_cmd(op, struct.pack('<II16s', _num(qp, 'qpn'), 0, bytes(gid))))
        return self._status(st, op.lower(), check)

    def attach_mcast(self, qp, gid, check=True):
        return self._mcast('ATTACH_MCAST', qp, gid, check)

    def detach_mcast(self, qp, gid, check=True):
        return self._mcast('DETACH_MCAST', qp, gid, check)

    def alloc_xrcd(self, uctx=0, rsvd=0, check=True):
        """ALLOC_XRCD (ABI 1.3): returns the XRC domain number."""
        st, cqe = self.admin(_cmd('ALLOC_XRCD', struct.pack('<II', uctx, rsvd)))
        return self._result(st, cqe, 'alloc_xrcd', check)

    def dealloc_xrcd(self, xrcd, check=True):
        return self.destroy('DEALLOC_XRCD', xrcd, check)

    # -- congestion control parameters at run time (ABI 1.9, spec 6.6.22)
    @staticmethod
    def _cc_id(param):
        return h.CC_PARAMS.index(param) if isinstance(param, str) else param

    def query_cc(self, param, check=True, rsvd=0):
        """QUERY_CC of a parameter (name of h.CC_PARAMS or id): a dict of
        value, min, max and configured (the power-on value), or None."""
        st, cqe = self.admin(_cmd('QUERY_CC', struct.pack('<IIQ', self._cc_id(param), 0, rsvd)))
        if self._status(st, 'query_cc', check):
            return None
        return dict(zip(('value', 'min', 'max', 'configured'), cqe['result']))

    def set_cc(self, param, value, check=True, rsvd=0):
        """SET_CC: returns the status (0), or raises AdminError."""
        st, _ = self.admin(_cmd('SET_CC', struct.pack('<IIQ', self._cc_id(param),
                                                      value & 0xffffffff, rsvd)))
        return self._status(st, 'set_cc', check)

    def create_xrc_srq(self, pd, xrcd, cq, log_depth=6, wqe_shift=9, limit=0, uctx=0,
                       dbrec=True, check=True):
        """An XRC SRQ (CREATE_SRQ with QRNIC_SRQ_F_XRC) of domain xrcd whose
        receive completions go to cq: the back end's create_srq, its
        command patched (keeping the page-list flag the back end sets for a
        ring of a page or more in page-list mode, ABI 1.8)."""
        listed = getattr(self, 'ring_pagelist', False) and log_depth + wqe_shift >= 12
        self.patch_next_cmd('create_srq.flags',
                            h.SRQ_F_XRC | (h.SRQ_F_PAGELIST if listed else 0))
        self.patch_next_cmd('create_srq.xrcd', xrcd)
        self.patch_next_cmd('create_srq.cqn', _num(cq, 'cqn'))
        return self.create_srq(pd, log_depth, wqe_shift, limit, uctx, dbrec, check)

    # -- fast registration and windows (spec 12.12, 12.13)
    def alloc_mr(self, pd, max_pages, flags=0, rsvd=0, check=True):
        """ALLOC_MR: a fast-registration MR of (kernel) PD pd, free until a
        REG_MR WQE registers it (FastMr.register)."""
        pdn = _num(pd, 'pdn')
        st, cqe = self.admin(_cmd('ALLOC_MR', struct.pack('<IIII', pdn, max_pages, flags, rsvd)))
        if self._status(st, 'alloc_mr', check):
            return None
        return FastMr(self, cqe['result'][0], pdn, max_pages)

    def rereg_mr(self, key, change, pd=0, access=0, flags=0, page_shift=12, levels=0, iova=0,
                 length=0, pbl_addr=0, npages=0, check=True):
        """REREG_MR (raw): change is a set of 'trans', 'pd', 'access'.  With
        'trans' the new pages are given by the caller (levels 0: pbl_addr is
        the first of npages contiguous pages).  The driver's own record of
        the MR (Mr.read/write) is not updated: read through mem_read."""
        bits = {'trans': 1, 'pd': 2, 'access': 4}
        ch = change if isinstance(change, int) else sum(bits[c] for c in change)
        body = struct.pack('<II', key, ch) + \
            struct.pack('<IIIBBHQQQII', _num(pd, 'pdn'), access, flags, page_shift, levels, 0,
                        iova, length, pbl_addr, npages, 0)
        st, _ = self.admin(_cmd('REREG_MR', body))
        return self._status(st, 'rereg_mr', check)

    def alloc_mw(self, pd, mw_type=2, rsvd0=0, flags=0, rsvd=0, check=True):
        """ALLOC_MW: a memory window (type 1 or 2) of pd, unbound (spec 12.13)."""
        pdn = _num(pd, 'pdn')
        st, cqe = self.admin(_cmd('ALLOC_MW', struct.pack('<IB3sII', pdn, mw_type,
                                                          bytes([rsvd0, 0, 0]), flags, rsvd)))
        if self._status(st, 'alloc_mw', check):
            return None
        return Mw(self, cqe['result'][0], pdn, mw_type)


# ---- objects ------------------------------------------------------------------------------
class _Obj:
    kind = 'Obj'

    def __init__(self, dev, handle):
        self.dev = dev
        self.handle = handle

    def __repr__(self):
        return f'<{self.kind} {self.handle} dev{self.dev.idx}>'


class Pd(_Obj):
    kind = 'Pd'

    def __init__(self, dev, pdn, uctx=0):
        super().__init__(dev, pdn)
        self.pdn = pdn
        self.uctx = uctx

    def destroy(self, check=True):
        return self.dev.destroy('DESTROY_PD', self.pdn, check)


class Ah(_Obj):
    kind = 'Ah'

    def __init__(self, dev, ahn):
        super().__init__(dev, ahn)
        self.ahn = ahn

    def destroy(self, check=True):
        return self.dev.destroy('DESTROY_AH', self.ahn, check)


class Eq(_Obj):
    kind = 'Eq'

    def __init__(self, dev, eqn, log_depth, vector):
        super().__init__(dev, eqn)
        self.eqn = eqn
        self.log_depth = log_depth
        self.vector = vector

    def poll(self, n=256):
        """Consume up to n EQEs: dicts with type_name and the async event name."""
        return [eqe_dict(e) for e in self._poll_raw(n)]

    def destroy(self, check=True):
        return self.dev.destroy('DESTROY_EQ', self.eqn, check)


class Cq(_Obj):
    kind = 'Cq'

    def __init__(self, dev, cqn, log_depth, flags=0):
        super().__init__(dev, cqn)
        self.cqn = cqn
        self.log_depth = log_depth
        self.flags = flags
        # 64-byte CQEs with the completion timestamp (CQ_F_TIMESTAMP, ABI 1.7)
        self.cqe_size = 64 if flags & h.CQ_F_TIMESTAMP else 32

    def poll(self, n=1024):
        """Consume up to n CQEs: list of dicts (status, status_name, opcode_name,
        wr_id, byte_len, imm (the value sent), qpn, src_qp, flags, vendor_err...;
        'timestamp' on a CQ_F_TIMESTAMP CQ)."""
        out = []
        for c, ts in self._poll_raw(n):
            out.append(cqe_dict(c))
            if self.flags & h.CQ_F_TIMESTAMP:
                out[-1]['timestamp'] = ts
        return out

    def moderate(self, count=0, period_us=0, check=True):
        """MODIFY_CQ: completion event moderation."""
        st, _ = self.dev.admin(_cmd('MODIFY_CQ', struct.pack('<IHH8s', self.cqn, count,
                                                             period_us, b'')))
        return self.dev._status(st, f'modify_cq {self.cqn}', check)

    def destroy(self, check=True):
        return self.dev.destroy('DESTROY_CQ', self.cqn, check)


class Srq(_Obj):
    """A shared receive queue (spec 12.10)."""
    kind = 'Srq'

    def __init__(self, dev, srqn, log_depth):
        super().__init__(dev, srqn)
        self.srqn = srqn
        self.log_depth = log_depth
        self.depth = 1 << log_depth

    def post_recv(self, sges=(), wr_id=0, ring=True, check=True):
        addrs, lens, keys = _sge_list(sges)
        return self._post(wr_id, addrs, lens, keys, ring, check)

    def modify(self, limit=None, mask=None, check=True):
        """MODIFY_SRQ: 0, or the negated status with check=False."""
        if mask is None:
            mask = h.SRQ_ATTR_LIMIT if limit is not None else 0
        st, _ = self.dev._run('MODIFY_SRQ', h.CmdModifySrq(srqn=self.srqn, attr_mask=mask,
                                                                 limit=limit or 0))
        r = -st if st > 0 else st
        if r < 0 and check:
            raise h.AdminError('modify_srq', -r, self.dev._admin_detail(st))
        return r

    def query(self):
        st, cqe = self.dev._run('QUERY_SRQ', h.CmdHandle(handle=self.srqn))
        if st != 0:
            raise h.AdminError('query_srq', st if st > 0 else -st)
        out = cqe['result']
        return {'limit': out[0], 'max_wr': out[1], 'posted': out[2]}

    def destroy(self, check=True):
        return self.dev.destroy('DESTROY_SRQ', self.srqn, check)


class _Keyed(_Obj):
    """What MRs and windows share: an iova range behind a key."""

    def addr(self, off=0):
        return self.iova + off

    def fill_random(self, rng, off=0, n=None):
        if n is None:
            n = self.length - off
        data = rng.randbytes(n)
        self.write(off, data)
        return data

    def dereg(self, check=True):
        return self.dev.destroy('DEREG_MR', self.key, check)

    def query(self, check=True):
        return self.dev.query_mr(self.key, check)


class Mr(_Keyed):
    def __init__(self, dev, key, pdn, iova, length, access):
        super().__init__(dev, key)
        self.key = self.lkey = self.rkey = key
        self.pdn = pdn
        self.iova = iova
        self.length = length
        self.access = access

    def __repr__(self):
        return f'<Mr key={self.key:#x} iova={self.iova:#x} len={self.length} dev{self.dev.idx}>'


class FastMr(_Keyed):
    """A fast-registration MR (ALLOC_MR).  register() picks fresh pages of
    device memory (shuffled, page_shift sized), writes their page list
    and posts a REG_MR WQE; the MR's bytes are then reached through those
    pages (read/write), as a ULP's buffers would be."""

    def __init__(self, dev, key, pdn, max_pages):
        super().__init__(dev, key)
        self.key = self.lkey = self.rkey = key
        self.pdn = pdn
        self.max_pages = max_pages
        self.iova = self.length = 0
        self.pages = []
        self.page_shift = 12

    def new_key(self, variant=None):
        """The key with another 8-bit variant (ib_inc_rkey's job)."""
        v = ((self.key & 0xff) + 1) & 0xff if variant is None else variant & 0xff
        return (self.key & ~0xff) | v

    def register(self, qp, length, iova=None, page_shift=12, access=None, key=None,
                 npages=None, pages=None, pbl_addr=None, wr_id=0, signaled=True, fence=False,
                 ring=True, rsvd=0):
        """Post REG_MR on qp (access default ACCESS_ALL).  Returns the SQ
        index.  The new key (default: the next variant) becomes self.key
        once posted: a test checks the completion itself."""
        access = h.ACCESS_ALL if access is None else access
        psz = 1 << page_shift
        if iova is None:
            iova = 0xffff_8880_0000_0000 + self.dev.world.rng.randrange(0, 1 << 16) * psz \
                + self.dev.world.rng.randrange(0, psz // 8) * 8
        span = (iova & (psz - 1)) + length
        n = -(-span // psz)
        if pages is None:
            pages = [self.dev.mem_alloc(psz, psz) for _ in range(n)]
            self.dev.world.rng.shuffle(pages)
        if pbl_addr is None:
            pbl_addr = self.dev.mem_alloc(max(8, 8 * len(pages)), 8)
            if pages:
                self.dev.mem_write(pbl_addr, struct.pack(f'<{len(pages)}Q', *pages))
        key = self.new_key() if key is None else key
        flags = (h.WQE_F_SIGNALED if signaled else 0) | (h.WQE_F_FENCE if fence else 0)
        w = h.RegMrWqe(opcode=h.WR['REG_MR'], flags=flags, page_shift=page_shift, access=access,
                       npages=len(pages) if npages is None else npages, wr_id=wr_id, key=key,
                       rsvd0=rsvd, iova=iova, length=length, pbl_addr=pbl_addr)
        r = qp.post_send_raw(bytes(w), ring=ring)
        self.key = self.lkey = self.rkey = key
        self.iova, self.length, self.pages, self.page_shift = iova, length, pages, page_shift
        return r

    def _chunks(self, off, n):
        psz = 1 << self.page_shift
        pos = (self.iova & (psz - 1)) + off
        while n > 0:
            page, within = divmod(pos, psz)
            k = min(n, psz - within)
            yield self.pages[page] + within, k
            pos += k
            n -= k

    def write(self, off, data):
        data = bytes(data)
        done = 0
        for a, k in self._chunks(off, len(data)):
            self.dev.mem_write(a, data[done:done + k])
            done += k

    def read(self, off=0, n=None):
        n = self.length - off if n is None else n
        return b''.join(self.dev.mem_read(a, k) for a, k in self._chunks(off, n))

    def __repr__(self):
        return f'<FastMr key={self.key:#x} dev{self.dev.idx}>'


class Mw(_Keyed):
    """A memory window (ALLOC_MW).  bind() posts a BIND_MW WQE; on success
    the window's rkey is self.rkey (the key given, default the next
    variant)."""

    def __init__(self, dev, key, pdn, mw_type):
        super().__init__(dev, key)
        self.key = self.rkey = key
        self.pdn = pdn
        self.type = mw_type
        self.iova = self.length = 0

    def bind(self, qp, mr, off=0, length=None, access=None, key=None, wr_id=0, signaled=True,
             mr_lkey=None, addr=None, rsvd=0):
        """access default: ACCESS_REMOTE_READ | ACCESS_REMOTE_WRITE."""
        if access is None:
            access = h.ACCESS_REMOTE_READ | h.ACCESS_REMOTE_WRITE
        length = (mr.length - off) if length is None else length
        key = ((self.key & ~0xff) | ((self.key + 1) & 0xff)) if key is None else key
        a = mr.addr(off) if addr is None else addr
        w = h.BindMwWqe(opcode=h.WR['BIND_MW'], flags=h.WQE_F_SIGNALED if signaled else 0,
                        access=access, mr_lkey=mr.lkey if mr_lkey is None else mr_lkey,
                        wr_id=wr_id, key=key, rsvd1=rsvd, addr=a, length=length)
        r = qp.post_send_raw(bytes(w))
        self.key = self.rkey = key
        self.iova, self.length = a, length
        return r

    def dealloc(self, check=True):
        return self.dereg(check)

    def __repr__(self):
        return f'<Mw type {self.type} rkey={self.key:#x} dev{self.dev.idx}>'


class QpTransitions:
    """RESET -> INIT -> RTR -> RTS with the attributes each QP type needs
    (needs modify() and qp_type)."""

    def to_init(self, access=None, qkey=None, check=True):
        """access default: ACCESS_REMOTE."""
        access = h.ACCESS_REMOTE if access is None else access
        if self.qp_type == h.QPT['XRC_INI']:
            return self.modify('INIT', pkey_index=0, port_num=1, check=check)
        if self.qp_type in (h.QPT['RC'], h.QPT['UC'], h.QPT['XRC_TGT']):
            return self.modify('INIT', pkey_index=0, port_num=1, qp_access_flags=access,
                               check=check)
        return self.modify('INIT', pkey_index=0, port_num=1,
                           qkey=0x11111111 if qkey is None else qkey, check=check)

    def to_rtr(self, remote_dev=None, remote_qpn=None, mtu=1024, rq_psn=0, gid_index=0,
               max_dest_rd_atomic=4, min_rnr_timer=1, check=True):
        qpt = h.QPT
        if self.qp_type not in (qpt['RC'], qpt['UC'], qpt['XRC_INI'], qpt['XRC_TGT']):
            return self.modify('RTR', check=check)
        gid, nt = remote_dev.gids[gid_index]
        av = make_av(gid, remote_dev.mac, nt, sgid_index=gid_index)
        if self.qp_type in (qpt['UC'], qpt['XRC_INI']):
            return self.modify('RTR', av=av, path_mtu=h.MTU[mtu], dest_qpn=remote_qpn,
                               rq_psn=rq_psn, check=check)
        return self.modify('RTR', av=av, path_mtu=h.MTU[mtu], dest_qpn=remote_qpn, rq_psn=rq_psn,
                           max_dest_rd_atomic=max_dest_rd_atomic, min_rnr_timer=min_rnr_timer,
                           check=check)

    def to_rts(self, sq_psn=0, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=4, check=True):
        if self.qp_type == h.QPT['XRC_TGT']:
            return self.modify('RTS', sq_psn=sq_psn, timeout=timeout, check=check)
        if self.qp_type not in (h.QPT['RC'], h.QPT['XRC_INI']):
            return self.modify('RTS', sq_psn=sq_psn, check=check)
        return self.modify('RTS', sq_psn=sq_psn, timeout=timeout, retry_cnt=retry_cnt,
                           rnr_retry=rnr_retry, max_rd_atomic=max_rd_atomic, check=check)


def qp_attr(state=None, mask=None, **attrs):
    """A QpAttr for MODIFY_QP: state by name or number, attrs qrnic_qp_attr
    fields (av may be an Av or a dict for make_av); the attr mask is
    computed from the given fields unless mask is given (int or names)."""
    a = h.QpAttr()
    names = []
    if state is not None:
        a.qp_state = h.QPS[state] if isinstance(state, str) else state
        names.append('STATE')
    for k, v in attrs.items():
        if k == 'av':
            a.av = make_av(**v) if isinstance(v, dict) else v
        else:
            setattr(a, k, v)
        names.append(h._ATTR_BIT[k])
    if mask is None:
        mask = names
    if isinstance(mask, int):
        a.attr_mask = mask
    else:
        m = 0
        for n in mask:
            m |= h.QP_ATTR[n]
        a.attr_mask = m
    return a


class Qp(_Obj, QpTransitions):
    kind = 'Qp'

    def __init__(self, dev, qpn, qp_type, pd, send_cq, recv_cq, sq_log, sq_shift, rq_log,
                 rq_shift):
        super().__init__(dev, qpn)
        self.qpn = qpn
        self.qp_type = qp_type
        self.pd = pd
        self.send_cq = send_cq
        self.recv_cq = recv_cq
        self.sq_log, self.sq_shift, self.rq_log, self.rq_shift = sq_log, sq_shift, rq_log, rq_shift

    def modify(self, state=None, mask=None, check=True, **attrs):
        """MODIFY_QP (see qp_attr())."""
        st = self._modify_attr(qp_attr(state, mask, **attrs))
        return self.dev._status(st, f'modify_qp {self.qpn} -> {state}', check)

    def query(self, check=True):
        out = self.dev._query_handle('QUERY_QP', self.qpn, h.QpAttr, check)
        if out is not None:
            out['state_name'] = h.QPS_NAME.get(out['qp_state'], str(out['qp_state']))
        return out

    @property
    def state(self):
        return self.query()['state_name']

    def post_send(self, opcode='SEND', sges=(), remote=None, imm=0, inline=None,
                  signaled=True, solicited=False, fence=False, wr_id=0, compare=0, swap=0,
                  add=None, ah=None, remote_qpn=0, qkey=0, flags=None, ring=True, check=True,
                  invalidate=None, xrc_srqn=0):
        """Post one send WQE and ring the SQ doorbell.
        invalidate: the key for SEND_WITH_INV / LOCAL_INV (host order in
        the WQE's imm_data).
        sges: [(mr, offset, length)] or [(mr, offset, length, lkey)] or raw
        [(addr, length, lkey)]; remote: (mr or mw, offset) or (rkey, addr);
        atomics: compare/swap for CMP_AND_SWP, add for FETCH_AND_ADD;
        xrc_srqn: the XRC SRQ an XRC INI QP's WQE names.
        Returns the SQ index (free running), or a negative error with check=False."""
        op = h.WR[opcode] if isinstance(opcode, str) else opcode
        if flags is None:
            flags = (h.WQE_F_SIGNALED if signaled else 0) | \
                (h.WQE_F_SOLICITED if solicited else 0) | (h.WQE_F_FENCE if fence else 0)
        inl = None
        if inline is not None:
            flags |= h.WQE_F_INLINE
            inl = bytes(inline)
        addrs, lens, keys = _sge_list(sges)
        rkey = raddr = 0
        if remote is not None:
            if hasattr(remote[0], 'rkey'):
                rkey, raddr = remote[0].rkey, remote[0].addr(remote[1])
            else:
                rkey, raddr = remote
        if invalidate is not None:  # imm goes to the wire big endian: the key host order
            imm = struct.unpack('>I', struct.pack('<I', invalidate))[0]
        ahn = ah.ahn if hasattr(ah, 'ahn') else (ah or 0)
        return self._post_send(op, flags, wr_id, addrs, lens, keys, inl, imm, rkey, raddr,
                               add if add is not None else compare, swap, ahn, remote_qpn,
                               qkey, xrc_srqn, ring, check)

    def post_recv(self, sges=(), wr_id=0, ring=True, check=True):
        addrs, lens, keys = _sge_list(sges)
        return self._post_recv(wr_id, addrs, lens, keys, ring, check)

    def destroy(self, check=True):
        return self.dev.destroy('DESTROY_QP', self.qpn, check)


# ---- connection helpers ------------------------------------------------------------------
class Side:
    def __init__(self, dev, pd, cq, qp, rcq=None):
        self.dev, self.pd, self.cq, self.qp = dev, pd, cq, qp
        self.rcq = rcq or cq


class Conn:
    """An RC connection: .a/.b sides (dev, pd, cq, qp); shortcuts qa/qb, cqa/cqb, pda/pdb."""

    def __init__(self, a, b, mtu, psn_a, psn_b):
        self.a, self.b = a, b
        self.qa, self.qb = a.qp, b.qp
        self.cqa, self.cqb = a.cq, b.cq
        self.pda, self.pdb = a.pd, b.pd
        self.mtu = mtu
        self.psn_a, self.psn_b = psn_a, psn_b   # first PSN sent by a / by b

    @property
    def world(self):
        return self.a.dev.world


def connect_rc(dev_a, dev_b, mtu=1024, psn_a=0x100, psn_b=0x200, access=None,
               timeout=14, retry_cnt=7, rnr_retry=7, min_rnr_timer=1, max_rd_atomic=4,
               max_dest_rd_atomic=4, sq_log=6, rq_log=6, sq_shift=9, rq_shift=9, cq_log=10,
               gid_index=0, pd_a=None, pd_b=None, separate_cqs=False, qp_type='RC',
               cq_timestamp=False, srq_b=None, cq_log_b=None):
    """Create PD/CQ/QP on both devices and move both QPs to RTS, each
    pointing at the other.  psn_a: first PSN of a's requests (b's rq_psn).
    access: the QPs' remote access (default ACCESS_REMOTE).
    qp_type 'UC' makes an unreliable connection (the RC-only attributes
    are then not sent).  cq_timestamp: CQs of 64-byte CQEs with
    completion timestamps.  srq_b: b's QP takes its receives from this SRQ
    (pass its PD as pd_b).  cq_log_b: b's CQ size when not cq_log."""
    assert srq_b is None or pd_b is not None, 'srq_b needs the SRQ\'s PD as pd_b'
    sides = []
    for dev, pd, srq, log in ((dev_a, pd_a, None, cq_log),
                              (dev_b, pd_b, srq_b, cq_log if cq_log_b is None else cq_log_b)):
        pd = pd or dev.alloc_pd()
        cq = dev.create_cq(log, timestamp=cq_timestamp)
        rcq = dev.create_cq(log, timestamp=cq_timestamp) if separate_cqs else cq
        extra = {'srq': srq} if srq is not None else {}
        qp = dev.create_qp(pd, cq, rcq, qp_type, sq_log=sq_log, sq_shift=sq_shift,
                           rq_log=rq_log, rq_shift=rq_shift, **extra)
        sides.append(Side(dev, pd, cq, qp, rcq))
    a, b = sides
    for me, peer, sq_psn, rq_psn in ((a, b, psn_a, psn_b), (b, a, psn_b, psn_a)):
        me.qp.to_init(access)
        me.qp.to_rtr(peer.dev, peer.qp.qpn, mtu=mtu, rq_psn=rq_psn, gid_index=gid_index,
                     max_dest_rd_atomic=max_dest_rd_atomic, min_rnr_timer=min_rnr_timer)
    for me, sq_psn in ((a, psn_a), (b, psn_b)):
        me.qp.to_rts(sq_psn=sq_psn, timeout=timeout, retry_cnt=retry_cnt, rnr_retry=rnr_retry,
                     max_rd_atomic=max_rd_atomic)
    return Conn(a, b, mtu, psn_a, psn_b)


def create_ud(dev, pd=None, cq=None, qkey=0x11111111, sq_log=6, rq_log=6, sq_psn=0):
    """A UD QP in RTS."""
    pd = pd or dev.alloc_pd()
    cq = cq or dev.create_cq(10)
    qp = dev.create_qp(pd, cq, cq, 'UD', sq_log=sq_log, rq_log=rq_log)
    qp.to_init(qkey=qkey)
    qp.to_rtr()
    qp.to_rts(sq_psn=sq_psn)
    return Side(dev, pd, cq, qp)


Device.Pd, Device.Ah = Pd, Ah

# Last: qrnic_harness imports this module part way (after its constants and
# structures); the functions above look its names up when they run.
import qrnic_harness as h  # noqa: E402
