# SPDX-License-Identifier: GPL-2.0-or-later
"""The shared-buffer switch (qrnic-sim --incast --shared-buffer B --alpha A,
docs/congestion.md): every output queue (port, priority) draws from one
buffer of B bytes and may hold at most A x (B - bytes in use), the dynamic
threshold of Broadcom's MMU and HPCC's ns-3 switch.  One congested queue
then settles where q = A (B - q): q = A B / (1 + A).  With PFC the class is
lossless: egress queues are not limited, each ingress (port, priority) is
paused at A x the free bytes; with 8 senders and A = 1/8 the buffer in use
settles near B / 2 plus the headroom, with no drops."""
import json
import os
import subprocess

import pytest

import qrnic_harness as q

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
B = 1800 * 1024
FRAME = 4096 + 100            # a full frame with headers and --overhead
BASE = ['--incast', '--op', 'write', '--size', '65536', '--depth', '8', '--duration', '1ms',
        '--count', '0', '--profile', 'cx5-100g', '--rate', '100G', '--overhead', '24',
        '--latency', '1us', '--verify', 'end', '--device', 'cc_algo=0',
        '--shared-buffer', str(B)]


def incast(hosts, *extra):
    cmd = [SIM, '--json', '--deterministic', '--hosts', str(hosts)] + BASE + [str(a) for a in extra]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, f'{cmd}: {r.stdout[-2000:]} {r.stderr[-2000:]}'
    j = json.loads(r.stdout)
    assert j['ok'] and j['verified']['errors'] == 0
    return j['incast']


@pytest.mark.parametrize('alpha', [1, 0.25])
def test_dynamic_threshold_bounds_a_congested_queue(alpha):
    i = incast(5, '--alpha', alpha)
    bound = alpha * B / (1 + alpha)
    (q0,) = [x for x in i['queues'] if x['port'] == 0 and x['prio'] == 0]
    assert i['drops'] > 0 and q0['drops'] == i['queue']['drops'] == i['drops']
    assert 0.95 * bound <= q0['q_max'] <= bound + FRAME
    assert q0['frames'] == i['queue']['frames']
    used = i['samples']['shared_used']
    assert used and max(used) <= i['shared']['used_max'] <= B
    assert i['shared']['used_max'] >= q0['q_max']
    assert i['shared']['used'] == 0          # all drained at the end


def test_pfc_from_the_shared_buffer_is_lossless():
    i = incast(9, '--alpha', 0.125, '--pfc')
    assert i['drops'] == 0 and i['pfc_pauses'] > 0
    assert i['pfc_frames'] == i['pfc_received']
    # 8 ingresses paused at (B - U) / 8 each: U = B / 2, plus the headroom
    assert B / 2 <= i['shared']['used_max'] < B
    assert i['jain'] > 0.99


def test_shared_buffer_options_are_checked():
    # (a shared buffer per switch of a leaf-spine: test_model_leafspine_pfc.py)
    for bad in (['--alpha', '0'], ['--alpha', 'x'], ['--alpha', '2000']):
        r = subprocess.run([SIM, '--hosts', '4'] + BASE + bad, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode != 0 and r.stderr
