# SPDX-License-Identifier: GPL-2.0-or-later
"""A QEMU process driven through the qtest protocol (and QMP).

    qemu = Qemu(binary, ['-device', 'qrnic,...'])
    qemu.writel(addr, v); qemu.readq(addr); qemu.memwrite(addr, data)
    qemu.outl(0xcf8, ...); qemu.clock_step(1000); qemu.qmp('system_reset')
    qemu.close()

QEMU is started with `-M q35 -accel qtest`: no guest code runs, the test is
the CPU.  The virtual clock advances only on clock_step/clock_set; bottom
halves and file descriptor handlers (netdevs) run whenever QEMU's main loop
iterates, i.e. on their own between our commands.

Both channels are unix sockets on which this module listens and QEMU
connects (`-qtest unix:PATH -qmp unix:PATH`), as QEMU's libqtest does.  QMP
goes through the project's one QMP client (scripts/qrnic_vm/qmp.py, QEMU's
qemu.qmp) on the accepted socket.
QEMU's stderr goes to a log file (self.log_path); `self.stderr()` reads it.
"""
import base64
import os
import shutil
import socket
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                'scripts'))
from qrnic_vm.ports import free_udp_ports  # noqa: E402,F401  (one copy, shared with the VM runner)
from qrnic_vm.qmp import Qmp, QmpClosed, QmpError  # noqa: E402  (the one QMP client)

# Firmware search path: -accel qtest runs no firmware, but q35 still loads
# bios.bin and option ROMs at machine creation.
FIRMWARE_DIRS = ('/usr/share/seabios', '/usr/share/qemu', '/usr/lib/ipxe/qemu')


def base_args(mem='512M'):
    args = ['-M', 'q35', '-accel', 'qtest', '-display', 'none', '-nodefaults', '-m', mem]
    for d in FIRMWARE_DIRS:
        if os.path.isdir(d):
            args += ['-L', d]
    return args


class QemuError(Exception):
    pass


class SanitizerReport(QemuError):
    """A sanitized QEMU (scripts/build-qemu.sh --variant asan, the qsan tier
    of scripts/test.sh) printed an AddressSanitizer, LeakSanitizer or UBSan
    report; raised by Qemu.close() after the cleanup."""


# Lines that start a sanitizer report in QEMU's stderr.
SANITIZER_MARKERS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer',
                     'runtime error:', 'SUMMARY: UndefinedBehaviorSanitizer')
# Set by the qsan tier: QEMU is built with ASan+UBSan and must stop through
# SIGTERM (an orderly exit, so LeakSanitizer runs); its report fails the test.
SANITIZED = os.environ.get('QRNIC_QEMU_SANITIZED') == '1'


