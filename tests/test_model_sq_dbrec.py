# SPDX-License-Identifier: GPL-2.0-or-later
"""SQ records and the doorbell flag (ABI 1.11, QRNIC_CAP_SQ_DBREC; spec
8.6.2; issue 18): a post writes the SQ producer index to a record in the
driver's memory, then reads a flag the device writes beside it, and rings
QRNIC_DB_SQ only when the flag is clear.  The device sets the flag only
while it will service the QP again anyway (more to do, or an ACK or timer
awaited in RTS), reads the index at every service, and clears the flag
(then reads the index once more) before it stops promising, when the QP
leaves RTS and at RESET.  These tests post through the harness's driver,
which does exactly that, and check: no post is lost however the posts fall
between the device's steps; posts really skip the doorbell; the flag is
clear when the QP is idle, in ERR, under a timing profile; a flush
completes what only the record names; bad, unreadable and old indexes;
CREATE_QP's checks; the snapshot."""
import random
import struct

import pytest

import qrnic_harness as q
from test_model_rq_dbrec import refuse_record_addr, to_rts

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}


def rec(qp):
    """(pi, flags) of the QP's SQ record."""
    return struct.unpack('<II', qp.dev.mem_read(qp.sq_dbrec, 8))


def dev_sq_pi(qp):
    return next(v['sq_pi'] for v in qp.dev.view('qp') if v['qpn'] == qp.qpn)


def sq_conn(world, **kw):
    for d in world.devs:
        d.set_sq_dbrec()
    return q.connect_rc(*world.devs, **kw)


def sq_setup(world, **kw):
    """Both devices with SQ records, an RC connection, a 64 KiB MR on each
    side: (conn, a, b, src, dst)."""
    conn = sq_conn(world, **kw)
    a, b = world.devs
    return conn, a, b, a.reg_mr(conn.pda, 1 << 16), b.reg_mr(conn.pdb, 1 << 16)


def writes_until_flag(world, conn, src, dst, size=8192):
    """A WRITE, then device steps until the requester waits for its ACK
    (the flag set); returns the WRITE's wr_id."""
    conn.qa.post_send('RDMA_WRITE', [(src, 0, size)], remote=(dst, 0), wr_id=100)
    for _ in range(4):
        world.run(max_iter=1)
        if rec(conn.qa)[1] & q.SQ_DBREC_NO_DB:
            return 100
    pytest.fail('the flag was never set: %r' % (rec(conn.qa),))


def test_caps_version_and_layout(world):
    a = world.devs[0]
    assert a.reg_read('CAPS') & q.CAP_SQ_DBREC
    assert a.reg_read('VERSION') == q.ABI_VERSION == 0x0001000b
    assert q.cmd_offset('create_qp.sq_dbrec_addr') == 8 + 56


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_no_post_is_lost_between_the_device_steps(world, seed):
    """400 WRITEs of random sizes (8 B .. 30000 B, 1 KiB MTU: up to 30
    packets) at random offsets, each post followed by 0-3 steps of the
    world: every WRITE completes in order with every byte right, many
    posts rang no doorbell, nothing was counted as a bad doorbell, and at
    the end the QP is idle with the flag clear."""
    conn = sq_conn(world, sq_log=6, mtu=1024)
    a, b = world.devs
    assert conn.qa.sq_dbrec and conn.qb.sq_dbrec
    rng = random.Random(seed)
    src = a.reg_mr(conn.pda, 1 << 20)
    dst = b.reg_mr(conn.pdb, 1 << 20)
    src.fill_random(rng, 0, 1 << 20)
    done, ranges = [], []
    for i in range(400):
        size = rng.choice([8, 100, 4096, 9000, 30000])
        off = rng.randrange(0, (1 << 20) - size)
        while True:
            try:
                conn.qa.post_send('RDMA_WRITE', [(src, off, size)], remote=(dst, off), wr_id=i)
                break
            except q.HarnessError:          # the SQ is full: let it drain
                world.run(max_iter=8)
                done += conn.cqa.poll()
        ranges.append((off, size))
        world.run(max_iter=rng.randrange(0, 4))
        done += conn.cqa.poll()
    assert world.run() == 'idle'
    done += conn.cqa.poll()
    assert [c['wr_id'] for c in done] == list(range(400))
    assert all(c['status_name'] == 'SUCCESS' for c in done)
    assert all(dst.read(o, n) == src.read(o, n) for o, n in ranges)
    assert a.sq_db_skipped > 50, a.sq_db_skipped
    assert rec(conn.qa) == (400, 0) and dev_sq_pi(conn.qa) == 400
    assert a.stat('doorbells_ignored') == 0 and a.guest_errors == 0
    for d in world.devs:
        d.check()


