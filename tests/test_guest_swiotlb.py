# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: page-listed kernel rings under bounce-buffered DMA (issue 18
follow-up), in one T1 guest booted with ``swiotlb=force``.

With swiotlb=force every streaming DMA mapping (dma_map_page/single/sg)
is bounced: the device reads and writes a bounce buffer, and the CPU sees
its data only at dma_sync_*() or unmap time -- as in an SEV or TDX guest,
where swiotlb is forced.  A ring the device and the CPU share all the time
must be coherent memory (dma_alloc_coherent).  The driver used to build a
page-listed ring (ring_pagelist, ABI 1.8) from vmalloc'd pages with a
streaming mapping each and no sync: under swiotlb=force the CPU never saw
a CQE and the device never saw a WQE, and nvme-rdma's connect timed out.
Its rings are now coherent pages (as mlx5_frag_buf), and this test runs
tests/test_guest_nvmeof.py's whole I/O flow (dd and python O_DIRECT writes
read back and compared, fio with crc32c, a reconnect) with ring_pagelist=2
(every kernel ring of more than a page listed), then checks that the
bounce buffers were really used (swiotlb's debugfs high-water mark) and
that both ports' rings were page lists (the driver's debugfs
ring_pagelists).

User-space verbs are not tested here: ib_umem maps user MRs with a
streaming mapping and no sync points, on every RDMA device, so user-space
RDMA does not work under swiotlb=force (docs/guest.md).
"""
import pytest

from guest.vmlib import PrereqError, get_topology, guest_dmesg, need_driver  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow]

APPEND = ('swiotlb=force',)
PARAM = '/sys/module/qrnic/parameters/ring_pagelist'
SWIOTLB = '/sys/kernel/debug/swiotlb'


@pytest.fixture(scope='module')
def topo(request):
    """T1 booted with swiotlb=force (its own topology: the others stay without)."""
    try:
        return get_topology('T1', request.config, append=APPEND)
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


def test_nvme_rdma_page_listed_rings_under_swiotlb_force(topo, guest_dmesg):  # noqa: F811
    from test_guest_nvmeof import nvme_rdma_io
    need_driver(topo, provider=False)
    tgt, host = topo.pair()
    vm = tgt.vm
    assert 'swiotlb=force' in vm.run('cat /proc/cmdline').split()
    assert vm.run('cat %s' % PARAM).strip() == '1'
    tlb0 = _swiotlb(vm)
    before = {ep.ibdev: _listed(ep) for ep in (tgt, host)}
    vm.run('echo 2 > %s' % PARAM)
    try:
        nvme_rdma_io(topo, guest_dmesg, tgt, host, 'sge')
    finally:
        vm.run('echo 1 > %s' % PARAM)
    after = {ep.ibdev: _listed(ep) for ep in (tgt, host)}
    tlb = _swiotlb(vm)
    print('swiotlb before %s, after %s; page-listed rings: before %s, after %s'
          % (tlb0, tlb, before, after))
    # both sides' CQs and QPs were page lists (admin + I/O queues, twice: a reconnect)
    for ep in (tgt, host):
        assert after[ep.ibdev] - before[ep.ibdev] >= 4, (before, after)
    # DMA went through bounce buffers (a 1 GiB guest with 64-bit DMA never
    # bounces without swiotlb=force)
    assert tlb['io_tlb_nslabs'] > 0 and tlb['io_tlb_used_hiwater'] > 0, tlb
