# SPDX-License-Identifier: GPL-2.0-or-later
"""qrnic_vm: boot qrnic test guests under QEMU (TCG) and run commands in them.

Stdlib only, plus QEMU's own qemu.qmp for QMP (qmp.py: the project's one QMP
client, taken from the QEMU source scripts/build-qemu.sh unpacks).  Used by
scripts/vm.py (CLI), scripts/run-demo.sh, scripts/qrnic-fault and the tests
(tests/guest/vmlib.py, tests/qtest).  See docs/guest.md.

    from qrnic_vm import Topology
    with Topology('T1') as t:                  # boots, waits for the agents
        print(t.vm(0).run('ibv_devices', timeout=60))
        srv, cli = t.pair()                    # Endpoint(vm, ibdev, netdev, ip, gid)
        job = srv.vm.spawn(f'ib_write_bw -d {srv.ibdev} -x {srv.gid}')
        cli.vm.run(f'ib_write_bw -d {cli.ibdev} -x {cli.gid} {srv.ip}', timeout=120)
        job.wait(30)
    # leaving the block powers the guests off (then QMP quit, then SIGKILL)

Topologies (the "cable" between qrnic ports is a QEMU netdev):
    T1  one VM, two qrnic devices cabled back-to-back (hubport; link='dgram'
        uses a UDP pair on 127.0.0.1 instead); server on port 0, client on port 1
    T2  two VMs with one qrnic each, joined by -netdev dgram on 127.0.0.1
    T3  VM0 with qrnic, VM1 with virtio-net + rdma_rxe, same dgram link
Topology(..., hosts='netns') runs each VM in a network namespace of its own that stands in
for a host machine (hosts.py; 'netns-vxlan': tap + bridge + VXLAN between them).
"""
from .runner import (AgentError, CommandFailed, Endpoint, Job, PrereqError, Result, Topology, VM,  # noqa: F401
                     VMError, find_image, find_qemu, REPO, TOPOLOGIES)
