# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: the real kernel storage ULP, NVMe over Fabrics on RDMA, over
qrnic's fast registration (spec 12.12; ABI 1.2).

One T1 guest (one VM, two qrnic ports cabled back to back): nvmet +
nvmet-rdma export a namespace on port A's address (configfs; a
memory-backed null_blk with 512-byte blocks), and nvme-rdma on port B
connects to it with `nvme connect -t rdma` (nvme-cli; the
/dev/nvme-fabrics write when an image has no nvme-cli; -w / host_traddr
binds the host to port B).  nvme-rdma registers every data
buffer of an I/O with IB_WR_REG_MR (alloc_mr + map_mr_sg, a page list the
device reads) and asks the target for remote invalidation: nvmet-rdma
answers with SEND_WITH_INV, and the host's receive completion carries
IB_WC_WITH_INVALIDATE (without it, nvme-rdma would post a LOCAL_INV).

Data: a random pattern written with dd (O_DIRECT) in sizes from 4 KiB to
1 MiB at offsets that are not 4 KiB aligned, and from buffers that do not
start on a page (python3, O_DIRECT: the MR's iova is not page aligned),
read back and compared by sha256, then the whole region once more.  Then
fio (randwrite, 4 KiB and 128 KiB blocks, iodepth 16, O_DIRECT,
verify=crc32c) behind that region, `nvme disconnect`, a new connection,
fio --verify_only and the whole namespace's sha256 as before.  The
driver's debugfs counters (qrnic/<pci>/mem_mgt) say how many REG_MR,
LOCAL_INV and SEND_WITH_INV work requests were posted on which port and
how many receives reported an invalidation.  Then a clean disconnect, the
target taken down, the modules unloaded, every fast-registration MR gone,
and the kernel log must show no warning and no nvme-rdma work-request
error.

nvme-rdma always asks for remote invalidation and nvmet-rdma always
grants it, so the kernel's LOCAL_INV is not used that way; the force_mr
case reloads the RDMA stack with ib_core force_mr=1, which makes the
target's rdma_rw register its RDMA READ/WRITE buffers too (REG_MR with
local write access) and post a LOCAL_INV before reusing an MR.

