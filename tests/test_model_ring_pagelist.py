# SPDX-License-Identifier: GPL-2.0-or-later
"""Rings named by page lists (ABI 1.8, QRNIC_CAP_RING_PAGELIST; spec
6.6.21; issues 16 and 18): CQ, SQ, RQ and SRQ rings handed to the device
as lists of 4 KiB pages.  The harness driver names the ring's pages in
reverse order (hx_set_ring_pagelist), so a device that ignored the list,
or a slot that straddled pages, would read the wrong WQEs and write CQEs
where the driver does not look.  Traffic wraps each ring several times;
CQ resize, flush and retransmission go through the list; a snapshot keeps
it; every bad list is refused with nothing created."""
import random
import struct

import pytest

import qrnic_api
import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}


def pl_world(world):
    for d in world.devs:
        d.set_ring_pagelist()
    return world


def sends_verified(conn, n, rng, size=3000, batch=48):
    """n SENDs of distinct random payloads from a to b, in batches that fit
    the rings; every byte and every completion checked."""
    a, b = conn.a.dev, conn.b.dev
    src = a.reg_mr(conn.pda, 1 << 18)
    dst = b.reg_mr(conn.pdb, 1 << 18)
    slots = (1 << 18) // 4096
    done = 0
    while done < n:
        k = min(batch, n - done)
        want = {}
        for i in range(k):
            s = (done + i) % slots
            data = bytes(rng.randrange(256) for _ in range(16)) * (size // 16)
            src.write(s * 4096, data)
            want[done + i] = (s, data)
            conn.qb.post_recv([(dst, s * 4096, 4096)], wr_id=done + i)
        for i in range(k):
            s, data = want[done + i]
            conn.qa.post_send('SEND', [(src, s * 4096, len(data))], wr_id=done + i)
        sc = conn.cqa.wait(k)
        rc = conn.cqb.wait(k) if conn.cqb is not conn.cqa else sc
        assert [c['wr_id'] for c in sc] == list(range(done, done + k))
        assert all(c['status_name'] == 'SUCCESS' for c in sc + rc)
        assert [c['wr_id'] for c in rc] == list(range(done, done + k))
        for w_id, (s, data) in want.items():
            assert dst.read(s * 4096, len(data)) == data, w_id
        done += k


def test_caps_version_and_4m_cqe(world):
    a = world.devs[0]
    assert a.reg_read('CAPS') & q.CAP_RING_PAGELIST
    assert a.reg_read('VERSION') == q.ABI_VERSION >= 0x00010008
    assert a.attr['max_cqe'] == 1 << 22


@pytest.mark.parametrize('profile', ['functional', 'cx5-100g'])
def test_rc_traffic_wraps_page_listed_rings(world, profile):
    """CQ of 8 pages, SQ and RQ of 8 pages each (64 slots of 512 bytes):
    300 SENDs wrap each ring several times."""
    pl_world(world)
    for d in world.devs:
        d.set_timing(profile)
    conn = q.connect_rc(*world.devs, cq_log=10, sq_log=6, rq_log=6)
    sends_verified(conn, 300, random.Random(5))
    # WRITE and READ through the same rings
    src = conn.a.dev.reg_mr(conn.pda, 1 << 16)
    dst = conn.b.dev.reg_mr(conn.pdb, 1 << 16)
    data = src.fill_random(random.Random(6), 0, 1 << 15)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 1 << 15)], remote=(dst, 0), wr_id=1)
    conn.qa.post_send('RDMA_READ', [(src, 1 << 15, 1 << 15)], remote=(dst, 0), wr_id=2)
    got = conn.cqa.wait(2)
    assert [(c['wr_id'], c['status_name']) for c in got] == [(1, 'SUCCESS'), (2, 'SUCCESS')]
    assert src.read(1 << 15, 1 << 15) == data == dst.read(0, 1 << 15)
    for d in world.devs:
        assert d.stat('cq_overruns') == 0
        d.check()


