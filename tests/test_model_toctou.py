# SPDX-License-Identifier: GPL-2.0-or-later
"""pvrdma CVE class 'time of check to time of use' (issue 21, item 4): the
guest rewrites a descriptor while the device processes it.

The harness's DMA trap (hx_dma_trap) rewrites guest memory right after the
device's DMA read of it has copied the bytes, before the device uses them:
the exact moment a racing guest vCPU could hit.  Each test then checks
that the device acted on the one copy it read (the old bytes), whole: no
field taken from the new bytes, nothing outside the old descriptor's
bounds touched, and that the device never read the same bytes again (a
double fetch: the trap counts reads of the bytes the first read fetched).

Covered: a send WQE (RDMA WRITE, multi-packet), an admin command
(REG_MR, CREATE_QP), an MR's page list (PBL) during REG_MR, an SRQ receive
WQE, a fast-registration (REG_MR work request) page list and a memory
window BIND_MW WQE.

A WQE is read as two DMA reads: its 64-byte header, then its SGE list or
inline data (whose length comes from the header copy).  A guest that
rewrites the SGE list between the two reads gets the new SGEs with the old
header; each byte is still read once and checked once (the SGE count and
lengths come from the copies), so that is the guest's own inconsistency,
not a device one.  These tests rewrite what the first read fetched."""
import struct

import qrnic_harness as q

GARBAGE = b'\xff\x5a\xa5\x00\xff\xff\xff\xff'


def one(cq):
    got = cq.wait(1)
    assert len(got) == 1, got
    return got[0]


def fired_once(dev):
    st, refetch = dev.dma_trap_state()
    assert st == 2, 'the device never read the trapped bytes'
    assert refetch == 0, f'double fetch: the device read the same bytes {refetch} more times'
    dev.dma_trap(0, 0, 0, b'\0')


def sq_slot(qp):
    return qp.sq_addr + ((qp.indexes()['sq_pi'] & ((1 << qp.sq_log) - 1)) << qp.sq_shift)


def test_send_wqe_rewritten_after_read(world, rng):
    """RDMA WRITE of 3000 bytes (3 packets at MTU 1024); right after the
    device read the WQE header the guest points it elsewhere (remote
    address, rkey, opcode, wr_id, inline flag).  All three packets follow
    the old copy."""
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=1024)
    src = a.reg_mr(conn.pda, 1 << 14)
    dst = b.reg_mr(conn.pdb, 1 << 15)
    other = b.reg_mr(conn.pdb, 1 << 15)
    data = src.fill_random(rng, 0, 3000)
    slot = sq_slot(conn.qa)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 3000)], remote=(dst, 0x100), wr_id=0x111, ring=False)
    old = q.SendWqe.from_buffer_copy(a.mem_read(slot, 64))
    new = q.SendWqe.from_buffer_copy(bytes(old))
    new.opcode = q.WR['RDMA_READ']
    new.flags |= q.WQE_F_INLINE
    new.inline_len = 4000
    new.num_sge = 9
    new.wr_id = 0x222
    new.rkey = other.rkey
    new.remote_addr = other.addr(0x4000)
    a.dma_trap(conn.qa.sq_addr, 1 << (conn.qa.sq_log + conn.qa.sq_shift), slot, bytes(new))
    conn.qa.ring_sq()
    c = one(conn.cqa)
    fired_once(a)
    assert a.mem_read(slot, 64) == bytes(new)          # the guest did rewrite it
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'RDMA_WRITE', 0x111), c
    assert dst.read(0x100, 3000) == data
    assert dst.read(0, 0x100) == bytes(0x100) and dst.read(0x100 + 3000) == bytes((1 << 15) - 0x1100 - 3000 + 0x1000)
    assert other.read() == bytes(1 << 15)
    assert src.read(0, 3000) == data                   # nothing READ into it
    assert world.run() == 'idle' and not conn.cqa.poll() and not conn.cqb.poll()
    assert conn.qa.state == 'RTS' and conn.qb.state == 'RTS'


