# SPDX-License-Identifier: GPL-2.0-or-later
"""Priority queues with a shared buffer, in a leaf-spine, and lossy
priorities beside lossless ones (hx_switch_cfg.prio_queues with
shared_buffer or leaves, hx_switch_cfg.pfc_lossy; qrnic-sim/qrnic-switch
--prio-queues --shared-buffer, --leaves, --pfc-prios; docs/congestion.md).

With a shared buffer of B bytes every queue (port, priority) may hold at
most alpha x (B - bytes in use) (the dynamic threshold of Broadcom's MMU
and HPCC's ns-3 SwitchMmu, per queue): one congested queue alone settles
at alpha B / (1 + alpha), two at alpha B / (1 + 2 alpha) each."""
import json
import os
import subprocess

import pytest

import qrnic_harness as q
from test_model_switch_ets import OVERHEAD, RATE, blast, wire_ns

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
SWITCH = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-switch')
B = 1 << 20


def shared_star(alpha, **kw):
    w = q.World(3, cable=False)
    w.switch_attach(rate_bps=RATE, overhead=OVERHEAD, latency_ns=1000, buffer=1 << 30,
                    prio_queues=1, shared_buffer=B, alpha=alpha, **kw)
    return w


@pytest.mark.parametrize('alpha', [1, 0.25])
def test_a_congested_low_priority_drops_at_its_threshold_the_high_one_not(alpha):
    """4 MB of priority 0 from two hosts into one port at once:
    it drops at alpha B / (1 + alpha); then 100 frames of priority 3 all
    get through at once (strict priority), in their own share of the buffer"""
    w = shared_star(alpha)
    m = 1000 + OVERHEAD
    blast(w, 1, 0, 1000, 2000)
    blast(w, 2, 0, 1000, 2000)
    w.run(ns=5000)             # they came at once (no wire rate): the queue is full
    s0 = w.switch_queue(0, 0)
    bound = alpha * B / (1 + alpha)
    assert s0['drops'] > 0 and s0['drops'] + s0['frames'] == 4000
    assert 0.95 * bound <= s0['q_max'] <= bound + m and s0['q_now'] > 100 * m
    t0 = s0['tx_frames']
    blast(w, 2, 3, 1000, 100)
    w.run(ns=wire_ns(100 * m) + 1000)
    s0, s3 = w.switch_queue(0, 0), w.switch_queue(0, 3)
    print(f'alpha {alpha}: priority 0 q_max {s0["q_max"]} (bound {bound:.0f}), '
          f'drops {s0["drops"]}; priority 3 drops {s3["drops"]}, sent {s3["tx_frames"]}, '
          f'q_max {s3["q_max"]}')
    assert s3['drops'] == 0 and s3['frames'] == 100
    assert s3['tx_frames'] == 100 and s3['q_now'] == 0 and s3['q_max'] == 100 * m
    # they passed priority 0's queue: it is still there, and draining it
    # alone would have taken longer than this whole run
    assert s0['q_now'] > 100 * m and s0['tx_frames'] - t0 < 100
    used, mx = w.shared_used()
    assert mx <= B
    w.close()


def test_two_congested_queues_share_the_buffer_by_the_threshold():
    """priorities 0 and 1 both congested: each held to alpha B / (1 + 2 alpha)
    (alpha 1: B / 3), not to B / 2"""
    w = shared_star(1)
    m = 1000 + OVERHEAD
    blast(w, 1, 0, 1000, 2000)
    blast(w, 2, 1, 1000, 2000)
    w.run(ns=5000)
    s0, s1 = w.switch_queue(0, 0), w.switch_queue(0, 1)
    assert s0['drops'] > 0 and s1['drops'] > 0
    # the first queue filled towards B/2 before the second came: held at its
    # threshold; the second's bound with the first holding its q_max
    assert s0['q_max'] <= B / 2 + m
    assert s1['q_max'] <= (B - s0['q_max']) / 2 + m
    assert s0['q_max'] + s1['q_max'] <= B
    w.close()


def test_lossy_priority_with_pfc_on_for_the_others():
    """pfc on, priority 0 lossy (pfc_lossy): no XOFF for it, it drops at its
    threshold; priority 3 is lossless: XOFF to its host, no drop"""
    w = shared_star(1, pfc=1, pfc_resume=3000, pfc_lossy=0x01)
    blast(w, 1, 0, 1000, 2000)
    blast(w, 2, 3, 1000, 1500)
    w.run(ns=5000)
    s0, s3 = w.switch_queue(0, 0), w.switch_queue(0, 3)
    st1, st2 = w.switch_port(1), w.switch_port(2)
    assert s0['drops'] > 0 and st1['pauses'] == 0
    # the host does not stop (raw frames, no device behind them), so only
    # the buffer's end held priority 3: far past the dynamic threshold
    # (alpha x the free bytes) that held priority 0, and its host was paused
    assert st2['pauses'] > 0
    assert s3['q_max'] >= B - s0['q_max'] - 1024 > (B - s0['q_max']) / 2 + 1024
    w.close()


