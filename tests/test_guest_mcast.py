# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: UD multicast over rdma_cm with the unmodified `mckey`
(spec 12.11): the receiver joins an IPv4 group, the sender joins as well
and sends; between two ports (T1: two devices in one guest; T2: two
guests) and with both ends on one device (multicast loopback).  mckey
checks no payload; the receiving device's counters show the packets
arrived, and the receiver exits only after all its messages came.

IPv6 groups cannot be joined through rdma_cm on RoCEv2 (Linux's
cma_iboe_join_multicast() returns -ENOTSUPP for them, on any RoCEv2 device:
it sends IGMP for IPv4 groups and has no MLD), so the IPv6 cases run a verbs
program, tests/guest/qrnic_mcast6.c: ibv_attach_mcast() with the IPv6 group
as MGID, an AH to it, payload and the received GRH (the IPv6 header)
checked, and nothing delivered after ibv_detach_mcast()."""
import ipaddress
import os

import pytest

from guest.vmlib import guest_dmesg, host_verbs_program, pair, topo, wait_until  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow]

COUNT = 10


def hw(vm, ibdev):
    out = vm.run('cd /sys/class/infiniband/%s/ports/1/hw_counters && grep . *' % ibdev,
                 timeout=60).output
    return {k: int(v) for k, v in (ln.split(':', 1) for ln in out.split() if ':' in ln)}


def mckey(recv, send, group):
    """The receiver (mckey -m group -b its address) joins; the sender sends
    COUNT messages, again until the receiver has all of them (UD: messages
    sent before the receiver's join completed are lost, as on any fabric)."""
    job = recv.vm.spawn('mckey -m %s -b %s -C %d' % (group, recv.ip, COUNT))
    sends = []
    try:
        for _ in range(8):
            sends.append(send.vm.run('mckey -m %s -b %s -s -C %d' % (group, send.ip, COUNT),
                                     timeout=60, check=False))
            r = job.wait(3)
            if not r.running:
                break
        r = job.wait(30) if r.running else r
    finally:
        if job.result is None:
            job.stop()
    return r, sends


@pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)
def test_mckey_between_two_ports(topo):
    s, c = pair(topo)
    before = hw(s.vm, s.ibdev)
    r, sends = mckey(s, c, '239.1.1.7')
    assert r.rc == 0 and 'data transfers complete' in r.output, r.output
    assert all(x.rc == 0 for x in sends), [x.output for x in sends]
    after = hw(s.vm, s.ibdev)
    assert after['rx_packets'] - before['rx_packets'] >= COUNT


@pytest.mark.parametrize('topo', ['T1'], indirect=True)
def test_mckey_on_one_device(topo):
    """Sender and receiver on the same device: the group's member on the
    sending device gets each message by multicast loopback."""
    s, _ = pair(topo)
    before = hw(s.vm, s.ibdev)
    r, sends = mckey(s, s, '239.1.1.8')
    assert r.rc == 0 and 'data transfers complete' in r.output, r.output
    after = hw(s.vm, s.ibdev)
    assert after['loopback_frames'] - before['loopback_frames'] >= COUNT


# ---- IPv6 groups, at the verbs level -----------------------------------------------------
HERE = os.path.dirname(os.path.abspath(__file__))
MC6_SRC = os.path.join(HERE, 'guest', 'qrnic_mcast6.c')
MC6 = '/tmp/qrnic_mcast6'
COUNT6 = 50


@pytest.fixture(scope='module')
def mc6(tmp_path_factory):
    return host_verbs_program(MC6_SRC, tmp_path_factory.mktemp('mc6'))


def add_ip6(ep, addr):
    """A unique-local address on the port's netdev (no DAD); the driver adds
    its RoCEv2 GID."""
    ep.vm.run('ip -6 addr replace %s/64 dev %s nodad' % (addr, ep.netdev), timeout=30)
    gid = ipaddress.IPv6Address(addr).exploded          # as sysfs prints GIDs
    assert wait_until(ep.vm, "grep -qx '%s' /sys/class/infiniband/%s/ports/1/gids/*"
                      % (gid, ep.ibdev), timeout=30), 'no GID for %s' % addr


def mcast6(recv, send, send_addr, group, prog):
    """Receiver attaches to GROUP; the sender sends COUNT6 messages; the
    receiver detaches; the sender sends COUNT6 more, which must not arrive.
    Returns the receiver's output and the receiving device's rx_packets delta."""
    for ep in {id(recv.vm): recv, id(send.vm): send}.values():
        ep.vm.put(MC6, prog, mode=0o755)
    out = '/tmp/qrnic_mcast6.out'
    recv.vm.run('rm -f %s' % out)
    before = hw(recv.vm, recv.ibdev)
    job = recv.vm.spawn('%s recv %s %s %s %d >%s 2>&1' % (MC6, recv.ibdev, send_addr, group,
                                                           COUNT6, out))
    try:
        assert wait_until(recv.vm, 'grep -q READY %s' % out, timeout=60), \
            recv.vm.run('cat %s' % out, check=False).output
        r1 = send.vm.run('%s send %s %s %s %d' % (MC6, send.ibdev, send_addr, group, COUNT6),
                         timeout=120, check=False, merge=True)
        assert r1.rc == 0 and 'SENT %d' % COUNT6 in r1.output, r1.output
        assert wait_until(recv.vm, 'grep -q DETACHED %s' % out, timeout=60), \
            recv.vm.run('cat %s' % out, check=False).output
        r2 = send.vm.run('%s send %s %s %s %d' % (MC6, send.ibdev, send_addr, group, COUNT6),
                         timeout=120, check=False, merge=True)
        assert r2.rc == 0, r2.output
        r = job.wait(60)
    finally:
        if job.result is None:
            job.stop()
    after = hw(recv.vm, recv.ibdev)
    res = recv.vm.run('cat %s' % out, check=False).output
    return r, res, {k: after[k] - before.get(k, 0) for k in after}


@pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)
def test_ipv6_group_between_two_ports(topo, mc6):
    s, c = pair(topo)
    add_ip6(s, 'fd00:7::1')
    add_ip6(c, 'fd00:7::2')
    r, out, d = mcast6(s, c, 'fd00:7::2', 'ff0e::7:1', mc6)
    assert r.rc == 0, out
    assert 'GOT %d BAD 0' % COUNT6 in out and 'LATE 0' in out, out
    # both batches reached the receiving port: the first to the member QP
    # (RoCE rx_packets), the second, with no member left, to the Ethernet path
    assert d['rx_packets'] == COUNT6, d
    assert d['eth_rx_frames'] + d['eth_rx_drops'] >= COUNT6, d


@pytest.mark.parametrize('topo', ['T1'], indirect=True)
def test_ipv6_group_on_one_device(topo, mc6):
    """Sender and member on the same device: multicast loopback (spec 12.8)."""
    s, _ = pair(topo)
    add_ip6(s, 'fd00:7::1')
    r, out, d = mcast6(s, s, 'fd00:7::1', 'ff0e::7:2', mc6)
    assert r.rc == 0, out
    assert 'GOT %d BAD 0' % COUNT6 in out and 'LATE 0' in out, out
    assert d['loopback_frames'] >= COUNT6, d
