# SPDX-License-Identifier: GPL-2.0-or-later
"""Hostile guest input.  Each test is a named regression test for a class of
bug that hit QEMU's pvrdma device (CVE numbers in the docstrings): guest
supplied sizes and counts, object life cycle, missing register handlers,
endless loops on bad descriptors, DMA to addresses outside guest RAM.
The device must answer each with a defined error and keep working."""
import random
import struct

import pytest

import qrnic_harness as q

MTU = 1024


def healthy(world):
    """The device pair still moves data correctly."""
    conn = q.connect_rc(*world.devs, cq_log=6)
    la, rb = conn.a.dev.reg_mr(conn.pda, 8192), conn.b.dev.reg_mr(conn.pdb, 8192)
    data = la.fill_random(random.Random(77), 0, 5000)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 5000)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert rb.read(0, 5000) == data
    for d in world.devs:
        assert not d.reg_read('STATUS') & q.STATUS_FATAL


def conn_with_mrs(world):
    conn = q.connect_rc(*world.devs, mtu=MTU)
    la, rb = conn.a.dev.reg_mr(conn.pda, 8192), conn.b.dev.reg_mr(conn.pdb, 8192)
    la.fill_random(random.Random(1))
    rb.fill_random(random.Random(2))
    return conn, la, rb


# ---- guest-supplied counts (CVE-2021-3582, CVE-2023-1544 class) -------------------
@pytest.mark.parametrize('num_sge', [29, 31, 255])   # 29: over the 512-byte stride
def test_send_wqe_num_sge_too_large(world, num_sge):
    """num_sge beyond QRNIC_MAX_SGE (or the stride) in a send WQE."""
    conn, la, rb = conn_with_mrs(world)
    before = rb.read()
    conn.a.dev.patch_next_wqe('num_sge', num_sge)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 16)] * 16, remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] == 'LOC_QP_OP_ERR'
    assert c[0]['vendor_err_name'] == 'BAD_WQE'
    assert not [f for f in world.frames(roce_only=True) if f.src == 0]
    assert rb.read() == before
    assert conn.a.dev.stat('bad_wqes') == 1
    healthy(world)


@pytest.mark.parametrize('inline_len', [449, 4096, 0xffffffff])
def test_send_wqe_inline_len_too_large(world, inline_len):
    conn, la, rb = conn_with_mrs(world)
    before = rb.read()
    conn.a.dev.patch_next_wqe('inline_len', inline_len)
    conn.qa.post_send('RDMA_WRITE', inline=b'x' * 16, remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] == 'LOC_QP_OP_ERR'
    assert rb.read() == before
    healthy(world)


def test_send_wqe_sges_beyond_small_stride(world):
    """16 SGEs do not fit a 64-byte stride: num_sge must be checked against it."""
    a, b = world.devs
    conn = q.connect_rc(a, b, sq_shift=6)
    la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    a.patch_next_wqe('num_sge', 4)
    conn.qa.post_send('RDMA_WRITE', [], remote=(rb, 0))
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] == 'LOC_QP_OP_ERR'


@pytest.mark.parametrize('num_sge', [17, 200])
def test_recv_wqe_num_sge_too_large(world, num_sge):
    conn, la, rb = conn_with_mrs(world)
    before = rb.read()
    conn.b.dev.patch_next_wqe(8, bytes([num_sge]))     # qrnic_recv_wqe.num_sge
    conn.qb.post_recv([(rb, 0, 100)], wr_id=9)
    conn.qa.post_send('SEND', [(la, 0, 50)], wr_id=1)
    assert world.run() == 'idle'
    cb = conn.cqb.poll()
    assert cb and cb[0]['wr_id'] == 9 and cb[0]['status_name'] != 'SUCCESS'
    ca = conn.cqa.poll()
    assert len(ca) == 1 and ca[0]['status_name'] != 'SUCCESS'
    assert rb.read() == before
    healthy(world)


@pytest.mark.parametrize('opcode', [7, 8, 0x7f, 0xff])
def test_send_wqe_bad_opcode(world, opcode):
    conn, la, rb = conn_with_mrs(world)
    conn.a.dev.patch_next_wqe('opcode', opcode)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] == 'LOC_QP_OP_ERR'


def test_ud_opcode_not_allowed_on_ud(world):
    sa = q.create_ud(world.devs[0])
    la = world.devs[0].reg_mr(sa.pd, 4096)
    sa.qp.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(la.rkey, la.addr(0)), wr_id=1)
    assert world.run() == 'idle'
    c = sa.cq.poll()
    assert len(c) == 1 and c[0]['status_name'] == 'LOC_QP_OP_ERR'


