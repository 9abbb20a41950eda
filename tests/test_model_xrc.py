# SPDX-License-Identifier: GPL-2.0-or-later
"""XRC (spec 6.6.20, 12.14; ABI 1.3): XRC domains, XRC SRQs, XRC INI QPs
sending through one XRC TGT QP into the SRQ each WQE names (XRCETH);
RDMA through XRC with rkeys of the SRQ's PD; NAKs for an XRCETH naming no
SRQ of the TGT's domain; retransmission; loopback; bad admin input; the
frames on the wire."""
import random
import struct

import pytest

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}
MTU = 1024


class Xrc:
    """n INI QPs on device a, one TGT QP on device b, XRC SRQs on b."""

    def __init__(self, world, n_ini=2, n_srq=2, loopback=False, access=q.ACCESS_ALL, **kw):
        a, b = world.devs
        b = a if loopback else b
        self.world, self.a, self.b = world, a, b
        self.pda = a.alloc_pd()
        self.pdb = b.alloc_pd()
        self.xrcd = b.alloc_xrcd()
        self.scq = [b.create_cq(10) for _ in range(n_srq)]
        self.srq = [b.create_xrc_srq(self.pdb, self.xrcd, cq) for cq in self.scq]
        self.cqa = a.create_cq(10)
        self.ini = []
        self.tgt = []
        for i in range(n_ini):
            ini = a.create_xrc_ini(self.pda, self.cqa)
            tgt = b.create_xrc_tgt(self.xrcd)
            ini.to_init()
            tgt.to_init(access)
            ini.to_rtr(b, tgt.qpn, mtu=MTU, rq_psn=0x200 + i)
            tgt.to_rtr(a, ini.qpn, mtu=MTU, rq_psn=0x100 + i)
            ini.to_rts(sq_psn=0x100 + i, **kw)
            tgt.to_rts(sq_psn=0x200 + i)
            self.ini.append(ini)
            self.tgt.append(tgt)

    def send(self, ini, srq, *args, **kw):
        ini.dev.patch_next_wqe('xrc_srqn', srq.srqn if hasattr(srq, 'srqn') else srq)
        return ini.post_send(*args, **kw)


