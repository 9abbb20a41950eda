# SPDX-License-Identifier: GPL-2.0-or-later
"""Memory protection and error handling: remote access errors (NAK on the
wire, requester status, target memory unchanged), local errors, flush."""
import hashlib
import random

import pytest

import qrnic_harness as q

MTU = 1024
ALL_BUT = lambda bit: q.ACCESS_ALL & ~bit


def digest(mr):
    return hashlib.sha256(mr.read()).hexdigest()


def make_conn(world, remote_access=q.ACCESS_ALL, **kw):
    conn = q.connect_rc(world.devs[0], world.devs[1], mtu=MTU, **kw)
    rng = random.Random(11)
    la = conn.a.dev.reg_mr(conn.pda, 8192)
    rb = conn.b.dev.reg_mr(conn.pdb, 8192, access=remote_access)
    la.fill_random(rng)
    rb.fill_random(rng)
    return conn, la, rb


def naks(world):
    return [f for f in world.frames(roce_only=True) if f.src == 1 and f.is_nak]


REMOTE_CASES = {
    # name: (verb, remote access of the target MR, how to break the request)
    'write_bad_rkey': ('RDMA_WRITE', q.ACCESS_ALL, 'rkey_index'),
    'write_bad_tag': ('RDMA_WRITE', q.ACCESS_ALL, 'rkey_tag'),
    'write_other_pd': ('RDMA_WRITE', q.ACCESS_ALL, 'other_pd'),
    'write_oob_end': ('RDMA_WRITE', q.ACCESS_ALL, 'oob_end'),
    'write_oob_before': ('RDMA_WRITE', q.ACCESS_ALL, 'oob_before'),
    'write_oob_wrap': ('RDMA_WRITE', q.ACCESS_ALL, 'oob_wrap'),
    'write_no_remote_write': ('RDMA_WRITE', ALL_BUT(q.ACCESS_REMOTE_WRITE), None),
    'write_imm_no_remote_write': ('RDMA_WRITE_WITH_IMM', ALL_BUT(q.ACCESS_REMOTE_WRITE), None),
    'write_dereg': ('RDMA_WRITE', q.ACCESS_ALL, 'dereg'),
    'read_bad_rkey': ('RDMA_READ', q.ACCESS_ALL, 'rkey_index'),
    'read_no_remote_read': ('RDMA_READ', ALL_BUT(q.ACCESS_REMOTE_READ), None),
    'read_oob_end': ('RDMA_READ', q.ACCESS_ALL, 'oob_end'),
    'read_dereg': ('RDMA_READ', q.ACCESS_ALL, 'dereg'),
    'faa_no_remote_atomic': ('FETCH_AND_ADD', ALL_BUT(q.ACCESS_REMOTE_ATOMIC), None),
    'cas_no_remote_atomic': ('CMP_AND_SWP', ALL_BUT(q.ACCESS_REMOTE_ATOMIC), None),
    'faa_bad_rkey': ('FETCH_AND_ADD', q.ACCESS_ALL, 'rkey_index'),
    'faa_oob': ('FETCH_AND_ADD', q.ACCESS_ALL, 'oob_end'),
    'faa_other_pd': ('FETCH_AND_ADD', q.ACCESS_ALL, 'other_pd'),
}


@pytest.mark.parametrize('case', list(REMOTE_CASES))
def test_remote_access_error(world, case):
    verb, access, breakage = REMOTE_CASES[case]
    conn, la, rb = make_conn(world, remote_access=access)
    b = conn.b.dev
    target = rb
    n = 8 if verb in ('FETCH_AND_ADD', 'CMP_AND_SWP') else 3000
    rkey, raddr = rb.rkey, rb.addr(64)
    if breakage == 'rkey_index':
        rkey = rb.rkey + (1 << 8) * 7
    elif breakage == 'rkey_tag':
        rkey = rb.rkey ^ 0x01
    elif breakage == 'other_pd':
        pd2 = b.alloc_pd()
        target = b.reg_mr(pd2, 8192)
        target.fill_random(random.Random(12))
        rkey, raddr = target.rkey, target.addr(64)
    elif breakage == 'oob_end':
        raddr = rb.addr(8192 - n + 8)
    elif breakage == 'oob_before':
        raddr = rb.addr(0) - 8
    elif breakage == 'oob_wrap':
        raddr = (1 << 64) - 1024
    elif breakage == 'dereg':
        rb.dereg()
    before_r = digest(target)
    before_l = digest(la)
    world.clear_frames()
    if verb == 'RDMA_WRITE_WITH_IMM':
        conn.qb.post_recv([], wr_id=5)
    conn.qa.post_send(verb, [(la, 0, n)], remote=(rkey, raddr), add=1, compare=0, swap=1,
                      wr_id=1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 16)], remote=(rb.rkey, rb.addr(0)), wr_id=2)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status_name']) for x in c] == [(1, 'REM_ACCESS_ERR'),
                                                           (2, 'WR_FLUSH_ERR')]
    nk = naks(world)
    assert len(nk) == 1 and nk[0].syndrome == q.NAK_REM_ACCESS
    assert digest(target) == before_r, 'target memory changed'
    assert digest(la) == before_l, 'requester memory changed'
    assert b.stat('access_naks_sent') == 1
    assert conn.qa.state == 'ERR'


