# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: migration and snapshots of booted guests with RDMA traffic in
flight (issue 20 items 2 and 3, docs/qemu.md section 9).

Live migration, T2 (two VMs, one qrnic each, -netdev dgram): while the stock
tools run between vm0 (server) and vm1 (client), one VM is live-migrated into
a new QEMU (the same command line plus -incoming defer, the same qcow2 root
overlay and the same UDP link socket; Topology.migrate).  The tools must end
with exit status 0: perftest checks its own completions, rping -V compares
every payload.  The device counters (QOM `stats`) of both ends are read
before and after; the test prints the migration's downtime and total time
(query-migrate) and how many packets the two devices retransmitted, and
asserts that the migrated device carried traffic after the migration.

savevm/loadvm, T1 (one VM, two qrnic ports on a hub): ib_write_bw between the
guest's two ports; savevm while it runs; the run finishes; loadvm puts the
guest and both devices back (the device counters read while stopped are those
of the snapshot) and the same tool processes run to their end a second time;
then a fresh run passes.

Replay under -icount (the deterministic runner, one T1 guest from an
initramfs): savevm in the middle of ib_write_lat between the two ports; two
QEMUs started with -loadvm of it give the same device timeline (-trace
qrnic_event) up to the VM's stop, the same pcaps, output and counters.

Run with -s to see the figures (lines starting 'MIGRATION:', 'SNAPSHOT:',
'REPLAY:'); docs/qemu.md section 9 "In the test guests" has them.
"""
import re
import time

import pytest

from guest.vmlib import (check_pair, get_topology, guest_dmesg, need_driver, next_port,  # noqa: F401
                         perftest_table, wait_cm_listen, wait_tcp_listen)
from qrnic_vm import PrereqError

pytestmark = [pytest.mark.guest, pytest.mark.slow]

# counters worth quoting (QOM stats names, as QUERY_STATS reports them)
SHOWN = ('tx_packets', 'rx_packets', 'retransmitted_packets', 'retransmit_timeouts',
         'duplicate_requests', 'out_of_sequence', 'seq_err_naks_sent', 'seq_err_naks_rcvd',
         'implied_nak_seq_err', 'local_ack_timeout_err', 'eth_rx_drops')


@pytest.fixture(scope='module')
def topo(request):
    """The topology of the test, booted with qcow2 root overlays (needed by
    migration, whose source and target share the disk, and by savevm)."""
    try:
        t = get_topology(request.param, request.config, overlay=True)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)
    need_driver(t)
    return t


def dev_stats(vm, i=0):
    """The counters of the VM's i-th qrnic device (QMP qom-get stats; no guest command)."""
    return vm.qmp_cmd('qom-get', path=vm.qrnic_paths()[i], property='stats')


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if isinstance(b[k], int)}


def shown(d):
    return ', '.join('%s %d' % (k, d[k]) for k in SHOWN if k in d)


def wait_traffic(vm, base, packets=300, timeout=120, i=0):
    """Wait until the device sent `packets` more packets than in base; returns its stats."""
    deadline = time.monotonic() + timeout
    while True:
        st = dev_stats(vm, i)
        if st['tx_packets'] - base['tx_packets'] >= packets:
            return st
        if time.monotonic() > deadline:
            pytest.fail('%s: no RDMA traffic: %d packets in %ds' % (vm.name, st['tx_packets'] - base['tx_packets'],
                                                                   timeout), pytrace=False)
        time.sleep(0.5)


# ---- live migration, T2 ------------------------------------------------------------------
RPING_COUNT = 1500
QP_TIMEOUT = 16