def test_the_device_really_uses_the_list(world):
    """The driver's view of a page-listed CQ: its first CQE lands in the
    ring allocation's last page (page 0 of the list), not at its start."""
    pl_world(world)
    conn = q.connect_rc(*world.devs, cq_log=10)
    a = world.devs[0]
    base = conn.cqa.ring_addr
    before_first = a.mem_read(base, 32)
    before_last = a.mem_read(base + 7 * 4096, 32)
    src = a.reg_mr(conn.pda, 4096)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 8)],
                      remote=(world.devs[1].reg_mr(conn.pdb, 4096), 0), wr_id=77)
    assert [c['wr_id'] for c in conn.cqa.wait(1)] == [77]
    assert a.mem_read(base, 32) == before_first          # not where contiguous would be
    assert a.mem_read(base + 7 * 4096, 32) != before_last
    assert struct.unpack_from('<Q', a.mem_read(base + 7 * 4096, 8))[0] == 77


def test_srq_page_listed(world):
    """An SRQ of 32 pages (256 slots of 512 bytes) fed and drained three
    times over by two QPs."""
    pl_world(world)
    a, b = world.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    srq = b.create_srq(pdb, log_depth=8, wqe_shift=9)
    conns = []
    for _ in range(2):
        c = qrnic_api.connect_rc(a, b, pd_a=pda, pd_b=pdb, srq_b=srq, access=q.ACCESS_ALL)
        qa, cqa, cqb = c.qa, c.cqa, c.cqb
        conns.append((qa, cqa, cqb))
    src = a.reg_mr(pda, 1 << 16)
    dst = b.reg_mr(pdb, 1 << 20)
    src.fill_random(random.Random(3))
    total = 0
    sent = []
    for rnd in range(3):
        for i in range(200):
            srq.post_recv([(dst, (total + i) % 256 * 4096, 4096)], wr_id=total + i)
        for i in range(200):
            qa = conns[i % 2][0]
            qa.post_send('SEND', [(src, (i % 16) * 4096, 1000 + i)], wr_id=total + i)
            if i % 40 == 39:
                world.run()
                for _, cqa, _ in conns:
                    sent += cqa.poll()
        assert world.run() == 'idle'
        recvs = []
        for qa, cqa, cqb in conns:
            sent += cqa.poll()
            recvs += cqb.poll()
        assert sorted(c['wr_id'] for c in sent) == list(range(total, total + 200))
        assert all(c['status_name'] == 'SUCCESS' for c in sent + recvs)
        sent = []
        assert sorted(c['wr_id'] for c in recvs) == list(range(total, total + 200))
        # SRQ WQEs are taken in arrival order: each SEND's length names it
        assert sorted(c['byte_len'] for c in recvs) == [1000 + i for i in range(200)]
        for c in recvs:
            i = c['byte_len'] - 1000
            assert dst.read(c['wr_id'] % 256 * 4096, 1000 + i) == \
                src.read((i % 16) * 4096, 1000 + i)
        total += 200


@pytest.mark.parametrize('to_pl', [True, False], ids=['to-list', 'to-contiguous'])
@pytest.mark.parametrize('new_log', [11, 8], ids=['bigger', 'smaller'])
def test_resize_between_listed_and_contiguous(world, to_pl, new_log):
    """A page-listed CQ resized with CQEs not yet polled, into a new ring
    that is page-listed or contiguous: none lost, in order, and it wraps."""
    pl_world(world)
    conn = q.connect_rc(*world.devs, cq_log=9, sq_log=6)
    a = world.devs[0]
    src = a.reg_mr(conn.pda, 4096)
    dst = world.devs[1].reg_mr(conn.pdb, 4096)
    for i in range(50):
        conn.qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=i)
    assert world.run() == 'idle'
    got = conn.cqa.poll(7)
    a.set_ring_pagelist(to_pl)
    assert conn.cqa.resize(new_log) == 43
    got += conn.cqa.poll()
    n = 50
    for rnd in range(6):             # wrap the new ring
        for i in range(60):
            conn.qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=n + i)
        got += conn.cqa.wait(60)
        n += 60
    assert [c['wr_id'] for c in got] == list(range(n))
    assert a.stat('cq_overruns') == 0


