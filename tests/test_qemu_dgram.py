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


def dgram_args(i, local, remote, props=''):
    return ['-netdev', f'dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port={local},'
                       f'remote.type=inet,remote.host=127.0.0.1,remote.port={remote}',
            '-device', f'qrnic,netdev=n0,mac={mac_of(i)},id=qrnic{i}{props}']


def start_pair(binary, attempts=3, props=''):
    """Two QEMUs on a UDP cable; retried when a port was taken meanwhile."""
    for attempt in range(attempts):
        p0, p1 = free_udp_ports(2)
        qa = qb = None
        try:
            qa = Qemu(binary, dgram_args(0, p0, p1, props), name='dgramA')
            qb = Qemu(binary, dgram_args(1, p1, p0, props), name='dgramB')
            return qa, qb
        except QemuError:
            for q in (qa, qb):
                if q:
                    q.close()
            if attempt == attempts - 1:
                raise


def pair_world(binary, props=''):
    qa, qb = start_pair(binary, props=props)
    w = World([qa, qb])
    try:
        w.attach(qa, 1, first_idx=0)
        w.attach(qb, 1, first_idx=1)
        for i, d in enumerate(w.devs):
            d.qom_path = f'/machine/peripheral/qrnic{i}'     # dgram_args' ids
            d.init()
    except BaseException:
        w.close()
        raise
    return w


@pytest.fixture(scope='module')
def world(qemu_binary):  # noqa: F811
    w = pair_world(qemu_binary)
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


def _write_send_counting_inline(a, b):
    """A 12 KiB RDMA WRITE and a SEND from a to b, bytes checked; returns
    each device's growth of host-calls.rx-inline."""
    r0 = [d.qom_counters('host-calls')['rx-inline'] for d in (a, b)]
    conn = h.connect_rc(a, b, mtu=4096)
    la, rb = scenarios.mrs(conn, 1 << 16)
    data = bytes((i * 13 + 5) & 0xff for i in range(12288))
    la.write(0, data)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 12288)], remote=(rb, 4096))
    assert [e['status_name'] for e in conn.cqa.wait(1)] == ['SUCCESS']
    assert rb.read(4096, 12288) == data
    conn.qb.post_recv([(rb, 32768, 4096)])
    conn.qa.post_send('SEND', [(la, 100, 3000)])
    assert [e['status_name'] for e in conn.cqa.wait(1)] == ['SUCCESS']
    r = conn.cqb.wait(1)
    assert r[0]['status_name'] == 'SUCCESS' and r[0]['byte_len'] == 3000, r
    assert rb.read(32768, 3000) == data[100:3100]
    return [d.qom_counters('host-calls')['rx-inline'] - x for d, x in zip((a, b), r0)]


def test_rx_inline_runs_the_device_in_the_net_callback(live):
    """rx-inline (on by default, hw/qrnic.c qrnic_rx_inline_ok): a frame from
    the device's own netdev (here dgram) that finds the device idle runs it
    in the net callback: the receiver took the WRITE's and the SEND's frames
    so, the sender the ACKs; the bytes are the same."""
    a, b = live.devs
    assert a.qom_get('rx-inline') is True
    ga, gb = _write_send_counting_inline(a, b)
    assert ga >= 1 and gb >= 1, (ga, gb)


def test_rx_inline_off(qemu_binary):  # noqa: F811
    """rx-inline=off: every frame goes to the bottom half's run, none ran
    inline; the same transfers and bytes."""
    w = pair_world(qemu_binary, props=',rx-inline=off')
    try:
        a, b = w.devs
        assert a.qom_get('rx-inline') is False
        assert _write_send_counting_inline(a, b) == [0, 0]
    finally:
        w.close()
