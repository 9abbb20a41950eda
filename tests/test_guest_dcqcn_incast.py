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

import pytest

from guest import switchlab
from guest.switchlab import switch_topology, watch_dmesg

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
    with switch_topology('S3', QRNIC_PROPS, SWITCH_ARGS) as t:
        yield t


@pytest.fixture
def dmesg(s3):
    yield from watch_dmesg(s3)


def incast(t, rcv, senders):
    return switchlab.incast(t, rcv, senders, BW_OPTS, BW_ITERS, sample_s=SAMPLE_S)


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