def test_flush_reads_wr_ids_through_the_list(world):
    """WQEs posted on page-listed SQ/RQ flushed by a move to ERR complete
    with their own wr_ids (the flush reads each WQE through the list)."""
    pl_world(world)
    conn = q.connect_rc(*world.devs, cq_log=10, sq_log=6, rq_log=6)
    a = world.devs[0]
    src = a.reg_mr(conn.pda, 4096)
    # advance the indexes into later pages first
    sends_verified(conn, 40, random.Random(1), size=512)
    for i in range(30):
        conn.qa.post_recv([(src, 0, 64)], wr_id=5000 + i)
    a.set_link(False)                  # the SENDs go nowhere and stay posted
    for i in range(20):
        conn.qa.post_send('SEND', [(src, 0, 64)], wr_id=7000 + i)
    world.run_for(2_000)
    conn.qa.modify(state='ERR')
    assert world.run() == 'idle'
    got = conn.cqa.poll()
    sends = [c for c in got if c['wr_id'] >= 7000]
    recvs = [c for c in got if 5000 <= c['wr_id'] < 7000]
    assert [c['wr_id'] for c in sends] == [7000 + i for i in range(20)]
    assert [c['wr_id'] for c in recvs] == [5000 + i for i in range(30)]
    assert all(c['status_name'] == 'WR_FLUSH_ERR' for c in sends + recvs)


def test_retransmission_refetches_through_the_list(world):
    """Dropped packets: go-back-N resends read the WQEs again (their window
    copies or the ring); the data arrives intact."""
    pl_world(world)
    conn = q.connect_rc(*world.devs, cq_log=10, sq_log=6, rq_log=6, timeout=1)
    world.devs[0].fault_plan('drop nth=7 count=4\ndrop nth=40 count=2')
    sends_verified(conn, 150, random.Random(8), size=2500)
    assert world.devs[0].stat('retransmitted_packets') > 0


def test_4m_entry_cq(world):
    """max_cqe: a CQ of 2^22 entries (128 MiB ring, a 256 KiB page list)
    is created page-listed, carries completions and is destroyed."""
    a = world.devs[0]
    pl_world(world)
    c = qrnic_api.connect_rc(a, world.devs[1], cq_log=22, cq_log_b=6, access=q.ACCESS_ALL)
    qa, cq = c.qa, c.cqa
    src = a.reg_mr(c.pda, 4096)
    dst = world.devs[1].reg_mr(c.pdb, 4096)
    for i in range(20):
        qa.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(dst, 0), wr_id=i)
    assert [c['wr_id'] for c in cq.wait(20)] == list(range(20))
    qa.destroy()
    cq.destroy()
    a.check()


# ---- bad page lists --------------------------------------------------------------
def _list(dev, entries, align=8):
    addr = dev.mem_alloc(max(8, 8 * len(entries)) + 8, align)
    dev.mem_write(addr, b''.join(struct.pack('<Q', e) for e in entries))
    return addr


def _pages(dev, n):
    base = dev.mem_alloc(n * 4096)
    return [base + i * 4096 for i in range(n)]


def _bad_lists(dev, n):
    good = _pages(dev, n)
    yield 'entry zero', _list(dev, good[:-1] + [0]), 'BAD_PARAM'
    yield 'entry misaligned', _list(dev, [good[0] + 8] + good[1:]), 'BAD_PARAM'
    yield 'entry 0x800', _list(dev, good[:1] + [0x800] + good[2:]), 'BAD_PARAM'
    yield 'list misaligned', _list(dev, good) + 4, 'BAD_PARAM'
    yield 'list zero', 0, 'BAD_PARAM'
    yield 'list wraps', 0xffff_ffff_ffff_fff8, 'BAD_PARAM'
    yield 'list unreadable', 0x7fff_0000_0000, 'DMA_ERROR'