def test_qp_access_flags_without_remote_write(world):
    """The responder QP does not allow RDMA WRITE (qp_access_flags): invalid request."""
    conn, la, rb = make_conn(world, access=q.ACCESS_REMOTE_READ)
    before = digest(rb)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0))
    assert world.run() == 'idle'
    st = [x['status_name'] for x in conn.cqa.poll()]
    assert st in (['REM_INV_REQ_ERR'], ['REM_ACCESS_ERR'])
    nk = naks(world)
    assert len(nk) == 1 and nk[0].syndrome in (q.NAK_INV_REQ, q.NAK_REM_ACCESS)
    assert digest(rb) == before


def test_qp_access_flags_without_remote_atomic(world):
    conn, la, rb = make_conn(world, access=q.ACCESS_REMOTE_READ | q.ACCESS_REMOTE_WRITE)
    before = digest(rb)
    conn.qa.post_send('FETCH_AND_ADD', [(la, 0, 8)], remote=(rb, 0), add=1)
    assert world.run() == 'idle'
    assert [x['status_name'] for x in conn.cqa.poll()] in (['REM_INV_REQ_ERR'],
                                                           ['REM_ACCESS_ERR'])
    assert digest(rb) == before


def test_send_longer_than_receive_buffer(world):
    conn, la, rb = make_conn(world)
    orig = rb.read()
    conn.qb.post_recv([(rb, 0, 100)], wr_id=7)
    conn.qa.post_send('SEND', [(la, 0, 101)], wr_id=1)
    assert world.run() == 'idle'
    assert [x['status_name'] for x in conn.cqa.poll()] == ['REM_INV_REQ_ERR']
    nk = naks(world)
    assert len(nk) == 1 and nk[0].syndrome == q.NAK_INV_REQ
    cb = conn.cqb.poll()
    assert [(x['wr_id'], x['status_name']) for x in cb][:1] == [(7, 'LOC_LEN_ERR')]
    assert rb.read(100) == orig[100:], 'bytes beyond the receive buffer changed'


def test_send_overflow_does_not_write_past_buffer(world):
    conn, la, rb = make_conn(world)
    orig = rb.read()
    conn.qb.post_recv([(rb, 0, 1000)], wr_id=7)
    conn.qa.post_send('SEND', [(la, 0, 3 * MTU)], wr_id=1)
    assert world.run() == 'idle'
    assert [x['status_name'] for x in conn.cqa.poll()] == ['REM_INV_REQ_ERR']
    assert rb.read(1000) == orig[1000:]


@pytest.mark.parametrize('what', ['bad_lkey', 'other_pd_lkey', 'oob', 'read_needs_local_write',
                                  'atomic_needs_local_write', 'dereg_lkey'])
def test_local_protection_error(world, what):
    conn, la, rb = make_conn(world)
    a = conn.a.dev
    before_r = digest(rb)
    verb, mr, off, n = 'RDMA_WRITE', la, 0, 100
    lkey = la.lkey
    if what == 'bad_lkey':
        lkey = la.lkey + (50 << 8)
    elif what == 'other_pd_lkey':
        mr = a.reg_mr(a.alloc_pd(), 4096)
        lkey = mr.lkey
    elif what == 'oob':
        off, n = 8000, 500
    elif what == 'read_needs_local_write':
        verb = 'RDMA_READ'
        mr = a.reg_mr(conn.pda, 4096, access=q.ACCESS_REMOTE_READ)
        lkey = mr.lkey
    elif what == 'atomic_needs_local_write':
        verb = 'FETCH_AND_ADD'
        n = 8
        mr = a.reg_mr(conn.pda, 4096, access=q.ACCESS_REMOTE_READ)
        lkey = mr.lkey
    elif what == 'dereg_lkey':
        mr = a.reg_mr(conn.pda, 4096)
        lkey = mr.lkey
        mr.dereg()
    local_before = digest(la)
    world.clear_frames()
    conn.qa.post_send(verb, [(mr.addr(off), n, lkey)], remote=(rb, 0), add=1, wr_id=1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status_name']) for x in c] == [(1, 'LOC_PROT_ERR'),
                                                           (2, 'WR_FLUSH_ERR')]
    if verb == 'RDMA_WRITE':
        assert not [f for f in world.frames(roce_only=True) if f.src == 0], \
            'a request with a bad local SGE went on the wire'
        assert digest(rb) == before_r
    assert digest(la) == local_before
    assert conn.qa.state == 'ERR'


def test_bad_lkey_in_receive_wqe(world):
    conn, la, rb = make_conn(world)
    conn.qb.post_recv([(rb.addr(0), 100, rb.lkey + (77 << 8))], wr_id=7)
    conn.qa.post_send('SEND', [(la, 0, 100)], wr_id=1)
    assert world.run() == 'idle'
    ca = conn.cqa.poll()
    assert [x['status_name'] for x in ca] in (['REM_OP_ERR'], ['REM_ACCESS_ERR'],
                                              ['REM_INV_REQ_ERR'])
    cb = conn.cqb.poll()
    assert cb and cb[0]['wr_id'] == 7 and cb[0]['status_name'] == 'LOC_PROT_ERR'


