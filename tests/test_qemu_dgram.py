# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: two QEMU processes, one qrnic each, joined by UDP
(-netdev dgram, 127.0.0.1).  Each process has its own virtual clock and main
loop; the RoCEv2 frames cross the host's loopback between them."""
import random

import pytest

import qrnic_harness as h
from qtest import Qemu, QemuError, free_udp_ports, mac_of, scenarios
from qtest.driver import World
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu


def dgram_args(i, local, remote):
    return ['-netdev', f'dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port={local},'
                       f'remote.type=inet,remote.host=127.0.0.1,remote.port={remote}',
            '-device', f'qrnic,netdev=n0,mac={mac_of(i)},id=qrnic{i}']


def start_pair(binary, attempts=3):
    """Two QEMUs on a UDP cable; retried when a port was taken meanwhile."""
    for attempt in range(attempts):
        p0, p1 = free_udp_ports(2)
        qa = qb = None
        try:
            qa = Qemu(binary, dgram_args(0, p0, p1), name='dgramA')
            qb = Qemu(binary, dgram_args(1, p1, p0), name='dgramB')
            return qa, qb
        except QemuError:
            for q in (qa, qb):
                if q:
                    q.close()
            if attempt == attempts - 1:
                raise


@pytest.fixture(scope='module')
def world(qemu_binary):  # noqa: F811
    qa, qb = start_pair(qemu_binary)
    w = World([qa, qb])
    try:
        w.attach(qa, 1, first_idx=0)
        w.attach(qb, 1, first_idx=1)
        for d in w.devs:
            d.init()
    except BaseException:
        w.close()
        raise
    yield w
    w.close()


@pytest.fixture
def live(world):
    assert world.alive(), [q.stderr() for q in world.qemus]
    yield world
    assert world.alive(), [q.stderr() for q in world.qemus]


def test_two_processes_rc_all_opcodes(live):
    a, b = live.devs
    assert a.qemu is not b.qemu
    conn = h.connect_rc(a, b, mtu=1024)
    scenarios.exercise_rc(conn, seed=3)


def test_two_processes_64k_both_ways(live):
    """Larger messages in both directions (UDP loss, if any, is repaired by
    the RC transport: NAKs and the retransmission timer on the virtual clock)."""
    a, b = live.devs
    rng = random.Random(8)
    conn = h.connect_rc(a, b, mtu=4096)
    la, rb = scenarios.mrs(conn, 1 << 16)
    scenarios.rdma_write(conn, la, rb, rng, n=60000, sges=4)
    scenarios.rdma_read(conn, la, rb, rng, n=65000)
    back = h.connect_rc(b, a, mtu=2048)
    lb, ra = scenarios.mrs(back, 1 << 16)
    scenarios.rdma_write(back, lb, ra, rng, n=50000, sges=1)
    for d in (a, b):
        st = d.query_stats()
        assert st['rx_drop_icrc'] == 0 and st['rx_drop_malformed'] == 0
        assert st['dma_errors'] == 0


def test_two_processes_msix(live):
    a, b = live.devs
    conn = h.connect_rc(a, b)
    la, rb = scenarios.mrs(conn, 4096)
    assert conn.b.dev is b
    scenarios.send_with_cq_event(conn, la, rb)


def test_peer_process_reset_then_reconnect(live):
    """QMP system_reset of one process: its peer's QP retries, then fails
    with a defined error; after bring-up both sides connect again."""
    a, b = live.devs
    conn = h.connect_rc(a, b, mtu=1024)
    la, rb = scenarios.mrs(conn, 8192)
    live.system_reset(b.qemu)
    b.init()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(rb, 0), wr_id=9)
    live.clock_rate = 50.0          # retries: 7 x 67 ms of virtual time
    try:
        c = scenarios.one_cqe(conn.cqa, 60)
    finally:
        live.clock_rate = 1.0
    assert c['wr_id'] == 9 and c['status_name'] == 'RETRY_EXC_ERR', c
    assert conn.qa.state == 'ERR'
    scenarios.healthy(live, a, b)