def _detail(st, field):
    """BAD_PARAM names the address field; DMA_ERROR has detail 0 (spec 6.3)."""
    return q.cmd_offset(field) if st == 'BAD_PARAM' else 0


def test_bad_cq_page_lists_create_nothing(world):
    a = world.devs[0]
    a.clear_logs()
    first = a.create_cq(6)
    for why, lst, st in _bad_lists(a, 4):          # 2^9 * 32 = 4 pages
        a.patch_next_cmd('create_cq.flags', q.CQ_F_PAGELIST)
        a.patch_next_cmd('create_cq.ring_addr', lst)
        assert a.create_cq(9, check=False) is None, why
        assert (a.last_status, a.last_cqe()['detail']) == \
            (AQ[st], _detail(st, 'create_cq.ring_addr')), why
    # a ring below one page stays contiguous: the flag is refused
    a.patch_next_cmd('create_cq.flags', q.CQ_F_PAGELIST)
    a.patch_next_cmd('create_cq.ring_addr', _list(a, _pages(a, 1)))
    assert a.create_cq(6, check=False) is None
    assert (a.last_status, a.last_cqe()['detail']) == \
        (AQ['BAD_PARAM'], q.cmd_offset('create_cq.ring_addr'))
    # nothing was created: the next CQ takes the next number
    assert a.create_cq(6).cqn == first.cqn + 1
    bad = [f for n, f, _ in a.tracepoints() if n == 'err_ring_page_list']
    assert [(f['entry'], f['page']) for f in bad] == [(3, 0), (0, bad[1]['page']), (1, 0x800)]
    assert bad[1]['page'] % 4096 == 8
    a.check()


def test_bad_qp_page_lists_create_nothing(world):
    a = world.devs[0]
    pd = a.alloc_pd()
    cq = a.create_cq(8)
    first = a.create_qp(pd, cq)
    for ring in ('sq', 'rq'):
        flag = q.QP_F_SQ_PAGELIST if ring == 'sq' else q.QP_F_RQ_PAGELIST
        for why, lst, st in _bad_lists(a, 8):      # 2^6 * 512 = 8 pages
            if ring == 'rq':                       # a good SQ list, freed again
                a.patch_next_cmd('create_qp.sq_addr', _list(a, _pages(a, 8)))
                flag = q.QP_F_RQ_PAGELIST | q.QP_F_SQ_PAGELIST
            a.patch_next_cmd('create_qp.flags', flag)
            a.patch_next_cmd(f'create_qp.{ring}_addr', lst)
            assert a.create_qp(pd, cq, check=False) is None, (ring, why)
            assert (a.last_status, a.last_cqe()['detail']) == \
                (AQ[st], _detail(st, f'create_qp.{ring}_addr')), (ring, why)
    # an RQ page list for a QP without RQ (on an SRQ): the flag is refused
    srq = a.create_srq(pd)
    a.patch_next_cmd('create_qp.flags', q.QP_F_RQ_PAGELIST)
    assert a.create_qp(pd, cq, srq=srq, check=False) is None
    assert (a.last_status, a.last_cqe()['detail']) == \
        (AQ['BAD_PARAM'], q.cmd_offset('create_qp.flags'))
    nxt = a.create_qp(pd, cq)
    assert nxt.qpn != first.qpn
    a.check()


def test_bad_srq_page_lists_create_nothing(world):
    a = world.devs[0]
    pd = a.alloc_pd()
    first = a.create_srq(pd)
    for why, lst, st in _bad_lists(a, 8):
        a.patch_next_cmd('create_srq.flags', q.SRQ_F_PAGELIST)
        a.patch_next_cmd('create_srq.ring_addr', lst)
        assert a.create_srq(pd, log_depth=6, wqe_shift=9, check=False) is None, why
        assert (a.last_status, a.last_cqe()['detail']) == \
            (AQ[st], _detail(st, 'create_srq.ring_addr')), why
    assert a.create_srq(pd).srqn == first.srqn + 1
    a.check()


