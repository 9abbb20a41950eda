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
