# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: SQ records with the device's doorbell flag (ABI 1.11,
QRNIC_CAP_SQ_DBREC, docs/spec.md 8.6.2) under real kernel ULPs.  With the
module parameter qrnic.sq_dbrec=1 (the default) every kernel QP has an SQ
record: post_send writes the producer index there and rings QRNIC_DB_SQ
only when the device's flag is clear; with 0 it rings per post.  The same
work runs once each way (the parameter is read when a QP is created, so
it is set in both VMs before the connection): NVMe-oF over RDMA across
the wire (T2: nvmet-rdma in vm0, nvme-rdma in vm1), fio writing 4 KiB and
128 KiB blocks at iodepth 16 and reading them back with crc32c
verification.  With records the drivers must have skipped doorbells
(debugfs sq_dbrec: the device's flag was set when they looked) and the
devices must have taken indexes from the records (QOM host-calls
sq-rec-taken), every byte verified; without them no QP has a record and
nothing is skipped or taken.  (In one VM the ACK comes back within the
same main-loop run, so the flag is set for short windows only and a post
rarely finds it: T2's round trip is where it pays, docs/storage.md.)

User QPs: the provider finds the record in the SQ mapping
(sq_dbrec_offset) and posts the same way; `ib_write_bw -s 4096 -n 5000`
across the wire, once with records and once without: the device takes
indexes from the records only in the first (85 in one run), and both
QPs were created with a record (both are perftest runs that check
their iteration count)."""
import re

import pytest

from guest.storage import fio_job, fio_verify
from guest.vmlib import (check_pair, client_server, guest_dmesg, host_calls, need_driver,  # noqa: F401
                         next_port, perftest_table, set_module_param, topo)
from test_guest_nvmeof import NQN, NS_MB, nvmet_teardown, setup_target

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T2'], indirect=True)]


def sq_dbrec_stats(vm):
    """debugfs sq_dbrec of the VM's qrnic devices, summed."""
    out = vm.run('mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug; '
                 'cat /sys/kernel/debug/qrnic/*/sq_dbrec')
    tot = {'supported': 0, 'enabled': 0, 'qps': 0, 'skipped': 0, 'rung': 0}
    for k, v in re.findall(r'^(\w+) (-?\d+)$', out, re.M):
        if k in tot:
            tot[k] += int(v)
    return tot


def snapshot(vms):
    st = [sq_dbrec_stats(vm) for vm in vms]
    hc = [host_calls(vm) for vm in vms]
    return {'qps': sum(s['qps'] for s in st), 'skipped': sum(s['skipped'] for s in st),
            'rung': sum(s['rung'] for s in st), 'taken': sum(h['sq-rec-taken'] for h in hc),
            'supported': sum(s['supported'] for s in st)}


def connect(hvm, traddr):
    """nvme connect (one I/O queue) from the host VM; returns (controller, disk)."""
    hvm.run('modprobe -a nvme-fabrics nvme-rdma', timeout=60)
    hvm.run('nvme connect -t rdma -a %s -s 4420 -n %s -i 1' % (traddr, NQN), timeout=180)
    out = hvm.run(r'''
for i in $(seq 100); do
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat $c/subsysnqn 2>/dev/null)" = %s ] && [ "$(cat $c/state)" = live ] || continue
    for b in /sys/block/nvme*n*; do
      case ${b##*/} in *c*) continue ;; esac
      [ -b /dev/${b##*/} ] && { echo ${c##*/} /dev/${b##*/}; exit 0; }
    done
  done
  sleep 0.2
done; exit 1''' % NQN, timeout=60)
    ctrl, disk = out.split()[-2:]
    return ctrl, disk


def test_nvmeof_kernel_qps_skip_doorbells_through_the_record(topo, guest_dmesg):
    need_driver(topo, provider=False)
    tgt, host = topo.pair(refresh=True)
    tvm, hvm = tgt.vm, host.vm
    assert tvm is not hvm
    vms = (tvm, hvm)
    assert NS_MB >= 4          # the fio job's two 2 MiB regions fit
    for vm in vms:
        nvmet_teardown(vm)
    used = {}
    try:
        setup_target(tvm, tgt.ip)
        for on in (True, False):
            for vm in vms:
                set_module_param(vm, 'sq_dbrec', on)    # read at QP creation: before the connection
            s0 = snapshot(vms)
            ctrl, disk = connect(hvm, tgt.ip)
            s1 = snapshot(vms)
            wrote, read = fio_verify(hvm, fio_job(2 << 20, dev=disk, offset=0), timeout=600)
            assert wrote == read == 2 * (2 << 20), (wrote, read)
            s2 = snapshot(vms)
            hvm.run('nvme disconnect -n %s' % NQN, timeout=180)
            assert s2['supported'] == 2, s2          # both devices: QRNIC_CAP_SQ_DBREC
            used[on] = {'qps': s1['qps'] - s0['qps'],
                        **{k: s2[k] - s1[k] for k in ('skipped', 'rung', 'taken')}}
    finally:
        for vm in vms:
            set_module_param(vm, 'sq_dbrec', True)  # the default
            nvmet_teardown(vm)
    on, off = used[True], used[False]
    print('\nNVMe-oF across the wire, fio 4 MiB written and verified at iodepth 16: SQ records %s, '
          'SQ doorbells %s' % (on, off))
    # the admin and I/O queues of both ends (host and target) got records
    assert on['qps'] >= 4, on
    assert off == {'qps': 0, 'skipped': 0, 'rung': 0, 'taken': 0}, off
    # posts found the device still running and rang nothing, and the
    # devices took those indexes from the records
    assert on['skipped'] > 0 and on['taken'] > 0, on
    assert on['skipped'] + on['rung'] > 1000, on      # every post of the run counted


def perftest_pair(s, c, tool, args, timeout):
    """tool with args between server endpoint s and client endpoint c
    on a fresh port, both checked; (the client's result row, client)."""
    port = next_port()
    common = '-p %d %s' % (port, args)
    srv, cli = client_server(s.vm, '%s -d %s -x %d %s' % (tool, s.ibdev, s.gid, common),
                             c.vm, '%s -d %s -x %d %s %s' % (tool, c.ibdev, c.gid, common, s.ip),
                             port, timeout=timeout)
    check_pair(srv, cli)
    return perftest_table(cli.output), cli


def test_user_qps_post_through_the_record(topo):
    """ib_write_bw (the provider's post_send) across the wire: with records
    the device takes SQ indexes from them (QOM sq-rec-taken grows by more
    than a few) and the debugfs count of QPs with a record grows; without
    them neither."""
    need_driver(topo)
    s, c = topo.pair(refresh=True)
    vms = (s.vm, c.vm)
    got = {}
    try:
        for on in (True, False):
            for vm in vms:
                set_module_param(vm, 'sq_dbrec', on)    # read at QP creation
            q0, h0 = sum(sq_dbrec_stats(vm)['qps'] for vm in vms), sum(host_calls(vm)['sq-rec-taken'] for vm in vms)
            row, cli = perftest_pair(s, c, 'ib_write_bw', '-s 4096 -n 5000 -F', 300)
            assert row and int(row['#iterations']) == 5000, cli.output
            got[on] = {'qps': sum(sq_dbrec_stats(vm)['qps'] for vm in vms) - q0,
                       'taken': sum(host_calls(vm)['sq-rec-taken'] for vm in vms) - h0,
                       'MiB/s': float(row['BW_average[MiB/sec]'])}
    finally:
        for vm in vms:
            set_module_param(vm, 'sq_dbrec', True)  # the default
    print('\nib_write_bw -s 4096 across the wire: SQ records %s, doorbells %s' % (got[True], got[False]))
    assert got[True]['qps'] >= 2 and got[True]['taken'] > 0, got
    assert got[False]['qps'] == 0 and got[False]['taken'] == 0, got


def test_user_read_lat_never_loses_a_post(topo):
    """ib_read_lat posts one READ at a time and waits for it: a post whose
    index the device misses while the provider finds the flag set is a
    hang.  Under TCG with one vCPU a `lock or` is no host barrier, so the
    provider's fence between its index write and its flag read must be an
    MFENCE (guest-driver/provider/verbs.c, qrnic_store_load_fence): with
    the `lock or` about one run of four of `-D 3` hung (docs/interop.md
    4.3); with it this test's fourth run hung (the provider before the
    fix, one trial).  Twelve runs of 3 s each finish."""
    need_driver(topo)
    s, c = topo.pair(refresh=True)
    h0 = sum(host_calls(vm)['sq-rec-taken'] for vm in (s.vm, c.vm))
    for i in range(12):
        row, cli = perftest_pair(s, c, 'ib_read_lat', '-D 3 -o 16 -F', 90)
        assert row, (i, cli.output)
    taken = sum(host_calls(vm)['sq-rec-taken'] for vm in (s.vm, c.vm)) - h0
    print('\nib_read_lat x 12: %d posts taken from SQ records' % taken)
    assert taken > 0, 'no post went through the record: the handshake was not exercised'
