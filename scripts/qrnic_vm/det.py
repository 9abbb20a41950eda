# SPDX-License-Identifier: GPL-2.0-or-later
"""Deterministic runs: one guest whose whole run is free of host-timed inputs.

    from qrnic_vm.det import det_run
    r = det_run('ib_write_lat -d $EP0_DEV -x $EP0_GID ...', profile='cx5-100g')
    r.output          # the workload's stdout+stderr, r.rc its status
    r.qom['qrnic-0']  # QOM properties of each qrnic device, read after the run

T1 (one VM, two qrnic devices on one -netdev hubport), booted from the
self-contained initramfs of scripts/guest-detinitrd.sh: no root disk
(virtio-blk completions come from host AIO threads), no agent (its commands
arrive over virtio-serial at host-chosen times), no virtio-rng.  Its /init
(scripts/qrnic_vm/det/init) loads the modules, addresses the ports, runs the
workload (appended to the initramfs as a second cpio archive: /workload) and
powers off.  QEMU runs with

    -icount shift=0,sleep=off,align=off   virtual time = instructions executed
    -seed N                               guest-visible randomness (RDRAND...) from a fixed seed
    -rtc base=<fixed>,clock=vm            the RTC starts at a fixed date and follows virtual time
    -action shutdown=pause                the guest's poweroff stops the VM for the host to read it

and nothing of the host reaches the guest while it runs: stdin is /dev/null,
the serial console is a file chardev (output only), the QMP socket is connected
only after the guest printed its last line and stopped.  Everything is in
<rundir> (console log, QEMU command line and log, pcaps).  See docs/guest.md
("Deterministic runs") and docs/timing.md (icount).
"""
import os
import shlex
import subprocess
import sys
import time

from .qmp import Qmp, QmpError, qmp_lib
from .runner import (QEMU_DATA_ARGS, REPO, PrereqError, VMError, _live, _mac, _run_build_script,
                     check_qemu_devices, find_image, find_qemu, new_run_dir)

ICOUNT = 'shift=0,sleep=off,align=off'
RTC_BASE = '2026-01-01T00:00:00'
QOM_PROPS = ('late-events', 'late-ns-total', 'stats')
MAX_CAPTURE = int(os.environ.get('QRNIC_DET_MAX_CAPTURE', 2 << 30))     # bytes per pcap/trace file


class DetResult:
    """What a deterministic run left: console, workload output and status, device state."""

    def __init__(self, rundir, console, qom, wall):
        self.rundir, self.console, self.qom, self.wall = rundir, console, qom, wall
        self.endpoints, self.hw, self.out_lines, self.rc, self.failure = [], {}, None, None, None
        lines = [ln.rstrip('\r') for ln in console.split('\n')]
        for i, ln in enumerate(lines):
            if ln.startswith('QRNIC-DET-EP '):
                f = ln.split()
                self.endpoints.append({'dev': f[2], 'netdev': f[3], 'ip': f[4], 'gid': int(f[5])})
            elif ln.startswith('QRNIC-DET: FAIL'):
                self.failure = ln
            elif ln == 'QRNIC-DET-OUT-BEGIN':
                self.out_lines = []
                for ln2 in lines[i + 1:]:
                    if ln2.startswith('QRNIC-DET-OUT-END rc='):
                        self.rc = int(ln2.split('=', 1)[1])
                        break
                    self.out_lines.append(ln2)
            elif ln.startswith('QRNIC-DET-HW '):
                f = ln.split()
                if len(f) == 4:
                    self.hw.setdefault(f[1], {})[f[2]] = int(f[3]) if f[3].isdigit() else f[3]
        self.output = '\n'.join(self.out_lines or []) + ('\n' if self.out_lines else '')

    @property
    def ok(self):
        return self.rc == 0 and not self.failure


def find_detinitrd(image, build=True):
    """The directory of scripts/guest-detinitrd.sh for image (an Image or a directory)."""
    path = image if isinstance(image, str) else image.path
    return _run_build_script('guest-detinitrd.sh', [path], quiet=True)


def _cpio_newc(files):
    """A newc cpio archive of {path: (mode, bytes)} (what the kernel unpacks from an initramfs)."""
    out = bytearray()
    ino = 0x7100

    def ent(name, mode, data):
        nonlocal ino
        ino += 1
        nm = name.encode() + b'\0'
        hdr = '070701' + ''.join('%08X' % v for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nm), 0))
        out.extend(hdr.encode() + nm)
        out.extend(b'\0' * (-len(out) % 4))
        out.extend(data)
        out.extend(b'\0' * (-len(out) % 4))
    for name, (mode, data) in sorted(files.items()):
        ent(name, mode, data)
    ent('TRAILER!!!', 0, b'')
    return bytes(out)


def _qmp_session(path, cmds, timeout=30):
    """Run [(command, arguments)] on a QMP socket; returns the list of 'return' values
    (None for a final 'quit')."""
    try:
        with Qmp(path, timeout=timeout) as q:
            return [q.quit() if c == 'quit' else q.execute(c, a) for c, a in cmds]
    except QmpError as e:
        raise VMError(str(e)) from None


