# SPDX-License-Identifier: GPL-2.0-or-later
"""RNR waits with several messages in flight (spec 12.3, 12.4): whatever
arrives during the wait, the RNR timer fires and the requester goes on.

Regression: an ACK that made progress during an RNR wait re-armed (or
stopped) the retry timer, which cancelled the RNR timer too (they shared
one generation); rnr_wait was never cleared and the requester sent
nothing more ("stalled: 2 messages outstanding" in qrnic-sim --depth 2
with one forged RNR NAK)."""
import random

import pytest

import qrnic_harness as q

SIZE = 4096


def pair(world, mtu, **kw):
    kw.setdefault('rnr_retry', 7)
    return q.connect_rc(world.devs[0], world.devs[1], mtu=mtu, **kw)


def buffers(conn, n, rng, recvs=None):
    """Room for n SENDs of SIZE bytes on each side, random payloads; recvs:
    receives to post on b now (default: n).  Returns (send MR, receive MR,
    payloads)."""
    a, b = conn.a.dev, conn.b.dev
    la = a.reg_mr(conn.pda, n * SIZE)
    rb = b.reg_mr(conn.pdb, n * SIZE)
    src = la.fill_random(rng)
    for i in range(n if recvs is None else recvs):
        conn.qb.post_recv([(rb, i * SIZE, SIZE)], wr_id=1000 + i)
    return la, rb, src


def check_delivered(conn, rb, src, n):
    """n SENDs completed successfully, in order, on both sides, data intact."""
    ca = conn.cqa.poll()
    assert [(c['wr_id'], c['status_name']) for c in ca] == [(i, 'SUCCESS') for i in range(n)]
    cb = conn.cqb.poll()
    assert [(c['wr_id'], c['status_name'], c['byte_len']) for c in cb] == \
        [(1000 + i, 'SUCCESS', SIZE) for i in range(n)]
    assert rb.read(0, n * SIZE) == src[:n * SIZE]


@pytest.mark.parametrize('mtu', [4096, 1024])
@pytest.mark.parametrize('where', ['responder-tx', 'requester-rx'])
@pytest.mark.parametrize('depth', range(2, 9))
def test_forged_rnr_nak_with_sends_in_flight(world, depth, where, mtu):
    """One ACK turned into an RNR NAK while later SENDs are in flight: the
    responder took them all, so their ACKs arrive during the RNR wait and
    acknowledge everything.  The RNR timer must still end the wait.  (The
    SENDs are posted 200 ns apart on a 1 us wire, so that each gets an ACK
    of its own, as in qrnic-sim; at once, b acknowledges them all with one
    ACK, the one turned into the RNR NAK.)"""
    rng = random.Random(depth)
    a, b = world.devs
    conn = pair(world, mtu)
    world.set_latency(1_000)
    rounds = 3
    la, rb, src = buffers(conn, depth * rounds, rng)
    if where == 'responder-tx':
        dev, rid = b, b.fault('nak dir=tx type=rnr timer=4 count=1')
    else:
        dev, rid = a, a.fault(f'nak dir=rx qp={conn.qa.qpn} type=rnr timer=4 count=1')
    t0 = world.now
    for r in range(rounds):
        for i in range(r * depth, (r + 1) * depth):
            conn.qa.post_send('SEND', [(la, i * SIZE, SIZE)], wr_id=i)
            world.advance(200)
        assert world.run() == 'idle'
        assert conn.qa.state == 'RTS'
    check_delivered(conn, rb, src, depth * rounds)
    assert dev.fault_fired(rid) == 1
    assert a.stat('rnr_naks_rcvd') == 1
    assert b.stat('rnr_naks_sent') == 0           # forged: b never lacked a WQE
    assert a.stat('retransmit_timeouts') == 0
    assert a.stat('seq_naks_rcvd') == 0 and b.stat('seq_naks_sent') == 0
    # the wait lasted the NAK's timer (code 4: 40 us), no longer
    acks = [f for f in world.frames(roce_only=True) if f.src == 1]
    assert len(acks) == depth * rounds              # one each: the bug's setting
    if where == 'responder-tx':                      # (rx: forged after the log)
        assert acks[0].is_rnr_nak and not any(f.is_rnr_nak for f in acks[1:])
    # the wait lasted the NAK's timer (code 4: 40 us), no longer
    assert world.now - t0 >= 40_000
    assert world.now - t0 < 40_000 + 1_000_000


