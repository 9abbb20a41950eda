# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: NVMe-oF/RDMA across a device fatal error, across a qrnic
module unload/reload, and over several completion vectors; NFS over RDMA
and iSER across a fatal error on the server/target (issue 18).

Topology T2 (two VMs, one qrnic each, the dgram wire between them) with 2
vCPUs per VM: nvmet + nvmet-rdma in vm0 (the target, a 16 MiB null_blk,
docs/storage.md), nvme-rdma in vm1 (the host).  The target listens on the
wildcard address 0.0.0.0: rdma_cm listens on every RDMA device with it,
also on one registered later, so after the target's qrnic comes back (a
new ib_device) it accepts connections again by itself.  A listener bound
to one address is bound to its device and is destroyed with it
(RDMA_CM_EVENT_DEVICE_REMOVAL; nvmet-rdma re-creates it only after an
address change), so with one the port would have to be re-enabled
(docs/storage.md).  The host connects with reconnect_delay 1 s and
ctrl_loss_tmo 60 s: nvme-rdma's error recovery reconnects on its own.

- target fatal: fio writes (crc32c) and the namespace's sha256, then a
  `fatal` fault (docs/faults.md) on the target's qrnic: the device raises
  DEVICE_FATAL, the driver resets it and registers a new ib_device; the
  host's queues fail, nvme-rdma's reconnect loop reconnects, and fio
  --verify_only and the sha256 find the data intact; new writes work.