def test_garbage_wqes_complete_with_error(world):
    """CVE-2023-1544 / endless-loop class: random WQE bytes must give an
    error completion and leave the world idle (no spinning)."""
    rng = random.Random(4242)
    checked = 0
    for i in range(40):
        conn = q.connect_rc(*world.devs, cq_log=4, sq_log=2, rq_log=2)
        wqe = bytearray(rng.randbytes(512))
        wqe[0] = rng.choice([rng.randint(7, 255), rng.randint(0, 6)])
        wqe[1] |= q.WQE_F_SIGNALED
        if wqe[0] <= 6 and wqe[2] <= 16 and not (wqe[1] & q.WQE_F_INLINE):
            wqe[2] = rng.randint(17, 255)          # keep it invalid
        if wqe[1] & q.WQE_F_INLINE:
            struct.pack_into('<I', wqe, 4, rng.randint(449, 0xffffffff))
        idx = conn.qa.post_send_raw(bytes(wqe))
        assert idx == 0
        r = world.run(ns=10_000_000_000, max_iter=1_000_000)
        assert r == 'idle', (i, r)
        c = conn.cqa.poll()
        assert len(c) == 1 and c[0]['status'] != 0, (i, c)
        checked += 1
        conn.qa.destroy()
        conn.qb.destroy()
    assert checked == 40
    healthy(world)


def test_sq_producer_index_jump(world):
    """A doorbell claiming 100000 new WQEs on a 64-entry SQ."""
    conn, la, rb = conn_with_mrs(world)
    a = conn.a.dev
    a.db_write(q.DB_SQ, conn.qa.qpn | (100000 << 32))
    r = world.run(max_iter=1_000_000)
    assert r == 'idle'
    c = conn.cqa.poll()
    assert len(c) <= 64
    assert all(x['status_name'] != 'SUCCESS' or x['wr_id'] == 0 for x in c)
    healthy(world)


def test_rq_producer_index_jump(world):
    conn, la, rb = conn_with_mrs(world)
    b = conn.b.dev
    ign = b.stat('doorbells_ignored')
    b.db_write(q.DB_RQ, conn.qb.qpn | (0x80000000 << 32))
    conn.qa.post_send('SEND', [(la, 0, 10)], wr_id=1)
    # the bogus doorbell is ignored: the SEND meets an empty RQ (RNR, retried forever)
    assert world.run(ns=1_000_000, max_iter=1_000_000) == 'time'
    assert b.stat('doorbells_ignored') == ign + 1
    assert conn.cqb.poll() == []
    conn.qb.post_recv([(rb, 0, 100)], wr_id=2)
    assert world.run(max_iter=1_000_000) == 'idle'
    assert [c['wr_id'] for c in conn.cqb.poll()] == [2]
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    healthy(world)


def test_cq_consumer_index_beyond_producer(world):
    conn, la, rb = conn_with_mrs(world)
    conn.a.dev.db_write(q.DB_CQ, conn.cqa.cqn | (5000 << 32) | (1 << 24))   # + arm
    assert world.run() == 'idle'
    conn.a.dev.db_write(q.DB_CQ, conn.cqa.cqn | (0 << 32))
    assert world.run() == 'idle'


# ---- life cycle (CVE-2022-1050 class) ----------------------------------------------
def test_doorbells_before_bringup():
    with q.World(2, init=False) as w:
        for d in w.devs:
            for page in (0, 1, 63, 64, 1000):
                for off in (q.DB_SQ, q.DB_RQ, q.DB_CQ, 0x18, 0xff8):
                    d.db_write(page * q.DB_PAGE_SIZE + off, (5 << 32) | 2)
            d.reg_write('EQ_DB', (3 << 32) | (1 << 16) | 1, 8)
            d.reg_write('AQ_SQ_DB', 7)
            d.reg_write('ETH_TX_DB', 3)
            d.reg_write('ETH_RX_DB', 3)
        assert w.run() == 'idle'
        for d in w.devs:
            assert d.dma_stats()['reads'] == 0 and d.dma_stats()['writes'] == 0
            assert d.reg_read('STATUS') == q.STATUS_READY
        for d in w.devs:
            d.init()
        healthy(w)


def test_doorbell_for_nonexistent_qp_cq(world):
    a = world.devs[0]
    before = a.stat('doorbells_ignored')
    for qn in (0, 2, 500, 0xffffff):
        a.db_write(q.DB_SQ, qn | (1 << 32))
        a.db_write(q.DB_RQ, qn | (1 << 32))
        a.db_write(q.DB_CQ, qn | (1 << 32))
    assert world.run() == 'idle'
    assert a.stat('doorbells_ignored') >= before + 9
    healthy(world)