def test_bad_resize_page_list_keeps_the_old_ring(world):
    pl_world(world)
    conn = q.connect_rc(*world.devs, cq_log=8)
    a = world.devs[0]
    src = a.reg_mr(conn.pda, 4096)
    dst = world.devs[1].reg_mr(conn.pdb, 4096)
    for i in range(5):
        conn.qa.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(dst, 0), wr_id=i)
    assert world.run() == 'idle'
    for why, lst, st in _bad_lists(a, 16):         # 2^11 * 32 = 16 pages
        a.patch_next_cmd('resize_cq.ring_addr', lst)
        assert conn.cqa.resize(11, check=False) is None, why
        assert (a.last_status, a.last_cqe()['detail']) == \
            (AQ[st], _detail(st, 'resize_cq.ring_addr')), why
    a.patch_next_cmd('resize_cq.flags', 0x80)
    assert conn.cqa.resize(11, check=False) is None
    assert (a.last_status, a.last_cqe()['detail']) == \
        (AQ['BAD_PARAM'], q.cmd_offset('resize_cq.flags'))
    assert [c['wr_id'] for c in conn.cqa.poll()] == list(range(5))


# ---- snapshot ----------------------------------------------------------------------
def test_snapshot_round_trip_keeps_the_lists(world):
    """Traffic in flight on page-listed rings, saved and loaded in place:
    the stream round-trips and the traffic completes."""
    pl_world(world)
    for d in world.devs:
        d.set_timing('cx5-100g')
    conn = q.connect_rc(*world.devs, cq_log=10, sq_log=6, rq_log=6)
    sends_verified(conn, 70, random.Random(2))    # indexes in later pages
    a = world.devs[0]
    src = a.reg_mr(conn.pda, 1 << 16)
    dst = world.devs[1].reg_mr(conn.pdb, 1 << 16)
    data = src.fill_random(random.Random(4))
    for i in range(16):
        conn.qa.post_send('RDMA_WRITE', [(src, i * 4096, 4096)], remote=(dst, i * 4096),
                          wr_id=900 + i)
    world.run_for(3_000)
    s = a.save()
    a.load(s)
    assert a.save() == s
    got = conn.cqa.wait(16)
    assert [c['wr_id'] for c in got] == [900 + i for i in range(16)]
    assert all(c['status_name'] == 'SUCCESS' for c in got)
    assert dst.read(0, 1 << 16) == data
    a.check()


def test_snapshot_with_a_bad_page_list_is_refused(world):
    pl_world(world)
    conn = q.connect_rc(*world.devs, cq_log=10)
    a = world.devs[0]
    s = a.save()
    base = conn.cqa.ring_addr              # 8 pages, listed last page first
    body = bytearray(q.snap_sections(s)['OBJS'][1])
    at = body.find(struct.pack('<IQ', 8, base + 7 * 4096))
    assert at > 0
    for bad, why in ((0, 'page list entry 0 is 0x0'),
                     (base + 7 * 4096 + 8, 'page list entry 0')):
        b2 = bytearray(body)
        struct.pack_into('<Q', b2, at + 4, bad)
        with pytest.raises(q.HarnessError) as e:
            a.load(q.snap_replace(s, 'OBJS', bytes(b2)))
        assert why in str(e.value)
    b2 = bytearray(body)
    struct.pack_into('<I', b2, at, 4)      # a count that is not the ring's
    with pytest.raises(q.HarnessError) as e:
        a.load(q.snap_replace(s, 'OBJS', bytes(b2)))
    assert 'page list of 4 pages' in str(e.value)
    # QPS.: the SQ's list
    qbody = bytearray(q.snap_sections(s)['QPS.'][1])
    sq = conn.qa.sq_addr
    at = qbody.find(struct.pack('<IQ', 8, sq + 7 * 4096))
    assert at > 0
    struct.pack_into('<Q', qbody, at + 4, 0)
    with pytest.raises(q.HarnessError) as e:
        a.load(q.snap_replace(s, 'QPS.', bytes(qbody)))
    assert 'QP SQ' in str(e.value)
    a.load(s)                              # the good stream still loads
    assert a.save() == s
