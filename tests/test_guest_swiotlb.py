# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: page-listed kernel rings under bounce-buffered DMA (issue 18
follow-up).  Topology T2: vm0 the NVMe-oF target, vm1 the host, booted
with ``swiotlb=force``.

With swiotlb=force every streaming DMA mapping (dma_map_page/single/sg)
is bounced: the device reads and writes a bounce buffer, and the CPU sees
its data only at dma_sync_*() or unmap time -- as in an SEV or TDX guest,
where swiotlb is forced.  A ring the device and the CPU share all the time
must be coherent memory (dma_alloc_coherent).  The driver used to build a
page-listed ring (ring_pagelist, ABI 1.8) from vmalloc'd pages with a
streaming mapping each and no sync: under swiotlb=force the CPU never saw
a CQE and the device never saw a WQE, and nvme-rdma's connect hung until
the agent's 180 s timeout ("rdma connection establishment failed").  Its
rings are now coherent pages (as mlx5_frag_buf).  With ring_pagelist=2
(every kernel ring of more than a page listed) on both VMs, nvme-rdma in
vm1 connects, writes a pattern with dd and python O_DIRECT (sizes 4 KiB to
1 MiB, buffers inside pages) read back and compared, fio with crc32c,
disconnects and connects again, and the data is still there; swiotlb's
debugfs shows that vm1 bounced, and the driver's that its rings were page
lists.

Why the target is not in the swiotlb guest: nvmet-rdma maps a read
command's data buffer (rdma_rw_ctx_init, DMA_TO_DEVICE) before the command
fills it and posts the RDMA WRITE without a dma_sync, so under
swiotlb=force it sends the bounce buffer's stale bytes (T1 with both ends
bounced: the host's Identify came back zeroed, "Mismatching cntlid"); that
is nvmet's, on any RDMA device.  nvme-rdma (the host) maps each I/O when it
is posted and unmaps it before completing it: bounce-safe.

User-space verbs are not tested here: ib_umem maps user MRs with a
streaming mapping and no sync points, on every RDMA device, so user-space
RDMA does not work under swiotlb=force (docs/guest.md).
"""
import re
import time

import pytest

from guest.vmlib import (PrereqError, get_topology, guest_dmesg, module_param,  # noqa: F401
                         need_driver, set_module_param)

pytestmark = [pytest.mark.guest, pytest.mark.slow]

SWIOTLB_VM = 1      # the host
SWIOTLB = '/sys/kernel/debug/swiotlb'


@pytest.fixture(scope='module')
def topo(request):
    """T2 with vm1 booted with swiotlb=force (its own topology: the others stay without)."""
    try:
        return get_topology('T2', request.config, vm_append={SWIOTLB_VM: ('swiotlb=force',)})
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)


def _pci(ep):
    return ep.vm.run('basename $(readlink -f /sys/class/infiniband/%s/device)' % ep.ibdev).strip()


def _listed(ep):
    return int(ep.vm.run('cat /sys/kernel/debug/qrnic/%s/ring_pagelists' % _pci(ep)))


def _swiotlb(vm):
    out = vm.run('mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug; '
                 'cd %s && grep . io_tlb_nslabs io_tlb_used io_tlb_used_hiwater' % SWIOTLB)
    return {k: int(v) for k, v in (ln.split(':', 1) for ln in out.split())}


def test_nvme_rdma_host_on_page_listed_rings_under_swiotlb_force(topo, guest_dmesg):  # noqa: F811
    from test_guest_nvmeof import connect, disconnect, fio_across_reconnect, nvmet_teardown, \
        setup_target, verify_io
    need_driver(topo, provider=False)
    tgt, host = topo.pair(refresh=True)
    tvm, hvm = tgt.vm, host.vm
    assert tvm is topo.vm(0) and hvm is topo.vm(SWIOTLB_VM), (tgt, host)
    assert 'swiotlb=force' in hvm.run('cat /proc/cmdline').split()
    assert 'swiotlb=force' not in tvm.run('cat /proc/cmdline').split()
    for vm in (tvm, hvm):
        assert module_param(vm, 'ring_pagelist') == '1'
        nvmet_teardown(vm)  # leftovers of an earlier, interrupted run
    before = {ep.ibdev + '@' + ep.vm.name: _listed(ep) for ep in (tgt, host)}
    for vm in (tvm, hvm):
        set_module_param(vm, 'ring_pagelist', 2)
    try:
        setup_target(tvm, tgt.ip)
        hvm.run('modprobe -a nvme-fabrics nvme-rdma', timeout=60)
        t0 = time.monotonic()
        ctrl, bdev, address = connect(hvm, tgt.ip, host.ip)
        verified = verify_io(hvm, bdev)
        ctrl2, _, checked = fio_across_reconnect(hvm, ctrl, bdev, tgt.ip, host.ip)
        verified += checked
        disconnect(hvm, ctrl2)
        print('\nnvme-rdma host under swiotlb=force (%s, %s): %d bytes verified, %.0f s'
              % (ctrl, address, verified, time.monotonic() - t0))
    finally:
        for vm in (tvm, hvm):
            set_module_param(vm, 'ring_pagelist', 1)
        downs = [nvmet_teardown(vm) for vm in (hvm, tvm)]
    for down in downs:
        assert 'in use' not in down.output, down.output
    after = {ep.ibdev + '@' + ep.vm.name: _listed(ep) for ep in (tgt, host)}
    tlb = _swiotlb(hvm)
    print('page-listed rings: before %s, after %s; %s swiotlb %s' % (before, after, hvm.name, tlb))
    # both sides' CQs and QPs were page lists (admin + I/O queues, twice: a reconnect)
    for k in before:
        assert after[k] - before[k] >= 4, (before, after)
    # the host's DMA went through bounce buffers (a 1 GiB guest with 64-bit
    # DMA never bounces without swiotlb=force)
    assert tlb['io_tlb_nslabs'] > 0 and tlb['io_tlb_used_hiwater'] > 0, tlb
    log = '\n'.join(t for r in guest_dmesg.new().values() for _, t in r)
    bad = [ln for ln in log.splitlines() if 'nvme' in ln and
           re.search(r'failed with status|error recovery|reconnect|I/O error|timeout|Mismatch|invalid',
                     ln, re.I)]
    assert not bad, '\n'.join(bad)
