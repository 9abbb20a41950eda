# SPDX-License-Identifier: GPL-2.0-or-later
"""ETS (802.1Qaz) between a switch port's priority queues: deficit round
robin with weights (tests/harness/harness.c sw_ets_pick, hx_switch_cfg.ets,
qrnic-sim/qrnic-switch --ets; docs/congestion.md "ETS").

Real frames (IPv4/UDP, the priority in the DSCP) from hosts 1 and 2 to host
0 through one switch, all sent at once so that their queues are backlogged
from the start; the switch counts the bytes each queue sent (tx_bytes,
frame + overhead).

The bound on the share.  A queue i that stays backlogged is credited its
quantum Q_i = HX_SW_ETS_UNIT x weight once per turn, and its deficit (credit
not yet spent, counting a turn in progress) stays in [0, Q_i + M), M the
largest frame on the wire.  So after n_i credits it has sent n_i Q_i - D_i:
|S_i - n_i Q_i| < Q_i + M.  Round robin credits two backlogged queues
in turn: |n_hi - n_lo| <= 1.  With w_hi = 3 w_lo (Q_hi = 3 Q_lo):
|S_hi - 3 S_lo| <= |n_hi - n_lo| Q_hi + (Q_hi + M) + 3 (Q_lo + M)
               <= 3 Q_hi + 4 M."""
import ctypes
import json
import os
import struct
import subprocess

import pytest

import qrnic_harness as q

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
SWITCH = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-switch')
ETS_UNIT = 100          # HX_SW_ETS_UNIT, bytes of quantum per percent
OVERHEAD = 24
RATE = 100 * 10**9


def udp_frame(dst_mac, src_mac, prio, size, seq):
    """an IPv4/UDP frame of size bytes, DSCP prio << 3 (priority prio)"""
    ip_len = size - 14
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, prio << 5, ip_len, seq & 0xffff, 0, 64, 17, 0,
                     bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1]))
    udp = struct.pack('>HHHH', 5000 + prio, 9, ip_len - 20, 0)
    return bytes(dst_mac) + bytes(src_mac) + b'\x08\x00' + ip + udp + bytes(ip_len - 28)


def star(weights=None, **kw):
    w = q.World(3, cable=False)
    cfg = dict(rate_bps=RATE, overhead=OVERHEAD, latency_ns=1000, buffer=1 << 30, prio_queues=1)
    if weights is not None:
        cfg.update(ets=1, ets_weight=(ctypes.c_uint8 * 8)(*weights))
    cfg.update(kw)
    w.switch_attach(**cfg)
    return w


def blast(w, src, prio, size, n):
    h0, hs = w.devs[0], w.devs[src]
    for i in range(n):
        w.wire_send(src, udp_frame(h0.mac, hs.mac, prio, size, i))


def wire_ns(nbytes):
    return nbytes * 8 * 10**9 // RATE


def test_weights_75_25_share_the_port_3_to_1():
    """priority 3 (weight 75, 700-byte frames) against priority 0 (weight
    25, 1500-byte frames): bytes 3:1 within 3 Q_hi + 4 M, whatever the
    frame sizes (DWRR shares bytes, not frames)"""
    weights = [25, 0, 0, 75, 0, 0, 0, 0]
    w = star(weights)
    blast(w, 1, 0, 1500, 3000)         # 4.5 MB each way: backlogged past the window
    blast(w, 2, 3, 700, 6000)
    w.run(ns=wire_ns(4_000_000))       # about 4 MB of port time
    s0, s3 = w.switch_queue(0, 0), w.switch_queue(0, 3)
    assert s0['q_now'] > 0 and s3['q_now'] > 0, 'both must still be backlogged'
    q_hi, m = 75 * ETS_UNIT, 1500 + OVERHEAD
    bound = 3 * q_hi + 4 * m
    print(f'prio 3 sent {s3["tx_bytes"]} B, prio 0 {s0["tx_bytes"]} B, '
          f'|S3 - 3 S0| = {abs(s3["tx_bytes"] - 3 * s0["tx_bytes"])} <= {bound}')
    assert s0['tx_bytes'] > 500_000
    assert abs(s3['tx_bytes'] - 3 * s0['tx_bytes']) <= bound
    # work conserving: the port never idled (within the frame in progress)
    assert s0['tx_bytes'] + s3['tx_bytes'] >= 4_000_000 - m
    w.close()