@pytest.mark.parametrize('off', [1, 4, 7, 4092])
def test_misaligned_atomic(world, off):
    conn, la, rb = make_conn(world)
    before = digest(rb)
    conn.qa.post_send('FETCH_AND_ADD', [(la, 0, 8)], remote=(rb, off), add=1, wr_id=1)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] in ('REM_INV_REQ_ERR', 'LOC_QP_OP_ERR')
    if c[0]['status_name'] == 'REM_INV_REQ_ERR':
        assert [f.syndrome for f in naks(world)] == [q.NAK_INV_REQ]
    assert digest(rb) == before


@pytest.mark.parametrize('n', [4, 7, 9, 16])
def test_atomic_wrong_length(world, n):
    conn, la, rb = make_conn(world)
    before = digest(rb)
    conn.qa.post_send('FETCH_AND_ADD', [(la, 0, n)], remote=(rb, 0), add=1, wr_id=1)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] != 'SUCCESS'
    assert digest(rb) == before


def test_flush_outstanding_after_error(world):
    conn, la, rb = make_conn(world)
    for i in range(5):
        conn.qb.post_recv([(rb, 0, 100)], wr_id=100 + i)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb.rkey ^ 0x55, rb.addr(0)),
                      wr_id=0)
    for i in range(1, 6):
        conn.qa.post_send('SEND', [(la, 0, 10)], wr_id=i, signaled=(i % 2 == 0))
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    # error completions are generated even for unsignaled WQEs (flush)
    assert [(x['wr_id'], x['status_name']) for x in c] == \
        [(0, 'REM_ACCESS_ERR')] + [(i, 'WR_FLUSH_ERR') for i in range(1, 6)]
    # posting to a QP in error completes at once with flush
    conn.qa.post_send('SEND', [(la, 0, 10)], wr_id=9)
    conn.qa.post_recv([(la, 0, 10)], wr_id=10)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert sorted((x['wr_id'], x['status_name']) for x in c) == [(9, 'WR_FLUSH_ERR'),
                                                                 (10, 'WR_FLUSH_ERR')]
    # moving to ERR flushes the receive queue of the peer
    conn.qb.modify('ERR')
    assert world.run() == 'idle'
    cb = conn.cqb.poll()
    assert [(x['wr_id'], x['status_name']) for x in cb] == \
        [(100 + i, 'WR_FLUSH_ERR') for i in range(5)]


def test_qp_reset_and_reuse_after_error(world):
    conn, la, rb = make_conn(world)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 8)], remote=(rb.rkey ^ 0x55, rb.addr(0)))
    world.run()
    assert conn.qa.state == 'ERR'
    conn.cqa.poll()
    a, b = world.devs
    for qp, peer_dev, peer_qp, rq, sq in ((conn.qa, b, conn.qb, 0x500, 0x600),
                                          (conn.qb, a, conn.qa, 0x600, 0x500)):
        qp.modify('RESET')
        qp.to_init()
        qp.to_rtr(peer_dev, peer_qp.qpn, rq_psn=rq)
        qp.to_rts(sq_psn=sq)
    data = la.fill_random(random.Random(1), 0, 4000)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 4000)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert [x['status_name'] for x in conn.cqa.poll()] == ['SUCCESS']
    assert rb.read(0, 4000) == data


def test_remote_dma_failure_is_an_error_not_success(world):
    """Responder's host memory faults (IOMMU): the requester must not see SUCCESS."""
    conn, la, rb = make_conn(world)
    b = conn.b.dev
    b.mem_deny(rb.bus_addr(0) & ~0xfff, 4096)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0))
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert len(c) == 1 and c[0]['status_name'] != 'SUCCESS'
    assert b.stat('dma_errors') >= 1


def test_access_nak_waits_for_earlier_read_response(world):
    """Responses leave in PSN order: a READ answered before a later WRITE that
    hits a remote access error still completes with its data; only the bad
    WRITE gets REM_ACCESS_ERR (then the rest is flushed)."""
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=1024)
    la = a.reg_mr(conn.pda, 1 << 16)
    lb = b.reg_mr(conn.pdb, 1 << 16)
    ro = b.reg_mr(conn.pdb, 4096, access=q.ACCESS_LOCAL_WRITE)   # no remote access
    src = lb.fill_random(random.Random(7), 0, 8192)
    before = ro.read()
    conn.qa.post_send('RDMA_READ', [(la, 0, 8192)], remote=(lb, 0), wr_id=1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(lb, 0x4000), wr_id=2)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(ro, 0), wr_id=3)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(lb, 0x5000), wr_id=4)
    assert world.run() == 'idle'
    got = [(c['wr_id'], c['status_name']) for c in conn.cqa.poll(8)]
    assert got == [(1, 'SUCCESS'), (2, 'SUCCESS'), (3, 'REM_ACCESS_ERR'), (4, 'WR_FLUSH_ERR')]
    assert la.read(0, 8192) == src
    assert ro.read() == before
