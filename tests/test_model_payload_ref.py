# SPDX-License-Identifier: GPL-2.0-or-later
"""Payloads by reference (qrnic_host_ops.dma_map, qrnic_frame_buf_fill).

On a trusted in-process wire the sending device does not copy a payload
into its frame: the frame refers to the sender's memory and the receiving
device copies from there into its own -- one copy per packet.  The bytes
are then read when the frame arrives, which verbs allow (a send buffer may
not change before its work request completes).  Anything that reads a
frame's bytes on the way (frame log, capture, corruption, a fault plan, an
Ethernet path) gets them copied in first; IPv6 frames (whose UDP checksum
covers the payload) are always built with their bytes.
"""
import random

import pytest

import qrnic_harness as q

MTU = 1024


@pytest.fixture
def bare():
    """Two cabled devices without a frame log (which would need the bytes)."""
    w = q.World(2, framelog=0)
    yield w
    w.close()


def write_changed_in_flight(world, trusted, gid_index=0, n=MTU):
    """Post one RDMA WRITE, change the source while its packet is on the
    wire, and return (received, source before, source after, DMA stats
    of the sender)."""
    rng = random.Random(5)
    world.set_latency(50_000)
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=MTU, gid_index=gid_index)
    la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, n)
    before = la.fill_random(rng)
    assert world.trusted_wire(trusted) == trusted
    dma0 = a.dma_stats()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    world.run_for(20_000)           # sent, not yet arrived
    assert b.stat('rx_packets') == 0 and a.stat('tx_packets') >= 1
    after = la.fill_random(rng)
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    dma1 = a.dma_stats()
    return rb.read(), before, after, {k: dma1[k] - dma0[k] for k in dma1}


def test_trusted_wire_reads_the_payload_when_it_arrives(bare):
    got, before, after, dma = write_changed_in_flight(bare, trusted=True)
    assert before != after and got == after
    assert dma['read_bytes'] >= MTU and dma['fails'] == 0


def test_checked_wire_copies_the_payload_when_it_leaves(bare):
    # the same with ICRCs: the frame holds its bytes, as on a real wire;
    # the sender's DMA reads are counted the same either way
    got, before, after, dma = write_changed_in_flight(bare, trusted=False)
    assert before != after and got == before
    with q.World(2, framelog=0) as w2:
        _, _, _, dma_ref = write_changed_in_flight(w2, trusted=True)
    assert dma_ref == dma


def test_ipv6_frames_carry_their_bytes(bare):
    got, before, after, _ = write_changed_in_flight(bare, trusted=True, gid_index=1)
    assert got == before


def test_frame_log_sees_the_payload(world):
    # a frame log reads every frame: the payload is copied in before it
    rng = random.Random(7)
    a, b = world.devs
    conn = q.connect_rc(a, b, mtu=MTU)
    n = 3 * MTU + 100
    la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    assert world.trusted_wire(True)
    world.clear_frames()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert world.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS'] and rb.read() == src
    reqs = [f for f in world.frames(roce_only=True) if f.src == 0]
    assert b''.join(f.payload for f in reqs) == src


@pytest.mark.parametrize('op', ['SEND', 'RDMA_WRITE', 'RDMA_READ'])
def test_gathers_and_page_crossings_arrive_whole(bare, op):
    # several SGEs (not contiguous in host memory: a reference cannot span
    # them, the frame gets bytes), unaligned offsets crossing pages
    # (contiguous: one reference), READ responses (the responder's payload)
    rng = random.Random(op)
    a, b = bare.devs
    assert bare.trusted_wire(True)
    conn = q.connect_rc(a, b, mtu=MTU)
    n = 6 * MTU + 333
    la1, la2 = a.reg_mr(conn.pda, n), a.reg_mr(conn.pda, n)
    rb = b.reg_mr(conn.pdb, 2 * n + 8192)
    s1, s2 = la1.fill_random(rng), la2.fill_random(rng)
    rsrc = rb.fill_random(rng)
    sges = [(la1, 17, 2000), (la2, 5, 3000), (la1, 4099, n - 4099)]
    total = sum(s[2] for s in sges)
    if op == 'SEND':
        conn.qb.post_recv([(rb, 4096 + 3, total)])
        conn.qa.post_send('SEND', sges)
    elif op == 'RDMA_WRITE':
        conn.qa.post_send('RDMA_WRITE', sges, remote=(rb, 4096 + 3))
    else:
        conn.qa.post_send('RDMA_READ', sges, remote=(rb, 4096 + 3))
    assert bare.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    if op == 'RDMA_READ':
        want = rsrc[4096 + 3:4096 + 3 + total]
        got = la1.read()[17:2017] + la2.read()[5:3005] + la1.read()[4099:n]
        assert got == want
    else:
        want = s1[17:2017] + s2[5:3005] + s1[4099:n]
        assert rb.read()[4096 + 3:4096 + 3 + total] == want


@pytest.mark.parametrize('action', ['drop', 'dup', 'hold'])
def test_wire_rules_and_losses_keep_the_data(bare, action):
    # a dropped frame is resent (read again from the sender's memory), a
    # duplicated or held one gets its bytes copied in by the wire (rules
    # read frames); random loss leaves references alone
    rng = random.Random(action)
    a, b = bare.devs
    conn = q.connect_rc(a, b, mtu=MTU, timeout=8)
    n = 8 * MTU
    la, rb = a.reg_mr(conn.pda, n), b.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    assert bare.trusted_wire(True)
    rid = bare.rule(action, src=0, psn=(conn.psn_a + 3) & 0xffffff, arg=2)
    assert bare.trusted_wire(True)          # rules that do not corrupt keep it
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert bare.run() == 'idle'
    assert bare.rule_fired(rid) == 1
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS'] and rb.read() == src
    bare.clear_rules()
    bare.random_impairments(loss=0.2, seed=4)
    assert bare.trusted_wire(True)
    src = la.fill_random(rng)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0))
    assert bare.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS'] and rb.read() == src
    assert a.stat('retransmitted_packets') > 0
