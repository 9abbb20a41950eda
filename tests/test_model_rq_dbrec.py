# SPDX-License-Identifier: GPL-2.0-or-later
"""RQ producer index records (ABI 1.10, QRNIC_CAP_RQ_DBREC; spec 8.6.1;
issue 18): the driver writes the RQ producer index to a record in its own
memory instead of ringing QRNIC_DB_RQ, and the device reads the record when
the RQ looks empty by the index it last knew, and before it flushes the RQ.
Receives posted this way take SENDs and WRITEs with immediate, an RQ that
is empty gets the sender RNR-NAKed until the record says more, a flush
completes every WQE the record names, and a record that is unreadable or
whose index laps the consumer or moves back is ignored and counted, as
such a doorbell would be.  (The snapshot stream keeps the record's
address: tests/fixtures/snapshot-v9.bin, test_model_snapshot.py.)"""
import random
import struct

import qrnic_harness as q

AQ = {n: i for i, n in enumerate(q.AQ_STATUS)}


def dbrec_conn(world, **kw):
    for d in world.devs:
        d.set_rq_dbrec()
    return q.connect_rc(*world.devs, **kw)


def rec(qp):
    return struct.unpack('<I', qp.dev.mem_read(qp.rq_dbrec, 4))[0]


def dev_rq_pi(qp):
    """The RQ producer index the device knows (its QP view)."""
    return next(v['rq_pi'] for v in qp.dev.view('qp') if v['qpn'] == qp.qpn)


def sends(conn, src, dst, n, size):
    """n receives and n SENDs of size bytes, both sides' completions waited for."""
    for i in range(n):
        conn.qb.post_recv([(dst, 0, 4096)], wr_id=i)
        conn.qa.post_send('SEND', [(src, 0, size)], wr_id=i)
    assert len(conn.cqb.wait(n)) == n
    conn.cqa.wait(n)


def one_send_lands(conn, src, dst, size, seed, wr_id):
    """A receive, then a SEND of size random bytes: it completes and lands."""
    data = src.fill_random(random.Random(seed), 0, size)
    conn.qb.post_recv([(dst, 0, 4096)], wr_id=wr_id)
    conn.qa.post_send('SEND', [(src, 0, size)], wr_id=wr_id + 1)
    got = conn.cqb.wait(1)
    assert (got[0]['wr_id'], got[0]['status_name']) == (wr_id, 'SUCCESS')
    assert dst.read(0, size) == data


def refuse_record_addr(a, field, bads, create=None):
    """CREATE_QP with each address of bads in its field (rq_dbrec_addr,
    sq_dbrec_addr): BAD_PARAM naming the field, and nothing created.
    create: the call that sends the command (default a.create_qp on a new
    PD and CQ).  Returns the field's offset."""
    off = q.cmd_offset('create_qp.' + field)
    if create is None:
        pd, cq = a.alloc_pd(), a.create_cq(6)

        def create():
            return a.create_qp(pd, cq, check=False)
    for bad in bads:
        a.patch_next_cmd('create_qp.' + field, bad)
        assert create() is None
        assert (a.last_status, a.last_cqe()['detail']) == (AQ['BAD_PARAM'], off)
    return off


def to_rts(a, qa, b, qb):
    """Both QPs from RESET to RTS, pointing at each other."""
    qa.to_init(q.ACCESS_ALL)
    qb.to_init(q.ACCESS_ALL)
    qa.to_rtr(b, qb.qpn, rq_psn=0x900)
    qb.to_rtr(a, qa.qpn, rq_psn=0x800)
    qa.to_rts(sq_psn=0x800)
    qb.to_rts(sq_psn=0x900)


def test_caps_and_version(world):
    a = world.devs[0]
    assert a.reg_read('CAPS') & q.CAP_RQ_DBREC
    assert a.reg_read('VERSION') == q.ABI_VERSION >= 0x0001000a


