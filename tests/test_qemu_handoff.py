# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: frames between qrnic ports of one QEMU go without a copy
(hw/qrnic.c, qrnic_host_tx_buf; docs/qemu.md section 5).  The sender hands
its frame buffer through the net layer and the qrnic port the frame is
addressed to takes that very buffer (trace point qrnic_rx_handoff) instead
of copying it.  These tests check that the bytes still land right, that
the handoff really happens on a back-to-back hub, and that on a hub of
three ports the third port still gets (a copy of) every frame while the
addressed port takes the buffer."""
import random

import pytest

import qrnic_harness as h
from qtest import scenarios
from qtest.driver import World
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu


def _count(log, name):
    text = log.read_text() if log.exists() else ''
    return sum(1 for line in text.splitlines() if line.split(' ', 1)[0].split(':')[-1] == name)


def _sizes(log, name):
    """Frame sizes of the trace lines of event name ('frame of N bytes ...')."""
    text = log.read_text() if log.exists() else ''
    return [int(line.split('frame of ', 1)[1].split()[0]) for line in text.splitlines()
            if line.split(' ', 1)[0].split(':')[-1] == name and 'frame of ' in line]


def _world(qemu_binary, tmp_path, ndev, name):
    log = tmp_path / 'qemu.log'
    w = World.single(qemu_binary, ndev, name=name,
                     extra_args=['-trace', 'qrnic_rx', '-trace', 'qrnic_rx_handoff',
                                 '-D', str(log)])
    return w, log


def test_back_to_back_frames_are_handed_over(qemu_binary, tmp_path):  # noqa: F811
    w, log = _world(qemu_binary, tmp_path, 2, 'handoff2')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        before_rx = b.query_stats()['rx_packets']
        scenarios.rdma_write(conn, la, rb, random.Random(11), n=12000, sges=3)
        scenarios.rdma_read(conn, la, rb, random.Random(12), n=9000)
        scenarios.send_recv(conn, la, rb, random.Random(13), imm=0x0a0b0c0d)
        w.settle()
        data_pkts = b.query_stats()['rx_packets'] - before_rx
        assert data_pkts >= 12000 // 1024, data_pkts
        rx, taken = _count(log, 'qrnic_rx'), _count(log, 'qrnic_rx_handoff')
        # every frame between the two ports is RoCE to the peer's MAC: all taken
        assert taken > 0 and taken == rx, (taken, rx)
        assert w.alive()
    finally:
        w.close()


def test_three_port_hub_other_port_gets_a_copy(qemu_binary, tmp_path):  # noqa: F811
    w, log = _world(qemu_binary, tmp_path, 3, 'handoff3')
    try:
        a, b, c = w.devs
        c_before = sum(v for k, v in c.query_stats().items() if 'rx' in k)
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        scenarios.rdma_write(conn, la, rb, random.Random(21), n=12000, sges=2)
        scenarios.rdma_read(conn, la, rb, random.Random(22), n=5000)
        w.settle()
        rx, taken = _count(log, 'qrnic_rx'), _count(log, 'qrnic_rx_handoff')
        # each frame reaches both other ports; only the addressed one takes it
        assert taken > 0 and rx >= 2 * taken, (taken, rx)
        c_after = sum(v for k, v in c.query_stats().items() if 'rx' in k)
        assert c_after > c_before, 'the third port saw none of the frames'
        # the third port works on the same hub afterwards
        conn2 = h.connect_rc(c, a, mtu=1024)
        lc, ra = scenarios.mrs(conn2)
        scenarios.rdma_write(conn2, lc, ra, random.Random(23), n=7000, sges=1)
        assert w.alive()
    finally:
        w.close()


def test_sender_fault_plan_turns_the_handover_off(qemu_binary, tmp_path):  # noqa: F811
    """A fault plan on the SENDING port (a tx rule that corrupts the ICRC of
    some frames) must turn the hand-over off: the frames are copied, so the
    receiver checks every ICRC it gets (a vouched frame would skip the check
    and take the corrupted bytes); the corrupted ones are dropped there and
    retransmitted, and the data lands intact."""
    w, log = _world(qemu_binary, tmp_path, 2, 'handoff-txfault')
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024)
        la, rb = scenarios.mrs(conn)
        (rid,) = a.fault(f'corrupt dir=tx part=icrc qp={conn.qa.qpn} op=write nth=2 count=3')
        before = b.query_stats()['rx_drop_icrc']
        scenarios.rdma_write(conn, la, rb, random.Random(31), n=12000, sges=2)
        w.settle()
        rule = a.fault_rule(rid)
        assert rule['fired'] == 3, rule
        assert b.query_stats()['rx_drop_icrc'] - before == 3
        # the trace names no port: tell a's WRITEs (MTU-sized) from b's ACKs (small)
        big = lambda name: [n for n in _sizes(log, name) if n > 512]  # noqa: E731
        assert len(big('qrnic_rx')) >= 12000 // 1024 + 3, big('qrnic_rx')
        assert big('qrnic_rx_handoff') == [], 'a sender with a fault plan handed frames over'
        # b has no fault plan: its ACKs to a are still handed over (a checks them itself)
        assert _sizes(log, 'qrnic_rx_handoff'), 'no hand-over at all: the test proves nothing'
        assert w.alive()
    finally:
        w.close()