About 90 s for both cases under TCG, boot included."""
import json
import re
import time

import pytest

from guest.storage import dd_verify, fio_job, fio_verify, sha256_read
from guest.vmlib import VMError, guest_dmesg, hw_counters, need_driver, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]

NQN = 'nqn.2026-12.io.qrnic:frwr-test'
NVMET = '/sys/kernel/config/nvmet'
PORT_ID = 7
MODULES = ('configfs', 'null_blk', 'nvme-fabrics', 'nvme-rdma', 'nvmet', 'nvmet-rdma')
NS_MB = 16

# (size, device offset) written with dd: offsets multiples of 512, not of 4096
DD_CASES = [(4096, 0), (8192, 12800), (12288, 66048), (65536, 198144),
            (131072 + 512, 527872), (1048576, 1049088)]
# (size, buffer offset into a page, device offset) written with python3
PY_CASES = [(4096, 512, 3145728), (4096 + 512, 3584, 3211264), (65536, 512, 3277824),
            (1048576, 2048, 4194816), (1048576 - 512, 512, 6291456)]
REGION = 8 << 20        # all the cases lie below 8 MiB
FIO_MB = 4              # fio: two regions of 4 MiB behind REGION

# O_DIRECT from/to buffers that start inside a page, then the whole region
PY_IO = r'''
import hashlib, json, mmap, os, sys

dev, pattern_path, cases, dd_cases, region = sys.argv[1], sys.argv[2], \
    json.loads(sys.argv[3]), json.loads(sys.argv[4]), int(sys.argv[5])
pattern = open(pattern_path, 'rb').read()
fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
out = {'py': []}

def buf(size, off):
    m = mmap.mmap(-1, off + size + 4096)
    return m, memoryview(m)[off:off + size]

for size, boff, doff in cases:
    data = pattern[doff:doff + size]
    m, mv = buf(size, boff)
    mv[:] = data
    assert os.pwrite(fd, mv, doff) == size
    m2, mv2 = buf(size, (boff + 1536) % 4096)
    assert os.preadv(fd, [mv2], doff) == size
    out['py'].append([size, boff, doff, hashlib.sha256(data).hexdigest() ==
                      hashlib.sha256(mv2).hexdigest()])
    del mv, mv2
    m.close(); m2.close()

# the whole region: the pattern where a case wrote, zeros elsewhere
expect = bytearray(region)
for size, doff in dd_cases:
    expect[doff:doff + size] = pattern[doff:doff + size]
for size, boff, doff in cases:
    expect[doff:doff + size] = pattern[doff:doff + size]
m, mv = buf(region, 0)
got = 0
while got < region:
    n = os.preadv(fd, [mv[got:got + (1 << 20)]], got)
    assert n > 0
    got += n
out['region_ok'] = hashlib.sha256(mv).hexdigest() == hashlib.sha256(expect).hexdigest()
if not out['region_ok']:
    bad = [i for i in range(0, region, 512) if mv[i:i + 512] != expect[i:i + 512]]
    out['bad_sectors'] = bad[:20]
del mv
m.close()
os.close(fd)
print(json.dumps(out))
'''


def pci_of(ep):
    return ep.vm.run('basename $(readlink -f /sys/class/infiniband/%s/device)' % ep.ibdev).strip()


def mem_mgt(ep):
    """The driver's fast registration counters of this port (debugfs)."""
    out = ep.vm.run('cat /sys/kernel/debug/qrnic/%s/mem_mgt' % pci_of(ep))
    return {k: int(v) for k, v in (ln.split() for ln in out.splitlines() if len(ln.split()) == 2)}


def setup_target(vm, ip, trtype='rdma'):
    vm.run(r'''set -e
modprobe null_blk nr_devices=0
modprobe -a %(mods)s
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
# a memory-backed null_blk with 512-byte blocks (a tmpfs file would give 4 KiB blocks)
[ -d /sys/kernel/config/nullb ] || { echo "null_blk has no configfs"; exit 1; }
N=/sys/kernel/config/nullb/qrnicfrwr
mkdir -p $N
echo %(mb)d > $N/size
echo 1 > $N/memory_backed
echo 512 > $N/blocksize
echo 1 > $N/power
# the disk is named after the configfs directory (6.12), or nullb<index>
for i in $(seq 50); do
  for BDEV in /dev/qrnicfrwr /dev/nullb$(cat $N/index); do [ -b $BDEV ] && break 2; done
  sleep 0.1
done
[ -b $BDEV ] || { echo "no null_blk disk"; ls /dev; exit 1; }
S=%(nvmet)s/subsystems/%(nqn)s
mkdir $S
echo 1 > $S/attr_allow_any_host
mkdir $S/namespaces/1
echo -n $BDEV > $S/namespaces/1/device_path
echo 1 > $S/namespaces/1/enable
P=%(nvmet)s/ports/%(port)d
mkdir $P
echo %(trtype)s > $P/addr_trtype
if [ %(trtype)s = rdma ]; then
  echo ipv4 > $P/addr_adrfam
  echo %(ip)s > $P/addr_traddr
  echo 4420 > $P/addr_trsvcid
fi
ln -s $S $P/subsystems/%(nqn)s
echo "target: $BDEV on %(trtype)s %(ip)s:4420"
''' % {'mods': ' '.join(MODULES), 'mb': NS_MB, 'nvmet': NVMET, 'nqn': NQN, 'port': PORT_ID, 'ip': ip,
       'trtype': trtype}, timeout=120)