- module reload (target side, host side): `rmmod qrnic` with the
  connection up.  The ib_device goes away: nvmet-rdma drops its queues, or
  nvme-rdma deletes the controller (its ib_client's remove); no hang, no
  WARN/BUG.  `modprobe qrnic` again: the host reconnects by itself (target
  side) or the test connects again (host side), data verified.
- completion vectors: num_comp_vectors = one per online CPU, each CEQ
  vector with managed affinity to its own CPU (/proc/irq/N), and nvme-rdma's
  two I/O queues take their completions on both vectors, each on the CPU
  of its affinity (/proc/interrupts).
- NFS server fatal: the same fault on the NFS server's qrnic with an NFS
  4.2 over RDMA mount up; svcrdma listens on the wildcard address, the
  client's transport reconnects, the file written before reads back.
- iSER target fatal: the same on the iSER target's qrnic with a session
  logged in; the portal listens on 0.0.0.0:3260, iscsid's session recovery
  logs in again, the data reads back."""
import re
import time

import pytest

from guest.storage import fio_job, fio_verify, sha256_read
from guest.vmlib import get_topology, guest_dmesg, need_driver, PrereqError  # noqa: F401
from test_guest_nvmeof import NQN, NS_MB, nvmet_teardown, setup_target

pytestmark = [pytest.mark.guest, pytest.mark.slow]

SMP = 2
FIO_MB = 4
HOST_OPTS = '--reconnect-delay=1 --ctrl-loss-tmo=60'


@pytest.fixture(scope='module')
def topo(request):
    """T2 with SMP vCPUs per VM (booted for this module unless QRNIC_GUEST_SMP says so)."""
    try:
        return get_topology('T2', request.config, smp=SMP)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)


def host_connect(hvm, traddr, queues=1):
    """nvme connect from the host VM; returns (controller, block device)."""
    hvm.run('modprobe -a nvme-fabrics nvme-rdma', timeout=60)
    hvm.run('nvme connect -t rdma -a %s -s 4420 -n %s -i %d %s' % (traddr, NQN, queues, HOST_OPTS),
            timeout=180)
    return wait_live(hvm, 60)


def ctrl_of(hvm):
    out = hvm.run(r'''for c in /sys/class/nvme/nvme*; do
  [ "$(cat $c/subsysnqn 2>/dev/null)" = %s ] && echo ${c##*/} $(cat $c/state); done; true''' % NQN)
    return dict(ln.split() for ln in out.splitlines() if len(ln.split()) == 2)


def wait_live(hvm, timeout):
    """(controller, block device) once a controller of NQN is live with its namespace."""
    out = hvm.run(r'''
for i in $(seq %d); do
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat $c/subsysnqn 2>/dev/null)" = %s ] || continue
    [ "$(cat $c/state)" = live ] || continue
    for b in /sys/block/${c##*/}n* /sys/block/nvme*c${c##*/nvme}n*; do
      [ -e "$b" ] || continue
      n=${b##*/}; n=$(echo $n | sed 's/c[0-9]*n/n/')
      [ -b /dev/$n ] && { echo ${c##*/} $n; exit 0; }
    done
  done
  sleep 0.5
done
exit 1''' % (timeout * 2, NQN), timeout=timeout + 30, check=False)
    assert out.ok, 'no live controller of %s after %d s: %s' % (NQN, timeout, ctrl_of(hvm))
    c, b = out.split()[:2]
    return c, '/dev/' + b


def host_disconnect(hvm):
    hvm.run('nvme disconnect -n %s' % NQN, timeout=180, check=False)


def reconnects(hvm, ctrl):
    """How many times the kernel log says ctrl reconnected."""
    return int(hvm.run('dmesg | grep -c "%s: Successfully reconnected"; true' % ctrl).split()[0])


def log_of(guest_dmesg):
    """{vm name: kernel log text} since the last look, and the problems in it."""
    recs = guest_dmesg.new()
    return {n: '\n'.join(t for _, t in r) for n, r in recs.items()}, guest_dmesg.problems(recs)


def write_and_fingerprint(hvm, bdev):
    job = fio_job(FIO_MB << 20, dev=bdev, offset=0)
    wrote, read = fio_verify(hvm, job)
    assert wrote == read == 2 * (FIO_MB << 20), (wrote, read)
    return sha256_read(hvm, bdev, NS_MB << 20)


def check_intact(hvm, bdev, whole):
    _, reread = fio_verify(hvm, fio_job(FIO_MB << 20, dev=bdev, offset=0), verify_only=True)
    assert reread == 2 * (FIO_MB << 20), reread
    assert sha256_read(hvm, bdev, NS_MB << 20) == whole, 'the namespace changed'
    # and new I/O works: fio behind the first regions
    wrote, read = fio_verify(hvm, fio_job(2 << 20, dev=bdev, offset=2 * (FIO_MB << 20)))
    assert wrote == read == 2 * (2 << 20), (wrote, read)
    return reread + (NS_MB << 20) + read


def ib_back(vm, timeout=90):
    """The VM's qrnic has an ib_device with an ACTIVE port and its address again."""
    r = vm.run(r'''for i in $(seq %d); do
  rdma link 2>/dev/null | grep -q 'state ACTIVE' && ip -4 -o addr show | grep -q ' 10\.0\.0\.' && exit 0
  sleep 0.5
done; rdma link; ip -4 -o addr; exit 1''' % (timeout * 2), timeout=timeout + 30, check=False)
    assert r.ok, r.output


def recoveries(vm):
    """How many fatal errors the VM's qrnic driver has recovered from (debugfs)."""
    return int(vm.run('cat /sys/kernel/debug/qrnic/*/recoveries').split()[0])


def fatal_and_recover(faults, ep):
    """A `fatal` device fault on EP's qrnic; waits until its driver has
    recovered (the debugfs count grows) and the port is back (ib_back).
    Returns (the fault's time, seconds until the port was back)."""
    from test_guest_faults import qom_id
    before = recoveries(ep.vm)
    t0 = time.monotonic()
    faults.add(qom_id(ep), 'fatal')
    deadline = t0 + 60
    while recoveries(ep.vm) == before:
        assert time.monotonic() < deadline, ep.vm.run('dmesg | tail -n 30').out
        time.sleep(0.5)
    ib_back(ep.vm)
    return t0, time.monotonic() - t0


@pytest.fixture
def nvme(topo):
    """(target endpoint, host endpoint): nvmet listening on 0.0.0.0 in vm0; torn down after."""
    need_driver(topo, provider=False)
    tgt, host = topo.pair(refresh=True)
    assert tgt.vm is not host.vm
    for vm in (host.vm, tgt.vm):
        nvmet_teardown(vm)
    setup_target(tgt.vm, '0.0.0.0')
    yield tgt, host
    host_disconnect(host.vm)
    for vm in (host.vm, tgt.vm):
        vm.run('[ -d /sys/module/qrnic ] || modprobe qrnic; qrnic-netup >/dev/null', timeout=120)
        down = nvmet_teardown(vm)
        assert 'in use' not in down.output, down.output


def test_target_fatal_reconnect(topo, nvme, guest_dmesg):
    from test_guest_faults import Faults
    tgt, host = nvme
    tvm, hvm = tgt.vm, host.vm
    ctrl, bdev = host_connect(hvm, tgt.ip)
    whole = write_and_fingerprint(hvm, bdev)
    log_of(guest_dmesg)

    faults = Faults(tvm)
    faults.clear()
    reconnected = reconnects(hvm, ctrl)
    try:
        # the target's device is reset and comes back as a new ib_device ...
        t0, t_rec = fatal_and_recover(faults, tgt)
        # ... the host notices (keep-alive or I/O), and its reconnect loop gets through
        states = []
        deadline = time.monotonic() + 120
        while True:
            st = ctrl_of(hvm).get(ctrl)
            if not states or states[-1] != st:
                states.append(st)
            # not deleted: ctrl_loss_tmo is 60 s
            assert st is not None, 'controller %s deleted; states %s' % (ctrl, states)
            if st == 'live' and reconnects(hvm, ctrl) > reconnected:
                break
            if time.monotonic() > deadline:
                pytest.fail('host never reconnected: states %s\n%s' % (states, hvm.run('dmesg | tail -n 30').out))
            time.sleep(0.5)
        t_conn = time.monotonic() - t0
    finally:
        faults.clear()
    ctrl2, bdev2 = wait_live(hvm, 30)
    assert ctrl2 == ctrl, (ctrl, ctrl2)
    verified = check_intact(hvm, bdev2, whole)
    logs, problems = log_of(guest_dmesg)
    print('\nnvme-rdma across a target fatal error: target recovered in %.1f s, host %s reconnected %.1f s '
          'after the fault (states %s); %d bytes verified after' % (t_rec, ctrl, t_conn, ' -> '.join(states),
                                                                     verified))
    assert not problems, '\n'.join(problems)
    tlog, hlog = logs.get(tvm.name, ''), logs.get(hvm.name, '')
    assert re.search(r'recovered from fatal error \d+ in \d+ ms', tlog), tlog[-3000:]
    assert re.search(r'%s: Successfully reconnected' % ctrl, hlog), hlog[-3000:]
    assert not re.search(r'I/O error|Buffer I/O', hlog), hlog[-3000:]


@pytest.mark.parametrize('side', ['target', 'host'])
def test_module_reload_connected(topo, nvme, guest_dmesg, side):
    tgt, host = nvme
    tvm, hvm = tgt.vm, host.vm
    ctrl, bdev = host_connect(hvm, tgt.ip)
    whole = write_and_fingerprint(hvm, bdev)
    log_of(guest_dmesg)
    vm = tvm if side == 'target' else hvm
    t0 = time.monotonic()
    # no hang: rmmod must finish while nvme-rdma / nvmet-rdma hold QPs, CQs and MRs
    r = vm.run('rmmod qrnic && ! [ -e /sys/module/qrnic ] && ls /sys/class/infiniband | wc -l',
               timeout=120, check=False)
    assert r.ok and r.out.strip() == '0', r.output
    t_rm = time.monotonic() - t0
    if side == 'host':
        # nvme-rdma's ib_client deleted the controller that used the device
        assert hvm.run('for i in $(seq 60); do [ -e /sys/class/nvme/%s ] || exit 0; sleep 0.5; done; exit 1'
                       % ctrl, timeout=60, check=False).ok, ctrl_of(hvm)
    vm.run('modprobe qrnic && qrnic-netup >/dev/null', timeout=120)
    ib_back(vm)
    if side == 'host':
        ctrl2, bdev2 = host_connect(hvm, tgt.ip)
    else:
        # the host's reconnect loop finds the target listening again
        ctrl2, bdev2 = wait_live(hvm, 90)
        assert ctrl2 == ctrl, (ctrl, ctrl2)
    t_back = time.monotonic() - t0
    verified = check_intact(hvm, bdev2, whole)
    logs, problems = log_of(guest_dmesg)
    print('\nrmmod qrnic on the %s with nvme-rdma connected: rmmod took %.1f s, connection back (%s) after '
          '%.1f s; %d bytes verified after' % (side, t_rm, ctrl2, t_back, verified))
    assert not problems, '\n'.join(problems)
    hlog = logs.get(hvm.name, '')
    if side == 'target':
        assert re.search(r'%s: Successfully reconnected' % ctrl, hlog), hlog[-3000:]
    assert not re.search(r'I/O error|Buffer I/O', hlog), hlog[-3000:]


def irq_table(vm, pci):
    """{vector index: (irq, [count per CPU])} of the qrnic at pci (/proc/interrupts)."""
    out = vm.run('cat /proc/interrupts')
    lines = out.splitlines()
    ncpu = len(lines[0].split())
    tab = {}
    for ln in lines[1:]:
        m = re.search(r'qrnic-%s-(\d+)\s*$' % re.escape(pci), ln)
        if m:
            f = ln.split()
            tab[int(m.group(1))] = (int(f[0].rstrip(':')), [int(x) for x in f[1:1 + ncpu]])
    return tab


def cpu_list(s):
    cpus = set()
    for part in s.strip().split(','):
        a, _, b = part.partition('-')
        cpus.update(range(int(a), int(b or a) + 1))
    return cpus


READ_JOB = '''[global]
ioengine=libaio
direct=1
iodepth=8
rw=randread
bs=4k
size=4m
filename=%s
cpus_allowed=0-%d
cpus_allowed_policy=split
numjobs=%d
[r]
'''


def test_completion_vectors_affinity(topo, nvme, guest_dmesg):
    tgt, host = nvme
    tvm, hvm = tgt.vm, host.vm
    for vm in (tvm, hvm):
        n = int(vm.run('nproc'))
        assert n == SMP, 'the guests have %d vCPUs, not %d' % (n, SMP)
    pcis = {vm.name: vm.run('basename $(readlink -f /sys/class/infiniband/*/device)').strip()
            for vm in (tvm, hvm)}
    aff = {}
    for vm in (tvm, hvm):
        tab = irq_table(vm, pcis[vm.name])
        ceq = sorted(v for v in tab if v >= 3)
        # one completion vector per online CPU ...
        assert len(ceq) == SMP, tab
        ncv = vm.run('ibv_devinfo -v 2>/dev/null | grep -i num_comp_vectors', check=False).out
        if ncv:
            assert int(ncv.split(':')[-1]) == SMP, ncv
        # ... each with its own CPU (managed affinity, the effective one a subset)
        a = {}
        for v in ceq:
            irq = tab[v][0]
            want = cpu_list(vm.run('cat /proc/irq/%d/smp_affinity_list' % irq))
            eff = cpu_list(vm.run('cat /proc/irq/%d/effective_affinity_list' % irq))
            assert eff and eff <= want, (v, want, eff)
            a[v] = (irq, want, eff)
        assert set.union(*(x[1] for x in a.values())) == set(range(SMP)), a
        assert all(len(x[1]) == 1 for x in a.values()), a
        aff[vm.name] = a
    # two I/O queues (one per CPU); fio's jobs run one on each CPU
    ctrl, bdev = host_connect(hvm, tgt.ip, queues=SMP)
    nq = int(hvm.run("dmesg | grep '%s: creating' | tail -n 1 | sed 's/.*creating \\([0-9]*\\) I\\/O.*/\\1/'"
                     % ctrl).strip() or 0)
    before = {vm.name: irq_table(vm, pcis[vm.name]) for vm in (tvm, hvm)}
    hvm.put('/tmp/qrnic-vec.fio', READ_JOB % (bdev, SMP - 1, SMP))
    r = hvm.run('fio --output-format=terse /tmp/qrnic-vec.fio', timeout=300, check=False)
    assert r.ok, r.output[-3000:]
    after = {vm.name: irq_table(vm, pcis[vm.name]) for vm in (tvm, hvm)}
    delta = {}
    for vm in (tvm, hvm):
        d = {}
        for v, (irq, want, eff) in aff[vm.name].items():
            per_cpu = [x - y for x, y in zip(after[vm.name][v][1], before[vm.name][v][1])]
            d[v] = per_cpu
            # every interrupt of the vector arrived on a CPU of its affinity
            assert all(c == 0 for cpu, c in enumerate(per_cpu) if cpu not in eff), (vm.name, v, per_cpu, eff)
        delta[vm.name] = d
    print('\ncompletion vectors (vector: irq, affinity): target %s, host %s; nvme-rdma %d I/O queues; '
          'interrupts per CPU during fio: target %s, host %s'
          % ({v: (x[0], sorted(x[1])) for v, x in aff[tvm.name].items()},
             {v: (x[0], sorted(x[1])) for v, x in aff[hvm.name].items()}, nq, delta[tvm.name], delta[hvm.name]))
    assert nq == SMP, nq
    # the host's completions came on more than one vector
    assert sum(1 for per_cpu in delta[hvm.name].values() if sum(per_cpu) > 0) >= 2, delta
    _, problems = log_of(guest_dmesg)
    assert not problems, '\n'.join(problems)


def nfs_mounted(srv, cli):
    """knfsd in srv's VM (svcrdma on the wildcard address, `rdma 20049`), the
    export mounted over RDMA in cli's, 4 MiB written to MNT/before: its sha256."""
    from test_guest_nfs_rdma import MNT, RDMA_PORT, mount, start_server
    from guest.storage import sha256_write
    ports = start_server(srv.vm, srv.ip)
    assert 'rdma %d' % RDMA_PORT in ports, ports
    cli.vm.run('modprobe -a rpcrdma nfsv4 && mkdir -p %s' % MNT, timeout=120)
    mount(cli.vm, srv.ip)
    return sha256_write(cli.vm, MNT + '/before', 4 << 20)


def nfs_back(svm, cvm, digest):
    """With the client's page cache dropped (so the read goes to the server
    through a new connection) MNT/before reads back; MNT/after written
    through the mount arrives on the server; the mount is over RDMA.
    Returns when the first read completed (time.monotonic())."""
    from test_guest_nfs_rdma import EXPORT, MNT
    from guest.storage import sha256_write
    cvm.run('sync; echo 3 > /proc/sys/vm/drop_caches', timeout=300)
    assert sha256_read(cvm, MNT + '/before', 4 << 20, iflag='') == digest
    t_read = time.monotonic()
    digest2 = sha256_write(cvm, MNT + '/after', 4 << 20)
    assert sha256_read(svm, EXPORT + '/after', 4 << 20, iflag='') == digest2
    assert sha256_read(svm, EXPORT + '/before', 4 << 20, iflag='') == digest
    stats = cvm.run('cat /proc/self/mountstats')
    assert re.search(r'^\s*xprt:\s+rdma\s', stats, re.M), stats
    return t_read


def test_nfs_server_fatal(topo, guest_dmesg):
    """NFS 4.2 over RDMA (knfsd in vm0, the mount in vm1): a `fatal` fault on the
    server's qrnic with the mount up.  svcrdma listens on the wildcard address
    (portlist `rdma 20049`), so it accepts again on the new ib_device, and
    xprtrdma's reconnect (a hard mount retries) brings the mount back: the
    file written before reads back unchanged, and a new one can be written."""
    from test_guest_faults import Faults
    from test_guest_nfs_rdma import nfs_teardown
    need_driver(topo, provider=False)
    srv, cli = topo.pair(refresh=True)
    svm, cvm = srv.vm, cli.vm
    for vm in (svm, cvm):
        nfs_teardown(vm)
    faults = Faults(svm)
    faults.clear()
    try:
        digest = nfs_mounted(srv, cli)
        log_of(guest_dmesg)
        t0, t_rec = fatal_and_recover(faults, srv)
        t_back = nfs_back(svm, cvm, digest) - t0
        logs, problems = log_of(guest_dmesg)
        print('\nNFS over RDMA across a server fatal error: server recovered in %.1f s, the file read back '
              '%.1f s after the fault; 16 MiB verified' % (t_rec, t_back))
        assert not problems, '\n'.join(problems)
        assert re.search(r'recovered from fatal error \d+ in \d+ ms', logs.get(svm.name, '')), logs
    finally:
        faults.clear()
        for vm in (cvm, svm):
            nfs_teardown(vm)

@pytest.mark.parametrize('side', ['server', 'client'])
def test_nfs_module_reload_mounted(topo, guest_dmesg, side):
    """NFS 4.2 over RDMA with the mount up: `rmmod qrnic` on the server or
    on the client finishes (svcrdma / xprtrdma let go of the ib_device),
    then `modprobe qrnic`; the hard mount reconnects, the file written
    before reads back unchanged and a new one can be written."""
    from test_guest_nfs_rdma import nfs_teardown
    need_driver(topo, provider=False)
    srv, cli = topo.pair(refresh=True)
    svm, cvm = srv.vm, cli.vm
    for v in (svm, cvm):
        nfs_teardown(v)
    try:
        digest = nfs_mounted(srv, cli)
        log_of(guest_dmesg)
        t0 = time.monotonic()
        t_rm = rmmod_and_back(svm if side == 'server' else cvm)
        t_back = nfs_back(svm, cvm, digest) - t0
        logs, problems = log_of(guest_dmesg)
        print('\nrmmod qrnic on the NFS %s with the mount up: rmmod took %.1f s, the file read back '
              '%.1f s after it' % (side, t_rm, t_back))
        assert not problems, '\n'.join(problems)
    finally:
        for v in (cvm, svm):
            v.run('[ -d /sys/module/qrnic ] || modprobe qrnic; qrnic-netup >/dev/null', timeout=120,
                  check=False)
            nfs_teardown(v)


def rmmod_and_back(vm):
    """`rmmod qrnic` returns with no ib_device left, `modprobe qrnic` brings
    the port back (ib_back).  Returns the rmmod's seconds."""
    t0 = time.monotonic()
    r = vm.run('rmmod qrnic && ! [ -e /sys/module/qrnic ] && ls /sys/class/infiniband | wc -l',
               timeout=120, check=False)
    assert r.ok and r.out.strip() == '0', r.output
    t_rm = time.monotonic() - t0
    vm.run('modprobe qrnic && qrnic-netup >/dev/null', timeout=120)
    ib_back(vm)
    return t_rm


def iser_logged_in(tgt, ini):
    """LIO isert in tgt's VM on the wildcard portal 0.0.0.0:3260 (so it
    accepts on an ib_device registered later), open-iscsi in ini's logged
    in over iser: the disk, with 8 MiB written, and their sha256."""
    from test_guest_iser import add_node, initiator_setup, login
    from test_guest_iser import setup_target as iser_target
    from guest.storage import sha256_write
    assert iser_target(tgt.vm, '0.0.0.0').strip() == '1'
    initiator_setup(ini.vm)
    add_node(ini.vm, tgt.ip)
    _, disk = login(ini.vm, tgt.ip, tgt.vm)
    return disk, sha256_write(ini.vm, disk, 8 << 20)


def iser_back(ivm, disk, digest):
    """The data reads back (waiting while the session recovers:
    replacement_timeout 120 s), the session is LOGGED_IN over iser, new data
    written reads back."""
    from guest.storage import sha256_write
    assert sha256_read(ivm, disk, 8 << 20) == digest
    session = ivm.run('iscsiadm -m session -P3')
    assert re.search(r'Iface Transport:\s*iser', session), session
    assert re.search(r'iSCSI Session State:\s*LOGGED_IN', session), session
    digest2 = sha256_write(ivm, disk, 8 << 20)
    assert sha256_read(ivm, disk, 8 << 20) == digest2


def test_iser_target_fatal(topo, guest_dmesg):
    """iSER (LIO isert in vm0, open-iscsi in vm1): a `fatal` fault on the target's
    qrnic with the session logged in.  The portal listens on the wildcard
    address (np 0.0.0.0:3260), so isert accepts on the new ib_device; iscsid's
    session recovery logs in again and the data written before reads back."""
    from test_guest_faults import Faults
    from test_guest_iser import initiator_teardown, target_teardown
    need_driver(topo, provider=False)
    tgt, ini = topo.pair(refresh=True)
    tvm, ivm = tgt.vm, ini.vm
    initiator_teardown(ivm)
    target_teardown(tvm)
    faults = Faults(tvm)
    faults.clear()
    try:
        disk, digest = iser_logged_in(tgt, ini)
        log_of(guest_dmesg)
        t0, t_rec = fatal_and_recover(faults, tgt)
        iser_back(ivm, disk, digest)
        t_back = time.monotonic() - t0
        logs, problems = log_of(guest_dmesg)
        print('\niSER across a target fatal error: target recovered in %.1f s, data read back and new data '
              'verified %.1f s after the fault; 24 MiB verified' % (t_rec, t_back))
        assert not problems, '\n'.join(problems)
        assert not re.search(r'I/O error', logs.get(ivm.name, '')), logs.get(ivm.name, '')[-3000:]
    finally:
        faults.clear()
        initiator_teardown(ivm)
        target_teardown(tvm)

@pytest.mark.parametrize('side', ['target', 'initiator'])
def test_iser_module_reload_logged_in(topo, guest_dmesg, side):
    """iSER with the session logged in: `rmmod qrnic` on the target or on the
    initiator returns (isert / ib_iser let go of the ib_device), then
    `modprobe qrnic`; iscsid's session recovery logs in again and the data
    written before reads back."""
    from test_guest_iser import initiator_teardown, target_teardown
    need_driver(topo, provider=False)
    tgt, ini = topo.pair(refresh=True)
    tvm, ivm = tgt.vm, ini.vm
    initiator_teardown(ivm)
    target_teardown(tvm)
    try:
        disk, digest = iser_logged_in(tgt, ini)
        log_of(guest_dmesg)
        t0 = time.monotonic()
        t_rm = rmmod_and_back(tvm if side == 'target' else ivm)
        iser_back(ivm, disk, digest)
        t_back = time.monotonic() - t0
        logs, problems = log_of(guest_dmesg)
        print('\nrmmod qrnic on the iSER %s with the session logged in: rmmod took %.1f s, data read '
              'back and new data verified %.1f s after it' % (side, t_rm, t_back))
        assert not problems, '\n'.join(problems)
        assert not re.search(r'I/O error', logs.get(ivm.name, '')), logs.get(ivm.name, '')[-3000:]
    finally:
        for v in (ivm, tvm):
            v.run('[ -d /sys/module/qrnic ] || modprobe qrnic; qrnic-netup >/dev/null', timeout=120,
                  check=False)
        initiator_teardown(ivm)
        target_teardown(tvm)