def sanitizer_report(text):
    """The sanitizer report in QEMU's output (from its first marker line), or ''."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if any(m in line for m in SANITIZER_MARKERS):
            return '\n'.join(lines[max(0, i - 2):i + 80])
    return ''


class QtestFail(QemuError):
    """QEMU answered a qtest command with FAIL/ERR."""


class Qemu:
    """One QEMU process.  The memory/IO accessors are the qtest commands of
    the same name; addresses are guest physical addresses."""

    def __init__(self, binary, args=(), name='qemu', mem='512M', qmp=True, timeout=30.0,
                 extra_env=None):
        self.binary = binary
        self.args = list(args)      # without the qtest/QMP plumbing (a migration target reuses them)
        self.mem_size = mem
        self.name = name
        self.dir = tempfile.mkdtemp(prefix=f'qrnic-{name}-')
        self.log_path = os.path.join(self.dir, 'stderr.log')
        self.events = []            # QMP events seen so far
        self.timeout = timeout
        self._qt = self._qmp = None
        qt_path = os.path.join(self.dir, 'qtest.sock')
        qmp_path = os.path.join(self.dir, 'qmp.sock')
        lq = _listen(qt_path)
        lm = _listen(qmp_path) if qmp else None
        cmd = [binary] + base_args(mem) + ['-qtest', f'unix:{qt_path}']
        if qmp:
            cmd += ['-qmp', f'unix:{qmp_path}']
        cmd += list(args)
        self.cmdline = cmd
        env = dict(os.environ)
        env.update(extra_env or {})
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env)
        try:
            self._qt = self._accept(lq, 'qtest')
            self._qtf = self._qt.makefile('rb')
            if qmp:
                s = self._accept(lm, 'QMP')
                try:
                    self._qmp = Qmp(s, timeout=self.timeout, name=name)
                except QmpError as e:
                    s.close()
                    raise QemuError(f'{e}\n{self.stderr()[-4000:]}') from None
        except BaseException:
            self.close()
            raise
        finally:
            lq.close()
            if lm:
                lm.close()

    # ---- process ---------------------------------------------------------------
    def _accept(self, lsock, what):
        lsock.settimeout(0.1)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                s, _ = lsock.accept()
                s.settimeout(self.timeout)
                return s
            except socket.timeout:
                if self.proc.poll() is not None:
                    raise QemuError(f'{self.name}: QEMU exited ({self.proc.returncode}) before '
                                    f'connecting its {what} socket:\n{self.stderr()}')
                if time.monotonic() > deadline:
                    raise QemuError(f'{self.name}: QEMU did not connect its {what} socket')

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        try:
            self._log.flush()
            with open(self.log_path, 'rb') as f:
                return f.read().decode(errors='replace')
        except OSError:
            return ''

    def close(self, keep_dir=False):
        if self._qmp is not None:
            self._qmp.close()          # closes the socket too
        if self._qt is not None:
            try:
                self._qt.close()
            except OSError:
                pass
        self._qt = self._qmp = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                # LeakSanitizer's scan at exit takes a while under ASan
                self.proc.wait(120 if SANITIZED else 5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        report = sanitizer_report(self.stderr())
        self._log.close()
        if report:
            keep_dir = True
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        if report:
            raise SanitizerReport(f'{self.name}: QEMU (exit {self.proc.returncode}) printed a '
                                  f'sanitizer report (full log {self.log_path}):\n{report}')

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- qtest protocol ---------------------------------------------------------
    def cmd(self, line):
        """Send one qtest command, return the words of its OK answer."""
        if self._qt is None:
            raise QemuError(f'{self.name}: closed')
        try:
            self._qt.sendall(line.encode() + b'\n')
            while True:
                resp = self._qtf.readline()
                if not resp:
                    state = 'alive' if self.alive() else f'exited with {self.proc.returncode}'
                    raise QemuError(f'{self.name}: qtest connection closed after {line[:80]!r} '
                                    f'(QEMU {state})\n{self.stderr()[-4000:]}')
                words = resp.decode().split()
                if words and words[0] == 'IRQ':       # async message
                    continue
                break
        except socket.timeout:
            raise QemuError(f'{self.name}: no qtest answer to {line[:80]!r}')
        if not words or words[0] != 'OK':
            raise QtestFail(f'{self.name}: {line[:80]!r} -> {resp.decode().strip()}')
        return words[1:]

    def _val(self, line):
        return int(self.cmd(line)[0], 0)

    def readb(self, a): return self._val(f'readb {a:#x}')
    def readw(self, a): return self._val(f'readw {a:#x}')
    def readl(self, a): return self._val(f'readl {a:#x}')
    def readq(self, a): return self._val(f'readq {a:#x}')
    def writeb(self, a, v): self.cmd(f'writeb {a:#x} {v & 0xff:#x}')
    def writew(self, a, v): self.cmd(f'writew {a:#x} {v & 0xffff:#x}')
    def writel(self, a, v): self.cmd(f'writel {a:#x} {v & 0xffffffff:#x}')
    def writeq(self, a, v): self.cmd(f'writeq {a:#x} {v & 0xffffffffffffffff:#x}')
    def inb(self, a): return self._val(f'inb {a:#x}')
    def inw(self, a): return self._val(f'inw {a:#x}')
    def inl(self, a): return self._val(f'inl {a:#x}')
    def outb(self, a, v): self.cmd(f'outb {a:#x} {v & 0xff:#x}')
    def outw(self, a, v): self.cmd(f'outw {a:#x} {v & 0xffff:#x}')
    def outl(self, a, v): self.cmd(f'outl {a:#x} {v & 0xffffffff:#x}')

    def read_sized(self, a, size):
        return {1: self.readb, 2: self.readw, 4: self.readl, 8: self.readq}[size](a)

    def write_sized(self, a, v, size):
        return {1: self.writeb, 2: self.writew, 4: self.writel, 8: self.writeq}[size](a, v)

    def memread(self, addr, n):
        """n bytes of guest memory (b64read: compact for large reads)."""
        if n == 0:
            return b''
        data = base64.b64decode(self.cmd(f'b64read {addr:#x} {n:#x}')[0])
        if len(data) != n:
            raise QemuError(f'b64read {addr:#x} {n}: got {len(data)} bytes')
        return data

    def memwrite(self, addr, data):
        data = bytes(data)
        if not data:
            return
        self.cmd(f'b64write {addr:#x} {len(data):#x} {base64.b64encode(data).decode()}')

    def memset(self, addr, n, value=0):
        self.cmd(f'memset {addr:#x} {n:#x} {value & 0xff:#x}')

    def clock_step(self, ns=None):
        """Advance the virtual clock by ns (None: to the next timer deadline);
        returns the new clock value, or None when QEMU could not advance it."""
        try:
            return int(self.cmd('clock_step' if ns is None else f'clock_step {int(ns)}')[0])
        except QtestFail:
            return None

    def clock_set(self, ns):
        return int(self.cmd(f'clock_set {int(ns)}')[0])

    def clock(self):
        """The current virtual clock in ns."""
        self._qt.sendall(b'clock_set 0\n')
        while True:
            words = self._qtf.readline().decode().split()
            if words and words[0] != 'IRQ':
                return int(words[1])

    # ---- QMP -----------------------------------------------------------------------
    def _qmp_call(self, method, *args):
        if self._qmp is None:
            raise QemuError(f'{self.name}: no QMP connection')
        try:
            return getattr(self._qmp, method)(*args)
        except QmpClosed as e:
            raise QemuError(f'{e}\n{self.stderr()[-4000:]}') from None
        except QmpError as e:   # QEMU's error answer ('name: QMP cmd: Class: desc'), a timeout
            raise QemuError(str(e)) from None
        finally:
            self.events += self._qmp.events()      # received meanwhile

    def qmp(self, command, **arguments):
        """Run a QMP command; returns its 'return' value, raises on 'error'."""
        return self._qmp_call('execute', command, arguments)

    def qmp_wait_event(self, name, timeout=10.0):
        """Wait for a QMP event (returns it); events already seen count."""
        for i, e in enumerate(self.events):
            if e['event'] == name:
                return self.events.pop(i)
        return self._qmp_call('wait_event', name, timeout)

    def system_reset(self, timeout=10.0):
        """QMP system_reset, waiting for the RESET event (the reset is done then)."""
        self.events = [e for e in self.events if e['event'] != 'RESET']
        self.qmp('system_reset')
        return self.qmp_wait_event('RESET', timeout)


def _listen(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    return s


def run_device_help(binary, device='qrnic'):
    """`-device DEV,help`: (returncode, output)."""
    r = subprocess.run([binary] + base_args() + ['-device', f'{device},help'],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    return r.returncode, r.stdout.decode(errors='replace')


def try_start(binary, args, timeout=60):
    """Start QEMU with args and no qtest client; for option checking.
    Returns (returncode or None if it kept running, output)."""
    cmd = [binary] + base_args() + ['-qtest', 'null'] + list(args)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors='replace')
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        return None, out.decode(errors='replace')
