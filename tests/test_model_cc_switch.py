# SPDX-License-Identifier: GPL-2.0-or-later
"""The switch of the harness and qrnic-sim --incast (docs/congestion.md):
4 senders incast into one receiver through an output-queued switch with
a 1800 KB output buffer, 64 KiB WRITEs, 8 outstanding per sender (512 KiB
windows: 2 MiB offered, more than the buffer), cx5-100g devices.

Measured (docs/congestion.md, 2 ms):  no CC: 311 drops, Jain 0.75 (one
flow starves after its losses); DCQCN: 0 drops, queue max 1.62 MB (the
windows the senders had booked before the first CNP), Jain 0.96; no CC
with PFC (xoff 200 KB): 0 drops, 116 pauses, Jain 0.9999.  The fairness
threshold, 0.9, sits between the two measured cases with room on both
sides."""
import json
import os
import subprocess

import qrnic_harness as q

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
BUFFER = 1800 * 1024
DCQCN = 'cc_algo=1,rp_time_reset=55,rp_byte_reset=0,rp_ai_rate=40,rp_hai_rate=200'
BASE = ['--incast', '--hosts', '5', '--op', 'write', '--size', '65536', '--depth', '8',
        '--duration', '2ms', '--count', '0', '--profile', 'cx5-100g', '--rate', '100G',
        '--overhead', '24', '--latency', '1us', '--verify', 'end', '--buffer', '1800K']


def incast(*extra):
    cmd = [SIM, '--json', '--deterministic'] + BASE + [str(a) for a in extra]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, f'{cmd}: {r.stdout[-2000:]} {r.stderr[-2000:]}'
    j = json.loads(r.stdout)
    assert j['ok'] and j['verified']['errors'] == 0
    return j, j['incast']


def test_without_cc_the_queue_overflows_and_drops():
    j, i = incast('--device', 'cc_algo=0')
    assert i['drops'] > 0 and i['queue']['drops'] == i['drops']
    assert i['queue']['max'] > BUFFER - 70000      # it reached the limit
    assert i['marks'] == 0 and i['cnp_sent'] == 0    # cc_algo 0: not ECN-capable
    assert i['jain'] < 0.9


