# SPDX-License-Identifier: GPL-2.0-or-later
"""RC requester loss window and the RNR-echo rule (docs/spec.md 12.3).

The loss window halves the packets a QP may have in flight after a loss
(once per episode), so go-back-N does not resend a full 512-packet burst into
the buffer that just overflowed.  A sequence NAK that echoes the last RNR NAK
(what Linux rxe sends after RNR-NAKing the first packet of a multi-packet
SEND, docs/interop.md 4.2) is not a loss: it consumes no retry."""
import random
import struct

import pytest

import qrnic_harness as q
from test_wire import ref_icrc

MTU = 1024


def bth_offset(frame):
    assert frame[12:14] == b'\x08\x00'
    return 14 + (frame[14] & 0xf) * 4 + 8


def as_seq_nak(frame):
    """The RNR NAK frame turned into a NAK PSN sequence error for the same PSN
    (same MSN), with its ICRC recomputed."""
    f = bytearray(frame)
    aeth = bth_offset(f) + 12
    assert f[aeth] & 0xe0 == 0x20, 'not an RNR NAK'
    f[aeth] = 0x60
    ip_end = 14 + struct.unpack_from('>H', f, 16)[0]
    f[ip_end - 4:ip_end] = ref_icrc(bytes(f))
    return bytes(f)


def run_until(world, cond, step=1000, limit=10_000_000):
    t0 = world.now
    while not cond():
        assert world.now - t0 < limit, 'condition not reached'
        world.run_for(step)


@pytest.mark.parametrize('echoes, expect', [(1, 'SUCCESS'), (2, 'RETRY_EXC_ERR')])
def test_rnr_echo_seq_nak_costs_no_retry(world, echoes, expect):
    """retry_cnt=0: any sequence NAK that counts as a loss fails the SEND.  The
    first one naming the RNR NAK's PSN after the RNR timer expired is an echo
    and is ignored; a second one (no progress in between) is a real one."""
    a, b = world.devs
    world.set_latency(50_000)  # 50 us each way: the RNR timer (10 us) expires first
    conn = q.connect_rc(a, b, mtu=MTU, retry_cnt=0, rnr_retry=7, min_rnr_timer=1)
    n = 3 * MTU
    la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, n)
    src = la.fill_random(random.Random(1))
    conn.qa.post_send('SEND', [(la, 0, n)], wr_id=7)
    run_until(world, lambda: a.stat('rnr_naks_rcvd') == 1)
    rnr = [f for f in world.frames(roce_only=True) if f.src == 1 and f.is_rnr_nak]
    assert len(rnr) == 1 and rnr[0].psn == conn.psn_a
    world.run_for(20_000)  # RNR timer expired: the SEND is being resent
    assert a.stat('retransmitted_packets') >= 1
    nak = as_seq_nak(rnr[0].data)
    for _ in range(echoes):
        assert a.inject(nak) == 0
        world.run_for(1000)
    assert a.stat('seq_naks_rcvd') == echoes
    conn.qb.post_recv([(rb, 0, n)], wr_id=8)
    assert world.run() == 'idle'
    got = conn.cqa.poll()
    assert [(c['wr_id'], c['status_name']) for c in got] == [(7, expect)]
    if expect == 'SUCCESS':
        assert [(c['wr_id'], c['byte_len']) for c in conn.cqb.poll()] == [(8, n)]
        assert rb.read(0, n) == src
        assert conn.qa.state == 'RTS'
    else:
        assert conn.qa.state == 'ERR'


def window_run(cfg):
    """8 WRITEs of 64 packets (512 in flight), PSN +10 lost, every ACK after
    the sequence NAK lost: returns (device a, first PSN, A's frames, NAK)."""
    w = q.World(2, cfg=cfg)
    try:
        a, b = w.devs
        conn = q.connect_rc(a, b, mtu=MTU, retry_cnt=2, timeout=8, sq_log=4)
        n = 64 * MTU
        la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, 8 * n)
        la.fill_random(random.Random(3))
        lost = (conn.psn_a + 10) & 0xffffff
        w.rule('drop', src=0, psn=lost)
        w.rule('drop', src=1, opcode='RC_ACK', skip=1, count=-1)
        for i in range(8):
            conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, i * n), wr_id=i)
        assert w.run() == 'idle'
        st = [c['status_name'] for c in conn.cqa.poll()]
        assert st[0] == 'RETRY_EXC_ERR' and set(st[1:]) <= {'WR_FLUSH_ERR'}
        frames = w.frames(roce_only=True)
        naks = [f for f in frames if f.src == 1 and f.is_nak]
        assert len(naks) == 1 and naks[0].psn == lost
        return a.stats(), conn.psn_a, [f for f in frames if f.src == 0], naks[0]
    finally:
        w.close()


def psn_off(psn, base):
    return (psn - base) & 0xffffff


def test_loss_window_halves_burst_after_seq_nak():
    stats, psn0, tx, nak = window_run('')
    first = [f for f in tx if psn_off(f.psn, psn0) < 512]
    assert max(psn_off(f.psn, psn0) for f in first) == 511   # the full initial burst
    resent = [f for f in tx if f.t > nak.t]
    assert resent and psn_off(resent[0].psn, psn0) == 10
    # after the cut (512 -> 256) nothing past PSN 10 + 256 - 1 leaves again
    assert max(psn_off(f.psn, psn0) for f in resent) == 10 + 256 - 1
    # the last packet the window allows asks for an ACK
    assert all(f.ackreq for f in resent if psn_off(f.psn, psn0) == 265)
    # one episode: the timeouts that follow (ACKs lost) cut no further
    assert stats['window_cuts'] == 1
    assert stats['retransmit_timeouts'] >= 1


