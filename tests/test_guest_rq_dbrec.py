# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: RQ producer index records (ABI 1.10, QRNIC_CAP_RQ_DBREC,
docs/spec.md 8.6.1) in real software.  With the module parameter
qrnic.rq_dbrec=1 the kernel driver's QPs, and the provider's
user QPs through the record's place in their RQ mapping, post receives by
writing the producer index to memory instead of ringing QRNIC_DB_RQ; with
0 (the default, docs/storage.md says why) they ring a doorbell per post.  The same work runs once each way (the
parameter is read when a QP is created) and the device's doorbell counter
(hw_counters, QUERY_STATS) must drop by at least the receives posted, while
the tools check the data:

- ibv_rc_pingpong -c (user QPs: the provider; 500 receives posted at the
  start, one per completed one after);
- NVMe-oF over RDMA (kernel QPs: nvme-rdma and nvmet-rdma, one receive
  reposted per command on the target and per response on the host): dd of
  a random pattern, O_DIRECT, 4 KiB blocks, read back and compared.

T1 (one VM, two ports): both ends see the same module parameter."""
import pytest

from guest.vmlib import (check_pair, client_server, guest_dmesg, hw_counters,  # noqa: F401
                         need_driver, next_port, pair, set_module_param, topo)
from test_guest_nvmeof import connect, disconnect, nvmet_teardown, reload_rdma_stack, setup_target

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]


def _doorbells(vm, eps):
    return {ep.ibdev: hw_counters(vm, ep.ibdev)['doorbells'] for ep in eps}


def test_pingpong_posts_receives_through_the_record(topo):
    need_driver(topo)
    s, c = pair(topo)
    vm = s.vm
    used = {}
    try:
        for on in (True, False):
            set_module_param(vm, 'rq_dbrec', on)
            before = _doorbells(vm, (s, c))
            port = next_port()
            common = '-p %d -s 1024 -n 200 -c' % port
            srv, cli = client_server(vm, 'ibv_rc_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                                     vm, 'ibv_rc_pingpong -d %s -g %d %s %s'
                                     % (c.ibdev, c.gid, common, s.ip), port)
            check_pair(srv, cli)          # -c: every buffer validated
            assert '200 iters in' in cli.output, cli.output
            after = _doorbells(vm, (s, c))
            used[on] = {k: after[k] - before[k] for k in after}
    finally:
        set_module_param(vm, 'rq_dbrec', False)   # the default
    print('\nibv_rc_pingpong -n 200 doorbells per device: RQ records %s, RQ doorbells %s'
          % (used[True], used[False]))
    for dev in used[True]:
        # each side posts 500 receives up front and reposts one per receive
        assert used[False][dev] - used[True][dev] >= 500, used


def test_nvmeof_kernel_qps_post_receives_through_the_record(topo, guest_dmesg):
    need_driver(topo, provider=False)
    # The count is of all doorbells, CQ arms included: ib_core's DIM (on
    # by default) moderates the CQs differently from one run to the next,
    # which moves the arms by hundreds.  Without DIM every event is
    # followed by one arm in both runs, as the receives' doorbells are not.
    tgt, host = reload_rdma_stack(topo, qrnic_args='cq_dim=0')
    vm = tgt.vm
    assert host.vm is vm, 'T1: both ports in one VM'
    nvmet_teardown(vm)
    used = {}
    try:
        setup_target(vm, tgt.ip)
        vm.run('head -c %d /dev/urandom > /tmp/pattern' % (1 << 20))
        for on in (True, False):
            set_module_param(vm, 'rq_dbrec', on)   # read at QP creation: connect after it
            ctrl, bdev, _ = connect(vm, tgt.ip, host.ip)
            before = _doorbells(vm, (tgt, host))
            vm.run('dd if=/tmp/pattern of=%s bs=4k count=256 oflag=direct status=none && '
                   'dd if=%s of=/tmp/back bs=4k count=256 iflag=direct status=none && '
                   'cmp /tmp/pattern /tmp/back' % (bdev, bdev), timeout=300)
            after = _doorbells(vm, (tgt, host))
            used[on] = {k: after[k] - before[k] for k in after}
            disconnect(vm, ctrl)
    finally:
        set_module_param(vm, 'rq_dbrec', False)   # the default
        nvmet_teardown(vm)
        reload_rdma_stack(topo)           # DIM on again
    print('\nNVMe-oF 512 x 4 KiB O_DIRECT I/Os, doorbells per device: RQ records %s, RQ doorbells %s'
          % (used[True], used[False]))
    for dev in used[True]:
        # 512 commands: the target reposts a receive per command, the host
        # one per response (O_DIRECT, one at a time: 509-512 fewer measured;
        # the arms may differ by a few events)
        assert used[False][dev] - used[True][dev] >= 384, used