def ls_sim(*args):
    cmd = [SIM, '--json', '--deterministic', '--incast', '--hosts', '5', '--leaves', '2',
           '--spines', '1', '--op', 'write', '--size', '64K', '--depth', '8', '--count', '100',
           '--profile', 'cx5-100g', '--rate', '100G', '--overhead', '24', '--latency', '1us',
           '--buffer', '200K', '--prio-queues', '--ack-timeout', '10', '--device', 'cc_algo=0',
           *[str(a) for a in args]]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    assert o['ok'] and o['verified']['errors'] == 0     # what was dropped was sent again
    return o


def drops_by_prio(i):
    """drops of every queue, host ports and fabric links, per priority"""
    d = [0] * 8
    for x in i['queues']:
        d[x['prio']] += x['drops']
    for link in i['fabric']['links']:
        for x in link.get('queues', []):
            d[x['prio']] += x['drops']
    return d


def test_leaf_spine_lossy_priority_queues_without_pfc():
    """hosts 1, 2 on leaf 0 with host 0, hosts 3, 4 on leaf 1: host 3 sends at
    priority 3, the others at 0.  Without PFC or a shared buffer every
    port, fabric ports too, has a queue per priority of --buffer bytes:
    priority 0 drops at leaf 1's uplink and at host 0's port; priority 3
    crosses the fabric at (nearly) the link's rate, unhurt"""
    o = ls_sim('--dscp', '0,0,24,0')
    i = o['incast']
    d = drops_by_prio(i)
    assert d[0] > 0 and d[3] == 0 and d[0] == i['drops']
    up1 = [x for x in i['fabric']['links'] if x['up'] and x['leaf'] == 1][0]
    q = {x['prio']: x for x in up1['queues']}
    assert q[0]['drops'] > 0 and q[3]['drops'] == 0 and q[3]['q_max'] < q[0]['q_max'] / 10
    fl = {f['host']: f for f in i['flows']}
    assert fl[3]['gbps'] > 0.85 * 100 and all(fl[h]['gbps'] < 0.5 * 100 for h in (1, 2, 4))
    assert o['stats']['retransmitted_packets'] > 0


@pytest.fixture(scope='module')
def ls_pfc():
    args = ['--dscp', '0,24,0,24', '--shared-buffer', '600K']
    return {k: ls_sim(*args, *extra) for k, extra in
            (('lossy3', ['--pfc', '--pfc-prios', '3']), ('all', ['--pfc']), ('none', []))}


def test_leaf_spine_pfc_for_one_priority_only(ls_pfc):
    """priority 3 lossless (--pfc-prios 3), priority 0 lossy, each leaf and
    spine with its shared buffer: drops only at priority 0, XOFFs only for
    priority 3 (hosts 2 and 4, and over the fabric)"""
    i = ls_pfc['lossy3']['incast']
    d = drops_by_prio(i)
    assert d[0] > 0 and d[3] == 0
    assert i['pfc_pauses'] > 0 and i['fabric']['pauses'] > 0
    assert i['switch']['pfc_prios'] == 0x08
    # the lossy ones were never paused: the XOFFs went to hosts 2 and 4 and
    # over the fabric, whose only lossless traffic is priority 3
    for x in i['queues']:
        if x['prio'] == 0:
            assert x['paused_ns'] == 0


def test_leaf_spine_lossless_and_lossy_everywhere(ls_pfc):
    """the same traffic with PFC for every priority: no drop; without PFC:
    both priorities drop"""
    a, n = ls_pfc['all'], ls_pfc['none']
    assert a['incast']['drops'] == 0 and a['stats'].get('retransmitted_packets', 0) == 0
    d = drops_by_prio(n['incast'])
    assert d[0] > 0 and d[3] > 0


def test_qrnic_switch_takes_prio_queues_with_a_shared_buffer():
    r = subprocess.run([SWITCH, '--port', '127.0.0.1:47011', '--port', '127.0.0.1:47012',
                        '--prio-queues', '--shared-buffer', '1M', '--pfc', '--pfc-prios', '3,4',
                        '--ets', '40,60,0,0,0,0,0,0', '--duration', '10ms'],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)['config']
    assert c['prio_queues'] == 1 and c['shared_buffer'] == 1 << 20
    assert c['ets'] == [40, 60, 0, 0, 0, 0, 0, 0] and c['pfc_lossy'] == 0xff & ~0x18
