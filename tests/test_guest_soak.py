# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier (T2, two VMs): scale and soak (issue 21, section 5).

- 1000 rdma_cm connections between the two guests with rdma-core's own
  ucmatose (each connection carries 10 SENDs each way, every completion
  checked by ucmatose) and cmtime (connect/disconnect of 1000 ids with QPs);
  afterwards no user verbs object is left and each device holds as many QPs
  and CQs as before.  Linux rxe is known to stall near 1000.
- a short soak (tests/guest/soak.py, the long one is bench/soak): about
  two minutes of payload-checked traffic (ibv_rc_pingpong -c, rping -V,
  ucmatose, perftest) under random wire faults while both guests churn QPs
  and MRs; no failure, every counter check holds, no object left.
- admin queue under concurrency: qrnic reloaded with aq_log_depth=1 (two
  admin slots) while six processes create and destroy QPs, CQs and MRs at
  once: every command completes, the device is never declared dead.  The
  driver used to take the context of the command's SQ slot, which the waiter
  of the command two places earlier could still be using (waiters run in any
  order): a completion was then dropped as unexpected, the command timed out
  and the device was reset (first seen in the 1000-connection test).
  The same loop found the second bug: a CQN the device handed out again
  while the destroyer of its previous CQ had yet to remove it from the
  driver's table made the create fail with EBUSY (QPs and SRQs likewise).
"""
import json
import os

import pytest

from guest.soak import CHURN, CHURN_SCRIPT, Soak, cm_scale
from guest.vmlib import guest_dmesg, pair, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T2'], indirect=True)]


def _objects(vm):
    return {d: (len(vm.qmp_cmd('qom-get', path='/machine/peripheral/' + d, property='qps')),
                len(vm.qmp_cmd('qom-get', path='/machine/peripheral/' + d, property='cqs')))
            for d in ['%s-%d' % (m.split('-')[0], i) for i, (m, _, _) in enumerate(vm.nics) if m == 'qrnic']}


def _stats(vm):
    st = vm.qrnic_stats()
    assert len(st) == 1, st
    return next(iter(st.values()))


def test_1000_rdma_cm_connections(topo):
    s, c = pair(topo)
    n, m = 1000, 10
    objs = {v.name: _objects(v) for v in (s.vm, c.vm)}
    before = {v.name: _stats(v) for v in (s.vm, c.vm)}
    res = cm_scale(s, c, conns=n, msgs=m, size=100)
    u = res['ucmatose']
    assert u['ok'], 'ucmatose -c %d failed:\n--- server\n%s\n--- client\n%s' % (
        n, u['srv'].output[-3000:], u['cli'].output[-3000:])
    after = {v.name: _stats(v) for v in (s.vm, c.vm)}
    for v in (s.vm, c.vm):
        d = {k: after[v.name][k] - before[v.name][k] for k in after[v.name]}
        # every connection received m SENDs on each side (plus cmtime's nothing: it sends no data)
        assert d['cqes'] >= n * m, (v.name, d)
        assert d['rx_packets'] >= n * m, (v.name, d)
        assert d['cqe_errors'] == 0 and d['rx_drop_icrc'] == 0 and d['rx_drop_malformed'] == 0, (v.name, d)
    cm = res['cmtime']
    assert cm['ok'], 'cmtime -c %d failed:\n--- server\n%s\n--- client\n%s' % (
        n, cm['srv'].output[-3000:], cm['cli'].output[-3000:])
    assert 'cm_conn              %d' % n in cm['cli'].output or 'cm_conn %d' % n in ' '.join(
        cm['cli'].output.split()), cm['cli'].output[-3000:]
    full = [t['step'].get('full connect') for t in cm['steps'] if 'Connect' in t['test']]
    assert full and all(f is not None for f in full), cm['cli'].output[-3000:]
    print('ucmatose -c %d -C %d: %.1f s; cmtime -c %d: %.1f s' % (n, m, u['secs'], n, cm['secs']))
    for t in cm['steps']:
        if 'Connect' in t['test']:
            print('  %s: %s' % (t['test'], {k: v['us/conn'] for k, v in t['step'].items()}))
    for v in (s.vm, c.vm):
        left = v.run('rdma res show qp | grep -c pid || true', timeout=60).output.strip()
        assert left in ('0', ''), (v.name, v.run('rdma res show qp', timeout=60).output)
        assert _objects(v) == objs[v.name], (v.name, objs[v.name], _objects(v))


def test_soak_short(topo):
    secs = int(os.environ.get('QRNIC_SOAK_SECS', '120'))
    soak = Soak(topo, seed=int(os.environ.get('QRNIC_SOAK_SEED', '2121')), churn_batch=8)
    soak.run(secs, cycle_secs=30)
    sm = soak.summary()
    print('soak summary: %s' % sm)
    assert not sm['failures'], '\n'.join(sm['failures'])
    c = sm['counts']
    # every step ran and something was checked end to end
    assert c.get('steps', 0) >= len(Soak.STEPS), c
    assert c.get('bytes_checked', 0) > 0 and c.get('cm_connections', 0) > 0, c
    assert sm['churn']['qps'] > 0 and sm['churn']['mrs'] > 0 and sm['churn']['bad'] == 0, sm['churn']
    assert sm['checks']['stats_monotonic'] > 0 and sm['checks']['faults_accounted'] == c['steps'], sm['checks']


def test_admin_queue_concurrent_small_depth(topo):
    s, _ = pair(topo)
    v = s.vm
    v.put(CHURN, CHURN_SCRIPT.encode())
    try:
        v.run('rmmod qrnic && modprobe qrnic aq_log_depth=1 && qrnic-netup >/dev/null', timeout=180)
        assert v.run('cat /sys/module/qrnic/parameters/aq_log_depth').strip() == '1'
        ibdev = v.run('ls /sys/class/infiniband | head -n1').strip()
        jobs = [v.spawn('python3 -u %s %s 20 6' % (CHURN, ibdev)) for _ in range(6)]
        results = [j.wait(300) for j in jobs]
        bad = [r.output[-1500:] for r in results if r.running or r.rc != 0 or 'RESULT' not in r.output]
        log = v.run('dmesg | grep -E "qrnic|infiniband" | grep -E "timed out|dead|unexpected admin|'
                    'fatal" || true', timeout=60).output
        assert not log.strip(), log
        assert not bad, '\n---\n'.join(bad)
        qps = 0
        for r in results:
            line = [ln for ln in r.output.splitlines() if ln.startswith('RESULT ')][0]
            res = json.loads(line[7:])
            assert res['bad'] == 0, res
            qps += res['qps']
        assert qps >= 6 * 6, qps
        print('aq_log_depth=1: 6 processes created and destroyed %d QPs (+CQs, MRs)' % qps)
    finally:
        v.run('rmmod qrnic; modprobe qrnic && qrnic-netup >/dev/null', timeout=180, check=False)