def test_sends_arrive_with_no_rq_doorbell(world):
    """300 SENDs of random payloads into receives posted only through the
    record (64-entry RQ, wrapped several times): every byte and completion
    right, and the receiver rang no RQ doorbell at all."""
    conn = dbrec_conn(world, rq_log=6)
    a, b = world.devs
    assert conn.qb.rq_dbrec and conn.qa.rq_dbrec
    rng = random.Random(7)
    src = a.reg_mr(conn.pda, 1 << 16)
    dst = b.reg_mr(conn.pdb, 1 << 18)
    db_before = b.stat('doorbells')
    n = 0
    for rnd in range(10):
        want = {}
        for i in range(30):
            data = bytes(rng.randrange(256) for _ in range(64)) * rng.randrange(1, 40)
            slot = (n + i) % 64
            src.write((i % 16) * 4096, data)
            want[n + i] = (slot, data)
            conn.qb.post_recv([(dst, slot * 4096, 4096)], wr_id=n + i)
            conn.qa.post_send('SEND', [(src, (i % 16) * 4096, len(data))], wr_id=n + i)
            world.run()
        got = conn.cqb.wait(30)
        assert [c['wr_id'] for c in got] == list(range(n, n + 30))
        assert all(c['status_name'] == 'SUCCESS' for c in got)
        for c in got:
            slot, data = want[c['wr_id']]
            assert c['byte_len'] == len(data)
            assert dst.read(slot * 4096, len(data)) == data
        assert [c['wr_id'] for c in conn.cqa.wait(30)] == list(range(n, n + 30))
        n += 30
    # no RQ doorbell, the record only: the 300 posts would count 300; what
    # is counted is the CQ doorbells of the ten waits
    assert b.stat('doorbells') - db_before <= 10
    assert rec(conn.qb) == n == conn.qb.indexes()['rq_pi'] == dev_rq_pi(conn.qb)
    assert b.stat('doorbells_ignored') == 0 and b.guest_errors == 0
    for d in world.devs:
        d.check()


