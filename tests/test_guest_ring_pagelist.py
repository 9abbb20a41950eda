# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: rings that are not physically contiguous (ABI 1.8, spec
6.6.21; issues 16 and 18), in one T1 guest.

- ``ibv_devinfo -v`` shows max_cqe 4194304 (a ConnectX-5's ~4M);
- tests/guest/qrnic_mr_cq.c ``bigcq`` (built on the host against rdma-core
  56.1, run in the guest): a user CQ of 4194304 entries (a 128 MiB ring, a
  page list of 32768 pages) and two RC QPs of 1024-entry queues on it
  (their SQs, above 32 KiB, are page lists with the driver's default
  ring_pagelist=1), 3072 SENDs that wrap the SQ and RQ three times with
  every byte compared, then the CQ resized to 65536 entries with
  completions pending;
- kernel rings: with ring_pagelist=2 (every ring of more than a page a
  page list) nvme-rdma and nvmet-rdma run tests/test_guest_nvmeof.py's
  whole I/O flow (dd and fio with crc32c, reconnect), their CQs and QPs
  page-listed (the driver's debugfs ring_pagelists counts them).
"""

import pytest

from guest.vmlib import (guest_dmesg, module_param, need_driver, pair,  # noqa: F401
                         set_module_param, topo)
from test_guest_rereg import prog  # noqa: F401  (fixture: qrnic_mr_cq built on the host)

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]

GUEST_PROG = '/tmp/qrnic_mr_cq'


def _pci(ep):
    return ep.vm.run('basename $(readlink -f /sys/class/infiniband/%s/device)' % ep.ibdev).strip()


def _listed(ep):
    return int(ep.vm.run('cat /sys/kernel/debug/qrnic/%s/ring_pagelists' % _pci(ep)))


def test_devinfo_and_4m_cq_from_user_space(topo, prog):  # noqa: F811
    s, _ = pair(topo)
    info = s.vm.run('ibv_devinfo -v -d %s' % s.ibdev)
    assert any(ln.split() == ['max_cqe:', '4194304'] for ln in info.splitlines()), info
    assert module_param(s.vm, 'ring_pagelist') == '1'
    before = _listed(s)
    s.vm.put(GUEST_PROG, prog, mode=0o755)
    r = s.vm.run('%s bigcq %s %d' % (GUEST_PROG, s.ibdev, s.gid), timeout=900, check=False,
                 merge=True)
    print('qrnic_mr_cq bigcq on %s:\n%s' % (s.ibdev, r.output))
    assert r.rc == 0 and r.output.rstrip().endswith('ALL OK'), r.output
    oks = [ln for ln in r.output.splitlines() if ln.startswith('ok ')]
    assert len(oks) == 5, oks
    # with ring_pagelist=1 (rings above 32 KiB): the 4M CQ (128 MiB), the two
    # SQs (1024 x 64 bytes), the resized CQ (2 MiB); the RQs (1024 x 32 bytes
    # = 32 KiB) stay contiguous
    assert _listed(s) - before == 4, (before, _listed(s))


def test_nvme_rdma_on_page_listed_kernel_rings(topo, guest_dmesg):  # noqa: F811
    from test_guest_nvmeof import nvme_rdma_io
    need_driver(topo, provider=False)
    tgt, host = topo.pair()
    vm = tgt.vm
    before = {ep.ibdev: _listed(ep) for ep in (tgt, host)}
    set_module_param(vm, 'ring_pagelist', 2)
    try:
        nvme_rdma_io(topo, guest_dmesg, tgt, host, 'sge')
    finally:
        set_module_param(vm, 'ring_pagelist', 1)
    after = {ep.ibdev: _listed(ep) for ep in (tgt, host)}
    print('page-listed rings: before %s, after %s' % (before, after))
    # both sides' CQs and QPs (admin + I/O queues, twice: a reconnect)
    for ep in (tgt, host):
        assert after[ep.ibdev] - before[ep.ibdev] >= 4, (before, after)