def nvmet_teardown(vm):
    """Disconnect and take the target down, whatever state the test left (no check)."""
    return vm.run(r'''
for c in /sys/class/nvme/nvme*; do
  [ -e "$c/subsysnqn" ] && [ "$(cat $c/subsysnqn)" = %(nqn)s ] && echo 1 > $c/delete_controller
done
P=%(nvmet)s/ports/%(port)d S=%(nvmet)s/subsystems/%(nqn)s
rm -f $P/subsystems/%(nqn)s; [ -d $P ] && rmdir $P
[ -d $S/namespaces/1 ] && { echo 0 > $S/namespaces/1/enable; rmdir $S/namespaces/1; }
[ -d $S ] && rmdir $S
N=/sys/kernel/config/nullb/qrnicfrwr
[ -d $N ] && { echo 0 > $N/power; rmdir $N; }
modprobe -r nvme-rdma nvme-loop nvmet-rdma nvmet null_blk 2>&1
true''' % {'nvmet': NVMET, 'nqn': NQN, 'port': PORT_ID}, timeout=180, check=False)


def has_nvme_cli(vm):
    return vm.run('command -v nvme', check=False).ok


def connect(vm, traddr, host_traddr, transport='rdma'):
    """Connect with nvme-cli (`nvme connect`), or through /dev/nvme-fabrics
    when the image has no nvme-cli; returns (controller, block device, address)."""
    if transport == 'rdma' and has_nvme_cli(vm):
        # -w: host_traddr binds the host to port B; -i: one I/O queue
        vm.run('nvme connect -t rdma -a %s -s 4420 -n %s -w %s -i 1' % (traddr, NQN, host_traddr),
               timeout=180)
    else:
        if transport == 'rdma':
            opts = 'transport=rdma,traddr=%s,trsvcid=4420,nqn=%s,host_traddr=%s,nr_io_queues=1' % (
                traddr, NQN, host_traddr)
        else:
            opts = 'transport=%s,nqn=%s' % (transport, NQN)
        vm.run('echo "%s" > /dev/nvme-fabrics' % opts, timeout=180)
    out = vm.run(r'''
for i in $(seq 100); do
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat $c/subsysnqn 2>/dev/null)" = %s ] || continue
    [ "$(cat $c/state)" = live ] || continue
    for b in /sys/block/nvme*n*; do
      case ${b##*/} in *c*) continue ;; esac
      [ -b /dev/${b##*/} ] && { echo ${c##*/} ${b##*/} $(cat $c/transport) $(cat $c/address); exit 0; }
    done
  done
  sleep 0.2
done
exit 1''' % NQN, timeout=60)
    f = out.split()
    assert len(f) >= 3 and f[2] == transport, out
    return f[0], '/dev/' + f[1], ' '.join(f[3:])


def disconnect(vm, ctrl):
    """`nvme disconnect -n NQN` (or delete_controller); waits until the controller is gone."""
    if has_nvme_cli(vm):
        out = vm.run('nvme disconnect -n %s' % NQN, timeout=180)
        assert 'disconnected 1 controller' in out, out
    else:
        vm.run('echo 1 > /sys/class/nvme/%s/delete_controller' % ctrl, timeout=180)
    vm.run('for i in $(seq 100); do [ -e /sys/class/nvme/%s ] || exit 0; sleep 0.2; done; exit 1' % ctrl,
           timeout=60)


def fio_across_reconnect(vm, ctrl, bdev, traddr, host_traddr):
    """fio random writes with crc32c-verified read-back behind REGION and the whole
    namespace's sha256; disconnect, connect again: fio verifies the same data and the
    namespace has the same sha256.  Returns (new controller, bytes fio wrote, bytes
    verified in all); the new controller is left connected."""
    wrote, read = fio_verify(vm, fio_job(FIO_MB << 20, dev=bdev, offset=REGION))
    assert wrote == read == 2 * (FIO_MB << 20), (wrote, read)
    whole = sha256_read(vm, bdev, NS_MB << 20)
    disconnect(vm, ctrl)
    ctrl2, bdev2, _ = connect(vm, traddr, host_traddr)
    _, reread = fio_verify(vm, fio_job(FIO_MB << 20, dev=bdev2, offset=REGION), verify_only=True)
    assert reread == 2 * (FIO_MB << 20), reread
    assert sha256_read(vm, bdev2, NS_MB << 20) == whole, 'the namespace changed across a reconnect'
    return ctrl2, wrote, wrote + reread + 2 * (NS_MB << 20)