def det_args(qemu, kernel, initrd, rundir, ports=2, smp=2, mem=1024, icount=ICOUNT, seed=1, rtc=RTC_BASE,
             profile=None, pcap=True, dev_props='', ips=('10.0.0.1/24', '10.0.0.2/24'), append=(), extra=()):
    """(QEMU argv, {device id: pcap path}).  extra: more QEMU arguments (experiments: what
    breaks determinism, e.g. ['-device', 'virtio-rng-pci'])."""
    cmdline = ['console=ttyS0,115200', 'panic=-1', 'nokaslr', 'loglevel=4', 'log_buf_len=4M',
               'tsc=reliable', 'no_timer_check', 'mitigations=off', 'qrnicvm.host=vm0',
               'qrnicvm.ip=' + ','.join(ips[:ports])] + list(append)
    a = [qemu, '-name', 'vm0,process=qrnic-det', '-M', 'q35', '-accel', 'tcg', '-m', str(mem), '-smp', str(smp),
         '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot', '-action', 'shutdown=pause']
    a += QEMU_DATA_ARGS
    if icount:
        a += ['-icount', icount]
    if seed is not None:
        a += ['-seed', str(seed)]
    if rtc:
        a += ['-rtc', 'base=%s,clock=vm' % rtc]
    a += ['-kernel', kernel, '-initrd', initrd, '-append', ' '.join(cmdline)]
    a += ['-chardev', 'file,id=con,path=%s' % os.path.join(rundir, 'vm0-console.log'), '-serial', 'chardev:con']
    a += ['-qmp', 'unix:%s,server=on,wait=off' % os.path.join(rundir, 'vm0-qmp.sock')]
    pcaps = {}
    for i in range(ports):
        props = []
        if profile:
            props.append('profile=' + profile)
        if pcap:
            pcaps['qrnic-%d' % i] = os.path.join(rundir, 'vm0-qrnic%d.pcap' % i)
            props.append('pcap=' + pcaps['qrnic-%d' % i])
        if dev_props:
            props.append(dev_props)
        a += ['-netdev', 'hubport,hubid=0,id=n%d' % i,
              '-device', ','.join(['qrnic', 'netdev=n%d' % i, 'mac=' + _mac(0, i), 'id=qrnic-%d' % i] + props)]
    return a + list(extra), pcaps