def migrating_run(t, tool, migrate=(1,)):
    """Run TOOL between vm0 (server) and vm1 (client); once traffic flows, live-migrate the VMs
    listed in `migrate` one after the other.  Returns the figures."""
    srv_ep, cli_ep = t.pair(refresh=True)
    port = next_port()
    if tool == 'rping':
        scmd = 'rping -s -a %s -p %d -V -S 4096 -C %d' % (srv_ep.ip, port, RPING_COUNT)
        ccmd = 'rping -c -a %s -I %s -p %d -V -S 4096 -C %d' % (srv_ep.ip, cli_ep.ip, port, RPING_COUNT)
    else:
        # -u 16: ACK timeout 268 ms (perftest's default 14 is 67 ms).  During the live phase
        # of a migration the two host cores run three QEMUs and the migration thread; a starved
        # QEMU's virtual clock runs on without work being done, and with 67 ms x retry_cnt 7 the
        # requester ended once in six runs in RETRY_EXC_ERR (docs/qemu.md section 9)
        common = '%s -p %d -F -D 14 -u %d' % (tool, port, QP_TIMEOUT)
        scmd = '%s -d %s -x %d' % (common, srv_ep.ibdev, srv_ep.gid)
        ccmd = '%s -d %s -x %d %s' % (common, cli_ep.ibdev, cli_ep.gid, srv_ep.ip)
    base = {v.guest_name: dev_stats(v) for v in t.vms}
    t0 = time.monotonic()
    sjob = srv_ep.vm.spawn(scmd)
    waiter = wait_cm_listen if tool == 'rping' else wait_tcp_listen
    if not waiter(srv_ep.vm, port):
        pytest.fail('server did not listen: %s' % sjob.stop().output, pytrace=False)
    cjob = cli_ep.vm.spawn(ccmd)
    migs = []
    try:
        for i in migrate:
            src = t.vms[i]
            wait_traffic(src, base[src.guest_name] if not migs else dev_stats(src), packets=300)
            before = {v.guest_name: dev_stats(v) for v in t.vms}
            # the agent of the migrating VM stays idle: no guest command until it is done
            dst = t.migrate(i, jobs=(sjob, cjob))
            right_after = dev_stats(dst)
            migs.append((src.name, dst.name, dst.migration, before, right_after))
        cli = cjob.wait(180)
        srv = sjob.wait(60)
    finally:
        for j in (cjob, sjob):
            if j.result is None:
                j.stop()
    dt = time.monotonic() - t0
    if cli.running or srv.running:
        pytest.fail('%s still running after the migration' % tool, pytrace=False)
    end = {v.guest_name: dev_stats(v) for v in t.vms}
    figures = {'tool': tool, 'run_s': dt, 'migrations': [], 'delta': {}}
    for name in end:
        figures['delta'][name] = delta(base[name], end[name])
    for src_name, dst_name, st, before, right_after in migs:
        guest = dst_name.split('.')[0]
        after_mig = delta(right_after, end[guest])
        figures['migrations'].append({'from': src_name, 'to': dst_name, 'downtime_ms': st.get('downtime'),
                                      'total_ms': st.get('total-time'), 'setup_ms': st.get('setup-time'),
                                      'mib': st.get('ram', {}).get('transferred', 0) / 1048576.0,
                                      'tx_after': after_mig['tx_packets'],
                                      # the migrated device: while migrating (source, from the
                                      # start of the migration, then target), and after it
                                      'during': delta(before[guest], right_after), 'after': after_mig,
                                      'before': delta(base[guest], before[guest])})
    for m in figures['migrations']:
        print('MIGRATION: %s: %s -> %s: downtime %s ms, total %s ms (setup %s ms), %.1f MiB of RAM sent; '
              'the target then sent %d packets'
              % (tool, m['from'], m['to'], m['downtime_ms'], m['total_ms'], m['setup_ms'], m['mib'],
                 m['tx_after']))
        for phase in ('before', 'during', 'after'):
            print('MIGRATION: %s: %s device %s the migration: %s' % (tool, m['to'].split('.')[0], phase,
                                                                   shown(m[phase])))
    for name, d in figures['delta'].items():
        print('MIGRATION: %s: %s device over the whole run: %s' % (tool, name, shown(d)))
    print('MIGRATION: %s: run time %.1f s, exit status server %s client %s'
          % (tool, dt, srv.rc, cli.rc))
    # the figures above are printed first: they say why, when a tool failed
    check_pair(srv, cli)
    for m in figures['migrations']:
        # the migrated device carried the traffic on: it sent packets after the migration
        # (the tool was still running when the VM moved)
        assert m['tx_after'] > 0, m
    return figures, srv, cli


