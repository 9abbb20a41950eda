# SPDX-License-Identifier: GPL-2.0-or-later
"""The DCQCN paper's 2:1 incast with three booted guests (topology S3,
docs/congestion.md "VM topologies", "A queue DCQCN bounds"): vm1 and vm2 run
ib_write_bw to vm0 through qrnic-switch, with devices whose port rate is the
switch port's (the paper's 40G senders into a 40G bottleneck, here 50 Mb/s)
and DCQCN's parameters and the switch's Kmin/Kmax/Pmax scaled to that rate.

Run 1, DCQCN on: vm0's notification point answers CE marks with CNPs and the
senders' reaction points slow down: the switch queue stays small.
Run 2, the same incast with vm0's notification point off (sysfs
cc/np_enable = 0: marks arrive, no CNP): nothing slows the senders and the
queue holds their windows.  Asserted: the largest queue of run 1 is under
half of run 2's, CNPs only in run 1, no drops, both flows overlapped, every
write completed (perftest's own check that both sides finished all
iterations).  Rates and queue sizes are printed, not asserted."""
import os
import time

import pytest

from guest.vmlib import (PrereqError, Topology, VMError, check_pair, need_driver,
                         next_port, perftest_table, wait_tcp_listen, DmesgWatch)

pytestmark = [pytest.mark.guest, pytest.mark.slow]

# How the numbers are made (docs/congestion.md "A queue DCQCN bounds"): the
# paper runs 40 Gb/s; here every port is 50 Mb/s, 800 times slower.  Times
# scale by 800 (55 us timers -> 44 ms, one CNP per 50 us -> 40 ms), bytes
# stay (a byte counter or a queue threshold of B bytes lasts 800 times longer
# at 1/800 of the rate: 10 MB byte counter, Kmin 5 KB, Kmax 200 KB, Pmax 1 %),
# rates scale by 1/800 (R_AI 40 Mb/s -> 0.05, R_HAI 200 -> 0.25) but the
# device's unit is 1 Mb/s, so both are 1 Mb/s.  The QPs start at the line
# rate, as the paper's, with rp-port-hold=on: each packet is handed to the
# port when it is free, so a CNP acts on the next one (off, the model hands
# the port a QP's whole window at once and the first CNPs come a window
# late: see the docs).  QRNIC_DCQCN_START='rp-initial-rate=45' starts them
# limited at 0.9 of the port instead, which works without the hold.
RATE_MBPS = 50
RATE = '%dM' % RATE_MBPS
SWITCH_ARGS = ['--rate', RATE, '--buffer', '8M', '--kmin', '5000', '--kmax', '200000',
               '--pmax', '0.01']
START = os.environ.get('QRNIC_DCQCN_START', 'rp-initial-rate=0,rp-port-hold=on')
QRNIC_PROPS = ('cc-algo=1,profile=cx5-100g,link-mbps=%d,%s,'
               'rp-dce-tcp-g=1020,rp-dce-tcp-rtt=44000,rp-time-reset=44000,'
               'rp-byte-reset=10485760,rp-threshold=5,rp-ai-rate=1,rp-hai-rate=1,rp-min-rate=1,'
               'np-min-time-between-cnps=40000' % (RATE_MBPS, START))
# 200 x 64 KiB per flow (26 MB in all: 4 s at the port rate); the ACK timeout
# (4.096 us x 2^22, 17 s) above any queueing delay of the cc-off run
BW_SIZE, BW_ITERS = 65536, 200
BW_OPTS = '-s %d -n %d -F --report_gbits -u 22' % (BW_SIZE, BW_ITERS)
SAMPLE_S = 0.25


@pytest.fixture(scope='module')
def s3():
    try:
        t = Topology('S3', build=os.environ.get('QRNIC_GUEST_NO_BUILD') != '1',
                     mem=int(os.environ.get('QRNIC_GUEST_MEM', '1024')), qrnic_props=QRNIC_PROPS,
                     switch_args=SWITCH_ARGS)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)
    try:
        t.start()
    except VMError as e:
        pytest.fail('S3 did not boot: %s' % e, pytrace=False)
    try:
        need_driver(t)
        for v in t.vms:
            v.run('[ -d /sys/module/qrnic ] || modprobe qrnic; qrnic-netup >/dev/null', timeout=120)
        eps = t.endpoints(refresh=True)
        usable = [e for e in eps if e.ip and e.gid is not None]
        assert [e.vm.name for e in usable] == ['vm0', 'vm1', 'vm2'], eps
        t.eps = usable
        yield t
    finally:
        t.stop()


@pytest.fixture
def dmesg(s3):
    w = DmesgWatch(s3)
    yield w
    assert all(v.alive() for v in s3.vms), 'a guest died; logs in %s' % s3.rundir
    bad = w.problems()
    assert not bad, 'kernel log problems (logs in %s):\n  %s' % (s3.rundir, '\n  '.join(bad[:40]))


