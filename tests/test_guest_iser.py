# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: iSCSI Extensions for RDMA (iSER, RFC 7145) on qrnic: the LIO
target's isert and the open-iscsi initiator's ib_iser.

In T1 (one VM, two qrnic ports cabled back to back) and in T2 (target in
vm0, initiator in vm1, across the dgram wire).  Target: LIO
set up through configfs (no targetcli in the image): a 32 MiB rd_mcp
ramdisk backstore exported as LUN 0 of a TPG whose network portal on port
A's address has iser enabled (np/<ip>:3260/iser = 1), no authentication,
dynamic ACLs.  Initiator: iscsid and open-iscsi's built-in iface "iser"
(iface.transport_name = iser); a node record for the target (no discovery)
with a manual SCSI scan, login, and the scan once the target lists the
session (LIO's login race, docs/storage.md "Why the wait"), the disk it
brings.  Data: fio (randwrite, 4 KiB and 128 KiB
blocks, iodepth 16, O_DIRECT, crc32c verification) and dd + sha256; logout,
login again, and both verified once more.  `iscsiadm -m session -P3` must
say "Iface Transport: iser", and the qrnic devices' counters must have moved.
ib_iser connects with no source address, so in one VM the session runs
over port A's device loopback (docs/storage.md); in T2 over the wire.
Clean teardown: logout, node deleted, iscsid stopped, the LIO
configuration removed in reverse order, the modules unloaded; no kernel
warning."""
import re
import time

import pytest

from guest.storage import fio_job, fio_verify, sha256_read, sha256_write
from guest.vmlib import guest_dmesg, hw_counters, need_driver, topo  # noqa: F401

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)]

IQN = 'iqn.2026-12.io.qrnic:iser-test'
INITIATOR = 'iqn.2026-12.io.qrnic:initiator'
IFACE = 'iser'          # open-iscsi's built-in iSER iface
DISK_MB = 32
FIO_MB = 4
DD_MB = 8
T = '/sys/kernel/config/target'


def setup_target(vm, ip):
    return vm.run(r'''set -e
mkdir -p /etc/target    # target_core_mod's db_root (else "db_root: cannot open")
modprobe -a target_core_mod iscsi_target_mod ib_isert
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
T=%(t)s
# backstore: a ramdisk of 4 KiB pages (rd_mcp)
mkdir -p $T/core/rd_mcp_0/qrnicdisk
echo rd_pages=%(pages)d > $T/core/rd_mcp_0/qrnicdisk/control
echo 1 > $T/core/rd_mcp_0/qrnicdisk/enable
# the iSCSI target, TPG 1, LUN 0
TP=$T/iscsi/%(iqn)s/tpgt_1
mkdir -p $TP/lun/lun_0
ln -s $T/core/rd_mcp_0/qrnicdisk $TP/lun/lun_0/qrnicdisk
# a network portal on port A's address; iser=1 adds the iSER listener (isert)
mkdir $TP/np/%(ip)s:3260
echo 1 > $TP/np/%(ip)s:3260/iser
# no CHAP; any initiator gets a dynamic ACL with write access
echo 0 > $TP/attrib/authentication
echo 1 > $TP/attrib/generate_node_acls
echo 1 > $TP/attrib/cache_dynamic_acls
echo 0 > $TP/attrib/demo_mode_write_protect
echo 1 > $TP/enable
cat $TP/np/%(ip)s:3260/iser
''' % {'t': T, 'iqn': IQN, 'ip': ip, 'pages': DISK_MB * 256}, timeout=120)


def target_teardown(vm):
    return vm.run(r'''
T=%(t)s TP=%(t)s/iscsi/%(iqn)s/tpgt_1
[ -d $TP ] && echo 0 > $TP/enable
for np in $TP/np/*; do [ -d "$np" ] && { echo 0 > $np/iser 2>/dev/null; rmdir $np; }; done
for a in $TP/acls/*; do [ -d "$a" ] && rmdir $a; done
rm -f $TP/lun/lun_0/qrnicdisk; [ -d $TP/lun/lun_0 ] && rmdir $TP/lun/lun_0
[ -d $TP ] && rmdir $TP
[ -d $T/iscsi/%(iqn)s ] && rmdir $T/iscsi/%(iqn)s
[ -d $T/iscsi ] && rmdir $T/iscsi
[ -d $T/core/rd_mcp_0/qrnicdisk ] && rmdir $T/core/rd_mcp_0/qrnicdisk
[ -d $T/core/rd_mcp_0 ] && rmdir $T/core/rd_mcp_0
# isert releases a closed connection from a work item: ib_isert can stay
# "in use" for a moment after the portal is gone
for i in $(seq 50); do modprobe -r ib_isert iscsi_target_mod target_core_mod 2>/dev/null && break; sleep 0.2; done
modprobe -r ib_isert iscsi_target_mod target_core_mod 2>&1
true''' % {'t': T, 'iqn': IQN}, timeout=120, check=False)


def initiator_setup(vm):
    vm.run(r'''set -e
# sd_mod: no udevd in the guest to load it for the new LUN
modprobe -a ib_iser sd_mod
mkdir -p /etc/iscsi /run/lock/iscsi
echo "InitiatorName=%(ini)s" > /etc/iscsi/initiatorname.iscsi
pgrep -x iscsid >/dev/null || iscsid </dev/null >/dev/null 2>&1
# iscsiadm exits 20 (ISCSI_ERR_ISCSID_NOTCONN) until iscsid listens, 21 without sessions
for i in $(seq 50); do rc=0; iscsiadm -m session >/dev/null 2>&1 || rc=$?; [ $rc -ne 20 ] && break; sleep 0.2; done
# open-iscsi's built-in iface "iser" (iface.transport_name = iser)
iscsiadm -m iface -I %(iface)s | grep -qx "iface.transport_name = iser"
''' % {'ini': INITIATOR, 'iface': IFACE}, timeout=120)


SESSIONS = '%s/iscsi/%s/tpgt_1/dynamic_sessions' % (T, IQN)


def add_node(vm, ip):
    """The node record (no discovery), its SCSI scan manual: login() scans once
    the target lists the session."""
    vm.run('iscsiadm -m node -o new -T %(iqn)s -p %(ip)s:3260 -I %(if)s && iscsiadm -m node -T %(iqn)s '
           '-p %(ip)s:3260 -I %(if)s -o update -n node.session.scan -v manual'
           % {'iqn': IQN, 'ip': ip, 'if': IFACE}, timeout=60)


def target_session(tvm, present=True):
    """Wait until the target lists (present) or no longer lists the initiator's
    session.  LIO puts a session in tpgt_1/dynamic_sessions right after it set the
    negotiated parameters (iscsi_post_login_handler), which it does after it sent
    the final login response; a SCSI command with data reaching isert before that
    spins forever in iscsit_build_pdu_and_seq_lists (docs/storage.md, "Why the
    wait")."""
    tvm.run(r'''
for i in $(seq 150); do
  grep -qx %(ini)s %(s)s; rc=$?
  [ $rc -eq %(want)d ] && exit 0
  sleep 0.2
done
cat %(s)s; exit 1''' % {'ini': INITIATOR, 's': SESSIONS, 'want': 0 if present else 1}, timeout=60)


def login(vm, ip, tvm):
    """Log in through the iser iface, wait for the target's session, scan the
    session's SCSI host; returns (session -P3 text, /dev/sdX)."""
    vm.run('iscsiadm -m node -T %s -p %s:3260 -I %s --login' % (IQN, ip, IFACE), timeout=180)
    target_session(tvm)
    # the manual scan held: no SCSI target on the session yet, no command sent
    scanned = vm.run('ls -d /sys/class/iscsi_session/session*/device/target* 2>/dev/null; true').split()
    assert not scanned, 'scanned before the manual scan: %s' % scanned
    vm.run(r'''set -e
h=$(iscsiadm -m session -P3 | sed -n 's/^[[:space:]]*Host Number: \([0-9]*\).*/\1/p')
echo "- - -" > /sys/class/scsi_host/host$h/scan''', timeout=120)
    out = vm.run(r'''
for i in $(seq 100); do
  d=$(iscsiadm -m session -P3 2>/dev/null | sed -n 's/.*Attached scsi disk \(sd[a-z]*\).*State: running.*/\1/p' | head -n1)
  [ -n "$d" ] && [ -b /dev/$d ] && { echo "DISK $d"; iscsiadm -m session -P3; exit 0; }
  sleep 0.2
done
iscsiadm -m session -P3; exit 1''', timeout=60)
    disk = re.search(r'^DISK (\S+)', out, re.M).group(1)
    return out, '/dev/' + disk


def logout(vm, ip, tvm):
    """Log out; wait until the target has closed the session (it does after the
    logout response), so that the next login's wait sees the new one."""
    vm.run('iscsiadm -m node -T %s -p %s:3260 -I %s --logout' % (IQN, ip, IFACE), timeout=180)
    target_session(tvm, present=False)


def initiator_teardown(vm):
    return vm.run(r'''
iscsiadm -m node -T %(iqn)s --logout 2>&1
iscsiadm -m node -T %(iqn)s -o delete 2>&1
pgrep -x iscsid >/dev/null && { iscsiadm -k 0 2>&1; sleep 1; }
modprobe -r ib_iser sd_mod 2>&1
true''' % {'iqn': IQN}, timeout=120, check=False)


def test_iser(topo, guest_dmesg):
    need_driver(topo, provider=False)     # kernel only
    tgt, ini = topo.pair()
    tvm, ivm = tgt.vm, ini.vm             # one VM in T1, two in T2
    assert (tvm is ivm) == (topo.name == 'T1'), topo.name
    vms = [tvm] if tvm is ivm else [tvm, ivm]
    for vm in vms:
        missing = vm.run('for m in ib_iser ib_isert iscsi_target_mod target_core_mod sd_mod; do modinfo '
                         '-n $m >/dev/null 2>&1 || echo $m; done; for c in iscsid iscsiadm fio; do '
                         'command -v $c >/dev/null || echo $c; done')
        assert not missing.strip(), 'the guest image lacks: %s' % missing.split()
        initiator_teardown(vm)
        target_teardown(vm)
    t0 = time.monotonic()
    eps = (tgt, ini)

    def hw_now():
        return {ep.ibdev + ep.vm.name: hw_counters(ep.vm, ep.ibdev) for ep in eps}
    hw_before = hw_now()
    try:
        assert setup_target(tvm, tgt.ip).strip() == '1'
        initiator_setup(ivm)
        add_node(ivm, tgt.ip)
        session, disk = login(ivm, tgt.ip, tvm)
        assert re.search(r'Iface Transport:\s*iser', session), session
        size = int(ivm.run('blockdev --getsize64 %s' % disk))
        assert size == DISK_MB << 20, (disk, size)

        job = fio_job(FIO_MB << 20, dev=disk, offset=DD_MB << 20)
        wrote, read = fio_verify(ivm, job)
        assert wrote == read == 2 * (FIO_MB << 20), (wrote, read)
        digest = sha256_write(ivm, disk, DD_MB << 20)
        assert sha256_read(ivm, disk, DD_MB << 20) == digest

        # no failed completion while the session was up (the logout's QP
        # teardown flushes the posted receives: IB_WC_WR_FLUSH_ERR, counted too)
        hw_mid = hw_now()
        assert all(hw_mid[d]['cqe_errors'] == hw_before[d]['cqe_errors'] for d in hw_mid), (hw_before, hw_mid)
        logout(ivm, tgt.ip, tvm)
        session2, disk2 = login(ivm, tgt.ip, tvm)
        hw_login2 = hw_now()
        assert re.search(r'Iface Transport:\s*iser', session2), session2
        assert sha256_read(ivm, disk2, DD_MB << 20) == digest
        _, reread = fio_verify(ivm, fio_job(FIO_MB << 20, dev=disk2, offset=DD_MB << 20), verify_only=True)
        assert reread == 2 * (FIO_MB << 20), reread

        hw_after = hw_now()
        hw = {dev: {k: hw_after[dev][k] - hw_before[dev][k]
                    for k in ('tx_packets', 'rx_packets', 'loopback_frames', 'cqe_errors')}
              for dev in hw_after}
        verified = read + reread + 2 * (DD_MB << 20)
        print('\niSER to %s:3260 (%s; %s, then %s): fio wrote %d bytes, %d bytes verified (fio crc32c, '
              'dd sha256) in %.0f s; device %s' % (tgt.ip, topo.name, disk, disk2, wrote, verified,
                                                   time.monotonic() - t0, hw))
        assert sum(h['tx_packets'] for h in hw.values()) > 0, hw
        if tvm is not ivm:      # across the wire: both ports sent and received, none looped back
            assert all(h['tx_packets'] > 0 and h['rx_packets'] > 0 and h['loopback_frames'] == 0
                       for h in hw.values()), hw
        assert all(hw_after[d]['cqe_errors'] == hw_login2[d]['cqe_errors'] for d in hw_after), hw
        logout(ivm, tgt.ip, tvm)
    finally:
        down = initiator_teardown(ivm).output + target_teardown(tvm).output
    for vm in vms:
        left = vm.run('pgrep -x iscsid; ls /sys/class/iscsi_session; [ -d /sys/module/ib_isert ] && echo '
                      'isert; [ -d /sys/module/ib_iser ] && echo iser; [ -d %s/iscsi ] && echo lio; true' % T)
        assert not left.strip(), (vm.name, left, down)
    problems = guest_dmesg.problems()
    assert not problems, '\n'.join(problems)