def test_a_post_while_the_flag_is_set_rings_nothing_and_goes(world):
    conn, a, b, src, dst = sq_setup(world)
    data = src.fill_random(random.Random(9), 0, 1 << 16)
    writes_until_flag(world, conn, src, dst)
    db = a.stat('doorbells')
    conn.qa.post_send('RDMA_WRITE', [(src, 8192, 4000)], remote=(dst, 8192), wr_id=101)
    assert a.stat('doorbells') == db and a.sq_db_skipped == 1
    assert dev_sq_pi(conn.qa) == 1                 # not known yet: no doorbell
    assert world.sq_rec_taken(0) == 0
    assert world.run() == 'idle'
    assert world.sq_rec_taken(0) == 1              # the ACK's service read it
    got = conn.cqa.poll()
    assert [(c['wr_id'], c['status_name']) for c in got] == [(100, 'SUCCESS'), (101, 'SUCCESS')]
    assert dst.read(0, 12192) == data[:12192]
    assert rec(conn.qa) == (2, 0)                  # idle: clear, the next post rings
    db = a.stat('doorbells')
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 8)], remote=(dst, 0), wr_id=102)
    assert a.stat('doorbells') == db + 1 and a.sq_db_skipped == 1
    assert [c['wr_id'] for c in conn.cqa.wait(1)] == [102]


def test_the_ack_service_takes_a_post_while_earlier_packets_fly(world):
    """A 2 MiB WRITE at MTU 1024 (2048 packets, at most 512 in flight, so
    several ACKs), then, with the flag set, a post through the record
    alone: the device takes it (reads the record) at the service of an
    early ACK, while the big WRITE is still unacknowledged -- not only once
    the QP has drained, else a stream posted this way would go in bursts,
    one per drain."""
    conn = sq_conn(world, mtu=1024)
    a, b = world.devs
    big = 1 << 21
    src = a.reg_mr(conn.pda, 2 * big)
    dst = b.reg_mr(conn.pdb, 2 * big)
    data = src.fill_random(random.Random(11), 0, 2 * big)
    writes_until_flag(world, conn, src, dst, size=big)
    conn.qa.post_send('RDMA_WRITE', [(src, big, 100)], remote=(dst, big), wr_id=101)
    assert a.sq_db_skipped == 1
    done = []
    for _ in range(400):
        if dev_sq_pi(conn.qa) == 2:
            break
        world.run(max_iter=1)
        done += conn.cqa.poll()
    assert dev_sq_pi(conn.qa) == 2 and done == [], done
    assert world.run() == 'idle'
    done += conn.cqa.poll()
    assert [c['wr_id'] for c in done] == [100, 101]
    assert dst.read(0, big + 100) == data[:big + 100]


def test_the_flag_stays_clear_under_a_timing_profile(world):
    """A timing profile models the doorbell's cost: the device never
    promises, and every post rings."""
    for d in world.devs:
        d.set_timing('cx5-100g')
    conn = sq_conn(world, sq_log=6)
    a, b = world.devs
    src = a.reg_mr(conn.pda, 1 << 16)
    dst = b.reg_mr(conn.pdb, 1 << 16)
    for i in range(40):
        conn.qa.post_send('RDMA_WRITE', [(src, 0, 9000)], remote=(dst, 0), wr_id=i)
        world.run(max_iter=1)
        assert rec(conn.qa)[1] == 0
    assert len(conn.cqa.wait(40)) == 40
    assert a.sq_db_skipped == 0