def test_doorbell_from_wrong_user_context(world):
    conn, la, rb = conn_with_mrs(world)
    a = conn.a.dev
    uctx = a.alloc_uctx()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), ring=False)
    before = a.stat('doorbells_ignored')
    a.db_write(uctx * q.DB_PAGE_SIZE + q.DB_SQ, conn.qa.qpn | (1 << 32))
    assert world.run() == 'idle'
    assert conn.cqa.poll() == []
    assert a.stat('doorbells_ignored') == before + 1
    conn.qa.ring_sq()
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']


@pytest.mark.parametrize('size', [1, 2, 4])
def test_doorbell_wrong_size_ignored(world, size):
    conn, la, rb = conn_with_mrs(world)
    a = conn.a.dev
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), ring=False)
    before = a.stat('doorbells_ignored')
    a.db_write(q.DB_SQ, conn.qa.qpn | (1 << 32), size)
    a.db_write(q.DB_SQ + 4, 1, size)
    assert world.run() == 'idle'
    assert conn.cqa.poll() == []
    assert a.stat('doorbells_ignored') >= before + 1


def test_destroy_qp_then_use(world):
    conn, la, rb = conn_with_mrs(world)
    a = conn.a.dev
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 3000)], remote=(rb, 0), ring=False)
    qpn = conn.qa.qpn
    conn.qa.destroy()
    a.db_write(q.DB_SQ, qpn | (1 << 32))
    assert world.run() == 'idle'
    assert not [f for f in world.frames(roce_only=True) if f.src == 0]
    assert conn.cqa.poll() == []
    healthy(world)


def test_destroy_qp_with_traffic_in_flight(world):
    conn, la, rb = conn_with_mrs(world)
    world.set_latency(5000)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8000)], remote=(rb, 0))
    conn.qa.post_send('RDMA_READ', [(la, 0, 8000)], remote=(rb, 0))
    world.run(ns=2000)
    conn.qb.destroy()
    conn.qa.destroy()
    assert world.run() == 'idle'
    world.set_latency(0)
    healthy(world)


def test_dereg_mr_during_write(world):
    conn, la, rb = conn_with_mrs(world)
    world.set_latency(2000)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8000)], remote=(rb, 0))
    world.run(ns=3000)
    rb.dereg()
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] in ('SUCCESS', 'REM_ACCESS_ERR')
    world.set_latency(0)
    healthy(world)


# ---- missing register handlers (CVE-2020-13754 class) -------------------------------
IMPLEMENTED = set(q.REG.values())


def test_every_bar0_offset_and_size_readable(world):
    d = world.devs[0]
    for off in range(0, q.BAR0_SIZE + 64):
        for size in (1, 2, 4, 8):
            v = d.reg_read(off, size)
            assert v < (1 << (8 * size)), (off, size, v)
            if (off & ~3) not in IMPLEMENTED and ((off + size - 1) & ~3) not in IMPLEMENTED:
                if not (0x40 <= off < 0x48):      # EQ_DB is 64 bits wide
                    assert v == 0, f'unimplemented offset {off:#x} size {size} reads {v:#x}'
    assert d.reg_read(q.REG['VERSION'], 4) == d.reg_read(q.REG['VERSION'], 4)
    healthy(world)


def test_every_bar2_offset_readable(world):
    d = world.devs[0]
    pages = d.reg_read('NUM_DB_PAGES')
    assert pages >= 2
    world.advance(0x1_2345_6789)    # a clock with both halves non-zero
    now = world.now
    # the read-only device clock (ABI 1.7): a 64-bit read at 0x20, 32-bit
    # reads of either half; every other access of any page reads 0
    clock = {(q.DB_CLOCK, 8): now, (q.DB_CLOCK, 4): now & 0xffffffff,
             (q.DB_CLOCK + 4, 4): now >> 32}
    for page in (0, 1, pages - 1, pages, pages + 1000):
        for off in range(0, q.DB_PAGE_SIZE, 4):
            for size in (1, 2, 4, 8):
                assert d.db_read(page * q.DB_PAGE_SIZE + off, size) == clock.get((off, size), 0)
    healthy(world)


def test_register_write_fuzz_then_reset(world):
    d = world.devs[0]
    rng = random.Random(99)
    for _ in range(20000):
        off = rng.randrange(0, q.BAR0_SIZE + 16)
        if (off & ~3) == q.REG['CTRL'] and rng.random() < 0.9:
            continue
        d.reg_write(off, rng.getrandbits(64), rng.choice((1, 2, 4, 8)))
        if rng.random() < 0.01:
            assert world.run(max_iter=100000) in ('idle', 'time', 'iter')
    for _ in range(5000):
        d.db_write(rng.randrange(0, 70 * q.DB_PAGE_SIZE), rng.getrandbits(64),
                   rng.choice((1, 2, 4, 8)))
    assert world.run(max_iter=1_000_000) in ('idle', 'time')
    d.reg_write('CTRL', q.CTRL_RESET)
    world.run()
    d.forget()
    d.init()
    healthy(world)


