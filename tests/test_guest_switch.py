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
import os
import time

import pytest

from guest.vmlib import (PrereqError, Topology, VMError, check_pair, need_driver,
                         next_port, perftest_table, wait_tcp_listen, DmesgWatch)

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
    try:
        t = Topology('S4', build=os.environ.get('QRNIC_GUEST_NO_BUILD') != '1',
                     mem=int(os.environ.get('QRNIC_GUEST_MEM', '1024')), qrnic_props='cc-algo=1',
                     switch_args=SWITCH_ARGS)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)
    t.vms[3].qrnic_props = 'cc-algo=0'     # the receiver of the second incast: cc off
    try:
        t.start()
    except VMError as e:
        pytest.fail('S4 did not boot: %s' % e, pytrace=False)
    try:
        need_driver(t)
        for v in t.vms:
            v.run('[ -d /sys/module/qrnic ] || modprobe qrnic; qrnic-netup >/dev/null', timeout=120)
        eps = t.endpoints(refresh=True)
        usable = [e for e in eps if e.ip and e.gid is not None]
        assert len(usable) == 4 and [e.vm.name for e in usable] == ['vm0', 'vm1', 'vm2', 'vm3'], eps
        t.eps = usable
        yield t
    finally:
        t.stop()
        print('switch counters at the end: %s' % (t.switch_final and
              [(p['port'], p['rx_frames'], p['marks'], p['drops']) for p in t.switch_final['ports']]))


@pytest.fixture
def dmesg(star):
    w = DmesgWatch(star)
    yield w
    assert all(v.alive() for v in star.vms), 'a guest died; logs in %s' % star.rundir
    bad = w.problems()
    assert not bad, 'kernel log problems (logs in %s):\n  %s' % (star.rundir, '\n  '.join(bad[:40]))


def dev_stats(vm):
    """the counters of the VM's one qrnic (QMP qom-get stats)"""
    (st,) = vm.qrnic_stats().values()
    return st


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
        assert _listening(s.vm, port), 'pingpong server on %s did not listen' % s.vm.name
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


def _listening(vm, port):
    return wait_tcp_listen(vm, port)


def incast(star, rcv, senders):
    """ib_write_bw from each sender to rcv at the same time; returns the per-flow
    Gb/s (perftest's BW average) and the counter deltas of the switch and devices."""
    sw0 = star.switch_stats()
    st0 = [dev_stats(v) for v in star.vms]
    flows = []
    for snd in senders:
        port = next_port()
        srv = rcv.vm.spawn('ib_write_bw -d %s -x %d -p %d %s' % (rcv.ibdev, rcv.gid, port, BW_OPTS))
        assert _listening(rcv.vm, port), 'ib_write_bw server did not listen on %d' % port
        flows.append((snd, port, srv))
    clients = [(snd, srv, snd.vm.spawn('ib_write_bw -d %s -x %d -p %d %s %s'
                                       % (snd.ibdev, snd.gid, port, BW_OPTS, rcv.ip)))
               for snd, port, srv in flows]
    # while they run: the switch's counters every 0.25 s; an interval in which
    # both senders' ports took frames in is one where the two flows overlapped
    ports = [star.vms.index(snd.vm) for snd, _srv, _cli in clients]
    prev, both, active, deadline = None, 0, 0, time.monotonic() + 600
    while time.monotonic() < deadline:
        cur = [p['rx_frames'] for p in star.switch_stats()['ports']]
        if prev is not None:
            moved = [cur[i] - prev[i] > 2 for i in ports]   # more than a stray ND/ARP frame
            both += all(moved)
            active += any(moved)
        prev = cur
        if all(not cli.poll().running for _snd, _srv, cli in clients):
            break
        time.sleep(0.25)
    gbps = []
    for snd, srv, cli in clients:
        cr = cli.wait(600)
        sr = srv.wait(120)
        check_pair(sr, cr)
        row = perftest_table(cr.output)
        assert row and int(row['#iterations']) == BW_ITERS, cr.output
        gbps.append(float(row['BW_average[Gb/sec]']))
    sw1 = star.switch_stats()
    st1 = [dev_stats(v) for v in star.vms]
    d = [{k: st1[i][k] - st0[i][k] for k in ('cnp_sent', 'cnp_received', 'ecn_marked_received')}
         for i in range(len(st0))]
    r = star.vms.index(rcv.vm)
    q = {k: sw1['ports'][r][k] - sw0['ports'][r][k] for k in ('frames', 'marks', 'drops')}
    q['q_max'] = sw1['ports'][r]['q_max']
    q['both'], q['active'] = both, active
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
