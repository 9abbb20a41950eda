# SPDX-License-Identifier: GPL-2.0-or-later
"""RC reliability through wire impairments: lost, duplicated, reordered
and corrupted packets; RNR; retry exhaustion; exactly-once atomics."""
import random

import pytest

import qrnic_harness as q

MTU = 1024


def pair(world, **kw):
    kw.setdefault('mtu', MTU)
    return q.connect_rc(world.devs[0], world.devs[1], **kw)


def mrs(conn, n, rng):
    la = conn.a.dev.reg_mr(conn.pda, n)
    rb = conn.b.dev.reg_mr(conn.pdb, n)
    return la, rb, la.fill_random(rng), rb.fill_random(rng)


def statuses(cq):
    return [c['status_name'] for c in cq.poll()]


@pytest.mark.parametrize('op', ['SEND', 'RDMA_WRITE'])
@pytest.mark.parametrize('which', [0, 1, 5, 9])
def test_lost_request_packet(world, op, which):
    rng = random.Random(which)
    conn = pair(world)
    n = 10 * MTU
    la, rb, src, _ = mrs(conn, n, rng)
    rid = world.rule('drop', src=0, psn=(conn.psn_a + which) & 0xffffff)
    if op == 'SEND':
        conn.qb.post_recv([(rb, 0, n)], wr_id=1)
    conn.qa.post_send(op, [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1
    assert statuses(conn.cqa) == ['SUCCESS']
    assert rb.read() == src
    if op == 'SEND':
        cb = conn.cqb.poll()
        assert len(cb) == 1 and cb[0]['byte_len'] == n
    a, b = world.devs
    if which < 9:
        assert b.stat('seq_naks_sent') == 1
        naks = [f for f in world.frames(roce_only=True) if f.src == 1 and f.is_nak]
        assert len(naks) == 1 and naks[0].syndrome == q.NAK_PSN_SEQ
        assert naks[0].psn == (conn.psn_a + which) & 0xffffff
        assert a.stat('seq_naks_rcvd') == 1
    else:
        assert a.stat('retransmit_timeouts') >= 1
    resent = [f for f in world.frames(roce_only=True)
              if f.src == 0 and f.psn == (conn.psn_a + which) & 0xffffff]
    assert len(resent) == 2
    assert a.stat('retransmitted_packets') >= 1


def test_lost_ack_no_double_delivery(world):
    rng = random.Random(2)
    conn = pair(world)
    n = 3 * MTU
    la, rb, src, _ = mrs(conn, n, rng)
    rid = world.rule('drop', src=1, opcode='RC_ACK', count=2)
    conn.qb.post_recv([(rb, 0, n)], wr_id=1)
    conn.qb.post_recv([(rb, 0, n)], wr_id=2)
    conn.qa.post_send('SEND', [(la, 0, n)])
    assert world.run() == 'idle'
    assert world.rule_fired(rid) >= 1
    assert statuses(conn.cqa) == ['SUCCESS']
    cb = conn.cqb.poll()
    assert [c['wr_id'] for c in cb] == [1], 'duplicate SEND consumed a second receive'
    assert rb.read() == src
    assert world.devs[1].stat('duplicate_requests') >= 1


@pytest.mark.parametrize('which', ['first', 'middle', 'last'])
def test_lost_read_response(world, which):
    rng = random.Random(3)
    conn = pair(world)
    n = 8 * MTU + 5
    la, rb, _, dst = mrs(conn, n, rng)
    names = {'first': 'RC_READ_RESP_FIRST', 'middle': 'RC_READ_RESP_MIDDLE',
             'last': 'RC_READ_RESP_LAST'}
    rid = world.rule('drop', src=1, opcode=names[which])
    conn.qa.post_send('RDMA_READ', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1
    assert statuses(conn.cqa) == ['SUCCESS']
    assert la.read() == dst


def test_lost_atomic_ack_replayed_not_reexecuted(world):
    conn = pair(world)
    la, rb = conn.a.dev.reg_mr(conn.pda, 64), conn.b.dev.reg_mr(conn.pdb, 64)
    rb.write(8, (1000).to_bytes(8, 'little'))
    rid = world.rule('drop', src=1, opcode='RC_ATOMIC_ACK')
    conn.qa.post_send('FETCH_AND_ADD', [(la, 0, 8)], remote=(rb, 8), add=5)
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1
    assert statuses(conn.cqa) == ['SUCCESS']
    assert int.from_bytes(rb.read(8, 8), 'little') == 1005
    assert int.from_bytes(la.read(0, 8), 'little') == 1000
    b = world.devs[1]
    assert b.stat('atomics_executed') == 1
    assert b.stat('atomics_replayed') == 1
    acks = [f for f in world.frames(roce_only=True) if f.opname == 'RC_ATOMIC_ACK']
    assert len(acks) == 2 and all(f.atomic_orig == 1000 for f in acks)


@pytest.mark.parametrize('op', ['FETCH_AND_ADD', 'CMP_AND_SWP'])
def test_duplicated_atomic_request_executed_once(world, op):
    conn = pair(world)
    la, rb = conn.a.dev.reg_mr(conn.pda, 64), conn.b.dev.reg_mr(conn.pdb, 64)
    rb.write(16, (77).to_bytes(8, 'little'))
    rid = world.rule('dup', src=0, opcode='RC_FETCH_ADD' if op == 'FETCH_AND_ADD' else
                     'RC_CMP_SWAP', arg=2)
    if op == 'FETCH_AND_ADD':
        conn.qa.post_send(op, [(la, 0, 8)], remote=(rb, 16), add=1)
        conn.qa.post_send(op, [(la, 8, 8)], remote=(rb, 16), add=1)
    else:
        conn.qa.post_send(op, [(la, 0, 8)], remote=(rb, 16), compare=77, swap=78)
        conn.qa.post_send(op, [(la, 8, 8)], remote=(rb, 16), compare=78, swap=79)
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1
    assert statuses(conn.cqa) == ['SUCCESS', 'SUCCESS']
    assert int.from_bytes(rb.read(16, 8), 'little') == 79
    assert int.from_bytes(la.read(0, 8), 'little') == 77
    assert int.from_bytes(la.read(8, 8), 'little') == 78
    assert world.devs[1].stat('atomics_executed') == 2


@pytest.mark.parametrize('op', ['SEND', 'RDMA_WRITE', 'RDMA_READ'])
def test_every_packet_duplicated(world, op):
    rng = random.Random(4)
    conn = pair(world)
    n = 6 * MTU + 3
    la, rb, src, dst = mrs(conn, n, rng)
    world.rule('dup', count=-1)
    for i in range(3):
        if op == 'SEND':
            conn.qb.post_recv([(rb, 0, n)], wr_id=i)
        conn.qa.post_send(op, [(la, 0, n)], remote=(rb, 0), wr_id=i)
    assert world.run() == 'idle'
    assert [c['wr_id'] for c in conn.cqa.poll()] == [0, 1, 2]
    if op == 'SEND':
        assert [c['wr_id'] for c in conn.cqb.poll()] == [0, 1, 2]
    if op == 'RDMA_READ':
        assert la.read() == dst
    else:
        assert rb.read() == src
    assert world.wire_stats()['duplicated'] > 10


@pytest.mark.parametrize('hold', [1, 3, 8])
def test_reordered_packets(world, hold):
    rng = random.Random(hold)
    conn = pair(world)
    n = 12 * MTU
    la, rb, src, _ = mrs(conn, n, rng)
    rid = world.rule('hold', src=0, psn=(conn.psn_a + 2) & 0xffffff, arg=hold)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1
    assert statuses(conn.cqa) == ['SUCCESS']
    assert rb.read() == src
    delivered = [f for f in world.frames(roce_only=True) if f.src == 0]
    assert len(delivered) >= 12


def test_corrupted_packet_dropped_by_icrc(world):
    rng = random.Random(5)
    conn = pair(world)
    n = 4 * MTU
    la, rb, src, _ = mrs(conn, n, rng)
    rid = world.rule('corrupt', src=0, psn=(conn.psn_a + 1) & 0xffffff, arg=200, arg2=0x10)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1
    assert statuses(conn.cqa) == ['SUCCESS']
    assert rb.read() == src
    assert world.devs[1].stat('rx_drop_icrc') == 1


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_random_impairments_mixed_traffic(world, seed):
    rng = random.Random(seed)
    conn = pair(world, timeout=8)
    world.random_impairments(loss=0.03, dup=0.03, reorder=0.03, corrupt=0.01, seed=seed)
    n = 1 << 17
    la, rb, src, dst = mrs(conn, 2 * n, rng)
    expect_r = bytearray(dst)
    expect_l = bytearray(src)
    recv = []
    for i in range(80):
        op = rng.choice(['SEND', 'RDMA_WRITE', 'RDMA_READ', 'FETCH_AND_ADD'])
        ln = 8 if op == 'FETCH_AND_ADD' else rng.randint(0, 6000)
        lo = rng.randrange(0, n - 8000) & ~7
        ro = rng.randrange(0, n - 8000) & ~7
        if op == 'SEND':
            conn.qb.post_recv([(rb, n + ro, ln)], wr_id=i)
            recv.append(i)
        conn.qa.post_send(op, [(la, lo, ln)], remote=(rb, ro), add=i, wr_id=i)
        assert world.run() == 'idle'
        c = conn.cqa.poll()
        assert [(x['wr_id'], x['status_name']) for x in c] == [(i, 'SUCCESS')]
        if op == 'RDMA_WRITE':
            expect_r[ro:ro + ln] = expect_l[lo:lo + ln]
        elif op == 'SEND':
            expect_r[n + ro:n + ro + ln] = expect_l[lo:lo + ln]
            cb = conn.cqb.poll()
            assert [(x['wr_id'], x['byte_len']) for x in cb] == [(i, ln)]
        elif op == 'RDMA_READ':
            expect_l[lo:lo + ln] = expect_r[ro:ro + ln]
        else:
            old = int.from_bytes(expect_r[ro:ro + 8], 'little')
            expect_l[lo:lo + 8] = old.to_bytes(8, 'little')
            expect_r[ro:ro + 8] = ((old + i) % (1 << 64)).to_bytes(8, 'little')
        assert rb.read() == bytes(expect_r), (i, op)
        assert la.read() == bytes(expect_l), (i, op)
    ws = world.wire_stats()
    assert ws['drop_random'] > 0 and ws['duplicated'] > 0 and ws['held'] > 0


# ---- RNR -------------------------------------------------------------------------
@pytest.mark.parametrize('n', [100, 2 * MTU + 1], ids=['1pkt', '3pkts'])
def test_rnr_then_recv_posted_completes(world, n):
    """rnr_retry=7 retries forever; the packets after the NAKed one must not
    turn into sequence NAKs that use up the (non-RNR) retry count."""
    rng = random.Random(6)
    conn = pair(world, rnr_retry=7, min_rnr_timer=1)
    la, rb, src, _ = mrs(conn, n, rng)
    conn.qa.post_send('SEND', [(la, 0, n)], wr_id=9)
    assert world.run(ns=2_000_000) == 'time'
    assert conn.cqa.poll() == []
    rnr = [f for f in world.frames(roce_only=True) if f.src == 1 and f.is_rnr_nak]
    assert rnr, 'no RNR NAK on the wire'
    assert rnr[0].psn == conn.psn_a
    assert world.devs[0].stat('rnr_naks_rcvd') >= 1
    assert world.devs[1].stat('rnr_naks_sent') >= 1
    conn.qb.post_recv([(rb, 0, n)], wr_id=10)
    assert world.run() == 'idle'
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.poll()] == [(9, 'SUCCESS')]
    cb = conn.cqb.poll()
    assert [(c['wr_id'], c['byte_len']) for c in cb] == [(10, n)]
    assert rb.read(0, n) == src


@pytest.mark.parametrize('rnr_retry', [0, 1, 3])
def test_rnr_retry_exhausted(world, rnr_retry):
    conn = pair(world, rnr_retry=rnr_retry, min_rnr_timer=1)
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    conn.qa.post_send('SEND', [(la, 0, 100)], wr_id=1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status']) for x in c] == [(1, q.WC['RNR_RETRY_EXC_ERR']),
                                                       (2, q.WC['WR_FLUSH_ERR'])]
    rnr = [f for f in world.frames(roce_only=True) if f.src == 1 and f.is_rnr_nak]
    assert len(rnr) == rnr_retry + 1
    assert conn.qa.state == 'ERR'


# ---- retry exhaustion ---------------------------------------------------------------
@pytest.mark.parametrize('retry_cnt', [0, 1, 3, 7])
def test_retry_exhausted_drop_everything(world, retry_cnt):
    conn = pair(world, retry_cnt=retry_cnt, timeout=8)
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    world.rule('drop', src=0, count=-1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=2)
    t0 = world.now
    assert world.run() == 'idle'
    c = conn.cqa.poll()
    assert [(x['wr_id'], x['status']) for x in c] == [(1, q.WC['RETRY_EXC_ERR']),
                                                       (2, q.WC['WR_FLUSH_ERR'])]
    first = [f for f in world.frames(roce_only=True)
             if f.src == 0 and f.psn == conn.psn_a]
    assert len(first) == retry_cnt + 1
    # each retry waits the local ACK timeout (4.096 us << 8 ~ 1 ms)
    assert world.now - t0 >= (retry_cnt + 1) * 4096 * (1 << 8) * 0.9
    assert conn.qa.state == 'ERR'
    assert world.devs[0].stat('retransmit_timeouts') == retry_cnt + 1


def test_retry_exhausted_when_acks_lost(world):
    conn = pair(world, retry_cnt=2, timeout=8)
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    world.rule('drop', src=1, count=-1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['RETRY_EXC_ERR']


def test_infinite_timeout_never_completes(world):
    conn = pair(world, timeout=0)
    la, rb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    world.rule('drop', src=0, count=-1)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0))
    r = world.run(ns=10_000_000_000)
    assert r in ('idle', 'time')
    assert conn.cqa.poll() == []
    assert world.devs[0].stat('retransmit_timeouts') == 0


def test_link_down_then_up(world):
    rng = random.Random(8)
    conn = pair(world, timeout=10)
    la, rb, src, _ = mrs(conn, 4096, rng)
    world.devs[0].set_link(False)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0))
    world.run(ns=1_000_000)
    world.devs[0].set_link(True)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    assert rb.read() == src