def test_admin_command_rewritten_after_read(world, rng):
    """REG_MR and CREATE_QP: right after the device read the 128-byte
    command the guest overwrites the slot with garbage.  The object is
    created from the copy (length, iova, access; QP type and sizes)."""
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mask = 31                                          # World's AQ: 32 entries
    for what in ('reg_mr', 'create_qp'):
        pi, _ = a.aq_indexes()
        slot = a.aq_addr() + (pi & mask) * 128
        a.dma_trap(slot, 128, None, GARBAGE)
        def rewritten():
            assert a.mem_read(slot, 128) == GARBAGE * 16
        if what == 'reg_mr':
            mr = a.reg_mr(conn.pda, 3 * 4096 + 8, access=q.ACCESS_ALL, iova=0x7f00_1234_5000)
            fired_once(a)
            rewritten()
            e = mr.query()
            assert e['length'] == 3 * 4096 + 8 and e['iova'] == 0x7f00_1234_5000, e
            data = rng.randbytes(3 * 4096 + 8)
            src = b.reg_mr(conn.pdb, 4 * 4096)
            src.write(0, data)
            conn.qb.post_send('RDMA_WRITE', [(src, 0, len(data))], remote=(mr, 0), wr_id=5)
            assert one(conn.cqb)['status_name'] == 'SUCCESS'
            assert mr.read(0, len(data)) == data
        else:
            qp = a.create_qp(conn.pda, conn.cqa, sq_log=3, rq_log=3)
            fired_once(a)
            rewritten()
            assert qp.query()['state_name'] == 'RESET'
            qp.destroy()
    a.check()


def test_pbl_rewritten_after_read(world, rng):
    """REG_MR through a 2-level page list: right after the device read the
    top level the guest points every entry outside RAM.  The MR maps the
    pages of the copy: a peer WRITE lands in them and the device's DMA
    never leaves RAM."""
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mark = a.mem_alloc(4096)
    end = a.mem_base + a.mem_size
    # every byte allocated from here on; the first DMA read there is REG_MR's PBL
    a.dma_trap(mark + 4096, end - mark - 4096, None, struct.pack('<Q', 0xffff_ff00_0000_0000))
    mr = a.reg_mr(conn.pda, 1 << 20, levels=2)
    fired_once(a)
    assert a.mem_read(mr.pbl_addr, 8) == struct.pack('<Q', 0xffff_ff00_0000_0000)
    src = b.reg_mr(conn.pdb, 1 << 20)
    data = src.fill_random(rng, 0, 1 << 20)
    fails = a.dma_stats()['fails']
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 1 << 20)], remote=(mr, 0), wr_id=1)
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    assert mr.read(0, 1 << 20) == data
    after = a.dma_stats()['fails']
    assert after == fails


def test_srq_wqe_rewritten_after_read(world, rng):
    """A SEND consumes an SRQ WQE; right after the device read its header
    (wr_id, SGE count) the guest overwrites it.  The completion carries the
    old wr_id and the data lands in the old buffer."""
    a, b = world.devs
    pd = b.alloc_pd()
    cq = b.create_cq(8)
    mark0 = b.mem_alloc(4096)
    srq = b.create_srq(pd, log_depth=4)
    mark1 = b.mem_alloc(4096)
    conn = q.connect_rc(a, b, pd_b=pd)
    # b's QP on the SRQ: a fresh QP pair using it
    qb = b.create_qp(pd, cq, cq, srq=srq)
    qa = a.create_qp(conn.pda, conn.cqa)
    for me, dev, peer, pdev in ((qa, a, qb, b), (qb, b, qa, a)):
        me.to_init(q.ACCESS_ALL)
        me.to_rtr(pdev, peer.qpn, mtu=1024, rq_psn=0)
        me.to_rts(sq_psn=0)
    buf = b.reg_mr(pd, 8192)
    src = a.reg_mr(conn.pda, 4096)
    data = src.fill_random(rng, 0, 2000)
    srq.post_recv([(buf, 0, 4096)], wr_id=0x5eed)
    b.dma_trap(mark0 + 4096, mark1 - mark0 - 4096, None, GARBAGE)
    qa.post_send('SEND', [(src, 0, 2000)], wr_id=9)
    c = one(cq)
    fired_once(b)
    assert (c['status_name'], c['wr_id'], c['byte_len']) == ('SUCCESS', 0x5eed, 2000), c
    assert buf.read(0, 2000) == data and buf.read(2000) == bytes(8192 - 2000)
    assert one(conn.cqa)['status_name'] == 'SUCCESS'