def verify_io(vm, bdev):
    """The pattern written and read back (dd, then python3 with buffers inside
    pages, then the whole region); returns the bytes compared."""
    # dd, O_DIRECT: sizes 4 KiB..1 MiB at offsets that are not 4 KiB aligned
    dd_verify(vm, bdev, REGION, DD_CASES, '/tmp/nvme-pattern')

    # buffers that do not start on a page, then the whole region
    vm.put('/tmp/nvme-io.py', PY_IO)
    res = json.loads(vm.run("python3 /tmp/nvme-io.py %s /tmp/nvme-pattern '%s' '%s' %d"
                            % (bdev, json.dumps(PY_CASES), json.dumps(DD_CASES), REGION),
                            timeout=300).strip().splitlines()[-1])
    assert all(r[3] for r in res['py']), res
    assert res['region_ok'], res
    return sum(s for s, _ in DD_CASES) + sum(s for s, _, _ in PY_CASES) + REGION


# The kernel RDMA stack's modules, users first (qrnic-init loads qrnic; the
# ULPs pull in the rest).
RDMA_MODULES = ('nvme_rdma', 'nvmet_rdma', 'rdma_ucm', 'rdma_cm', 'iw_cm', 'ib_cm', 'qrnic',
                'ib_uverbs', 'ib_core')


def reload_rdma_stack(topo, ib_core_args='', qrnic_args=''):
    """Unload every RDMA module and load ib_core (with ib_core_args) and qrnic
    (with qrnic_args) again; returns the new (target, host) endpoints once both ports have
    their RoCE v2 GIDs."""
    vm = topo.vm(0)
    vm.run('for m in %s; do [ -d /sys/module/$m ] && rmmod $m; done; [ ! -d /sys/module/ib_core ]'
           % ' '.join(RDMA_MODULES), timeout=180)
    # what qrnic-init loads at boot
    vm.run('modprobe ib_core %s && modprobe -a ib_uverbs ib_cm iw_cm rdma_cm rdma_ucm && '
           'modprobe qrnic %s && qrnic-netup' % (ib_core_args, qrnic_args), timeout=180)
    deadline = time.monotonic() + 60
    while True:
        try:
            return topo.pair(refresh=True)
        except VMError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


# 'sge': nvmet-rdma's RDMA READs and WRITEs use plain SGEs (rdma_rw on RoCE);
# 'force_mr': ib_core force_mr=1 makes rdma_rw register every transfer on the
# target too, with IB_WR_REG_MR (local write access) and, when it reuses an
# MR of its pool, a chained IB_WR_LOCAL_INV: the kernel's LOCAL_INV path.
@pytest.mark.parametrize('rw', ['sge', 'force_mr'])
def test_nvme_rdma_fast_registration(topo, guest_dmesg, rw):
    need_driver(topo, provider=False)     # kernel only: no user verbs here
    tgt, host = topo.pair()
    if rw == 'force_mr':
        tgt, host = reload_rdma_stack(topo, 'force_mr=1')
    try:
        nvme_rdma_io(topo, guest_dmesg, tgt, host, rw)
    finally:
        if rw == 'force_mr':
            reload_rdma_stack(topo)