def det_run(workload, qemu=None, image=None, detdir=None, build=True, timeout=900, rundir=None, progress=True,
            qom_props=QOM_PROPS, snap_image=None, save_at=None, loadvm=None, trace=None, **kw):
    """Boot, run WORKLOAD (a /bin/sh script; EP<i>_DEV/_NETDEV/_IP/_GID set), wait for the poweroff,
    read qom_props of every qrnic device.  kw: det_args (smp, mem, icount, seed, rtc, profile, pcap,
    dev_props, ips, append, extra, ports).  Returns a DetResult (also .pcaps, .args).

    Snapshots: snap_image, a qcow2 file (runner.make_qcow2_overlay(path, None, size=...)) given
    to QEMU as a drive without a device, holds savevm's state.  save_at=(marker, tag): when the
    console shows marker, stop the VM, savevm tag, quit (the result has .saved_s and no
    workload status).  loadvm=tag: start from that snapshot (-loadvm).  trace: a file for
    -trace qrnic_event (trace_events: more trace event patterns into the same file)."""
    extra = list(kw.pop('extra', ()))
    trace_events = kw.pop('trace_events', ())
    if snap_image:
        extra += ['-drive', 'if=none,id=snap,format=qcow2,file=%s' % snap_image]
    if loadvm:
        extra += ['-loadvm', loadvm]
    if trace:
        for ev in trace_events:
            extra += ['-trace', ev]
        extra += ['-trace', 'qrnic_event,file=%s' % trace]
    kw['extra'] = extra
    qemu = qemu or find_qemu(build=build)
    check_qemu_devices(qemu, ('qrnic',))
    try:
        qmp_lib()                   # the results are read over QMP: fail before the boot, not after
    except QmpError as e:
        raise PrereqError(str(e)) from None
    if detdir is None:
        image = image or find_image(build=build)
        detdir = find_detinitrd(image)
    rundir = rundir or new_run_dir()
    base = os.path.join(detdir, 'initrd.img')
    if not os.path.isfile(base):
        raise PrereqError('%s has no initrd.img: run scripts/guest-detinitrd.sh' % detdir)
    initrd = os.path.join(rundir, 'vm0-initrd.img')
    with open(base, 'rb') as src, open(initrd, 'wb') as dst:
        data = src.read()
        dst.write(data)
        dst.write(b'\0' * (-len(data) % 512))
        dst.write(_cpio_newc({'workload': (0o100755, workload.encode())}))
    args, pcaps = det_args(qemu, os.path.join(detdir, 'vmlinuz'), initrd, rundir, **kw)
    with open(os.path.join(rundir, 'vm0-cmdline.txt'), 'w') as f:
        f.write(' '.join(shlex.quote(x) for x in args) + '\n')
    with open(os.path.join(rundir, 'vm0-workload.sh'), 'w') as f:
        f.write(workload)
    console = os.path.join(rundir, 'vm0-console.log')
    qmp_sock = os.path.join(rundir, 'vm0-qmp.sock')
    open(console, 'w').close()
    if progress:
        print('qrnic_vm.det: run dir %s (%s)' % (rundir, detdir), file=sys.stderr, flush=True)
    t0 = time.monotonic()
    with open(os.path.join(rundir, 'vm0-qemu.log'), 'wb') as qlog:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT,
                                start_new_session=True)
    _live.add(proc)
    qom = {}
    saved_s = trace_at_stop = None
    try:
        # Wait for the guest's last line, reading only the console file (nothing reaches QEMU).
        while True:
            with open(console, 'rb') as f:
                text = f.read()
            if save_at and save_at[0].encode() in text:
                t1 = time.monotonic()
                _qmp_session(qmp_sock, [('stop', None)])
                out = _qmp_session(qmp_sock, [('human-monitor-command',
                                               {'command-line': 'savevm %s' % save_at[1]})], timeout=300)[0]
                if out.strip():
                    raise VMError('savevm %s: %s' % (save_at[1], out.strip()))
                saved_s = time.monotonic() - t1
                _qmp_session(qmp_sock, [('quit', None)])
                proc.wait(30)
                break
            if b'QRNIC-DET-DONE' in text:
                break
            if b'Kernel panic' in text:     # panic=-1 + -no-reboot: the VM stops without DONE
                time.sleep(1)
                raise VMError('the guest kernel panicked; logs in %s:\n%s' % (rundir, _tail(console, 40)))
            if proc.poll() is not None:
                raise VMError('QEMU exited (status %s) before the guest finished; logs in %s:\n%s'
                              % (proc.returncode, rundir, _tail(console, 30) + '\n' +
                                 _tail(os.path.join(rundir, 'vm0-qemu.log'), 20)))
            if time.monotonic() - t0 > timeout:
                raise VMError('the guest did not finish within %ds; logs in %s:\n%s'
                              % (timeout, rundir, _tail(console, 30)))
            # a runaway workload must not fill the disk with its captures or trace
            for f in list(pcaps.values()) + ([trace] if trace else []):
                if os.path.exists(f) and os.path.getsize(f) > MAX_CAPTURE:
                    raise VMError('%s grew beyond %d MiB: stopped (logs in %s)' % (f, MAX_CAPTURE >> 20, rundir))
            time.sleep(0.02 if save_at else 0.5)
        # The guest powers off right after that line: the VM stops (-action shutdown=pause).
        deadline = time.monotonic() + 60
        while saved_s is None:
            st = _qmp_session(qmp_sock, [('query-status', None)])[0]
            if st.get('status') == 'shutdown' or not st.get('running'):
                break
            if time.monotonic() > deadline:
                raise VMError('the guest did not power off after QRNIC-DET-DONE (status %s); logs in %s'
                              % (st, rundir))
            time.sleep(0.2)
        # what the devices traced up to here is the run; QEMU's exit adds the ports going down
        # (the netdevs are deleted: an async PORT_ERR event on each device), stamped with the
        # virtual time at which the VM stopped
        if trace and saved_s is None and os.path.exists(trace):
            with open(trace, 'rb') as f:
                trace_at_stop = f.read().count(b'\n')
        ports = kw.get('ports', 2)
        cmds = [('qom-get', {'path': '/machine/peripheral/qrnic-%d' % i, 'property': p})
                for i in range(ports) for p in qom_props]
        if saved_s is not None:
            cmds = []
        vals = _qmp_session(qmp_sock, cmds + [('quit', None)]) if cmds else []
        for (c, a), v in zip(cmds, vals):
            qom.setdefault(a['path'].rsplit('/', 1)[1], {})[a['property']] = v
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _live.discard(proc)
    wall = time.monotonic() - t0
    with open(console, 'rb') as f:
        res = DetResult(rundir, f.read().decode('utf-8', 'replace'), qom, wall)
    res.pcaps, res.args, res.saved_s, res.trace = pcaps, args, saved_s, trace
    res.trace_at_stop = trace_at_stop     # lines of trace written before QEMU was told to quit
    if progress:
        print('qrnic_vm.det: done in %.1fs (workload rc %s)' % (wall, res.rc), file=sys.stderr, flush=True)
    return res


def _tail(path, n):
    try:
        with open(path, 'rb') as f:
            return '\n'.join('    ' + ln for ln in f.read().decode('utf-8', 'replace').splitlines()[-n:])
    except (OSError, TypeError):
        return ''


__all__ = ['det_run', 'det_args', 'DetResult', 'find_detinitrd', 'ICOUNT', 'RTC_BASE', 'REPO']