def test_fast_reg_page_list_rewritten_after_read(world, rng):
    """REG_MR work request: right after the device read the page list the
    guest swaps in other (valid) pages.  The MR maps the old pages."""
    a, b = world.devs
    conn = q.connect_rc(a, b)
    mr = a.alloc_mr(conn.pda, 16)
    old = [a.mem_alloc(4096) for _ in range(4)]
    new = [a.mem_alloc(4096) for _ in range(4)]
    pbl = a.mem_alloc(64, 64)
    a.mem_write(pbl, struct.pack('<4Q', *old))
    a.dma_trap(pbl, 32, pbl, struct.pack('<4Q', *new))
    mr.register(conn.qa, 4 * 4096, iova=0x10_0000, pages=old, pbl_addr=pbl,
                access=q.ACCESS_ALL, wr_id=0x77)
    c = one(conn.cqa)
    fired_once(a)
    assert a.mem_read(pbl, 32) == struct.pack('<4Q', *new)
    assert (c['status_name'], c['wr_id']) == ('SUCCESS', 0x77), c
    src = b.reg_mr(conn.pdb, 4 * 4096)
    data = src.fill_random(rng, 0, 4 * 4096)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 4 * 4096)], remote=(mr, 0), wr_id=2)
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    got = b''.join(a.mem_read(p, 4096) for p in old)
    assert got == data
    assert all(a.mem_read(p, 4096) == bytes(4096) for p in new)


def test_bind_mw_wqe_rewritten_after_read(world, rng):
    """BIND_MW: right after the device read the WQE the guest widens the
    window (address, length, rights) and changes its key.  The window is
    the old one: a WRITE inside it works, one byte past it is NAKed."""
    a, b = world.devs
    conn = q.connect_rc(a, b)
    rw = q.ACCESS_REMOTE_READ | q.ACCESS_REMOTE_WRITE
    mr = a.reg_mr(conn.pda, 4 * 4096,
                  access=q.ACCESS_LOCAL_WRITE | rw | q.ACCESS_MW_BIND)
    mw = a.alloc_mw(conn.pda, 2)
    slot = sq_slot(conn.qa)
    key = (mw.key & ~0xff) | ((mw.key + 1) & 0xff)
    wide = q.BindMwWqe(opcode=q.WR['BIND_MW'], flags=0, access=rw | q.ACCESS_LOCAL_WRITE,
                       mr_lkey=mr.lkey, wr_id=0xbad, key=(key & ~0xff) | ((key + 7) & 0xff),
                       addr=mr.addr(0), length=4 * 4096)
    a.dma_trap(conn.qa.sq_addr, 1 << (conn.qa.sq_log + conn.qa.sq_shift), slot, bytes(wide))
    mw.bind(conn.qa, mr, 4096, 4096, access=q.ACCESS_REMOTE_WRITE, wr_id=0xb1)
    c = one(conn.cqa)
    fired_once(a)
    assert a.mem_read(slot, 64) == bytes(wide)
    assert (c['status_name'], c['opcode_name'], c['wr_id']) == ('SUCCESS', 'BIND_MW', 0xb1), c
    e = mw.query()
    if 'key' in e:
        assert e['key'] == key, e
    assert e['iova'] == mr.addr(4096) and e['length'] == 4096, e
    src = b.reg_mr(conn.pdb, 8192)
    data = src.fill_random(rng, 0, 4096)
    conn.qb.post_send('RDMA_WRITE', [(src, 0, 4096)], remote=(mw, 0), wr_id=1)
    assert one(conn.cqb)['status_name'] == 'SUCCESS'
    assert mr.read(4096, 4096) == data
    # READ is a right only the rewritten WQE asked for: NAKed
    conn.qb.post_send('RDMA_READ', [(src, 0, 8)], remote=(mw, 0), wr_id=2)
    assert one(conn.cqb)['status_name'] == 'REM_ACCESS_ERR'
    assert mr.read(0, 4096) == bytes(4096) and mr.read(8192) == bytes(8192)
