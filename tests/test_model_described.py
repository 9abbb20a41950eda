# SPDX-License-Identifier: GPL-2.0-or-later
"""Headers by description (qrnic_frame_buf_set_pkt, qrnic_wire_pkt_received).

On a trusted in-process wire with nothing that reads frames, the sending
device does not build a frame's header bytes: the frame buffer carries the
packet it would be built from, and the receiving device takes it as parsing
the built frame would give it (tests/c/wire_selftest.c checks that equality
for every opcode, both IP versions and many payload sizes).  Anything that
reads the bytes (a frame log, capture, wire rule, fault plan) gets them
built first, by the same builder.

Here every kind of packet (RC SEND/WRITE/READ/atomics with their
responses, ACKs, NAKs after random loss, RNR NAKs, UD with immediate data)
goes once by description and once as bytes: the completions, the memory
and the device counters must come out the same.
"""
import random

import qrnic_harness as q

MTU = 1024
QKEY = 0x11111111


def mixed_workload(world):
    """Run a mix of every packet kind; return what the hosts can see."""
    rng = random.Random(11)
    a, b = world.devs
    assert world.trusted_wire(True)
    conn = q.connect_rc(a, b, mtu=MTU, timeout=8, min_rnr_timer=1)
    n = 5 * MTU + 77
    la, lb = a.reg_mr(conn.pda, 4 * n), b.reg_mr(conn.pdb, 4 * n)
    la.fill_random(rng)
    lb.fill_random(rng)
    atom = b.reg_mr(conn.pdb, 64)
    atom.fill_random(rng)
    # RNR: a SEND before its receive is posted, then the receive
    conn.qa.post_send('SEND', [(la, 0, 300)], wr_id=1)
    world.run_for(3_000)
    conn.qb.post_recv([(lb, 2 * n, n)], wr_id=2)
    world.run()
    world.random_impairments(loss=0.1, seed=3)
    assert world.trusted_wire(True)
    for r in range(4):
        w = 10 * r
        conn.qb.post_recv([(lb, 3 * n, n)], wr_id=w + 3)
        conn.qa.post_send('SEND_WITH_IMM', [(la, n, n)], imm=0x1234567 + r, wr_id=w + 4)
        conn.qa.post_send('RDMA_WRITE', [(la, 2 * n, n)], remote=(lb, 0), wr_id=w + 5)
        conn.qa.post_send('RDMA_WRITE', [(la, 13 + r, 3)], remote=(lb, n + 1), wr_id=w + 6)
        conn.qa.post_send('RDMA_READ', [(la, 3 * n, n)], remote=(lb, n + r), wr_id=w + 7)
        conn.qa.post_send('ATOMIC_CMP_AND_SWP', [(la, 8, 8)], remote=(atom, 8), compare=0,
                          swap=0x1122334455667788 + r, wr_id=w + 8)
        conn.qa.post_send('ATOMIC_FETCH_AND_ADD', [(la, 16, 8)], remote=(atom, 16), add=5,
                          wr_id=w + 9)
        assert world.run() == 'idle'
    world.random_impairments()
    # UD with immediate data (DETH)
    sa, sb = q.create_ud(a, qkey=QKEY), q.create_ud(b, qkey=QKEY)
    ah = a.ah_to(sa.pd, b)
    ua, ub = a.reg_mr(sa.pd, 4096), b.reg_mr(sb.pd, 8192)
    ua.fill_random(rng)
    sb.qp.post_recv([(ub, 0, q.GRH_BYTES + 4096)], wr_id=10)
    sa.qp.post_send('SEND_WITH_IMM', [(ua, 0, 1000)], ah=ah, remote_qpn=sb.qp.qpn, qkey=QKEY,
                    imm=0xabcdef, wr_id=11)
    assert world.run() == 'idle'
    cqes = [conn.cqa.poll(), conn.cqb.poll(), sa.cq.poll(), sb.cq.poll()]
    mem = [la.read(), lb.read(), atom.read(), ub.read()]
    return cqes, mem, a.stats(), b.stats()


def test_described_headers_give_what_the_bytes_give():
    with q.World(2, framelog=0) as bare:
        described = mixed_workload(bare)
        ws = bare.wire_stats()
    with q.World(2) as logged:          # the frame log builds every frame's bytes
        built = mixed_workload(logged)
        ws_logged = logged.wire_stats()
    # all but the few packets whose payload spans host pages that are not
    # contiguous (those carry bytes, see test_model_payload_ref.py)
    assert ws['described'] >= 0.8 * ws['delivered'] and ws_logged['described'] == 0
    assert ws['drop_random'] > 0 and ws['drop_random'] == ws_logged['drop_random']
    cqes, _, sa, sb = described
    assert all(c['status_name'] == 'SUCCESS' for cq in cqes for c in cq)
    assert sorted(c['wr_id'] for cq in cqes for c in cq) == \
        sorted([1, 2, 10, 11] + [10 * r + k for r in range(4) for k in range(3, 10)])
    assert sa['rnr_naks_rcvd'] >= 1 and sb['rnr_naks_sent'] >= 1
    assert sa['retransmitted_packets'] > 0
    assert described == built


def logged_write(trusted):
    """One two-packet RDMA WRITE with a frame log: (frames, source, sent PSN)."""
    with q.World(2) as world:
        a, b = world.devs
        assert world.trusted_wire(trusted) == trusted
        conn = q.connect_rc(a, b, mtu=MTU)
        la, rb = a.reg_mr(conn.pda, 2 * MTU), b.reg_mr(conn.pdb, 2 * MTU)
        src = la.fill_random(random.Random(2))
        world.clear_frames()
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 2 * MTU)], remote=(rb, 0))
        assert world.run() == 'idle'
        assert rb.read() == src
        assert world.wire_stats()['described'] == 0     # the log built them all
        return world.frames(roce_only=True), src, conn.psn_a


def test_frame_log_gets_built_headers():
    # a frame log reads every frame: a described frame's headers are built
    # into it first, by the builder a checked wire uses when it sends:
    # the same bytes but for the ICRC, which a trusted wire leaves 0
    frames, src, psn = logged_write(trusted=True)
    reqs = [f for f in frames if f.src == 0]
    acks = [f for f in frames if f.src == 1]
    assert [f.psn for f in reqs] == [psn, (psn + 1) & 0xffffff]
    assert b''.join(f.payload for f in reqs) == src
    assert acks and acks[-1].psn == (psn + 1) & 0xffffff
    checked, _, _ = logged_write(trusted=False)
    assert [f.data[:-4] for f in frames] == [f.data[:-4] for f in checked]
    assert all(f.data[-4:] == bytes(4) for f in frames)
    assert all(f.data[-4:] != bytes(4) for f in checked)