def test_write_with_immediate_takes_a_receive_from_the_record(world):
    conn = dbrec_conn(world)
    a, b = world.devs
    src = a.reg_mr(conn.pda, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    data = src.fill_random(random.Random(2), 0, 2000)
    conn.qb.post_recv([], wr_id=55)
    conn.qa.post_send('RDMA_WRITE_WITH_IMM', [(src, 0, 2000)], remote=(dst, 0), imm=0x1234,
                      wr_id=1)
    got = conn.cqb.wait(1)
    assert (got[0]['wr_id'], got[0]['status_name'], got[0]['opcode_name']) == \
        (55, 'SUCCESS', 'RECV_RDMA_WITH_IMM')
    assert dst.read(0, 2000) == data


def test_empty_record_rnr_naks_until_a_receive_is_posted(world):
    """The SEND arrives with nothing posted: RNR NAK (the sender retries
    after the RNR timer); the receive is then posted through the record
    only, and the retried SEND lands in it."""
    conn = dbrec_conn(world)
    a, b = world.devs
    src = a.reg_mr(conn.pda, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    data = src.fill_random(random.Random(4), 0, 3000)
    conn.qa.post_send('SEND', [(src, 0, 3000)], wr_id=9)
    world.run_for(5_000)
    assert b.stat('rnr_naks_sent') >= 1
    assert conn.cqb.poll() == []
    conn.qb.post_recv([(dst, 0, 4096)], wr_id=10)
    got = conn.cqb.wait(1)
    assert (got[0]['wr_id'], got[0]['status_name'], got[0]['byte_len']) == (10, 'SUCCESS', 3000)
    assert dst.read(0, 3000) == data
    assert [c['status_name'] for c in conn.cqa.wait(1)] == ['SUCCESS']


def test_flush_completes_what_the_record_names(world):
    """Receives posted through the record and never used: a move to ERR
    flushes every one of them, in order, with its own wr_id."""
    conn = dbrec_conn(world, rq_log=6)
    b = world.devs[1]
    dst = b.reg_mr(conn.pdb, 4096)
    for i in range(40):
        conn.qb.post_recv([(dst, 0, 64)], wr_id=3000 + i)
    world.run()
    assert dev_rq_pi(conn.qb) == 0        # nothing needed them: never read
    conn.qb.modify(state='ERR')
    assert world.run() == 'idle'
    got = conn.cqb.poll()
    assert [c['wr_id'] for c in got] == [3000 + i for i in range(40)]
    assert all(c['status_name'] == 'WR_FLUSH_ERR' for c in got)


def test_modify_to_err_again_flushes_what_the_record_names_since(world):
    """A QP already in ERR with receives posted through the record alone
    (a driver that did not ring): MODIFY_QP to ERR once more flushes them."""
    conn = dbrec_conn(world)
    b = world.devs[1]
    dst = b.reg_mr(conn.pdb, 4096)
    conn.qb.modify(state='ERR')
    world.run()
    assert conn.cqb.poll() == []
    for i in range(3):
        conn.qb.post_recv([(dst, 0, 64)], wr_id=40 + i)     # the record only
    world.run()
    assert conn.cqb.poll() == []                           # nothing made the device look
    conn.qb.modify(state='ERR')
    world.run()
    got = conn.cqb.poll()
    assert [(c['wr_id'], c['status_name']) for c in got] == [(40 + i, 'WR_FLUSH_ERR') for i in range(3)]
    b.check()


def test_a_doorbell_still_works_beside_the_record(world):
    """A driver may still ring QRNIC_DB_RQ for a QP with a record (the
    qrnic kernel driver does in ERR state, so that ib_drain_rq's WQE is
    flushed at once)."""
    conn = dbrec_conn(world)
    a, b = world.devs
    src = a.reg_mr(conn.pda, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    conn.qb.post_recv([(dst, 0, 4096)], wr_id=1, ring=False)
    assert dev_rq_pi(conn.qb) == 0
    conn.qb.ring_rq()
    assert dev_rq_pi(conn.qb) == 1
    conn.qa.post_send('SEND', [(src, 0, 100)], wr_id=2)
    assert [c['wr_id'] for c in conn.cqb.wait(1)] == [1]
    # in ERR, a doorbell makes the device flush the new WQE at once
    conn.qb.modify(state='ERR')
    world.run()
    conn.qb.post_recv([(dst, 0, 64)], wr_id=77)
    conn.qb.ring_rq()
    world.run()
    assert [(c['wr_id'], c['status_name']) for c in conn.cqb.poll()] == [(77, 'WR_FLUSH_ERR')]


def test_reset_restarts_the_record(world):
    """RESET sets the device's indexes to 0; the driver writes 0 to the
    record, and after a new connection receives work from index 0 again."""
    conn = dbrec_conn(world)
    a, b = world.devs
    src = a.reg_mr(conn.pda, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    sends(conn, src, dst, 5, 10)
    assert rec(conn.qb) == 5
    for qp in (conn.qa, conn.qb):
        qp.modify(state='RESET')
    assert rec(conn.qb) == 0 and dev_rq_pi(conn.qb) == 0
    to_rts(a, conn.qa, b, conn.qb)
    one_send_lands(conn, src, dst, 500, 8, 100)


def test_bad_record_values_are_ignored_and_counted(world):
    """A record index that laps the consumer (more than the ring holds) or
    moves back is ignored and counted as a doorbell would be; the SEND is
    RNR-NAKed, nothing else happens, and a good value then works."""
    conn = dbrec_conn(world, rq_log=4, rnr_retry=7)
    a, b = world.devs
    src = a.reg_mr(conn.pda, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    # two good receives first, so that "back" is below a known index
    sends(conn, src, dst, 2, 8)
    b.clear_logs()
    ign = b.stat('doorbells_ignored')
    b.mem_write(conn.qb.rq_dbrec, struct.pack('<I', 2 + 17))     # laps: depth 16
    conn.qa.post_send('SEND', [(src, 0, 8)], wr_id=5)
    world.run_for(50_000)
    assert b.stat('doorbells_ignored') > ign
    pts = [f for n, f, _ in b.tracepoints() if n == 'err_qp_dbrec_index']
    assert pts and pts[0]['qpn'] == conn.qb.qpn and pts[0]['pi'] == 19 and pts[0]['ci'] == 2
    assert dev_rq_pi(conn.qb) == 2
    b.mem_write(conn.qb.rq_dbrec, struct.pack('<I', 1))          # moves back
    world.run_for(50_000)
    pts = [f for n, f, _ in b.tracepoints() if n == 'err_qp_dbrec_index']
    assert any(p['pi'] == 1 for p in pts)
    assert conn.cqb.poll() == [] and dev_rq_pi(conn.qb) == 2
    # now a real receive, through the record: the retried SEND lands
    conn.qb.post_recv([(dst, 0, 4096)], wr_id=6)
    assert [c['wr_id'] for c in conn.cqb.wait(1)] == [6]
    assert [c['status_name'] for c in conn.cqa.wait(1)] == ['SUCCESS']
    for d in world.devs:
        d.check()


def test_unreadable_record_is_counted_and_the_qp_survives(world):
    """A record address that no memory backs: the read fails, is traced
    and counted, the RQ looks empty (the SEND is RNR-NAKed); a flush still
    completes what the device knew of."""
    a, b = world.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    cqa, cqb = a.create_cq(6), b.create_cq(6)
    qa = a.create_qp(pda, cqa)
    b.patch_next_cmd('create_qp.rq_dbrec_addr', 0x7fff_0000_0000)
    qb = b.create_qp(pdb, cqb)
    to_rts(a, qa, b, qb)
    src = a.reg_mr(pda, 4096)
    b.clear_logs()
    ign = b.stat('doorbells_ignored')
    qa.post_send('SEND', [(src, 0, 8)], wr_id=1)
    world.run_for(50_000)
    assert b.stat('doorbells_ignored') > ign
    assert b.stat('rnr_naks_sent') >= 1
    pts = [f for n, f, _ in b.tracepoints() if n == 'err_qp_dbrec']
    assert pts and pts[0]['addr'] == 0x7fff_0000_0000 and pts[0]['qpn'] == qb.qpn
    qb.modify(state='ERR')
    world.run()
    assert cqb.poll() == []
    b.check()


def test_create_qp_checks_the_record_address(world):
    """rq_dbrec_addr: 4-byte aligned, not wrapping, only with an RQ;
    otherwise BAD_PARAM naming the field, and nothing is created."""
    a = world.devs[0]
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    first = a.create_qp(pd, cq)
    assert refuse_record_addr(a, 'rq_dbrec_addr', (0x1002, 0xffff_ffff_ffff_fffe)) == 8 + 48
    srq = a.create_srq(pd)
    refuse_record_addr(a, 'rq_dbrec_addr', (0x1000,),
                       create=lambda: a.create_qp(pd, cq, srq=srq, check=False))
    assert a.create_qp(pd, cq).qpn == first.qpn + 1
    a.check()


def test_snapshot_keeps_the_record(world):
    """A QP with a record saved and loaded into a fresh device goes on
    taking receives from it."""
    conn = dbrec_conn(world)
    a, b = world.devs
    src = a.reg_mr(conn.pda, 4096)
    dst = b.reg_mr(conn.pdb, 4096)
    conn.qb.post_recv([(dst, 0, 4096)], wr_id=1)
    conn.qa.post_send('SEND', [(src, 0, 8)], wr_id=1)
    conn.cqb.wait(1)
    s = b.save()
    b.load(s)
    assert b.save() == s
    one_send_lands(conn, src, dst, 700, 1, 2)


def test_snapshot_with_a_bad_record_address_is_refused(world):
    """A stream whose QP names a misaligned RQ record is refused on load
    with the reason (the snapshot loader's check), and the device is
    reset, as after any refused stream (test_model_snapshot._refused)."""
    from test_model_snapshot import _refused
    conn = dbrec_conn(world)
    b = world.devs[1]
    addr = conn.qb.rq_dbrec
    good = b.save()
    where = good.find(struct.pack('<Q', addr))
    assert where > 0 and good.find(struct.pack('<Q', addr), where + 1) < 0
    bad = good[:where] + struct.pack('<Q', addr | 2) + good[where + 8:]
    _refused(b, bad, 'QP %u: RQ producer record 0x%x (no RQ or misaligned)' % (conn.qb.qpn, addr | 2))