# ---- DMA outside guest memory (CVE-2021-3607/3608 class) ------------------------------
def test_cq_ring_outside_ram(world):
    conn, la, rb = conn_with_mrs(world)
    a = conn.a.dev
    a.patch_next_cmd('create_cq.ring_addr', 0x7fff_0000_0000)
    bad_cq = a.create_cq(4, check=False)
    if bad_cq is None:
        assert a.last_status in (q.AQ['BAD_PARAM'], q.AQ['DMA_ERROR'])
        return
    qp = a.create_qp(conn.pda, bad_cq)
    qp.to_init()
    qp.to_rtr(conn.b.dev, conn.qb.qpn, rq_psn=0x100)
    qp.to_rts(sq_psn=0x100)
    qp.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert a.stat('dma_errors') >= 1
    assert a.dma_stats()['fails'] >= 1


def test_sq_ring_outside_ram(world):
    a, b = world.devs
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    a.patch_next_cmd('create_qp.sq_addr', 0x7fff_0000_0000)
    qp = a.create_qp(pd, cq, check=False)
    if qp is None:
        assert a.last_status in (q.AQ['BAD_PARAM'], q.AQ['DMA_ERROR'])
        return
    la = a.reg_mr(pd, 4096)
    qp.to_init()
    qp.to_rtr(b, 5)
    qp.to_rts()
    qp.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(1, 0x1000), wr_id=1)
    assert world.run() == 'idle'
    c = cq.poll()
    assert all(x['status_name'] != 'SUCCESS' for x in c)
    assert qp.state == 'ERR' or c
    assert a.dma_stats()['fails'] >= 1
    healthy(world)


def test_sge_pointing_at_denied_memory(world):
    """Local data DMA fails (IOMMU fault): an error completion, nothing sent."""
    conn, la, rb = conn_with_mrs(world)
    a = conn.a.dev
    a.mem_deny(la.bus_addr(0) & ~0xfff, 4096)
    before = rb.read()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0))
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] != 'SUCCESS'
    assert rb.read() == before
    a.mem_deny_clear()


def test_eq_ring_outside_ram(world):
    a = world.devs[0]
    a.patch_next_cmd('create_eq.ring_addr', 0x7fff_0000_0000)
    eq = a.create_eq(4, vector=3, check=False)
    if eq is None:
        assert a.last_status in (q.AQ['BAD_PARAM'], q.AQ['DMA_ERROR'])
        return
    cq = a.create_cq(4, eq=eq)
    conn = q.connect_rc(*world.devs)
    cq.arm()
    assert world.run() == 'idle'
    healthy(world)


# ---- malformed frames from the wire ---------------------------------------------------
def test_truncated_frames_dropped(world):
    conn, la, rb = conn_with_mrs(world)
    b = conn.b.dev
    conn.qb.post_recv([(rb, 0, 8192)], wr_id=1)
    world.rule('drop', src=0, count=1)
    conn.qa.post_send('SEND', [(la, 0, 200)], wr_id=1)
    world.run(ns=100)
    frame = [f for f in world.frames(roce_only=True) if f.src == 0][0].data
    before = rb.read()
    malformed0 = b.stat('rx_drop_malformed') + b.stat('rx_drop_icrc')
    for n in range(len(frame)):
        assert b.inject(frame[:n]) == 0
    bad = bytearray(frame)
    bad[-1] ^= 0xff
    b.inject(bytes(bad))
    world.run(ns=100, max_iter=100000)
    assert rb.read() == before
    assert conn.cqb.poll() == []
    dropped = b.stat('rx_drop_malformed') + b.stat('rx_drop_icrc') + b.stat('rx_drop_other')
    assert dropped - malformed0 >= len(frame) - 14
    assert world.run() == 'idle'     # the retransmission delivers it
    cb = conn.cqb.poll()
    assert len(cb) == 1 and cb[0]['byte_len'] == 200


def test_random_frames_dropped(world):
    b = world.devs[1]
    rng = random.Random(5)
    template = None
    conn, la, rb = conn_with_mrs(world)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0))
    world.run()
    template = [f for f in world.frames(roce_only=True) if f.src == 0][0].data
    before = rb.read()
    for i in range(3000):
        if i % 2:
            f = bytearray(template)
            for _ in range(rng.randint(1, 4)):
                f[rng.randrange(14, len(f))] = rng.getrandbits(8)
            f = bytes(f)
        else:
            f = rng.randbytes(rng.randint(0, 1600))
        b.inject(f)
        if i % 256 == 0:
            world.run(max_iter=100000)
    assert world.run() == 'idle'
    assert rb.read() == before
    healthy(world)
