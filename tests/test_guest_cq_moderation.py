# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the kernel driver's completion-event moderation of kernel
ULP CQs (nvme-rdma, nvmet-rdma), as the device keeps it (the QOM "cqs"
view's mod_count / mod_period_us, spec MODIFY_CQ) and as the driver counts
it (debugfs qrnic/<pci>/cq_moderation):

- qrnic.cq_dim_scale=8: ib_core's RDMA DIM moves the CQs along its
  profiles (1..32 CQEs, 1..32 us, made for hardware) under an fio load, and
  every period the device holds is a DIM profile's times 8, the count
  unchanged;
- qrnic.cq_mod_usec=700 qrnic.cq_mod_count=12: every kernel CQ the ULPs
  allocate holds 12 CQEs / 700 us from its creation, and DIM's modify_cq
  changes none of them.

Each case reloads the RDMA stack with the parameters (ib_core's CQ pool
keeps its CQs for the life of the ib_device) and checks the data: fio
writes with crc32c verification through NVMe-oF between the two ports of
one T1 guest, then dd of a pattern read back and compared."""
import pytest

from guest.storage import fio_verify
from guest.vmlib import guest_dmesg, need_driver, topo  # noqa: F401
from test_guest_faults import qom_id
from test_guest_nvmeof import (connect, disconnect, nvmet_teardown, pci_of, reload_rdma_stack,
                               setup_target)

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]

# lib/dim/rdma_dim.c's rdma_dim_prof[]: (CQEs, microseconds)
DIM_PROFILES = {(1, 1), (4, 1), (4, 2), (8, 2), (8, 4), (8, 16), (16, 16), (16, 32), (32, 32)}
SCALE = 8
FIXED = (12, 700)
# a random-write load with crc32c verification, then a 3 s random read at depth 32
LOAD = '''[global]
ioengine=libaio
direct=1
filename=%(dev)s
size=4m
[w]
rw=randwrite
bs=4k
iodepth=16
verify=crc32c
do_verify=1
[r]
stonewall
rw=randread
bs=4k
iodepth=32
time_based=1
runtime=3
'''


def cq_moderation(ep):
    """The driver's counters (debugfs cq_moderation) of this port."""
    out = ep.vm.run('cat /sys/kernel/debug/qrnic/%s/cq_moderation' % pci_of(ep))
    return {k: int(v) for k, v in (ln.split() for ln in out.splitlines())}


def device_cqs(ep):
    """(cqn, mod_count, mod_period_us) of every CQ the device holds."""
    cqs = ep.vm.qmp_cmd('qom-get', path='/machine/peripheral/' + qom_id(ep), property='cqs')
    return [(c['cqn'], c['mod_count'], c['mod_period_us']) for c in cqs]


def _run_load(topo, params):
    """Reload with the qrnic module parameters params, connect, run the load
    and a dd pattern check; returns {RDMA device: (its driver counters, its
    device's CQs)}."""
    tgt, host = reload_rdma_stack(topo, qrnic_args=params)
    vm = tgt.vm
    setup_target(vm, tgt.ip)
    ctrl, bdev, _ = connect(vm, tgt.ip, host.ip)
    try:
        wrote, read = fio_verify(vm, LOAD % {'dev': bdev})
        assert wrote == 4 << 20 and read >= 4 << 20, (wrote, read)
        vm.run('head -c %d /dev/urandom > /tmp/modpat && '
               'dd if=/tmp/modpat of=%s bs=4k count=64 oflag=direct status=none && '
               'dd if=%s of=/tmp/modback bs=4k count=64 iflag=direct status=none && '
               'cmp /tmp/modpat /tmp/modback' % (64 << 12, bdev, bdev), timeout=300)
        return {ep.ibdev: (cq_moderation(ep), device_cqs(ep)) for ep in (tgt, host)}
    finally:
        disconnect(vm, ctrl)
        nvmet_teardown(vm)


def test_dim_periods_scaled(topo, guest_dmesg):
    need_driver(topo, provider=False)
    vm = topo.vm(0)
    param = '/sys/module/qrnic/parameters/cq_dim_scale'
    was = vm.run('cat %s' % param).strip()
    for bad in ('0', '1001', '-1', 'x'):   # refused, the value unchanged
        r = vm.run('echo %s > %s' % (bad, param), check=False)
        assert not r.ok and 'Invalid argument' in r.output, (bad, r.output)
        assert vm.run('cat %s' % param).strip() == was, bad
    try:
        seen = _run_load(topo, 'cq_dim_scale=%d' % SCALE)
    finally:
        reload_rdma_stack(topo)
    print('\ncq_dim_scale=%d: %s' % (SCALE, seen))
    held = 0
    for dev, (drv, cqs) in seen.items():
        assert drv['dim'] == 1 and drv['dim_scale'] == SCALE, (dev, drv)
        assert drv['fixed_cqs'] == 0 and drv['ignored'] == 0, (dev, drv)
        assert drv['dim_period_sent_max'] == SCALE * drv['dim_period_max'], (dev, drv)
        for cqn, count, period in cqs:
            if (count, period) == (0, 0):
                continue                  # DIM never moved it (it starts at its first profile unsent)
            # a DIM profile, its period in the guest's time
            assert period % SCALE == 0 and (count, period // SCALE) in DIM_PROFILES, (dev, cqn, count, period)
            held += 1
    assert sum(d['dim_modify'] for d, _ in seen.values()) > 0 and held, \
        'DIM moved no CQ under the load: %s' % seen


def test_fixed_moderation_replaces_dim(topo, guest_dmesg):
    need_driver(topo, provider=False)
    try:
        seen = _run_load(topo, 'cq_mod_count=%d cq_mod_usec=%d' % FIXED)
    finally:
        reload_rdma_stack(topo)
    print('\ncq_mod_count, cq_mod_usec = %s: %s' % (FIXED, seen))
    for dev, (drv, cqs) in seen.items():
        assert (drv['fixed_count'], drv['fixed_usec']) == FIXED, (dev, drv)
        assert drv['dim_modify'] == 0, (dev, drv)
        held = [c for c in cqs if (c[1], c[2]) != (0, 0)]
        # the device holds the driver's moderation on every CQ the driver gave it, and no other
        assert drv['fixed_cqs'] > 0 and len(held) == drv['fixed_cqs'], (dev, drv, cqs)
        assert all((c[1], c[2]) == FIXED for c in held), (dev, cqs)
