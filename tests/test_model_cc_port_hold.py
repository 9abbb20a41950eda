# SPDX-License-Identifier: GPL-2.0-or-later
"""rp_port_hold (spec 12.15, docs/congestion.md "A queue DCQCN bounds"):
under a timing profile a QP with congestion control at the line rate hands
the port one packet at a time, so that a CNP acts on its next packet.

The guests' 2:1 incast in qrnic-sim: devices and switch at 50 Mb/s, DCQCN
scaled from the paper, every QP starting at the line rate.  Without the
hold, both QPs' windows (512 packets of 4 KiB each) are handed to the port
at once and the queue takes them before a CNP can act: measured 2545 KB.
With it: 451 KB.  Asserted: under half.  Off (the default) changes
nothing; a QP without congestion control is never held."""
import json
import os
import subprocess

import qrnic_harness as q

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
DCQCN = ('cc_algo=1,rp_initial_rate=0,rp_dce_tcp_g=1020,rp_dce_tcp_rtt=44000,'
         'rp_time_reset=44000,rp_byte_reset=10485760,rp_threshold=5,rp_ai_rate=1,'
         'rp_hai_rate=1,rp_min_rate=1,np_min_time_between_cnps=40000')
BASE = ['--hosts', '3', '--incast', '--op', 'write', '--size', '64K', '--depth', '128',
        '--count', '100', '--profile', 'cx5-100g', '--timing', 'link_mbps=50', '--rate', '50M',
        '--overhead', '24', '--latency', '1ms', '--buffer', '8M', '--kmin', '5000',
        '--kmax', '200000', '--pmax', '0.01', '--verify', 'end']


def run(device):
    cmd = [SIM, '--json', '--deterministic'] + BASE + ['--device', device]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, f'{cmd}: {r.stdout[-2000:]} {r.stderr[-2000:]}'
    j = json.loads(r.stdout)
    assert j['ok'] and j['verified']['errors'] == 0 and j['messages'] == 200, j
    return r.stdout, j['incast']


def test_port_hold_lets_the_first_cnps_bound_the_queue():
    _, off = run(DCQCN)
    _, on = run(DCQCN + ',rp_port_hold=1')
    print('max queue: %d B without the hold, %d B with it' % (off['queue']['max'], on['queue']['max']))
    for i in (off, on):
        assert i['drops'] == 0 and i['cnp_sent'] > 0 and i['marks'] > 0, i
    # without: the two windows (2 x 2 MiB) at 100 Mb/s into 50: about half in the queue
    assert off['queue']['max'] > 2_000_000, off['queue']
    assert on['queue']['max'] < off['queue']['max'] / 2, (on['queue'], off['queue'])


def test_port_hold_off_is_the_default():
    a, _ = run(DCQCN)
    b, _ = run(DCQCN + ',rp_port_hold=0')
    assert a == b


def test_port_hold_leaves_qps_without_cc_alone():
    a, i = run('cc_algo=0')
    b, _ = run('cc_algo=0,rp_port_hold=1')
    assert a == b
    assert i['cnp_sent'] == 0 and i['queue']['max'] > 3_000_000, i   # the windows, unheld
