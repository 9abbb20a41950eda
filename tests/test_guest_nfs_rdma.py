# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: NFS over RDMA (RPC-over-RDMA version 1, RFC 8166; the
kernel's svcrdma server and xprtrdma client, both in rpcrdma.ko) on qrnic.

In T1 (one VM, two qrnic ports cabled back to back) and in T2 (two VMs,
one qrnic each, across the dgram wire): knfsd exports a tmpfs directory
with an RDMA listener on port 20049 (`rdma 20049` in
/proc/fs/nfsd/portlist) beside its TCP one on the server port's address;
the client mounts it (from the same guest in T1, where the kernel picks
the source port and the traffic goes through one port's loopback; from the
other VM in T2, over the wire) with `-o rdma,port=20049,vers=4.2`.  Data:
fio (randwrite, 4 KiB and 128 KiB blocks, iodepth 16, O_DIRECT, crc32c
verification) and a random file written with dd and compared by sha256;
then umount, mount again, and both verified once more.

That the traffic was RPC-over-RDMA and not TCP: /proc/self/mountstats says
"xprt: rdma" for the mount; svcrdma's own counters
(/proc/sys/sunrpc/svc_rdma/rdma_stat_*) count the RDMA receives, READs and
WRITEs the server made; the qrnic devices' hw_counters moved; and `ss`
shows no TCP connection to or from port 2049.
Clean teardown: umount, nfsd stopped (rpc.nfsd 0), exports flushed, the
modules unloaded; no kernel warning.  About a minute under TCG each."""
import re
import time

import pytest

from guest.storage import fio_job, fio_verify, sha256_read, sha256_write
from guest.vmlib import guest_dmesg, hw_counters, need_driver, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)]

EXPORT = '/srv/qrnic-nfs'
MNT = '/mnt/qrnic-nfs'
RDMA_PORT = 20049
FIO_MB = 4
DD_MB = 8
SVC_RDMA = '/proc/sys/sunrpc/svc_rdma'


def nfs_teardown(vm):
    """Unmount, stop the server, whatever state the test left (no check)."""
    return vm.run(r'''
mountpoint -q %(mnt)s && umount %(mnt)s
[ -d /proc/fs/nfsd ] && [ -e /proc/fs/nfsd/threads ] && rpc.nfsd 0 2>&1
exportfs -ua 2>&1
pkill -x rpc.mountd; pkill -x rpcbind
mountpoint -q /proc/fs/nfsd && umount /proc/fs/nfsd
mountpoint -q /var/lib/nfs/rpc_pipefs && umount /var/lib/nfs/rpc_pipefs
mountpoint -q %(exp)s && umount %(exp)s
modprobe -r nfsv4 nfsv3 nfs nfsd rpcrdma 2>&1
true''' % {'mnt': MNT, 'exp': EXPORT}, timeout=120, check=False)


def start_server(vm, ip):
    """knfsd on ip (TCP 2049) plus an RDMA listener on RDMA_PORT; exports EXPORT (tmpfs)."""
    return vm.run(r'''set -e
modprobe -a nfsd rpcrdma nfsv4
mkdir -p %(exp)s %(mnt)s /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery
mountpoint -q %(exp)s || mount -t tmpfs -o size=64m tmpfs %(exp)s
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
mountpoint -q /var/lib/nfs/rpc_pipefs || mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs
echo "%(exp)s *(rw,sync,no_root_squash,insecure,no_subtree_check,fsid=1)" > /etc/exports
rpcbind -w </dev/null >/dev/null 2>&1
rpc.mountd -N 2 -N 3 </dev/null >/dev/null 2>&1
exportfs -ra
# a short NFSv4 grace period (the server ends it early below)
echo 10 > /proc/fs/nfsd/nfsv4leasetime
echo 10 > /proc/fs/nfsd/nfsv4gracetime
rpc.nfsd -N 3 -H %(ip)s 4
echo "rdma %(port)d" > /proc/fs/nfsd/portlist
echo Y > /proc/fs/nfsd/v4_end_grace 2>/dev/null || true
cat /proc/fs/nfsd/portlist
''' % {'exp': EXPORT, 'mnt': MNT, 'ip': ip, 'port': RDMA_PORT}, timeout=120)


def mount(vm, ip):
    vm.run('mount -t nfs -o rdma,port=%d,vers=4.2 %s:%s %s' % (RDMA_PORT, ip, EXPORT, MNT), timeout=180)
    stats = vm.run('cat /proc/self/mountstats')
    m = re.search(r'device %s:%s mounted on %s with fstype nfs4.*?(?=^device |\Z)'
                  % (re.escape(ip), re.escape(EXPORT), re.escape(MNT)), stats, re.S | re.M)
    assert m, stats
    return m.group(0)


def svc_rdma_stats(vm):
    out = vm.run('cd %s && grep . rdma_stat_*' % SVC_RDMA, check=False).output
    return {k: int(v) for k, v in (ln.split(':', 1) for ln in out.split() if ':' in ln)}


def test_nfs_over_rdma(topo, guest_dmesg):
    need_driver(topo, provider=False)     # kernel only
    srv, cli = topo.pair()
    svm, cvm = srv.vm, cli.vm             # one VM in T1, two in T2
    assert (svm is cvm) == (topo.name == 'T1'), topo.name
    vms = [svm] if svm is cvm else [svm, cvm]
    for vm in vms:
        missing = vm.run('for m in nfsd rpcrdma nfsv4; do modinfo -n $m >/dev/null 2>&1 || echo $m; '
                         'done; for c in rpc.nfsd rpc.mountd exportfs mount.nfs fio; do command -v '
                         '$c >/dev/null || echo $c; done')
        assert not missing.strip(), 'the guest image lacks: %s' % missing.split()
        nfs_teardown(vm)
    t0 = time.monotonic()
    eps = (srv, cli)
    hw_before = {ep.ibdev + ep.vm.name: hw_counters(ep.vm, ep.ibdev) for ep in eps}

    def hw_now():
        return {ep.ibdev + ep.vm.name: hw_counters(ep.vm, ep.ibdev) for ep in eps}
    try:
        ports = start_server(svm, srv.ip)
        assert 'rdma %d' % RDMA_PORT in ports, ports
        if cvm is not svm:
            cvm.run('modprobe -a rpcrdma nfsv4 && mkdir -p %s' % MNT, timeout=120)
        svc_before = svc_rdma_stats(svm)
        stats = mount(cvm, srv.ip)
        # the client's transport is RPC-over-RDMA
        assert re.search(r'^\s*xprt:\s+rdma\s', stats, re.M), stats
        assert re.search(r'proto=rdma', cvm.run('grep " %s " /proc/mounts' % MNT)), 'not an rdma mount'

        job = fio_job(FIO_MB << 20, directory=MNT)
        wrote, read = fio_verify(cvm, job)
        assert wrote == read == 2 * (FIO_MB << 20), (wrote, read)
        digest = sha256_write(cvm, MNT + '/dd-file', DD_MB << 20)
        assert sha256_read(cvm, MNT + '/dd-file', DD_MB << 20) == digest

        # no failed completion while the mount was up (umount's QP teardown
        # flushes the posted receives: IB_WC_WR_FLUSH_ERR, counted too)
        hw_mid = hw_now()
        assert all(hw_mid[d]['cqe_errors'] == hw_before[d]['cqe_errors'] for d in hw_mid), (hw_before, hw_mid)
        cvm.run('umount %s' % MNT, timeout=120)
        mount(cvm, srv.ip)
        hw_mount2 = hw_now()
        # the server's own copy and the client's, after a new mount
        assert sha256_read(svm, EXPORT + '/dd-file', DD_MB << 20, iflag='') == digest
        assert sha256_read(cvm, MNT + '/dd-file', DD_MB << 20) == digest
        _, reread = fio_verify(cvm, job, verify_only=True)
        assert reread == 2 * (FIO_MB << 20), reread

        svc = svc_rdma_stats(svm)
        dsvc = {k: svc[k] - svc_before.get(k, 0) for k in svc}
        hw_after = hw_now()
        hw = {dev: {k: hw_after[dev][k] - hw_before[dev][k]
                    for k in ('tx_packets', 'rx_packets', 'loopback_frames', 'cqe_errors')}
              for dev in hw_after}
        tcp = sum(int(vm.run('ss -Htn state established "( sport = :2049 or dport = :2049 )" '
                             '| wc -l').strip()) for vm in vms)
        verified = read + reread + 3 * (DD_MB << 20)
        print('\nNFS 4.2 over RDMA %s:%d (%s): fio wrote %d bytes, %d bytes verified (fio crc32c, '
              'dd sha256) in %.0f s; svc_rdma %s; device %s; TCP connections to 2049: %s'
              % (srv.ip, RDMA_PORT, topo.name, wrote, verified, time.monotonic() - t0, dsvc, hw, tcp))
        # the server saw RPC-over-RDMA receives and moved data with RDMA READ/WRITE
        assert dsvc.get('rdma_stat_recv', 0) > 0, dsvc
        assert dsvc.get('rdma_stat_read', 0) + dsvc.get('rdma_stat_write', 0) > 0, dsvc
        assert sum(h['tx_packets'] for h in hw.values()) > 0, hw
        if svm is not cvm:      # across the wire: both ports sent and received, none looped back
            assert all(h['tx_packets'] > 0 and h['rx_packets'] > 0 and h['loopback_frames'] == 0
                       for h in hw.values()), hw
        assert all(hw_after[d]['cqe_errors'] == hw_mount2[d]['cqe_errors'] for d in hw_after), hw
        assert tcp == 0, 'NFS went over TCP too: %s' % tcp
    finally:
        down = [nfs_teardown(vm) for vm in ([cvm, svm] if cvm is not svm else [svm])]
    for vm in vms:
        assert not vm.run('mountpoint -q %s && echo mounted; [ -d /sys/module/nfsd ] && echo nfsd; '
                          '[ -d /sys/module/rpcrdma ] && echo rpcrdma; true' % MNT).strip(), \
            [d.output for d in down]
    problems = guest_dmesg.problems()
    assert not problems, '\n'.join(problems)