def test_one_queue_alone_gets_the_whole_port():
    """weight 25 with nobody else: the whole port, not a quarter"""
    w = star([25, 0, 0, 75, 0, 0, 0, 0])
    blast(w, 1, 0, 1500, 3000)
    w.run(ns=wire_ns(3_000_000))
    s0 = w.switch_queue(0, 0)
    assert s0['q_now'] > 0
    assert 3_000_000 - (1500 + OVERHEAD) <= s0['tx_bytes'] <= 3_000_000 + 2 * (1500 + OVERHEAD)
    w.close()


def test_a_strict_class_goes_before_the_weighted_ones():
    """weight 0 = strict priority (802.1Qaz): priority 5 strict, 0 and 3
    weighted: nothing weighted leaves while priority 5 has frames"""
    w = star([50, 0, 0, 50, 0, 0, 0, 0])
    blast(w, 1, 0, 1000, 500)
    blast(w, 2, 3, 1000, 500)
    blast(w, 2, 1, 1000, 500)          # priority 1: weight 0, strict
    w.run(ns=wire_ns(400_000))
    s0, s1, s3 = (w.switch_queue(0, p) for p in (0, 1, 3))
    assert s1['tx_bytes'] >= 400_000 - 1024 and s1['q_now'] > 0
    assert s0['tx_bytes'] + s3['tx_bytes'] <= 1024      # at most the frame that was going
    w.run(ns=wire_ns(1_000_000))       # priority 1 done: the others share half and half
    s0, s3 = w.switch_queue(0, 0), w.switch_queue(0, 3)
    assert s0['q_now'] > 0 and s3['q_now'] > 0
    assert abs(s0['tx_bytes'] - s3['tx_bytes']) <= 3 * 50 * ETS_UNIT + 4 * 1024


def test_without_ets_strict_priority_is_unchanged():
    w = star()
    blast(w, 1, 0, 1500, 1000)
    blast(w, 2, 3, 700, 2000)
    w.run(ns=wire_ns(1_000_000))
    s0, s3 = w.switch_queue(0, 0), w.switch_queue(0, 3)
    assert s3['q_now'] > 0 and s0['tx_bytes'] <= 1500 + OVERHEAD
    w.close()


def test_a_paused_weighted_queue_gives_its_share_away():
    """host 0 pauses priority 3: priority 0 (weight 25) gets the whole port"""
    w = star([25, 0, 0, 75, 0, 0, 0, 0])
    h0 = w.devs[0]
    pfc = b'\x01\x80\xc2\x00\x00\x01' + bytes(h0.mac) + b'\x88\x08' + \
        struct.pack('>HH', 0x0101, 0x08) + b''.join(
            struct.pack('>H', 0xffff if p == 3 else 0) for p in range(8))
    w.wire_send(0, pfc + bytes(60 - len(pfc)))
    w.run(ns=2000)
    blast(w, 1, 0, 1500, 2000)
    blast(w, 2, 3, 1500, 2000)
    w.run(ns=wire_ns(1_000_000))
    s0, s3 = w.switch_queue(0, 0), w.switch_queue(0, 3)
    assert s3['tx_bytes'] == 0 and s3['paused_ns'] > 0
    assert s0['tx_bytes'] >= 1_000_000 - 2 * (1500 + OVERHEAD)
    w.close()


def test_attach_refuses_bad_weights():
    for weights, pq in (([50, 0, 0, 40, 0, 0, 0, 0], 1), ([0] * 8, 1),
                        ([101, 0, 0, 0, 0, 0, 0, 0], 1), ([50, 50, 0, 0, 0, 0, 0, 0], 0)):
        w = q.World(3, cable=False)
        with pytest.raises(q.HarnessError, match='ETS'):
            w.switch_attach(rate_bps=RATE, prio_queues=pq, ets=1,
                            ets_weight=(ctypes.c_uint8 * 8)(*weights))
        w.close()