@pytest.mark.parametrize('depth', [2, 3, 5, 8])
def test_rnr_nak_for_a_later_send_in_flight(world, depth):
    """A genuine RNR NAK: b has a receive WQE for the first SEND only.  The
    earlier SEND's ACK comes first; the later SENDs are resent after the
    RNR timer, every time, until the receives are posted."""
    rng = random.Random(100 + depth)
    a, b = world.devs
    conn = pair(world, 1024, min_rnr_timer=2)      # 20 us
    la, rb, src = buffers(conn, depth, rng, recvs=1)
    for i in range(depth):
        conn.qa.post_send('SEND', [(la, i * SIZE, SIZE)], wr_id=i)
    assert world.run(ns=500_000) == 'time'
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.poll()] == [(0, 'SUCCESS')]
    naks = a.stat('rnr_naks_rcvd')
    assert naks >= 5 and b.stat('rnr_naks_sent') == naks
    rnr = [f for f in world.frames(roce_only=True) if f.src == 1 and f.is_rnr_nak]
    assert {f.psn for f in rnr} == {(conn.psn_a + SIZE // 1024) & 0xffffff}
    for i in range(1, depth):
        conn.qb.post_recv([(rb, i * SIZE, SIZE)], wr_id=1000 + i)
    assert world.run() == 'idle'
    ca = conn.cqa.poll()
    assert [(c['wr_id'], c['status_name']) for c in ca] == [(i, 'SUCCESS') for i in range(1, depth)]
    cb = conn.cqb.poll()
    assert [(c['wr_id'], c['byte_len']) for c in cb] == [(1000 + i, SIZE) for i in range(depth)]
    assert rb.read(0, depth * SIZE) == src
    assert a.stat('retransmit_timeouts') == 0
    assert conn.qa.state == 'RTS'


def test_progress_during_rnr_wait_does_not_start_the_retry_timer(world):
    """Three one-packet SENDs, 2 us apart on a 10 us wire: the first one's
    ACK is turned into an RNR NAK with a long timer (2.56 ms), the second's
    ACK makes progress during the wait, the third request is lost.  The
    retry timer (1 ms) must not run during the wait (spec 12.3): that ACK
    used to re-arm it (cancelling the RNR timer), it expired into a
    requester that could not send, and the QP was stuck for good.  Now the
    RNR timer resends the third SEND."""
    rng = random.Random(3)
    a, b = world.devs
    conn = pair(world, 4096, timeout=8)            # 4.096 us << 8 ~ 1 ms
    la, rb, src = buffers(conn, 3, rng)
    world.set_latency(10_000)
    rid_nak = b.fault('nak dir=tx type=rnr timer=16 count=1')
    rid = world.rule('drop', src=0, psn=(conn.psn_a + 2) & 0xffffff)
    t0 = world.now
    for i in range(3):
        conn.qa.post_send('SEND', [(la, i * SIZE, SIZE)], wr_id=i)
        world.advance(2_000)
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1 and b.fault_fired(rid_nak) == 1
    check_delivered(conn, rb, src, 3)
    acks = [f for f in world.frames(roce_only=True) if f.src == 1]
    assert acks[0].is_rnr_nak and acks[0].psn == conn.psn_a
    assert not acks[1].is_rnr_nak and acks[1].psn == (conn.psn_a + 1) & 0xffffff
    assert a.stat('retransmit_timeouts') == 0
    assert a.stat('rnr_naks_rcvd') == 1
    assert a.stat('retransmitted_packets') == 1
    resent = [f for f in world.frames(roce_only=True)
              if f.src == 0 and f.psn == (conn.psn_a + 2) & 0xffffff]
    assert len(resent) == 2
    assert world.now - t0 >= 2_560_000


def test_stale_rnr_nak_is_ignored(world):
    """An RNR NAK for a PSN acknowledged since (a late duplicate: here the
    first RNR NAK again, injected after its SEND was resent and ACKed)
    says nothing about what is in flight: the oldest unacknowledged PSN
    must not go back to it, and the next SEND must not wait an RNR timer."""
    rng = random.Random(4)
    a, b = world.devs
    conn = pair(world, 4096, min_rnr_timer=16)     # 2.56 ms
    la, rb, src = buffers(conn, 2, rng, recvs=0)
    conn.qa.post_send('SEND', [(la, 0, SIZE)], wr_id=0)
    assert world.run(ns=100_000) == 'time'
    rnr = [f for f in world.frames(roce_only=True) if f.src == 1 and f.is_rnr_nak]
    assert len(rnr) == 1 and rnr[0].psn == conn.psn_a
    for i in range(2):
        conn.qb.post_recv([(rb, i * SIZE, SIZE)], wr_id=1000 + i)
    assert world.run() == 'idle'
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.poll()] == [(0, 'SUCCESS')]
    assert a.stat('rnr_naks_rcvd') == 1
    resent = a.stat('retransmitted_packets')
    t0 = world.now
    conn.qa.post_send('SEND', [(la, SIZE, SIZE)], wr_id=1)
    a.inject(rnr[0].data)
    assert world.run() == 'idle'
    assert [(c['wr_id'], c['status_name']) for c in conn.cqa.poll()] == [(1, 'SUCCESS')]
    assert world.now - t0 < 100_000                 # no RNR wait
    assert a.stat('rnr_naks_rcvd') == 2             # counted, then ignored
    assert a.stat('retransmitted_packets') == resent
    cb = conn.cqb.poll()
    assert [(c['wr_id'], c['byte_len']) for c in cb] == [(1000, SIZE), (1001, SIZE)]
    assert rb.read(0, 2 * SIZE) == src


def test_stale_sequence_nak_is_ignored(world):
    """The same for a sequence NAK: the first SEND's ACK arrives twice and
    the second copy is turned into a sequence NAK (for a PSN the requester
    has just seen ACKed).  With retry_cnt=0 it used to consume the only
    retry and fail the SEND still in flight with RETRY_EXC_ERR."""
    rng = random.Random(5)
    a, b = world.devs
    conn = pair(world, 4096, retry_cnt=0)
    la, rb, src = buffers(conn, 2, rng)
    world.set_latency(1_000)
    world.rule('dup', src=1, opcode='RC_ACK', count=1)
    rid = a.fault(f'nak dir=rx qp={conn.qa.qpn} type=seq nth=2 count=1')
    for i in range(2):
        conn.qa.post_send('SEND', [(la, i * SIZE, SIZE)], wr_id=i)
        world.advance(200)
    assert world.run() == 'idle'
    assert a.fault_fired(rid) == 1
    check_delivered(conn, rb, src, 2)
    assert conn.qa.state == 'RTS'
    assert a.stat('seq_naks_rcvd') == 1             # counted, then ignored
    assert a.stat('window_cuts') == 0
    assert a.stat('retransmitted_packets') == 0