@pytest.mark.parametrize('topo', ['T2'], indirect=True)
@pytest.mark.parametrize('tool', ['ib_write_bw', 'ib_send_bw'])
def test_live_migration_perftest(topo, tool):
    """perftest in duration mode (-D 14, ACK timeout -u 16) between vm0 and vm1; vm1 (the
    requester) moves."""
    fig, srv, cli = migrating_run(topo, tool, migrate=(1,))
    row = perftest_table(cli.output)
    assert row and int(row['#iterations']) > 0, cli.output


@pytest.mark.parametrize('topo', ['T2'], indirect=True)
def test_live_migration_rping_validated(topo):
    """rping -V (every payload compared) between vm0 and vm1; vm1 moves."""
    fig, srv, cli = migrating_run(topo, 'rping', migrate=(1,))
    assert 'data mismatch' not in cli.output + srv.output, cli.output


@pytest.mark.parametrize('topo', ['T2'], indirect=True)
def test_live_migration_both_ways(topo):
    """ib_write_bw; first vm0 (the responder: the peer's retransmission timer runs during
    its downtime) moves, then vm1 (the requester)."""
    fig, srv, cli = migrating_run(topo, 'ib_write_bw', migrate=(0, 1))
    row = perftest_table(cli.output)
    assert row and int(row['#iterations']) > 0, cli.output
    assert len(fig['migrations']) == 2


# ---- savevm / loadvm, T1 ------------------------------------------------------------------
@pytest.mark.parametrize('topo', ['T1'], indirect=True)
def test_savevm_loadvm_traffic(topo):
    """ib_write_bw between the two ports of one guest; savevm mid-run; the run ends; loadvm
    puts guest and devices back to the snapshot, and the same processes finish again; a fresh
    run passes."""
    vm = topo.vms[0]
    srv_ep, cli_ep = topo.pair(refresh=True)
    port = next_port()
    # duration mode: the guest's own timer ends it (after loadvm too); the hub between the two
    # ports is fast (a few hundred MiB/s), an iteration count would be done before savevm
    common = 'ib_write_bw -p %d -F -D 10' % port
    scmd = '%s -d %s -x %d' % (common, srv_ep.ibdev, srv_ep.gid)
    ccmd = '%s -d %s -x %d %s' % (common, cli_ep.ibdev, cli_ep.gid, srv_ep.ip)
    t0 = time.monotonic()
    sjob = vm.spawn(scmd)
    assert wait_tcp_listen(vm, port), sjob.stop().output
    cjob = vm.spawn(ccmd)
    base = dev_stats(vm, 1)
    wait_traffic(vm, base, packets=300, i=1)
    # stop, read both devices, save (a stopped VM stays stopped), go on
    vm.qmp_cmd('stop')
    saved = [dev_stats(vm, 0), dev_stats(vm, 1)]
    save_s = vm.savevm('rdma')
    vm.qmp_cmd('cont')
    first = (cjob.wait(180), sjob.wait(60))
    for r in first:
        assert not r.running, r.cmd
    check_pair(first[1], first[0])
    assert perftest_table(first[0].output), first[0].output
    after_first = [dev_stats(vm, 0), dev_stats(vm, 1)]
    # the tool was still running at the snapshot: the client's device sent more afterwards
    assert after_first[1]['tx_packets'] > saved[1]['tx_packets'], (saved[1], after_first[1])
    # back to the snapshot; the devices' counters are the saved ones
    vm.qmp_cmd('stop')
    load_s = vm.loadvm('rdma')
    loaded = [dev_stats(vm, 0), dev_stats(vm, 1)]
    assert loaded == saved, [delta(a, b) for a, b in zip(saved, loaded)]
    vm.qmp_cmd('cont')
    # the tool processes of the snapshot run on to their end a second time
    second = (cjob.wait(180), sjob.wait(60))
    for r in second:
        assert not r.running, r.cmd
    check_pair(second[1], second[0])
    row2 = perftest_table(second[0].output)
    assert row2 and int(row2['#iterations']) > 0, second[0].output
    after_second = [dev_stats(vm, 0), dev_stats(vm, 1)]
    # a fresh run after loadvm
    port = next_port()
    common = 'ib_write_bw -p %d -F -n 200' % port
    sjob = vm.spawn('%s -d %s -x %d' % (common, srv_ep.ibdev, srv_ep.gid))
    assert wait_tcp_listen(vm, port), sjob.stop().output
    cli = vm.run('%s -d %s -x %d %s' % (common, cli_ep.ibdev, cli_ep.gid, srv_ep.ip), timeout=180, check=False)
    srv = sjob.wait(60)
    check_pair(srv, cli)
    assert perftest_table(cli.output)
    dt = time.monotonic() - t0
    d1 = delta(saved[1], after_first[1])
    d2 = delta(saved[1], after_second[1])
    print('SNAPSHOT: savevm %.2f s, loadvm %.2f s (1 GiB guest)' % (save_s, load_s))
    print('SNAPSHOT: client device from the snapshot to the end, first time: %s' % shown(d1))
    print('SNAPSHOT: client device from the snapshot to the end, after loadvm: %s' % shown(d2))
    print('SNAPSHOT: run time %.1f s' % dt)


