# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: UD multicast over rdma_cm with the unmodified `mckey`
(spec 12.11): the receiver joins an IPv4 group, the sender joins as well
and sends; between two ports (T1: two devices in one guest; T2: two
guests) and with both ends on one device (multicast loopback).  mckey
checks no payload; the receiving device's counters show the packets
arrived, and the receiver exits only after all its messages came."""
import pytest

from guest.vmlib import guest_dmesg, pair, topo  # noqa: F401

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