def test_uc_posts_go_with_records(world):
    """A UC QP waits for no ACK: the flag is set at most while it has more
    to send, and every WRITE arrives however the posts fall."""
    for d in world.devs:
        d.set_sq_dbrec()
    conn = q.connect_rc(*world.devs, mtu=1024, qp_type='UC')
    a, b = world.devs
    src = a.reg_mr(conn.pda, 1 << 16)
    dst = b.reg_mr(conn.pdb, 1 << 16)
    data = src.fill_random(random.Random(3), 0, 1 << 16)
    rng = random.Random(8)
    for i in range(20):
        conn.qa.post_send('RDMA_WRITE', [(src, i * 3000, 3000)], remote=(dst, i * 3000), wr_id=i)
        world.run(max_iter=rng.randrange(0, 3))
    assert world.run() == 'idle'
    assert [c['wr_id'] for c in conn.cqa.poll()] == list(range(20))
    assert dst.read(0, 60000) == data[:60000]
    assert rec(conn.qa) == (20, 0)
    a.check()


def test_flush_completes_what_only_the_record_names(world):
    """The flag set, two WRITEs posted through the record alone, then the
    QP moved to ERR: the flag is cleared and both flush with their wr_ids;
    a post afterwards finds it clear, rings, and flushes at once."""
    conn, a, b, src, dst = sq_setup(world)
    writes_until_flag(world, conn, src, dst)
    for i in range(2):
        conn.qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=200 + i)
    assert a.sq_db_skipped == 2
    conn.qa.modify(state='ERR')
    world.run()
    got = conn.cqa.poll()
    assert [c['wr_id'] for c in got] == [100, 200, 201]
    assert [c['status_name'] for c in got[1:]] == ['WR_FLUSH_ERR'] * 2
    assert rec(conn.qa)[1] == 0
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=300)
    assert a.sq_db_skipped == 2
    world.run()
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.poll()] == [(300, 'WR_FLUSH_ERR')]
    a.check()


def test_reset_clears_the_flag_and_the_record_restarts(world):
    conn, a, b, src, dst = sq_setup(world)
    writes_until_flag(world, conn, src, dst)
    for qp in (conn.qa, conn.qb):
        qp.modify(state='RESET')
    assert rec(conn.qa) == (0, 0) and dev_sq_pi(conn.qa) == 0
    to_rts(a, conn.qa, b, conn.qb)
    data = src.fill_random(random.Random(4), 0, 5000)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 5000)], remote=(dst, 0), wr_id=7)
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.wait(1)] == [(7, 'SUCCESS')]
    assert dst.read(0, 5000) == data
    a.check()


def test_bad_record_indexes_are_ignored_and_counted(world):
    """With the flag set, a record index that laps the consumer, then one
    that moves back: each ignored and counted as such a doorbell would be,
    traced with the index; the WRITE in flight completes and a good post
    then goes."""
    conn, a, b, src, dst = sq_setup(world, sq_log=4)
    writes_until_flag(world, conn, src, dst)
    a.clear_logs()
    ign = a.stat('doorbells_ignored')
    a.mem_write(conn.qa.sq_dbrec, struct.pack('<I', 1 + 17))     # laps: depth 16
    world.run()
    assert a.stat('doorbells_ignored') > ign
    pts = [f for n, f, _ in a.tracepoints() if n == 'err_qp_sq_dbrec_index']
    assert pts and pts[0]['qpn'] == conn.qa.qpn and pts[0]['pi'] == 18
    assert [c['wr_id'] for c in conn.cqa.poll()] == [100]
    assert dev_sq_pi(conn.qa) == 1
    a.mem_write(conn.qa.sq_dbrec, struct.pack('<I', 0))          # moves back
    conn.qa.ring_sq()                                            # index 1: old, fine
    world.run()
    assert any(p['pi'] == 0 for p in (f for n, f, _ in a.tracepoints()
                                      if n == 'err_qp_sq_dbrec_index'))
    a.mem_write(conn.qa.sq_dbrec, struct.pack('<I', 1))
    data = src.fill_random(random.Random(5), 0, 3000)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 3000)], remote=(dst, 0), wr_id=101)
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.wait(1)] == [(101, 'SUCCESS')]
    assert dst.read(0, 3000) == data
    for d in world.devs:
        d.check()