# ---- snapshot replay under -icount ---------------------------------------------------------
# The deterministic runner (scripts/qrnic_vm/det.py): T1 from a self-contained initramfs, no
# agent, no disk, -icount shift=0,sleep=off,align=off, -seed, a fixed RTC.  This workload runs
# ib_write_bw between the two ports and prints a marker once the client's port has sent 200
# packets; the host then stops the VM and saves it (savevm into a qcow2 drive without a device).
REPLAY_WORKLOAD = r'''
bw="ib_write_lat -s 64 -n 20000 -F"
taskset -c 0 $bw -d $EP0_DEV -x $EP0_GID > /tmp/srv.txt 2>&1 &
srv=$!
i=0
while [ $i -lt 200 ] && ! grep -q ':4853 00000000:0000 0A' /proc/net/tcp; do sleep 0.05; i=$((i+1)); done
taskset -c 1 $bw -d $EP1_DEV -x $EP1_GID $EP0_IP > /tmp/cli.txt 2>&1 &
cli=$!
tx=/sys/class/infiniband/$EP1_DEV/ports/1/hw_counters/tx_packets
while [ "$(cat $tx)" -lt 200 ]; do sleep 0.001; done
echo QRNIC-SNAPSHOT-NOW > /dev/console
wait $cli
c=$?
wait $srv
s=$?
cat /tmp/cli.txt
echo "== server (exit $s)"
cat /tmp/srv.txt
exit $((c | s))
'''


def _det_prereqs():
    import os
    from qrnic_vm import find_image, find_qemu
    from qrnic_vm.det import find_detinitrd
    build = os.environ.get('QRNIC_GUEST_NO_BUILD') != '1'
    try:
        qemu, image = find_qemu(build=build), find_image(build=build)
        image.require_driver()
        return qemu, find_detinitrd(image)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)


def _events(res):
    """(qrnic_event lines of the run, those QEMU's exit added)."""
    with open(res.trace) as f:
        lines = f.read().split('\n')
    run, at_exit = lines[:res.trace_at_stop], lines[res.trace_at_stop:]
    pick = lambda ls: [ln for ln in ls if ln.startswith('qrnic_event ')]  # noqa: E731
    return pick(run), pick(at_exit)


