# SPDX-License-Identifier: GPL-2.0-or-later
"""Four guests on one qrnic-switch (topology S4, docs/congestion.md "VM
topologies"): the simulator's switch between booted guests.

* two pairs exchange ibv_rc_pingpong at once through the switch; the frames
  the switch took in from each port are the frames that port's qrnic sent;
* the 2:1 incast of the DCQCN paper with guests: vm1 and vm2 run ib_write_bw
  to vm0 at the same time; with cc-algo=1 on every device and RED/ECN on a
  port rate the guests exceed, the switch marks frames, vm0's qrnic sends
  CNPs and the senders' qrnics receive them;
* the same incast to vm3, whose qrnic has congestion control off (cc-algo=0,
  its notification point is off): the switch still marks the senders'
  ECN-capable frames, but no CNP is sent or received.

Every VM is TCG; the switch's port rate (20 Mb/s) is one the guests pass
with two flows, so its queue towards the receiver builds for real.  The
perftest figures, marks and CNPs are printed (they are not asserted: timing
on this host is noisy)."""
import time

import pytest

from guest import switchlab
from guest.switchlab import dev_stats, switch_topology, watch_dmesg
from guest.vmlib import check_pair, next_port, wait_tcp_listen

pytestmark = [pytest.mark.guest, pytest.mark.slow]

# The switch: a port rate two TCG guests exceed together, RED/ECN thresholds
# well inside a buffer that holds the flows' windows (no drops wanted)
RATE = '50M'
SWITCH_ARGS = ['--rate', RATE, '--buffer', '8M', '--kmin', '8K', '--kmax', '64K', '--pmax', '0.5']
# ib_write_bw: 64 KiB writes; 200 of them (2 s at the port rate) so that the
# flows overlap although they start one after the other.  The
# queue may hold both flows' windows (seconds at this rate, and the device does
# not pace without a timing profile): an ACK timeout of 4.096 us x 2^22 (17 s,
# -u 22) keeps the senders from retransmitting what is only queued
BW_SIZE, BW_ITERS = 65536, 200
BW_OPTS = '-s %d -n %d -F --report_gbits -u 22' % (BW_SIZE, BW_ITERS)


@pytest.fixture(scope='module')
def star():
    # vm3, the receiver of the second incast: cc off
    with switch_topology('S4', 'cc-algo=1', SWITCH_ARGS, vm_props={3: 'cc-algo=0'}) as t:
        try:
            yield t
        finally:
            print('switch counters at the end: %s' % (t.switch_final and
                  [(p['port'], p['rx_frames'], p['marks'], p['drops']) for p in t.switch_final['ports']]))


@pytest.fixture
def dmesg(star):
    yield from watch_dmesg(star)


def wire_frames(st):
    """frames the device put on its cable: every frame it sent but the ones it looped back"""
    return st['tx_packets'] - st['loopback_frames']


def test_pingpong_two_pairs(star, dmesg):
    """vm0 <-> vm1 and vm2 <-> vm3 at once; afterwards, for every port, the frames
    the switch took in = the frames that VM's qrnic sent (counted while the
    guests are quiet: ND/ARP may add a frame between the two reads, so up to
    three tries)."""
    e = star.eps
    jobs = []
    for s, c in ((e[0], e[1]), (e[2], e[3])):
        port = next_port()
        srv = s.vm.spawn('ibv_rc_pingpong -d %s -g %d -p %d -n 200 -s 4096' % (s.ibdev, s.gid, port))
        jobs.append((s, c, port, srv))
    results = []
    for s, c, port, srv in jobs:
        assert wait_tcp_listen(s.vm, port), 'pingpong server on %s did not listen' % s.vm.name
        results.append((srv, c.vm.spawn('ibv_rc_pingpong -d %s -g %d -p %d -n 200 -s 4096 %s'
                                        % (c.ibdev, c.gid, port, s.ip))))
    for srv, cli in results:
        cr, sr = cli.wait(180), srv.wait(60)
        check_pair(sr, cr)
        assert '200 iters' in cr.output, cr.output
    for attempt in range(3):
        time.sleep(1)
        dev = [wire_frames(dev_stats(v)) for v in star.vms]
        sw = star.switch_stats()
        rx = [p['rx_frames'] for p in sw['ports']]
        if rx == dev:
            break
    print('frames sent by the devices %s, taken in by the switch %s' % (dev, rx))
    assert rx == dev, (dev, rx)
    assert all(n >= 400 for n in rx), rx   # each side of a pingpong sent 200 x 4 KiB at least
    assert all(p['drops'] == 0 and p['malformed'] == 0 for p in sw['ports']), sw


def incast(star, rcv, senders):
    gbps, q, d, _rates = switchlab.incast(star, rcv, senders, BW_OPTS, BW_ITERS, timeout=600)
    return gbps, q, d


def _report(what, senders, gbps, q, d, r):
    print('%s at %sb/s: flows %s Gb/s (sum %.3f); switch port %d: %d frames, %d marked, %d dropped, '
          'max queue %d bytes; CNPs sent by the receiver %d, received by the senders %s; '
          'CE-marked packets at the receiver %d; both flows sending in %d of %d 0.25 s samples'
          % (what, RATE, ['%.3f' % g for g in gbps], sum(gbps), r, q['frames'], q['marks'], q['drops'],
             q['q_max'], d[r]['cnp_sent'], [d[s]['cnp_received'] for s in senders],
             d[r]['ecn_marked_received'], q['both'], q['active']))


def test_incast_dcqcn_on(star, dmesg):
    """2:1 incast to vm0 with DCQCN on: marks at the switch, CNPs from vm0 to vm1 and vm2."""
    e = star.eps
    gbps, q, d = incast(star, e[0], [e[1], e[2]])
    _report('incast vm1+vm2 -> vm0, DCQCN on', [1, 2], gbps, q, d, 0)
    assert q['both'] > 0, q                   # a 2:1 incast: the flows overlapped
    assert q['marks'] > 0, q                  # the queue passed kmin: RED marked
    assert d[0]['ecn_marked_received'] > 0, d
    assert d[0]['cnp_sent'] > 0, d            # the notification point answered
    assert d[1]['cnp_received'] > 0 and d[2]['cnp_received'] > 0, d
    assert d[0]['cnp_sent'] >= d[1]['cnp_received'] + d[2]['cnp_received'], d
    assert q['drops'] == 0, q


def test_incast_cc_off_receiver(star, dmesg):
    """The same incast to vm3, whose qrnic has cc-algo=0: marked frames arrive, no CNP."""
    e = star.eps
    gbps, q, d = incast(star, e[3], [e[1], e[2]])
    _report('incast vm1+vm2 -> vm3, cc off at vm3', [1, 2], gbps, q, d, 3)
    assert q['both'] > 0, q
    assert q['marks'] > 0, q                  # the senders' frames are ECN-capable and queued
    assert d[3]['cnp_sent'] == 0, d
    assert d[1]['cnp_received'] == 0 and d[2]['cnp_received'] == 0, d