@pytest.mark.parametrize('loopback', [False, True], ids=['wire', 'loopback'])
def test_two_ini_into_two_srqs_through_one_tgt(world, loopback):
    """Two INI QPs on one device SEND into two XRC SRQs of one domain on the
    other; the receives complete on each SRQ's CQ.  An XRC connection is one
    INI QP to one TGT QP, so INI i talks to TGT i, and each names either SRQ."""
    x = Xrc(world, n_ini=2, n_srq=2, loopback=loopback)
    src = x.a.reg_mr(x.pda, 1 << 16)
    dst = x.b.reg_mr(x.pdb, 1 << 16)
    data = src.fill_random(random.Random(5))
    for s, srq in enumerate(x.srq):
        for i in range(4):
            srq.post_recv([(dst, (s * 4 + i) * 0x1000, 0x1000)], wr_id=(s << 8) | i)
    sends = []
    for i in range(8):
        ini, s = x.ini[i % 2], (i // 2) % 2
        x.send(ini, x.srq[s], 'SEND_WITH_IMM' if i == 3 else 'SEND',
               [(src, i * 2048, 2048)], wr_id=i, imm=0x1234)
        sends.append((i, ini, s))
    assert world.run() == 'idle'
    got = x.cqa.poll()
    assert sorted(c['wr_id'] for c in got) == list(range(8))
    assert all(c['status_name'] == 'SUCCESS' for c in got)
    for s, srq in enumerate(x.srq):
        cqes = x.scq[s].poll()
        assert len(cqes) == 4
        for c in cqes:
            assert c['status_name'] == 'SUCCESS' and c['byte_len'] == 2048
            assert c['flags'] & q.CQE_F_XRC and c['src_qp'] == srq.srqn
            assert c['qpn'] in [t.qpn for t in x.tgt]
            assert c['wr_id'] >> 8 == s and c['wqe_index'] == c['wr_id'] & 0xff
        # ring order within the SRQ: the messages naming it, in the order sent
        mine = [i for i, _, si in sends if si == s]
        order = [c['wr_id'] & 0xff for c in cqes]
        for k, c in enumerate(cqes):
            slot = s * 4 + (c['wr_id'] & 0xff)
            assert dst.read(slot * 0x1000, 2048) in \
                [data[i * 2048:(i + 1) * 2048] for i in mine]
        assert sorted(order) == [0, 1, 2, 3]
    landed = sorted(dst.read(k * 0x1000, 2048) for k in range(8))
    assert landed == sorted(data[i * 2048:(i + 1) * 2048] for i in range(8))


def test_rdma_write_read_atomic_through_xrc(world):
    """RDMA WRITE, READ and atomics through XRC reach MRs of the named SRQ's PD."""
    x = Xrc(world, n_ini=1, n_srq=1)
    ini, srq = x.ini[0], x.srq[0]
    src = x.a.reg_mr(x.pda, 1 << 14)
    dst = x.b.reg_mr(x.pdb, 1 << 14)
    data = src.fill_random(random.Random(6))
    x.send(ini, srq, 'RDMA_WRITE', [(src, 0, 5000)], remote=(dst, 0x100), wr_id=1)
    assert world.run() == 'idle'
    assert dst.read(0x100, 5000) == data[:5000]
    dst.write(0x3000, bytes(range(256)) * 8)
    x.send(ini, srq, 'RDMA_READ', [(src, 0x2000, 2048)], remote=(dst, 0x3000), wr_id=2)
    dst.write(0x3800, struct.pack('<Q', 40))
    x.send(ini, srq, 'ATOMIC_FETCH_AND_ADD', [(src, 0x3000, 8)], remote=(dst, 0x3800),
           add=2, wr_id=3)
    srq.post_recv([(dst, 0x1000, 64)], wr_id=77)
    x.send(ini, srq, 'RDMA_WRITE_WITH_IMM', [(src, 0, 16)], remote=(dst, 0x2000), imm=9,
           wr_id=4)
    assert world.run() == 'idle'
    got = {c['wr_id']: c for c in x.cqa.poll()}
    assert [got[i]['status_name'] for i in (1, 2, 3, 4)] == ['SUCCESS'] * 4
    assert src.read(0x2000, 2048) == bytes(range(256)) * 8
    assert struct.unpack('<Q', src.read(0x3000, 8))[0] == 40
    assert struct.unpack('<Q', dst.read(0x3800, 8))[0] == 42
    rc = x.scq[0].poll()
    assert len(rc) == 1 and rc[0]['opcode_name'] == 'RECV_RDMA_WITH_IMM' and \
        rc[0]['wr_id'] == 77 and rc[0]['src_qp'] == srq.srqn


def test_rkey_of_the_tgt_side_other_pd_is_an_access_error(world):
    """rkeys are checked against the PD of the XRC SRQ the request names."""
    x = Xrc(world, n_ini=1, n_srq=1)
    other = x.b.reg_mr(x.b.alloc_pd(), 1 << 12)
    src = x.a.reg_mr(x.pda, 1 << 12)
    x.send(x.ini[0], x.srq[0], 'RDMA_WRITE', [(src, 0, 64)], remote=(other, 0), wr_id=1)
    assert world.run() == 'idle'
    c = x.cqa.poll()
    assert c[0]['status_name'] == 'REM_ACCESS_ERR'
    assert x.tgt[0].state == 'ERR' and x.ini[0].state == 'ERR'


@pytest.mark.parametrize('bad', ['none', 'plain_srq', 'other_xrcd'])
def test_xrceth_naming_no_srq_of_the_domain_is_nak_invalid_request(world, bad):
    x = Xrc(world, n_ini=1, n_srq=1)
    if bad == 'none':
        srqn = 999
    elif bad == 'plain_srq':
        srqn = x.b.create_srq(x.pdb).srqn
    else:
        xrcd2 = x.b.alloc_xrcd()
        srqn = x.b.create_xrc_srq(x.pdb, xrcd2, x.scq[0]).srqn
    src = x.a.reg_mr(x.pda, 1 << 12)
    x.send(x.ini[0], srqn, 'SEND', [(src, 0, 64)], wr_id=1)
    assert world.run() == 'idle'
    c = x.cqa.poll()
    assert [e['status_name'] for e in c] == ['REM_INV_REQ_ERR']
    assert x.tgt[0].state == 'ERR'
    assert x.scq[0].poll() == []
    assert x.b.stats()['inv_req_naks_sent'] == 1


def test_retransmission_under_impairments(world):
    x = Xrc(world, n_ini=2, n_srq=2, timeout=8)
    world.random_impairments(seed=11, loss=0.05, dup=0.05, reorder=0.05)
    src = x.a.reg_mr(x.pda, 1 << 16)
    dst = x.b.reg_mr(x.pdb, 1 << 16)
    data = src.fill_random(random.Random(7))
    for s, srq in enumerate(x.srq):
        for i in range(8):
            srq.post_recv([(dst, (s * 8 + i) * 0x800, 0x800)], wr_id=(s << 8) | i)
    for i in range(16):
        x.send(x.ini[i % 2], x.srq[(i // 2) % 2], 'SEND', [(src, i * 0x800, 3000 % 0x800 + 1000)],
               wr_id=i)
    assert world.run() == 'idle'
    assert sorted(c['wr_id'] for c in x.cqa.poll() if c['status_name'] == 'SUCCESS') == \
        list(range(16))
    n = sum(len([c for c in cq.poll() if c['status_name'] == 'SUCCESS']) for cq in x.scq)
    assert n == 16
    assert x.a.stats()['retransmitted_packets'] > 0 or x.b.stats()['duplicate_requests'] > 0


def test_frames_on_the_wire(world):
    x = Xrc(world, n_ini=1, n_srq=1)
    world.clear_frames()
    src = x.a.reg_mr(x.pda, 1 << 12)
    dst = x.b.reg_mr(x.pdb, 1 << 12)
    x.srq[0].post_recv([(dst, 0, 4096)], wr_id=1)
    x.send(x.ini[0], x.srq[0], 'SEND', [(src, 0, 1500)], wr_id=1)
    x.send(x.ini[0], x.srq[0], 'RDMA_READ', [(src, 0x800, 16)], remote=(dst, 0), wr_id=2)
    assert world.run() == 'idle'
    frames = [f for f in world.frames() if f.roce]
    ops = [f.opcode for f in frames]
    assert 0xa0 in ops and 0xa2 in ops and 0xac in ops and 0xb1 in ops and 0xb0 in ops
    for f in frames:
        if f.opcode in (0xa0, 0xa2, 0xac):
            assert f.xrc_srqn == x.srq[0].srqn and f.dqpn == x.tgt[0].qpn
        if f.opcode in (0xb0, 0xb1):
            assert f.xrc_srqn is None and f.dqpn == x.ini[0].qpn


def test_transport_check_rc_to_tgt_and_to_ini(world):
    """XRC QPs take only XRC opcodes (TGT: requests, INI: responses); an RC
    request aimed at either is dropped as malformed."""
    x = Xrc(world, n_ini=1, n_srq=1)
    a, b = world.devs
    for dev, peer, dest in ((a, b, x.tgt[0].qpn), (b, a, x.ini[0].qpn)):
        pd, cq = dev.alloc_pd(), dev.create_cq(6)
        rc = dev.create_qp(pd, cq, cq, 'RC')
        rc.to_init(q.ACCESS_ALL)
        rc.to_rtr(peer, dest, mtu=MTU, rq_psn=0)
        rc.to_rts(sq_psn=0, timeout=8, retry_cnt=0)
        src = dev.reg_mr(pd, 4096)
        before = peer.stats()['rx_drop_malformed']
        rc.post_send('SEND', [(src, 0, 64)], wr_id=1)
        assert world.run() == 'idle'
        assert peer.stats()['rx_drop_malformed'] > before
        assert cq.poll()[0]['status_name'] == 'RETRY_EXC_ERR'
    assert x.tgt[0].state == 'RTS' and x.ini[0].state == 'RTS'


def test_admin_xrcd_refcounts_and_bad_input(world):
    a = world.devs[0]
    da = a.query_device()
    assert da['caps'] & (1 << 11) and da['max_xrcd'] == 64
    assert da['abi_version'] == q.ABI_VERSION >= 0x00010008
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    # ALLOC_XRCD: uctx, rsvd
    assert a.alloc_xrcd(uctx=7, check=False) is None
    assert a.last_status == AQ['BAD_HANDLE'] and a.last_cqe()['detail'] == 8
    assert a.alloc_xrcd(rsvd=1, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 12
    x = a.alloc_xrcd()
    assert x == 1
    # CREATE_SRQ XRC: xrcd, cqn, flags, rsvd1; plain: xrcd/cqn must be 0
    assert a.create_xrc_srq(pd, 5, cq, check=False) is None
    assert a.last_status == AQ['BAD_HANDLE'] and a.last_cqe()['detail'] == 40
    assert a.create_xrc_srq(pd, x, 99, check=False) is None
    assert a.last_status == AQ['BAD_HANDLE'] and a.last_cqe()['detail'] == 44
    a.patch_next_cmd('create_srq.flags', 4)     # 2: PAGELIST (ABI 1.8)
    assert a.create_srq(pd, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 18
    a.patch_next_cmd('create_srq.xrcd', x)
    assert a.create_srq(pd, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 40
    a.patch_next_cmd('create_srq.rsvd1', 1)
    assert a.create_xrc_srq(pd, x, cq, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 48
    srq = a.create_xrc_srq(pd, x, cq)
    # an XRC SRQ serves TGT QPs only
    assert a.create_qp(pd, cq, cq, 'RC', srq=srq, check=False) is None
    assert a.last_status == AQ['BAD_HANDLE'] and a.last_cqe()['detail'] == 36
    # CREATE_QP XRC TGT: pdn/cqs/SQ 0, an xrcd
    assert a.create_xrc_tgt(9, check=False) is None
    assert a.last_status == AQ['BAD_HANDLE'] and a.last_cqe()['detail'] == 36
    a.patch_next_cmd('create_qp.pdn', pd.pdn)
    assert a.create_xrc_tgt(x, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 12
    a.patch_next_cmd('create_qp.sq_log_depth', 3)
    assert a.create_xrc_tgt(x, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 25
    a.patch_next_cmd('create_qp.flags', 1)
    assert a.create_xrc_tgt(x, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 32
    tgt = a.create_xrc_tgt(x)
    # CREATE_QP XRC INI: no receive CQ, no SRQ
    a.patch_next_cmd('create_qp.recv_cqn', cq.cqn)
    assert a.create_xrc_ini(pd, cq, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 20
    a.patch_next_cmd('create_qp.srqn', srq.srqn)
    assert a.create_xrc_ini(pd, cq, check=False) is None
    assert a.last_status == AQ['BAD_PARAM'] and a.last_cqe()['detail'] == 36
    ini = a.create_xrc_ini(pd, cq)
    # modify masks per type: INI takes no QKEY (a UD attribute)
    assert ini.modify('INIT', pkey_index=0, port_num=1, qkey=5,
                      check=False) == AQ['BAD_ATTR_MASK']
    ini.to_init()
    tgt.to_init()
    # references: the domain is busy while its SRQ and TGT QP exist
    assert a.dealloc_xrcd(x, check=False) == AQ['BUSY']
    assert a.destroy('DESTROY_CQ', cq.cqn, check=False) == AQ['BUSY']
    tgt.destroy()
    assert a.dealloc_xrcd(x, check=False) == AQ['BUSY']
    srq.destroy()
    ini.destroy()
    assert a.dealloc_xrcd(x) == AQ['OK']
    assert a.dealloc_xrcd(x, check=False) == AQ['BAD_HANDLE']
    a.destroy('DESTROY_CQ', cq.cqn)


def test_xrcd_of_a_user_context(world):
    """An XRCD of uctx U serves SRQs and TGT QPs of U; a kernel XRCD (uctx 0)
    every context; another context's: BAD_HANDLE.  DEALLOC_UCTX is busy
    while the context has an XRCD."""
    a = world.devs[0]
    u1, u2 = a.alloc_uctx(), a.alloc_uctx()
    x1 = a.alloc_xrcd(uctx=u1)
    x0 = a.alloc_xrcd()
    assert a.create_xrc_tgt(x1, uctx=u2, check=False) is None
    assert a.last_status == AQ['BAD_HANDLE']
    t = a.create_xrc_tgt(x0, uctx=u2)
    t.destroy()
    assert a.destroy('DEALLOC_UCTX', u1, check=False) == AQ['BUSY']
    a.dealloc_xrcd(x1)
    a.destroy('DEALLOC_UCTX', u1)


def test_tgt_sq_doorbell_ignored_and_flush_to_the_srq_cq(world):
    """A TGT QP has no SQ (its SQ doorbell is ignored); moved to ERR with a
    multi-packet SEND half received, that receive flushes on the SRQ's CQ."""
    x = Xrc(world, n_ini=1, n_srq=1)
    src = x.a.reg_mr(x.pda, 1 << 14)
    dst = x.b.reg_mr(x.pdb, 1 << 14)
    x.srq[0].post_recv([(dst, 0, 8192)], wr_id=5)
    x.a.fault('drop dir=tx op=XRC_SEND_MIDDLE')
    x.send(x.ini[0], x.srq[0], 'SEND', [(src, 0, 3000)], wr_id=1)
    world.run(ns=2_000_000)
    x.tgt[0].modify('ERR')
    world.run(ns=1_000_000)
    c = x.scq[0].poll()
    assert [(e['status_name'], e['wr_id'], e['flags'] & q.CQE_F_XRC) for e in c] == \
        [('WR_FLUSH_ERR', 5, q.CQE_F_XRC)]
    ign = x.b.stats()['doorbells_ignored']
    x.b.db_write(q.DB_SQ, x.tgt[0].qpn | (1 << 32))
    assert x.b.stats()['doorbells_ignored'] == ign + 1


def test_ini_keeps_the_responder_attributes(world):
    """Issue 16: an XRC INI QP takes ACCESS_FLAGS, MAX_DEST_RD_ATOMIC and
    MIN_RNR_TIMER where an RC QP does (Linux requires ACCESS_FLAGS at
    RESET->INIT); QUERY_QP reports what was given, bad values are refused as
    for RC, attributes RC lacks at a transition are still refused, and the QP
    sends as before (the attributes have no effect on a QP with no responder)."""
    a, b = world.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    xrcd = b.alloc_xrcd()
    scq, cqa = b.create_cq(6), a.create_cq(6)
    srq = b.create_xrc_srq(pdb, xrcd, scq)
    ini, tgt = a.create_xrc_ini(pda, cqa), b.create_xrc_tgt(xrcd)
    acc = q.ACCESS_LOCAL_WRITE | q.ACCESS_REMOTE_READ
    assert ini.modify('INIT', pkey_index=0, port_num=1, qp_access_flags=acc) == AQ['OK']
    assert ini.query()['qp_access_flags'] == acc
    assert ini.modify('INIT', qp_access_flags=q.ACCESS_ALL) == AQ['OK']     # INIT -> INIT
    assert ini.query()['qp_access_flags'] == q.ACCESS_ALL
    tgt.to_init(q.ACCESS_ALL)
    gid, nt = b.gids[0]
    av = q.make_av(gid, b.mac, nt, sgid_index=0)
    # bad values: refused as for RC, nothing changes
    assert ini.modify('RTR', av=av, path_mtu=q.MTU[1024], dest_qpn=tgt.qpn, rq_psn=5,
                      max_dest_rd_atomic=200, check=False) == AQ['BAD_PARAM']
    assert ini.modify('RTR', av=av, path_mtu=q.MTU[1024], dest_qpn=tgt.qpn, rq_psn=5,
                      min_rnr_timer=32, check=False) == AQ['BAD_PARAM']
    assert ini.modify('RTR', av=av, path_mtu=q.MTU[1024], dest_qpn=tgt.qpn, rq_psn=5,
                      qp_access_flags=0x100, check=False) == AQ['BAD_PARAM']
    assert ini.query()['state_name'] == 'INIT'
    assert ini.modify('RTR', av=av, path_mtu=q.MTU[1024], dest_qpn=tgt.qpn, rq_psn=5,
                      max_dest_rd_atomic=3, min_rnr_timer=12,
                      qp_access_flags=q.ACCESS_LOCAL_WRITE) == AQ['OK']
    got = ini.query()
    assert (got['state_name'], got['max_dest_rd_atomic'], got['min_rnr_timer'],
            got['qp_access_flags']) == ('RTR', 3, 12, q.ACCESS_LOCAL_WRITE), got
    tgt.to_rtr(a, ini.qpn, mtu=1024, rq_psn=0x100)
    # RTR -> RTS: ACCESS_FLAGS and MIN_RNR_TIMER optional, MAX_DEST_RD_ATOMIC not (as RC)
    rts = dict(sq_psn=0x100, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=4)
    assert ini.modify('RTS', max_dest_rd_atomic=1, check=False, **rts) == AQ['BAD_ATTR_MASK']
    assert ini.modify('RTS', min_rnr_timer=20, qp_access_flags=q.ACCESS_ALL, **rts) == AQ['OK']
    tgt.to_rts(sq_psn=5)
    got = ini.query()
    assert (got['state_name'], got['max_dest_rd_atomic'], got['min_rnr_timer'],
            got['qp_access_flags']) == ('RTS', 3, 20, q.ACCESS_ALL), got
    assert ini.modify(min_rnr_timer=7) == AQ['OK']                        # RTS -> RTS
    assert ini.query()['min_rnr_timer'] == 7
    # it sends as before
    src, dst = a.reg_mr(pda, 4096), b.reg_mr(pdb, 4096)
    data = src.fill_random(random.Random(3), 0, 1000)
    srq.post_recv([(dst, 0, 4096)], wr_id=9)
    ini.dev.patch_next_wqe('xrc_srqn', srq.srqn)
    ini.post_send('SEND', [(src, 0, 1000)], wr_id=1)
    assert world.run() == 'idle'
    assert [c['status_name'] for c in cqa.poll()] == ['SUCCESS']
    rc = scq.poll()
    assert [(c['wr_id'], c['status_name'], c['byte_len']) for c in rc] == [(9, 'SUCCESS', 1000)]
    assert dst.read(0, 1000) == data
    # back to RESET: the attributes of a new QP
    assert ini.modify('RESET') == AQ['OK']
    got = ini.query()
    assert (got['max_dest_rd_atomic'], got['min_rnr_timer'], got['qp_access_flags']) == (0, 0, 0)