def test_fixed_window_resends_whole_burst():
    stats, psn0, tx, nak = window_run('loss_window=0')
    resent = [f for f in tx if f.t > nak.t]
    assert max(psn_off(f.psn, psn0) for f in resent) == 511
    assert stats['window_cuts'] == 0


def test_window_grows_back_and_data_intact():
    """Random 2 % loss over many messages: the window is cut, grows again,
    every WRITE lands byte-exact and completes in order."""
    w = q.World(2)
    try:
        a, b = w.devs
        conn = q.connect_rc(a, b, mtu=MTU, timeout=10, sq_log=6)
        n = 16 * MTU
        rng = random.Random(5)
        la, rb = a.reg_mr(conn.pda, 40 * n), b.reg_mr(conn.pdb, 40 * n)
        src = la.fill_random(rng)
        w.random_impairments(loss=0.02, seed=9)
        w.trace_enable()
        for i in range(40):
            conn.qa.post_send('RDMA_WRITE', [(la, i * n, n)], remote=(rb, i * n), wr_id=i)
        assert w.run() == 'idle'
        got = conn.cqa.poll()
        assert [(c['wr_id'], c['status_name']) for c in got] == [(i, 'SUCCESS') for i in range(40)]
        assert rb.read() == src
        cuts = [e for e in w.trace() if e['name'] == 'window' and e['dev'] == 0]
        assert a.stat('window_cuts') == len(cuts) >= 1
        assert all(4 <= e['a'] <= 256 for e in cuts)
    finally:
        w.close()


# ---- AckReq policy (docs/spec.md 12.1) --------------------------------------------------
def ackreq_run(signaled, n_msgs, drop_acks=False, sq_log=7):
    """n_msgs one-packet WRITEs posted at once (one doorbell), signaled per the
    set of indexes given.  Returns ({message index: AckReq bit of its first
    transmission}, A's completions, the ACKs B sent)."""
    w = q.World(2)
    try:
        a, b = w.devs
        conn = q.connect_rc(a, b, mtu=MTU, sq_log=sq_log, cq_log=10, retry_cnt=0, timeout=10)
        la, rb = a.reg_mr(conn.pda, MTU), b.reg_mr(conn.pdb, n_msgs * MTU)
        la.fill_random(random.Random(5))
        if drop_acks:
            w.rule('drop', src=1, opcode='RC_ACK', count=-1)
        for i in range(n_msgs):
            conn.qa.post_send('RDMA_WRITE', [(la, 0, MTU)], remote=(rb, i * MTU), wr_id=i,
                              signaled=i in signaled, ring=i == n_msgs - 1)
        w.run()
        frames = w.frames(roce_only=True)
        bits = {}
        for f in frames:
            if f.src == 0 and f.opname == 'RC_WRITE_ONLY':
                bits.setdefault(psn_off(f.psn, conn.psn_a), f.ackreq)
        acks = [psn_off(f.psn, conn.psn_a) for f in frames if f.src == 1 and f.opname == 'RC_ACK']
        assert drop_acks or a.stat('retransmitted_packets') == 0
        return bits, conn.cqa.poll(), acks
    finally:
        w.close()


def test_ackreq_every_16_unsignaled_messages_and_the_last_posted():
    """40 unsignaled WRITEs: AckReq on the 16th and 32nd message and on the
    last one posted (nothing else would ask before the requester goes idle),
    so the last ACK covers all 40 and nothing is resent."""
    bits, cqes, acks = ackreq_run(set(), 40)
    assert sorted(bits) == list(range(40))
    assert [i for i in range(40) if bits[i]] == [15, 31, 39]
    assert cqes == [] and acks and acks[-1] == 39


def test_ackreq_on_signaled_message_restarts_the_count():
    """A signaled message asks for its ACK (its CQE waits for it), and the next
    16-message count starts after it."""
    bits, cqes, acks = ackreq_run({4, 10}, 40)
    assert [i for i in range(40) if bits[i]] == [4, 10, 26, 39]
    assert [(c['wr_id'], c['status_name']) for c in cqes] == [(4, 'SUCCESS'), (10, 'SUCCESS')]


def test_ackreq_when_the_wqe_window_fills():
    """ACKs lost: the requester stops after 64 WQEs (the WQE window).  The
    64th, the last it can send, does not ask for an ACK: 50's AckReq is still
    unanswered, and its ACK is what would reopen the window (before, the 64th
    asked too, and in a deep queue every window reopening asked again)."""
    bits, cqes, _ = ackreq_run({2}, 100, drop_acks=True)
    assert sorted(bits) == list(range(64))      # nothing past the window left
    assert [i for i in range(64) if bits[i]] == [2, 18, 34, 50]
    # retries exhausted: the oldest WQE completes in error, signaled or not
    assert [(c['wr_id'], c['status_name']) for c in cqes][:1] == [(0, 'RETRY_EXC_ERR')]