def test_dcqcn_keeps_the_queue_below_the_buffer_without_drops():
    j, i = incast('--device', DCQCN)
    assert i['drops'] == 0
    assert i['queue']['max'] < BUFFER
    assert i['cnp_sent'] > 0 and i['cnp_received'] == i['cnp_sent']
    assert 0.9 * i['marks'] <= i['ecn_marked_received'] <= i['marks']
    # after the first windows drained the queue stays small: the time
    # average and the median of the second half's samples are below kmax
    # (measured: 90 KB average; a later episode peaks at 422 KB when the
    # hyper increase overshoots, then drains)
    assert i['queue']['avg'] < 160000
    late = sorted(i['samples']['q_max'][len(i['samples']['q_max']) // 2:])
    assert late[len(late) // 2] < 160000
    assert late[-1] < BUFFER / 2
    assert i['jain'] > 0.9
    assert all(f['bytes'] > 0 for f in i['flows'])


def test_pfc_pause_prevents_drops():
    j, i = incast('--device', 'cc_algo=0', '--pfc', '--xoff', '200K', '--xon', '100K')
    assert i['drops'] == 0
    assert i['pfc_pauses'] > 0 and i['paused_ns'] > 0
    assert i['queue']['max'] < BUFFER
    assert i['jain'] > 0.9
    # paused senders still deliver their share: the port is kept busy
    assert i['sum_gbps'] > 80


def test_marking_follows_red():
    """No marking below kmin: with kmin above anything the queue reaches
    nothing is marked; with kmin = 0, kmax tiny, everything queued is."""
    j, i = incast('--device', DCQCN, '--buffer', '64M', '--kmin', '60M', '--kmax', '63M')
    assert i['marks'] == 0 and i['drops'] == 0 and i['cnp_sent'] == 0
    j, i = incast('--device', DCQCN, '--buffer', '64M', '--kmin', '0', '--kmax', '1',
                  '--duration', '200us')
    # every frame that finds a queue is marked (ACK-clocked frames that
    # find it empty are not); the receiver sees them as CE
    assert i['marks'] > 0.5 * i['queue']['frames']
    assert 0.9 * i['marks'] <= i['ecn_marked_received'] <= i['marks']


def test_incast_is_deterministic():
    a = subprocess.run([SIM, '--json', '--deterministic'] + BASE + ['--device', DCQCN],
                       stdout=subprocess.PIPE, text=True, check=True).stdout
    b = subprocess.run([SIM, '--json', '--deterministic'] + BASE + ['--device', DCQCN],
                       stdout=subprocess.PIPE, text=True, check=True).stdout
    assert a == b


# ---- 16:1 (issue 19): 17 hosts on one switch --------------------------------
# 16 windows of 8 x 64 KiB (8 MiB) against the same 100 Gb/s port.  Measured
# (2 ms): with the 1800 KB buffer no CC drops 6603 frames, Jain 0.35 (flows
# starve in retransmission timeouts); with a buffer deep enough for every
# window (64 MB) no CC parks the windows in the queue (7.0 MB time average,
# no drops, Jain 0.9999) while DCQCN holds it at 97 KB on average, the
# second half's median sample 0, after the first burst (the booked windows,
# docs/congestion.md).
WINDOWS = 16 * 8 * 65536


def incast16(*extra):
    j, i = incast('--hosts', 17, *extra)
    assert j['config']['hosts'] == 17 and i['senders'] == 16
    # every message completed and verified, every flow's bytes counted
    assert j['lost'] == 0 and j['messages'] == j['posted']
    assert len(i['flows']) == 16 and sorted(f['host'] for f in i['flows']) == list(range(1, 17))
    assert all(f['bytes'] > 0 for f in i['flows'])
    assert sum(f['bytes'] for f in i['flows']) == j['bytes'] == j['messages'] * 65536
    assert j['verified']['final_buffers'] == 16 * 8
    assert j['verified']['final_bytes'] == WINDOWS
    return j, i


def test_16_to_1_without_cc_drops_at_the_buffer():
    j, i = incast16('--device', 'cc_algo=0')
    assert i['drops'] > 0 and i['queue']['drops'] == i['drops']
    assert i['queue']['max'] > BUFFER - 70000
    assert i['marks'] == 0 and i['cnp_sent'] == 0
    assert i['jain'] < 0.9


def test_16_to_1_dcqcn_bounds_the_queue_no_cc_parks_the_windows():
    j, none = incast16('--device', 'cc_algo=0', '--buffer', '64M')
    assert none['drops'] == 0 and none['cnp_sent'] == 0
    # every window in the queue, and kept there
    assert none['queue']['max'] > 0.95 * WINDOWS
    assert none['queue']['avg'] > WINDOWS / 2
    assert none['jain'] > 0.99
    j, dc = incast16('--device', DCQCN, '--buffer', '64M')
    assert dc['drops'] == 0
    assert dc['cnp_sent'] > 0 and dc['cnp_received'] == dc['cnp_sent']
    assert 0.9 * dc['marks'] <= dc['ecn_marked_received'] <= dc['marks']
    # the first burst (booked windows) reaches the queue, then DCQCN holds it
    # below kmax on average and in most of the second half's samples
    assert dc['queue']['avg'] < 160000 < none['queue']['avg'] / 10
    late = sorted(dc['samples']['q_max'][len(dc['samples']['q_max']) // 2:])
    assert late[len(late) // 2] < 160000


def test_16_to_1_payload_by_reference_survives_drops_and_marks():
    """Through the switch a frame's payload stays by reference (the switch
    builds and marks headers only; the receiver copies the payload from the
    sender's buffer when the frame arrives, harness.c tx_frame).  With
    thousands of drops, go-back-N retransmissions and ECN marks, every
    message is checked at its completion (--verify each) and every buffer
    at the end: a payload read after its buffer was reused would show."""
    for dev in ('cc_algo=0', DCQCN):
        j, i = incast16('--device', dev, '--verify', 'each', '--duration', '1ms')
        assert j['verified']['mode'] == 'each'
        assert j['verified']['messages'] == j['messages'] > 16
        assert j['verified']['bytes'] == j['bytes']
        assert i['drops'] > 0 and j['stats']['retransmitted_packets'] > 0
    assert i['marks'] > 0            # the DCQCN run: headers changed in the switch