def nvme_rdma_io(topo, guest_dmesg, tgt, host, rw):
    vm = tgt.vm
    assert host.vm is vm, 'T1: both ports in one VM'
    missing = vm.run('for m in %s; do modinfo -n $m >/dev/null 2>&1 || echo $m; done' % ' '.join(MODULES))
    assert not missing.strip(), 'the guest image lacks the modules: %s' % missing.split()
    mm = {ep.ibdev: mem_mgt(ep) for ep in (tgt, host)}
    for ep in (tgt, host):
        assert mm[ep.ibdev]['supported'] == 1, 'qrnic without QRNIC_CAP_MEM_MGT: %s' % mm[ep.ibdev]
    if topo.image.has_provider:
        devinfo = vm.run('ibv_devinfo -v -d %s' % host.ibdev)
        assert 'MEM_MGT_EXTENSIONS' in devinfo, devinfo

    nvmet_teardown(vm)  # leftovers of an earlier, interrupted run
    before = {ep.ibdev: mem_mgt(ep) for ep in (tgt, host)}
    hw_before = {ep.ibdev: hw_counters(vm, ep.ibdev) for ep in (tgt, host)}
    try:
        setup_target(vm, tgt.ip)
        ctrl, bdev, address = connect(vm, tgt.ip, host.ip)
        assert int(vm.run('cat /sys/block/%s/queue/logical_block_size' % bdev[5:])) == 512

        verified = verify_io(vm, bdev)

        after = {ep.ibdev: mem_mgt(ep) for ep in (tgt, host)}
        d = {dev: {k: after[dev][k] - before[dev][k] for k in after[dev]} for dev in after}
        hw_after = {ep.ibdev: hw_counters(vm, ep.ibdev) for ep in (tgt, host)}
        hw = {dev: {k: hw_after[dev][k] - hw_before[dev][k]
                    for k in ('tx_packets', 'rx_packets', 'loopback_frames', 'cqe_errors')}
              for dev in hw_after}
        print('\nnvme-rdma (%s) on %s (%s): %d bytes verified; fast registration counters %s; '
              'device %s' % (rw, ctrl, address, verified, json.dumps(d), json.dumps(hw)))

        h, t = d[host.ibdev], d[tgt.ibdev]
        # the host registered every data buffer with IB_WR_REG_MR on ITS port
        assert h['alloc_mr'] > 0 and h['reg_mr_posted'] >= len(DD_CASES) + len(PY_CASES), d
        # ... and each registration was invalidated: remotely by the target's
        # SEND_WITH_INV (the receive saw IB_WC_WITH_INVALIDATE), or by a LOCAL_INV
        assert h['recv_inv'] + h['local_inv_posted'] > 0, d
        assert h['recv_inv'] + h['local_inv_posted'] == h['reg_mr_posted'], d
        assert t['send_inv_posted'] == h['recv_inv'], d
        assert h['errors'] == 0 and t['errors'] == 0, d
        if rw == 'force_mr':
            # the target registered its side of the transfers, and invalidated
            # the MRs it reused with LOCAL_INV
            assert t['alloc_mr'] > 0 and t['reg_mr_posted'] > 0 and t['local_inv_posted'] > 0, d
        else:
            assert t['reg_mr_posted'] == 0 and t['local_inv_posted'] == 0, d
        # host and target talked across the cable (port B -> port A), not through loopback
        assert hw[host.ibdev]['tx_packets'] > 0 and hw[tgt.ibdev]['rx_packets'] > 0, hw
        assert hw[host.ibdev]['loopback_frames'] == 0 and hw[tgt.ibdev]['loopback_frames'] == 0, hw

        # fio: random writes with crc32c-verified read back behind the region,
        # then a disconnect and a new connection: the data is still there
        t0 = time.monotonic()
        ctrl2, wrote, checked = fio_across_reconnect(vm, ctrl, bdev, tgt.ip, host.ip)
        verified += checked
        print('nvme-rdma (%s, %s): fio wrote and verified %d bytes, verified them again and the whole '
              'namespace (sha256) after a disconnect and a new connection (%s): %d bytes verified in all, '
              'fio and reconnect %.0f s' % (rw, 'nvme-cli' if has_nvme_cli(vm) else '/dev/nvme-fabrics',
                                           wrote, ctrl2, verified, time.monotonic() - t0))
    finally:
        down = nvmet_teardown(vm)
    assert 'in use' not in down.output, down.output
    # every fast-registration MR was deregistered again (ib_mr_pool_destroy)
    for ep in (tgt, host):
        assert mem_mgt(ep)['fast_mrs'] == before[ep.ibdev]['fast_mrs'], (ep.ibdev, mem_mgt(ep))
    recs = guest_dmesg.new()
    problems = guest_dmesg.problems(recs)
    assert not problems, '\n'.join(problems)
    log = '\n'.join(t for r in recs.values() for _, t in r)
    assert re.search(r'new ctrl: (NQN )?"%s"' % re.escape(NQN), log), log[-3000:]
    assert re.search(r'Removing ctrl: NQN "%s"' % re.escape(NQN), log), log[-3000:]
    # nvme-rdma and nvmet-rdma report failed work requests, bad invalidations
    # and recoveries at info level, which the generic check lets through
    bad = [ln for ln in log.splitlines() if 'nvme' in ln and
           re.search(r'failed with status|Bogus remote invalidation|memreg|error recovery|'
                     r'reconnect|I/O error|timeout|failed', ln, re.I)]
    assert not bad, '\n'.join(bad)