def test_an_old_doorbell_is_no_error(world):
    """A doorbell whose index the device already took from the record (a
    doorbell queued while a run read a later post's record) changes
    nothing and is not counted."""
    conn, a, b, src, dst = sq_setup(world)
    writes_until_flag(world, conn, src, dst)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=101)
    conn.qa.post_send('RDMA_WRITE', [(src, 0, 64)], remote=(dst, 0), wr_id=102)
    for _ in range(20):                            # the ACK's service reads the record
        if dev_sq_pi(conn.qa) == 3:
            break
        world.run(max_iter=1)
    assert dev_sq_pi(conn.qa) == 3 and a.sq_db_skipped == 2
    ign = a.stat('doorbells_ignored')
    a.clear_logs()
    a.db_write(q.DB_SQ, conn.qa.qpn | 2 << 32)      # behind: an old doorbell
    assert a.stat('doorbells_ignored') == ign and a.guest_errors == 0
    world.run()
    assert [c['wr_id'] for c in conn.cqa.poll()] == [100, 101, 102]
    a.db_write(q.DB_SQ, conn.qa.qpn | (3 + 65) << 32)   # laps the consumer: a bad one
    assert a.stat('doorbells_ignored') == ign + 1


def test_unreadable_record_is_counted_and_doorbells_still_work(world):
    a, b = world.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    cqa, cqb = a.create_cq(6), b.create_cq(6)
    a.patch_next_cmd('create_qp.sq_dbrec_addr', 0x7fff_0000_0000)
    qa = a.create_qp(pda, cqa)
    qb = b.create_qp(pdb, cqb)
    to_rts(a, qa, b, qb)
    src = a.reg_mr(pda, 4096)
    dst = b.reg_mr(pdb, 4096)
    a.clear_logs()
    qa.post_send('RDMA_WRITE', [(src, 0, 100)], remote=(dst, 0), wr_id=1)   # rings
    assert [(c['wr_id'], c['status_name']) for c in cqa.wait(1)] == [(1, 'SUCCESS')]
    pts = [f for n, f, _ in a.tracepoints() if n == 'err_qp_sq_dbrec']
    assert pts and pts[0]['addr'] == 0x7fff_0000_0000 and pts[0]['qpn'] == qa.qpn
    a.check()


def test_create_qp_checks_the_record_address(world):
    """sq_dbrec_addr: 8-byte aligned (an aligned record cannot wrap);
    otherwise BAD_PARAM naming the field, and nothing is created."""
    a = world.devs[0]
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    first = a.create_qp(pd, cq)
    refuse_record_addr(a, 'sq_dbrec_addr', (0x1004, 0xffff_ffff_ffff_fffd))
    a.patch_next_cmd('create_qp.sq_dbrec_addr', 0x1000)
    assert a.create_qp(pd, cq).qpn == first.qpn + 1
    a.check()


def test_xrc_tgt_takes_no_sq_record(world):
    """An XRC TGT QP has no SQ: a record address for it is BAD_PARAM."""
    a = world.devs[0]
    xrcd = a.alloc_xrcd()
    refuse_record_addr(a, 'sq_dbrec_addr', (0x1000,), create=lambda: a.create_xrc_tgt(xrcd, check=False))
    assert a.create_xrc_tgt(xrcd) is not None


def test_snapshot_keeps_the_record_and_the_flag(world):
    """Saved with the flag set and a post known only to the record, loaded
    into the device again: the flag and address come back (the stream
    round-trips), and the WRITEs complete."""
    conn, a, b, src, dst = sq_setup(world)
    data = src.fill_random(random.Random(6), 0, 1 << 16)
    writes_until_flag(world, conn, src, dst)
    conn.qa.post_send('RDMA_WRITE', [(src, 8192, 100)], remote=(dst, 8192), wr_id=101)
    s = a.save()
    a.load(s)
    assert a.save() == s
    assert rec(conn.qa)[1] & q.SQ_DBREC_NO_DB
    assert world.run() == 'idle'
    assert [c['wr_id'] for c in conn.cqa.poll()] == [100, 101]
    assert dst.read(0, 8192) == data[:8192] and dst.read(8192, 100) == data[8192:8292]


def test_snapshot_with_a_bad_record_address_is_refused(world):
    from test_model_snapshot import _refused
    conn = sq_conn(world)
    a = world.devs[0]
    addr = conn.qa.sq_dbrec
    good = a.save()
    where = good.find(struct.pack('<Q', addr))
    assert where > 0 and good.find(struct.pack('<Q', addr), where + 1) < 0
    bad = good[:where] + struct.pack('<Q', addr | 4) + good[where + 8:]
    _refused(a, bad, 'QP %u: SQ record 0x%x (no SQ or misaligned)' % (conn.qa.qpn, addr | 4))
