# SPDX-License-Identifier: GPL-2.0-or-later
"""Guests on one qrnic-switch (topologies S3..S16, docs/congestion.md "VM
topologies"): the set-up and the ib_write_bw incast that
tests/test_guest_switch.py and tests/test_guest_dcqcn_incast.py share."""
import contextlib
import os
import time

import pytest

from guest.vmlib import (PrereqError, Topology, VMError, check_pair, need_driver, next_port,
                         perftest_table, wait_tcp_listen, DmesgWatch)


@contextlib.contextmanager
def switch_topology(name, qrnic_props, switch_args, vm_props=None):
    """Boot topology `name` (S3..S16) with qrnic_props on every device (vm_props:
    {index: props} instead, for some), load the driver, bring the ports up; yields
    the Topology with .eps, the usable endpoints in VM order.  Fails the test with
    the reason when the guests cannot run."""
    try:
        t = Topology(name, build=os.environ.get('QRNIC_GUEST_NO_BUILD') != '1',
                     mem=int(os.environ.get('QRNIC_GUEST_MEM', '1024')), qrnic_props=qrnic_props,
                     switch_args=switch_args)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)
    for i, props in (vm_props or {}).items():
        t.vms[i].qrnic_props = props
    try:
        t.start()
    except VMError as e:
        pytest.fail('%s did not boot: %s' % (name, e), pytrace=False)
    try:
        need_driver(t)
        for v in t.vms:
            v.run('[ -d /sys/module/qrnic ] || modprobe qrnic; qrnic-netup >/dev/null', timeout=120)
        eps = t.endpoints(refresh=True)
        usable = [e for e in eps if e.ip and e.gid is not None]
        assert [e.vm.name for e in usable] == [v.name for v in t.vms], eps
        t.eps = usable
        yield t
    finally:
        t.stop()


def watch_dmesg(t):
    """Generator for a per-test fixture: after the test, every guest alive and
    no kernel log problems."""
    w = DmesgWatch(t)
    yield w
    assert all(v.alive() for v in t.vms), 'a guest died; logs in %s' % t.rundir
    bad = w.problems()
    assert not bad, 'kernel log problems (logs in %s):\n  %s' % (t.rundir, '\n  '.join(bad[:40]))


def dev_stats(vm):
    """the counters of the VM's one qrnic (QMP qom-get stats)"""
    (st,) = vm.qrnic_stats().values()
    return st


def incast(t, rcv, senders, bw_opts, bw_iters, sample_s=0.25, timeout=900):
    """ib_write_bw (bw_opts, bw_iters iterations) from each sender to rcv at
    once, the switch's counters every sample_s while they run.  Returns the
    per-flow Gb/s (perftest's BW average), the receiver port's switch counter
    deltas (frames, marks, drops; q_max; 'both': samples in which every
    sender's port took frames in, i.e. the flows overlapped; 'active': in
    which any did), the devices' CNP/ECN counter deltas (one dict per VM) and
    per sample interval each sender's Mb/s into the switch."""
    sw0 = t.switch_stats()
    st0 = [dev_stats(v) for v in t.vms]
    flows = []
    for snd in senders:
        port = next_port()
        srv = rcv.vm.spawn('ib_write_bw -d %s -x %d -p %d %s' % (rcv.ibdev, rcv.gid, port, bw_opts))
        assert wait_tcp_listen(rcv.vm, port), 'ib_write_bw server did not listen on %d' % port
        flows.append((snd, port, srv))
    clients = [(snd, srv, snd.vm.spawn('ib_write_bw -d %s -x %d -p %d %s %s'
                                       % (snd.ibdev, snd.gid, port, bw_opts, rcv.ip)))
               for snd, port, srv in flows]
    r = t.vms.index(rcv.vm)
    ports = [t.vms.index(snd.vm) for snd in senders]
    samples, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        sw = t.switch_stats()
        samples.append((time.monotonic(), [sw['ports'][i]['rx_frames'] for i in ports]))
        if all(not cli.poll().running for _s, _v, cli in clients):
            break
        time.sleep(sample_s)
    gbps = []
    for snd, srv, cli in clients:
        cr = cli.wait(timeout)
        sr = srv.wait(120)
        check_pair(sr, cr)
        row = perftest_table(cr.output)
        assert row and int(row['#iterations']) == bw_iters, cr.output
        gbps.append(float(row['BW_average[Gb/sec]']))
    sw1 = t.switch_stats()
    st1 = [dev_stats(v) for v in t.vms]
    d = [{k: st1[i][k] - st0[i][k] for k in ('cnp_sent', 'cnp_received', 'ecn_marked_received')}
         for i in range(len(st0))]
    q = {k: sw1['ports'][r][k] - sw0['ports'][r][k] for k in ('frames', 'marks', 'drops')}
    q['q_max'] = sw1['ports'][r]['q_max']
    # per sample interval: each sender's frames into the switch -> Mb/s (a
    # frame of 4 KiB payload is about 4200 bytes with headers and overhead);
    # more than 2 frames: not a stray ND/ARP frame
    rates, both, active = [], 0, 0
    for (t0, f0), (t1, f1) in zip(samples, samples[1:]):
        moved = [b - a for a, b in zip(f0, f1)]
        both += all(m > 2 for m in moved)
        active += any(m > 2 for m in moved)
        rates.append(['%.0f' % (m * 4200 * 8 / (t1 - t0) / 1e6) for m in moved])
    q['both'], q['active'] = both, active
    return gbps, q, d, rates