# Wire faults on the host's port (both directions): 1 % of the RoCE frames
# dropped, 0.5 % held back and overtaken (reorder).  RC retransmission must
# hide both from nvme-rdma: fio's crc32c verification passes, no nvme error
# recovery, no failed completion.
WIRE_FAULTS = ('drop prob=1% seed=0x5701', 'reorder prob=0.5% hold=2 release=3 seed=0x5702')


def test_nvme_rdma_wire_faults(topo, guest_dmesg):
    from test_guest_faults import Faults, qom_id
    need_driver(topo, provider=False)
    tgt, host = topo.pair()
    vm = tgt.vm
    faults = Faults(vm)
    faults.clear()
    nvmet_teardown(vm)
    dev = qom_id(host)
    hw_before = {ep.ibdev: hw_counters(vm, ep.ibdev) for ep in (tgt, host)}
    try:
        setup_target(vm, tgt.ip)
        ctrl, bdev, _ = connect(vm, tgt.ip, host.ip)
        t0 = time.monotonic()
        for rule in WIRE_FAULTS:
            faults.add(dev, rule)
        job = fio_job(FIO_MB << 20, dev=bdev, offset=0)
        wrote, read = fio_verify(vm, job)
        assert wrote == read == 2 * (FIO_MB << 20), (wrote, read)
        fired = faults.fired(dev)
        faults.clear()
        disconnect(vm, ctrl)
        ctrl2, bdev2, _ = connect(vm, tgt.ip, host.ip)
        _, reread = fio_verify(vm, fio_job(FIO_MB << 20, dev=bdev2, offset=0), verify_only=True)
        assert reread == 2 * (FIO_MB << 20), reread
        hw_after = {ep.ibdev: hw_counters(vm, ep.ibdev) for ep in (tgt, host)}
        hw = {d: {k: hw_after[d][k] - hw_before[d][k]
                  for k in ('tx_packets', 'retransmitted_packets', 'retransmit_timeouts', 'seq_naks_sent',
                            'cqe_errors')} for d in hw_after}
        print('\nnvme-rdma under %s on %s: fio wrote and verified %d bytes (%.0f s), %d fault firings, '
              'verified again after a reconnect; device %s' % (' + '.join(WIRE_FAULTS), dev, wrote,
                                                                time.monotonic() - t0, fired, hw))
        assert fired > 0, 'no fault fired'
        assert sum(h['retransmitted_packets'] for h in hw.values()) > 0, hw
    finally:
        faults.clear()
        down = nvmet_teardown(vm)
    assert 'in use' not in down.output, down.output
    log = '\n'.join(t for r in guest_dmesg.new().values() for _, t in r)
    bad = [ln for ln in log.splitlines() if 'nvme' in ln and
           re.search(r'failed with status|error recovery|reconnect|I/O error|timeout', ln, re.I)]
    assert not bad, '\n'.join(bad)