def dev_stats(vm):
    (st,) = vm.qrnic_stats().values()
    return st


def incast(t, rcv, senders):
    """ib_write_bw from each sender to rcv at once; the switch's counters
    every SAMPLE_S while they run.  Returns per-flow Gb/s, the receiver
    port's counter deltas, the device counter deltas and the samples."""
    sw0 = t.switch_stats()
    st0 = [dev_stats(v) for v in t.vms]
    flows = []
    for snd in senders:
        port = next_port()
        srv = rcv.vm.spawn('ib_write_bw -d %s -x %d -p %d %s' % (rcv.ibdev, rcv.gid, port, BW_OPTS))
        assert wait_tcp_listen(rcv.vm, port), 'ib_write_bw server did not listen on %d' % port
        flows.append((snd, port, srv))
    clients = [(snd, srv, snd.vm.spawn('ib_write_bw -d %s -x %d -p %d %s %s'
                                       % (snd.ibdev, snd.gid, port, BW_OPTS, rcv.ip)))
               for snd, port, srv in flows]
    r = t.vms.index(rcv.vm)
    ports = [t.vms.index(snd.vm) for snd in senders]
    samples, deadline = [], time.monotonic() + 900
    while time.monotonic() < deadline:
        sw = t.switch_stats()
        samples.append((time.monotonic(), [sw['ports'][i]['rx_frames'] for i in ports]))
        if all(not cli.poll().running for _s, _v, cli in clients):
            break
        time.sleep(SAMPLE_S)
    gbps = []
    for snd, srv, cli in clients:
        cr = cli.wait(900)
        sr = srv.wait(120)
        check_pair(sr, cr)
        row = perftest_table(cr.output)
        assert row and int(row['#iterations']) == BW_ITERS, cr.output
        gbps.append(float(row['BW_average[Gb/sec]']))
    sw1 = t.switch_stats()
    st1 = [dev_stats(v) for v in t.vms]
    d = [{k: st1[i][k] - st0[i][k] for k in ('cnp_sent', 'cnp_received', 'ecn_marked_received')}
         for i in range(len(st0))]
    q = {k: sw1['ports'][r][k] - sw0['ports'][r][k] for k in ('frames', 'marks', 'drops')}
    q['q_max'] = sw1['ports'][r]['q_max']
    # per sample interval: each sender's frames into the switch -> Mb/s (a
    # frame of 4 KiB payload is about 4200 bytes with headers and overhead)
    rates, both = [], 0
    for (t0, f0), (t1, f1) in zip(samples, samples[1:]):
        moved = [b - a for a, b in zip(f0, f1)]
        both += all(m > 2 for m in moved)
        rates.append(['%.0f' % (m * 4200 * 8 / (t1 - t0) / 1e6) for m in moved])
    q['both'] = both
    return gbps, q, d, rates


def test_dcqcn_bounds_the_incast_queue(s3, dmesg):
    e = s3.eps
    rcv, snd = e[0], [e[1], e[2]]
    np_file = '/sys/class/infiniband/%s/cc/np_enable' % rcv.ibdev
    assert rcv.vm.run('cat %s' % np_file).output.strip() == '1'
    res = {}
    # DCQCN on first: the switch's q_max is the largest queue since its start,
    # so the cc-off run, whose queue is the larger, must come second
    for name, np_on in (('on', 1), ('off', 0)):
        rcv.vm.run('echo %d > %s' % (np_on, np_file))
        res[name] = incast(s3, rcv, snd)
        gbps, q, d, rates = res[name]
        print('\nDCQCN %s (vm0 np_enable=%d), port %sb/s: flows %s Gb/s; switch port 0: %d frames, '
              '%d marked, %d dropped, max queue %d bytes; CNPs sent %d, received (vm1, vm2) %s; '
              'both flows sending in %d samples' % (
                  name, np_on, RATE, gbps, q['frames'], q['marks'], q['drops'], q['q_max'],
                  d[0]['cnp_sent'], [d[1]['cnp_received'], d[2]['cnp_received']], q['both']))
        print('senders\' Mb/s into the switch every %.2f s: %s' % (SAMPLE_S, rates))
    rcv.vm.run('echo 1 > %s' % np_file)
    on, off = res['on'], res['off']
    for gbps, q, d, _r in (on, off):
        assert q['both'] > 0, q               # a 2:1 incast: the flows overlapped
        assert q['drops'] == 0, q
        assert q['marks'] > 0, q
        assert d[0]['ecn_marked_received'] > 0, d
    assert on[2][0]['cnp_sent'] > 0, on[2]
    assert on[2][1]['cnp_received'] > 0 and on[2][2]['cnp_received'] > 0, on[2]
    assert off[2][0]['cnp_sent'] == 0 and off[2][1]['cnp_received'] == 0, off[2]
    # the point: DCQCN keeps the queue far below the windows the cc-off senders park in it
    assert on[1]['q_max'] < off[1]['q_max'] / 2, (on[1], off[1])