def test_ack_racing_the_retry_timer_keeps_psns(world):
    """Regression (seen in a guest with ib_write_lat): the retry timer fires
    and rewinds to an unacknowledged WRITE just before its ACK is processed.
    The next WQE must still go out as WRITE_ONLY with the next PSN (it went
    out with the old PSN, then as an empty WRITE_LAST -> invalid request)."""
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=1024, timeout=14)
    la, lb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    world.set_latency(4096 << 13)        # round trip = the ACK timeout (4.096 us << 14)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 2)], remote=(lb, 0), wr_id=1)
    assert world.run() == 'idle'
    world.clear_frames()
    conn.qa.post_send('RDMA_WRITE', [(la, 8, 2)], remote=(lb, 8), wr_id=2)
    assert world.run() == 'idle'
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.poll(4)] == [(1, 'SUCCESS'), (2, 'SUCCESS')]
    reqs = [f for f in world.frames(roce_only=True) if f.src == 0]
    assert reqs and all(f.opname == 'RC_WRITE_ONLY' for f in reqs), reqs
    assert reqs[0].psn == (conn.psn_a + 1) & 0xffffff
    assert b.stat('inv_req_naks_sent') == 0


def test_trusted_wire_skips_icrc_only_while_nothing_corrupts(world, tmp_path):
    # hx_wire_trusted (qrnic-sim --trusted-wire): no ICRC computed or checked,
    # same data; any corrupting wire setting, fault rule or pcap turns it off
    rng = random.Random(11)
    conn = pair(world)
    n = 4 * MTU
    la, rb, src, _ = mrs(conn, n, rng)
    assert world.trusted_wire(True)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    roce = world.frames(roce_only=True)
    assert roce and all(f.icrc == b'\0\0\0\0' for f in roce)
    # a corrupting rule: ICRCs again, and the corrupted packet is dropped
    rid = world.rule('corrupt', src=0, psn=(conn.psn_a + 5) & 0xffffff, arg=200, arg2=0x10)
    assert not world.trusted_wire(True)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1 and world.devs[1].stat('rx_drop_icrc') == 1
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    world.clear_rules()
    assert world.trusted_wire(True)
    world.random_impairments(corrupt=0.01)
    assert not world.trusted_wire(True)
    world.random_impairments()
    assert world.trusted_wire(True)
    world.pcap(tmp_path / 'w.pcap')
    assert not world.trusted_wire(True)
    world.pcap_close()
    assert world.trusted_wire(True)
    world.devs[0].fault('drop dir=tx op=write nth=1000')
    assert not world.trusted_wire(True)
    assert not world.trusted_wire(False)