def sim(*args):
    cmd = [SIM, '--json', '--deterministic', '--incast', '--hosts', '3', '--op', 'write',
           '--size', '64K', '--depth', '16', '--count', '400', '--profile', 'cx5-100g',
           '--rate', '100G', '--overhead', '24', '--latency', '1us', '--buffer', '16M',
           '--dscp', '0,24', '--prio-queues', '--device', 'cc_algo=0', *args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_sim_ets_json_per_priority_counters():
    """RDMA WRITEs from two senders, priority 0 weight 25 against priority
    3 weight 75: the JSON has each queue's weight and the bytes it sent;
    priority 3's flow finishes well before priority 0's; strict priority
    (no --ets) starves priority 0 for longer"""
    o = sim('--ets', '25,0,0,75,0,0,0,0')
    assert o['ok'] and o['verified']['errors'] == 0 and o['incast']['drops'] == 0
    qs = {(x['port'], x['prio']): x for x in o['incast']['queues']}
    assert qs[(0, 0)]['weight'] == 25 and qs[(0, 3)]['weight'] == 75
    assert qs[(0, 0)]['tx_bytes'] > 0 and qs[(0, 3)]['tx_bytes'] > 0
    assert o['incast']['switch']['ets'] == [25, 0, 0, 75, 0, 0, 0, 0]
    fl = {f['host']: f for f in o['incast']['flows']}
    strict = sim()
    fs = {f['host']: f for f in strict['incast']['flows']}
    assert 'ets' not in strict['incast']['switch']
    # both queues were backlogged until priority 3's flow ended: with ETS it
    # ran at 75 % of what it gets alone (strict priority: the whole port)
    ratio = fl[2]['gbps'] / fs[2]['gbps']
    print(f"priority 3: {fl[2]['gbps']} Gb/s with ETS, {fs[2]['gbps']} strict: {ratio:.3f}")
    assert abs(ratio - 0.75) < 0.05
    assert fl[2]['end_ns'] < fl[1]['end_ns'] and fs[2]['end_ns'] < fl[2]['end_ns']
    # priority 0 under strict priority sent (nearly) nothing until 3 was done
    assert fs[1]['end_ns'] == pytest.approx(fl[1]['end_ns'], rel=0.02)


@pytest.mark.parametrize('value,msg', [
    ('50,50', 'need 8'),
    ('10,10,10,10,10,10,10,10,20', 'more than 8'),
    ('50,0,0,40,0,0,0,0', 'add up to 90'),
    ('-10,0,0,110,0,0,0,0', 'not a weight'),
    ('a,b,c,d,e,f,g,h', 'not a weight'),
    ('50,,0,50,0,0,0,0', 'not a weight'),
    ('101,0,0,0,0,0,0,0', 'not a weight'),
])
def test_bad_ets_values_exit_2(value, msg):
    r = subprocess.run([SIM, '--incast', '--hosts', '3', '--count', '1', '--prio-queues',
                        '--ets', value], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and msg in r.stderr and '--ets' in r.stderr, r.stderr
    r = subprocess.run([SWITCH, '--port', '127.0.0.1:47001', '--port', '127.0.0.1:47002',
                        '--prio-queues', '--ets', value], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and msg in r.stderr and '--ets' in r.stderr, r.stderr


def test_ets_needs_prio_queues():
    r = subprocess.run([SIM, '--incast', '--hosts', '3', '--count', '1',
                        '--ets', '50,0,0,50,0,0,0,0'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and '--prio-queues' in r.stderr, r.stderr
    r = subprocess.run([SWITCH, '--port', '127.0.0.1:47001', '--port', '127.0.0.1:47002',
                        '--ets', '50,0,0,50,0,0,0,0'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and '--prio-queues' in r.stderr, r.stderr