def _no_t(line):
    return re.sub(r' t=\d+ ', ' t=* ', line)


def test_loadvm_replay_icount():
    """savevm mid-traffic under -icount; two QEMUs started with -loadvm of that snapshot must
    replay the device byte for byte: the same qrnic_event timeline, the same pcaps, the same
    workload output and counters."""
    import os
    import shutil
    from guest import vmlib
    from qrnic_vm.det import det_run
    from qrnic_vm.runner import make_qcow2_overlay, new_run_dir
    vmlib._stop_all()               # one guest alive at a time
    qemu, detdir = _det_prereqs()
    t0 = time.monotonic()
    base_dir = new_run_dir()
    snap = make_qcow2_overlay(os.path.join(base_dir, 'snap.qcow2'), None, size=64 << 20)
    kw = dict(qemu=qemu, detdir=detdir, smp=2, timeout=600, qom_props=('stats',))
    saved = det_run(REPLAY_WORKLOAD, rundir=base_dir, snap_image=snap, save_at=('QRNIC-SNAPSHOT-NOW', 'mid'), **kw)
    runs = []
    for i in range(2):
        rd = new_run_dir()
        img = shutil.copy(snap, os.path.join(rd, 'snap.qcow2'))
        r = det_run(REPLAY_WORKLOAD, rundir=rd, snap_image=img, loadvm='mid',
                    trace=os.path.join(rd, 'events.log'),
                    **kw)
        assert r.ok, 'replay %d: rc %s (logs in %s):\n%s' % (i, r.rc, rd, r.output[-3000:])
        row = perftest_table(r.output)
        assert row and int(row['#iterations']) > 0, r.output
        runs.append(r)
    a, b = runs
    (ea, xa), (eb, xb) = _events(a), _events(b)
    assert ea, 'no qrnic_event lines in %s' % a.trace
    first = next((k for k, (x, y) in enumerate(zip(ea, eb)) if x != y), None)
    same_events = ea == eb
    pa = [open(a.pcaps[d], 'rb').read() for d in sorted(a.pcaps)]
    pb = [open(b.pcaps[d], 'rb').read() for d in sorted(b.pcaps)]
    print('REPLAY: savevm %.2f s at the marker; replays: %d and %d events, %s; pcaps %s; '
          'outputs %s; counters %s; run time %.1f s'
          % (saved.saved_s, len(ea), len(eb),
             'identical' if same_events else 'first difference at line %s:\n  %s\n  %s'
             % (first, ea[first] if first is not None else '-', eb[first] if first is not None else '-'),
             'identical (%d bytes)' % sum(map(len, pa)) if pa == pb else
             'differ (%s vs %s bytes)' % ([len(x) for x in pa], [len(x) for x in pb]),
             'identical' if a.output == b.output else 'differ',
             'identical' if a.qom == b.qom else 'differ', time.monotonic() - t0))
    print('REPLAY: at QEMU\'s exit: %d and %d events (the ports going down), at t=%s and t=%s'
          % (len(xa), len(xb), sorted({re.search(r't=(\d+)', x).group(1) for x in xa}),
             sorted({re.search(r't=(\d+)', x).group(1) for x in xb})))
    # QEMU's exit deletes the netdevs: each device raises an async port event, stamped with the
    # virtual time the VM stopped at after the guest's ACPI soft-off (the vCPU runs on until the
    # main loop pauses it: host-dependent).  Those are the same events, times aside.
    assert [_no_t(x) for x in xa] == [_no_t(x) for x in xb], (xa, xb)
    assert all(' eqe ' not in x or ' b 0x1 addr 0x1' in x for x in xa), xa
    assert same_events, (first, len(ea), len(eb))
    # RDMA traffic was in flight at the snapshot: the replays carried RoCE frames (a pcap
    # without frames is its 24-byte header)
    assert all(len(x) > 24 + 1000 for x in pa), [len(x) for x in pa]
    assert pa == pb
    assert a.output == b.output
    assert a.qom == b.qom
