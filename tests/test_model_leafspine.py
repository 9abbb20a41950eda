# SPDX-License-Identifier: GPL-2.0-or-later
"""The leaf-spine fabric of the harness switch (qrnic-sim --incast --leaves L
--spines S, docs/congestion.md).  ECMP picks a spine from the IP/UDP
5-tuple, the RoCEv2 UDP source port included.  The test reads every frame
the hosts sent from the pcap, computes here (FNV-1a over the addresses,
the protocol and the ports, mixed by fmix64, modulo S) which spine each inter-leaf frame
must take, and checks that the switch's per-uplink frame counts are
exactly those: every frame of a flow took its flow's one path.  Flows of
different QPs (different source ports) spread over the spines."""
import collections
import json
import os
import struct
import subprocess

import pytest

import qrnic_harness as q

SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
M64 = (1 << 64) - 1


def sim(*args):
    cmd = [SIM, '--json', '--deterministic'] + [str(a) for a in args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, f'{cmd}: {r.stdout[-2000:]} {r.stderr[-2000:]}'
    j = json.loads(r.stdout)
    assert j['ok'] and j['verified']['errors'] == 0
    return j


def pcap_frames(path):
    data = open(path, 'rb').read()
    assert struct.unpack_from('<I', data)[0] == 0xa1b23c4d      # nanosecond pcap
    off, out = 24, []
    while off < len(data):
        _, _, incl, _ = struct.unpack_from('<IIII', data, off)
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def five_tuple(f):
    et = struct.unpack_from('>H', f, 12)[0]
    if et == 0x0800 and f[14 + 9] == 17:
        l4 = 14 + (f[14] & 15) * 4
        return f[26:34], f[23:24], f[l4:l4 + 4]
    if et == 0x86dd and f[14 + 6] == 17:
        return f[22:54], f[20:21], f[54:58]
    return None


def ecmp(t, spines):
    h = 0xcbf29ce484222325
    for part in t:
        for b in part:
            h = ((h ^ b) * 0x100000001b3) & M64
    h ^= h >> 33                          # MurmurHash3's fmix64
    h = (h * 0xff51afd7ed558ccd) & M64
    h ^= h >> 33
    h = (h * 0xc4ceb9fe1a85ec53) & M64
    h ^= h >> 33
    return h % spines


def host(mac):
    assert mac[:5] == b'\x02\x00\x00\x00\x00'      # the harness's MACs: 02:00:00:00:00:<i+1>
    return mac[5] - 1


def test_ecmp_spreads_flows_and_keeps_each_on_one_path(tmp_path):
    pcap = tmp_path / 'fabric.pcap'
    hosts, leaves, spines, per_leaf = 4, 2, 4, 2
    j = sim('--incast', '--hosts', hosts, '--qps', 8, '--leaves', leaves, '--spines', spines,
            '--op', 'write', '--size', 16384, '--depth', 4, '--count', 20,
            '--profile', 'cx5-100g', '--rate', '100G', '--overhead', 24, '--latency', '1us',
            '--buffer', '64M', '--device', 'cc_algo=0', '--pcap', pcap)
    fab = j['incast']['fabric']
    assert fab['hosts_per_leaf'] == per_leaf
    want_up = collections.Counter()      # (leaf, spine) -> frames, from the pcap
    want_down = collections.Counter()
    paths = collections.defaultdict(set)
    local = 0
    for f in pcap_frames(pcap):
        t = five_tuple(f)
        assert t is not None
        la, lb = host(f[6:12]) // per_leaf, host(f[0:6]) // per_leaf
        if la == lb:
            local += 1
            continue
        sp = ecmp(t, spines)
        want_up[(la, sp)] += 1
        want_down[(lb, sp)] += 1
        paths[t].add(sp)
    up = {(x['leaf'], x['spine']): x['frames'] for x in fab['links'] if x['up']}
    down = {(x['leaf'], x['spine']): x['frames'] for x in fab['links'] if not x['up']}
    assert local > 0 and sum(want_up.values()) > 0
    # the switch sent each frame up to, and down from, the spine its
    # 5-tuple hashes to: one path per flow
    assert up == {k: want_up.get(k, 0) for k in up}
    assert down == {k: want_down.get(k, 0) for k in down}
    assert len(up) == len(down) == leaves * spines
    # 16 cross-leaf flows in each direction (8 QPs, data and ACKs): spread
    assert len(paths) >= 16
    assert sum(1 for sp in range(spines) if want_up[(1, sp)]) >= 3
    assert j['incast']['drops'] == 0
    stats = j['stats']
    assert stats.get('seq_naks_sent', 0) == 0 and stats.get('duplicate_requests', 0) == 0


def test_incast_across_leaves_with_dcqcn():
    j = sim('--incast', '--hosts', 8, '--leaves', 2, '--spines', 2, '--op', 'write',
            '--size', 65536, '--depth', 8, '--duration', '1ms', '--count', 0,
            '--profile', 'cx5-100g', '--rate', '100G', '--overhead', 24, '--latency', '1us',
            '--buffer', '1800K',
            '--device', 'cc_algo=1,rp_time_reset=55,rp_byte_reset=0,rp_ai_rate=40,rp_hai_rate=200')
    i = j['incast']
    assert len(i['flows']) == 7 and all(f['bytes'] > 0 for f in i['flows'])
    # senders on leaf 1 (hosts 4..7) cross the spines, hosts 1..3 do not
    up1 = sum(x['frames'] for x in i['fabric']['links'] if x['up'] and x['leaf'] == 1)
    up0 = sum(x['frames'] for x in i['fabric']['links'] if x['up'] and x['leaf'] == 0)
    assert up1 > 0 and up0 > 0          # data up from leaf 1, ACKs and CNPs up from leaf 0
    # which flows finish first depends on the spines' queues; every flow moves
    assert i['marks'] > 0 and i['cnp_sent'] > 0


def test_leaf_spine_needs_its_options():
    # (--pfc with --leaves is modelled now: test_model_leafspine_pfc.py)
    for bad in (['--leaves', 2], ['--spines', 2], ['--leaves', 9, '--spines', 2]):
        r = subprocess.run([SIM, '--incast', '--hosts', '4', '--op', 'write', '--count', '1'] +
                           [str(a) for a in bad], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and r.stderr


def test_leaf_spine_with_more_than_16_hosts():
    """24 hosts on 4 leaves of 6 under 2 spines (past the old 16-device
    limit): a 23:1 incast with PFC across the fabric, lossless, every flow
    moving and every byte verified."""
    j = sim('--incast', '--hosts', 24, '--leaves', 4, '--spines', 2, '--op', 'write',
            '--size', 16384, '--depth', 4, '--count', 20,
            '--profile', 'cx5-100g', '--rate', '100G', '--overhead', 24, '--latency', '1us',
            '--buffer', '1800K', '--pfc', '--xoff', '64K', '--xon', '32K',
            '--device', 'cc_algo=0')
    i = j['incast']
    assert i['fabric']['hosts_per_leaf'] == 6
    assert len(i['flows']) == 23 and all(f['bytes'] == 20 * 16384 for f in i['flows'])
    assert j['messages'] == j['posted'] == 23 * 20 and j['lost'] == 0
    assert i['drops'] == 0 and i['pfc_pauses'] > 0
    # leaves 1..3 send up to the spines, leaf 0 (the receiver's) sends ACKs up
    for leaf in range(4):
        assert sum(x['frames'] for x in i['fabric']['links'] if x['up'] and x['leaf'] == leaf) > 0
    assert j['stats'].get('retransmitted_packets', 0) == 0


def test_host_limit_refused_clearly():
    """qrnic-sim and the harness take at most 64 hosts (HX_MAX_DEV): one
    more is refused with a message, exit 2, not a crash."""
    r = subprocess.run([SIM, '--incast', '--hosts', '65', '--op', 'write', '--count', '1'],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and '--hosts: 65 is out of range 2..64' in r.stderr, r.stderr
    r = subprocess.run([SIM, '--hosts', '64', '--op', 'write', '--count', '1'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    w = q.World(mem_mb=1, cable=False, init=False)
    try:
        for _ in range(62):
            w.add_device()
        with pytest.raises(q.HarnessError, match='at most 64'):
            w.add_device()
    finally:
        w.close()
