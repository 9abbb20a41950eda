# SPDX-License-Identifier: GPL-2.0-or-later
"""Frames the host vouches for (qrnic_dev_rx_frame_buf_vouched).

QEMU hands a frame buffer from one qrnic port to another of the same
process untouched (hw/qrnic.c): the receiving device need not compute the
ICRC the sending device has just computed over the same bytes.  The
harness does the same for the frames nothing changed on the way
(World.vouch); a frame a rule corrupts or marks is delivered as usual and
checked.  A device with a fault plan loaded checks every ICRC anyway.
"""
import random

import qrnic_harness as q

MTU = 1024


def make_conn(world, n, rng):
    conn = q.connect_rc(world.devs[0], world.devs[1], mtu=MTU)
    la = conn.a.dev.reg_mr(conn.pda, n)
    rb = conn.b.dev.reg_mr(conn.pdb, n)
    return conn, la, rb, la.fill_random(rng)


def statuses(cq):
    return [c['status_name'] for c in cq.poll()]


def test_vouched_delivery_moves_the_same_data_and_still_catches_corruption(world):
    rng = random.Random(5)
    n = 8 * MTU
    conn, la, rb, src = make_conn(world, n, rng)
    world.vouch(True)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    b = world.devs[1]
    assert b.stat('rx_drop_icrc') == 0
    # a corrupted frame is not vouched for: checked, dropped, retransmitted
    rid = world.rule('corrupt', src=0, psn=(conn.psn_a + 8 + 3) & 0xffffff, arg=300, arg2=0x04)
    rb.write(0, bytes(n))
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    assert world.rule_fired(rid) == 1 and b.stat('rx_drop_icrc') == 1
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src


def test_vouched_frame_is_not_checked_unless_a_fault_plan_is_loaded(world):
    rng = random.Random(6)
    conn, la, rb, src = make_conn(world, MTU, rng)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 64)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS']
    req = [f for f in world.frames(roce_only=True) if f.src == 0][-1]
    bad = bytearray(req.data)
    bad[-1] ^= 0x5a                         # its ICRC is wrong now
    b = world.devs[1]
    drops, rx = b.stat('rx_drop_icrc'), b.stat('rx_packets')
    assert b.inject(bad) == 0
    world.run()
    assert b.stat('rx_drop_icrc') == drops + 1 and b.stat('rx_packets') == rx
    # vouched for (a host that lies): taken as it is -- a duplicate WRITE, ACKed again
    assert b.inject_vouched(bad) == 0
    world.run()
    assert b.stat('rx_drop_icrc') == drops + 1 and b.stat('rx_packets') == rx + 1
    # under a fault plan the device checks anyway
    b.fault('drop dir=tx op=write nth=1000')
    assert b.inject_vouched(bad) == 0
    world.run()
    assert b.stat('rx_drop_icrc') == drops + 2 and b.stat('rx_packets') == rx + 1
    assert b.inject_vouched(bytes(req.data)) == 0
    world.run()
    assert b.stat('rx_packets') == rx + 2
