# SPDX-License-Identifier: GPL-2.0-or-later
"""VM runner: QEMU command lines, boot, agent client, shutdown (see __init__.py)."""
import atexit
import base64
import json
import os
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from . import hosts as _hosts
from .ports import free_udp_ports
from .qmp import Qmp, QmpError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get('QRNIC_CACHE', '/var/cache/qrnic')
RUNS = os.environ.get('QRNIC_RUNS', '/tmp/qrnic-runs')
QEMU_DATA_ARGS = ['-L', '/usr/share/seabios', '-L', '/usr/share/qemu', '-L', '/usr/lib/ipxe/qemu']
AGENT_PORT = 'org.qrnic.agent'
QRNIC_PCI = ('0x1af4', '0x10f7')
TOPOLOGIES = ('T1', 'T2', 'T3', 'S4')
# Sn (3 <= n <= 16; S4 is the one listed): n VMs, one qrnic port each, on one qrnic-switch
STAR_MIN, STAR_MAX = 3, 16


def star_size(name):
    """n for a star topology name 'Sn' (3..16), None for any other name."""
    if isinstance(name, str) and len(name) >= 2 and name[0] == 'S' and name[1:].isdigit():
        n = int(name[1:])
        if STAR_MIN <= n <= STAR_MAX:
            return n
    return None


# Where the VMs run: 'local' (one network namespace, links on 127.0.0.1) or 'netns' (each VM
# in its own network namespace standing in for a host machine: hosts.py, docs/guest.md)
# or 'netns-vxlan' (the same hosts, the VMs on a tap in a bridge with VXLAN between the hosts)
HOSTS = ('local', 'netns', 'netns-vxlan')
# The cables Topology(link=...) knows; T1's default is the first, T2/T3's the second.
LINKS = ('hub', 'dgram', 'unix', 'shm')
# Extra seconds the host waits for an agent reply beyond the command's own timeout.
REPLY_GRACE = 30

_live = set()          # every QEMU we started, killed at interpreter exit if still running


class VMError(RuntimeError):
    """A VM failed to start, died, or misbehaved."""


class PrereqError(VMError):
    """Something to build first; the message names the script to run."""


class AgentError(VMError):
    """The agent did not answer, or answered with a protocol error."""


class CommandFailed(VMError):
    def __init__(self, res):
        self.result = res
        tail = '\n'.join(res.output.rstrip().splitlines()[-40:])
        why = 'timed out after %ss' % res.timeout if res.timed_out else 'exit status %s' % res.rc
        super().__init__('[%s] `%s` failed (%s, %.1fs):\n%s' % (res.vm, res.cmd, why, res.dt, tail))


class Result(str):
    """A finished guest command.  The string value is its stdout."""

    def __new__(cls, rep, cmd, vm, timeout):
        self = str.__new__(cls, rep.get('out', ''))
        self.cmd, self.vm, self.timeout = cmd, vm, timeout
        self.rc = rep.get('rc')
        self.out = rep.get('out', '')
        self.err = rep.get('err', '')
        self.dt = rep.get('dt', 0.0)
        self.timed_out = bool(rep.get('timed_out'))
        self.pid = rep.get('pid')
        return self

    @property
    def ok(self):
        return self.rc == 0 and not self.timed_out

    @property
    def output(self):
        """stdout followed by stderr."""
        if self.err and not self.out.endswith('\n') and self.out:
            return self.out + '\n' + self.err
        return self.out + self.err

    def check(self):
        if not self.ok:
            raise CommandFailed(self)
        return self


class Job:
    """A command started with VM.spawn (e.g. a perftest server)."""

    def __init__(self, vm, jid, pid, cmd):
        self.vm, self.id, self.pid, self.cmd = vm, jid, pid, cmd
        self.result = None

    def wait(self, timeout=60, kill=False, check=False):
        """Wait up to timeout s.  Returns a Result (rc None and .running if still running)."""
        rep = self.vm.request({'op': 'wait', 'job': self.id, 'timeout': timeout, 'kill': kill},
                              timeout=timeout + REPLY_GRACE)
        res = Result(rep, self.cmd, self.vm.name, timeout)
        res.running = rep.get('running', False)
        if not res.running:
            self.result = res
        if check:
            res.check()
        return res

    def poll(self):
        return self.wait(timeout=0)

    def kill(self, sig=9):
        self.vm.request({'op': 'signal', 'job': self.id, 'sig': sig}, timeout=REPLY_GRACE)

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL after timeout; returns the final Result."""
        if self.result is not None:
            return self.result
        self.kill(15)
        res = self.wait(timeout)
        if res.running:
            self.kill(9)
            res = self.wait(REPLY_GRACE)
        return res


class Endpoint:
    """One qrnic port as seen from its guest: RDMA device, netdev, IPv4 address, RoCEv2 GID index."""

    def __init__(self, vm, ibdev, netdev, ip, gid):
        self.vm, self.ibdev, self.netdev, self.ip, self.gid = vm, ibdev, netdev, ip, gid

    def __repr__(self):
        return 'Endpoint(%s, ibdev=%s, netdev=%s, ip=%s, gid=%s)' % (
            self.vm.name, self.ibdev, self.netdev, self.ip, self.gid)


# ---- prerequisites ------------------------------------------------------------------
def _script(name):
    return os.path.join(REPO, 'scripts', name)


def _run_build_script(name, args=(), quiet=False):
    """Run scripts/NAME; return the last stdout line.  stderr passes through unless quiet."""
    cmd = ['bash', _script(name)] + list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE if quiet else None, text=True)
    if p.returncode:
        msg = (p.stderr or '').strip().splitlines()[-15:] if quiet else []
        raise PrereqError('scripts/%s failed (exit %d)%s' % (name, p.returncode, ':\n' + '\n'.join(msg) if msg else ''))
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if not lines:
        raise PrereqError('scripts/%s printed no path' % name)
    return lines[-1].strip()


def find_qemu(build=False, quiet=False):
    """qemu-system-x86_64 with the qrnic device: $QRNIC_QEMU, else scripts/build-qemu.sh
    (build=True; cheap when up to date), else the newest cached build."""
    q = os.environ.get('QRNIC_QEMU')
    if q:
        if not os.access(q, os.X_OK):
            raise PrereqError('QRNIC_QEMU=%s is not executable' % q)
        return q
    if build:
        q = _run_build_script('build-qemu.sh', quiet=quiet)
        if not os.access(q, os.X_OK):
            raise PrereqError('scripts/build-qemu.sh printed %r, which is not executable' % q)
        return q
    out = os.path.join(CACHE, 'qemu-10.0.2-out')
    cands = []
    if os.path.isdir(out):
        for k in os.listdir(out):
            p = os.path.join(out, k, 'qemu-system-x86_64')
            if os.access(p, os.X_OK):
                cands.append((os.path.getmtime(p), p))
    if not cands:
        raise PrereqError('QEMU with the qrnic device is not built: run scripts/build-qemu.sh '
                          '(or set QRNIC_QEMU=/path/to/qemu-system-x86_64)')
    return max(cands)[1]


_checked_qemu = {}


def check_qemu_devices(qemu, need=('qrnic', 'virtio-blk-pci', 'virtio-serial-pci', 'virtserialport')):
    """PrereqError unless `qemu -device help` lists every device the runner uses."""
    if qemu not in _checked_qemu:
        p = subprocess.run([qemu, '-device', 'help'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        _checked_qemu[qemu] = p.stdout
    have = _checked_qemu[qemu]
    missing = [d for d in need if 'name "%s"' % d not in have]
    if missing:
        raise PrereqError('%s lacks the device(s) %s: rebuild it with scripts/build-qemu.sh'
                          % (qemu, ', '.join(missing)))


def make_qcow2_overlay(path, backing, backing_fmt='raw', size=None, cluster_bits=16):
    """Write an empty qcow2 (version 3) image at path whose backing file is backing, as
    `qemu-img create -f qcow2 -b BACKING -F FMT PATH` does (the QEMU the runner builds has no
    qemu-img).  size: the virtual size, default the backing file's size (right for raw).
    Layout: cluster 0 the header (with the backing format extension and the backing file
    name), 1 the refcount table, 2 its one refcount block (16-bit counts), 3.. the L1 table,
    all zero: every guest read falls through to the backing file."""
    if backing is None:             # a blank image (e.g. a place for savevm's state)
        if size is None:
            raise ValueError('qcow2: a blank image needs a size')
        name = b''
    else:
        backing = os.path.abspath(backing)
        size = os.path.getsize(backing) if size is None else size
        name = backing.encode()
    cs = 1 << cluster_bits
    l1_size = max(1, -(-size // (cs * (cs // 8))))
    l1_clusters = -(-l1_size * 8 // cs)
    nclusters = 3 + l1_clusters
    if nclusters > cs // 2:
        raise ValueError('qcow2 overlay: %d clusters do not fit in one refcount block' % nclusters)
    ext = b''
    if name:
        fmt = backing_fmt.encode()
        ext = struct.pack('>II', 0xE2792ACA, len(fmt)) + fmt + b'\0' * (-len(fmt) % 8)
    ext += struct.pack('>II', 0, 0)
    hdr_len = 104
    header = struct.pack('>4sIQIIQIIQQIIQQQQII', b'QFI\xfb', 3, hdr_len + len(ext) if name else 0,
                         len(name), cluster_bits,
                         size, 0, l1_size, 3 * cs, 1 * cs, 1, 0, 0, 0, 0, 0, 4, hdr_len)
    assert len(header) == hdr_len
    c0 = header + ext + name
    if len(c0) > cs:
        raise ValueError('qcow2 overlay: backing file name too long')
    img = bytearray(nclusters * cs)
    img[:len(c0)] = c0
    struct.pack_into('>Q', img, 1 * cs, 2 * cs)
    for c in range(nclusters):
        struct.pack_into('>H', img, 2 * cs + 2 * c, 1)
    with open(path, 'wb') as f:
        f.write(img)
    return path


class Image:
    def __init__(self, path):
        self.path = path
        self.kernel = os.path.join(path, 'vmlinuz')
        self.initrd = os.path.join(path, 'initrd.img')
        self.rootfs = os.path.join(path, 'rootfs.img')
        for f in (self.kernel, self.initrd, self.rootfs):
            if not os.path.isfile(f):
                raise PrereqError('guest image %s is incomplete (%s missing): run scripts/guest-image.sh'
                                  % (path, os.path.basename(f)))
        try:
            with open(os.path.join(path, 'info.txt')) as f:
                self.info = f.read()
        except OSError:
            self.info = ''
        self.driver_note = self._field('qrnic.ko:')
        self.provider_note = self._field('provider:')
        self.has_driver = self.driver_note.startswith('included')
        self.has_provider = self.provider_note.startswith('included')

    def _field(self, key):
        for ln in self.info.splitlines():
            if ln.startswith(key):
                return ln[len(key):].strip()
        return 'unknown (no info.txt)'

    def require_driver(self, provider=True):
        if not self.has_driver:
            raise PrereqError('the guest image has no qrnic.ko (%s): fix the driver build '
                              '(scripts/build-kmod.sh), then run scripts/guest-image.sh' % self.driver_note)
        if provider and not self.has_provider:
            raise PrereqError('the guest image has no qrnic provider (%s): fix scripts/build-provider.sh, '
                              'then run scripts/guest-image.sh' % self.provider_note)


def find_image(build=False, quiet=False, args=()):
    """The guest image directory: $QRNIC_GUEST_IMAGE, else scripts/guest-image.sh (build=True;
    cheap when up to date), else <cache>/guest/images/latest."""
    p = os.environ.get('QRNIC_GUEST_IMAGE')
    if not p and build:
        p = _run_build_script('guest-image.sh', args, quiet=quiet)
    if not p:
        p = os.path.join(CACHE, 'guest', 'images', 'latest')
        if not os.path.isdir(p):
            raise PrereqError('no guest image: run scripts/guest-image.sh')
        p = os.path.realpath(p)
    return Image(p)


def new_run_dir(keep=30):
    os.makedirs(RUNS, exist_ok=True)
    old = sorted(d for d in os.listdir(RUNS) if not d.startswith('.'))
    for d in old[:max(0, len(old) - keep + 1)]:
        shutil.rmtree(os.path.join(RUNS, d), ignore_errors=True)
    base = os.path.join(RUNS, time.strftime('%Y%m%d-%H%M%S') + '-%d' % os.getpid())
    path, i = base, 1
    while os.path.exists(path):
        i += 1
        path = '%s.%d' % (base, i)
    os.makedirs(path)
    return path


def _kill_leftovers():
    for p in list(_live):
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass


atexit.register(_kill_leftovers)


# ---- one VM ----------------------------------------------------------------------------
class VM:
    """One QEMU guest.  nics: list of (model, netdev_args, mac), model 'qrnic' or 'virtio-net-pci'."""

    def __init__(self, name, qemu, image, rundir, nics, append=(), mem=1024, smp=1, cpu=None,
                 progress=True, qrnic_props='', overlay=False, extra_args=(), incoming=None,
                 guest_name=None, accel='tcg', netns=None):
        self.name, self.qemu, self.image, self.rundir = name, qemu, image, rundir
        # guest_name: the guest's host name (kernel command line); a migration target keeps
        # its source's (VM.twin).  overlay: True = the root disk is a qcow2 overlay of the
        # image, <rundir>/<name>-root.qcow2 (needed by savevm/loadvm and by migration, where
        # source and target share the file); a path = that overlay; False = snapshot=on.
        # incoming: start with '-incoming incoming' (a migration target, 'defer' for QMP
        # migrate-incoming).  extra_args: appended to QEMU's command line.  accel: the
        # -accel value ('tcg', or with options such as 'tcg,tb-size=64').
        self.guest_name = guest_name or name
        if overlay is True:
            overlay = os.path.join(rundir, name + '-root.qcow2')
        self.overlay = overlay or None
        self.extra_args = list(extra_args)
        self.accel = accel
        # netns: the named network namespace QEMU runs in (Topology(hosts='netns')), None: ours
        self.netns = netns
        self.incoming = incoming
        self.migration = None       # query-migrate of the migration that made this VM (migrate_to)
        self.nics, self.append, self.mem, self.smp, self.cpu = nics, list(append), mem, smp, cpu
        self.qrnic_props = qrnic_props
        self.progress = progress
        self.console_log = os.path.join(rundir, name + '-console.log')
        self.qemu_log = os.path.join(rundir, name + '-qemu.log')
        self.agent_log = os.path.join(rundir, name + '-agent.log')
        self.agent_sock = os.path.join(rundir, name + '-agent.sock')
        self.qmp_sock = os.path.join(rundir, name + '-qmp.sock')
        self.proc = None
        self.boot_time = None
        self.ready_info = None
        self._sock = None
        self._lsock = None
        self._wlock = threading.Lock()
        self._plock = threading.Lock()
        self._pending = {}
        self._next_id = 1
        self._ready = threading.Event()
        self._dead = None
        self._t0 = None
        self._stop_tail = threading.Event()
        self._alog = None

    # -- command line --
    place_index = 0     # this VM's number in its topology (CPU placement 'spread')

    def kernel_cmdline(self):
        base = ['console=ttyS0,115200', 'root=/dev/vda', 'rootfstype=ext4', 'rw', 'init=/sbin/qrnic-init',
                'panic=-1', 'nokaslr', 'loglevel=4', 'log_buf_len=4M', 'kfence.sample_interval=100',
                'tsc=reliable', 'no_timer_check', 'mitigations=off', 'qrnicvm.host=' + self.guest_name]
        extra = os.environ.get('QRNIC_GUEST_APPEND', '').split()
        return ' '.join(base + self.append + extra)

    def qemu_args(self):
        a = [self.qemu, '-name', '%s,process=qrnic-%s,debug-threads=on' % (self.name, self.name),
             '-M', 'q35', '-accel', self.accel, '-m', str(self.mem), '-smp', str(self.smp),
             '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot']
        if self.cpu:
            a += ['-cpu', self.cpu]
        a += QEMU_DATA_ARGS
        a += ['-kernel', self.image.kernel, '-initrd', self.image.initrd, '-append', self.kernel_cmdline()]
        if self.overlay:
            a += ['-drive', 'file=%s,if=none,id=root,format=qcow2,cache=unsafe' % self.overlay]
        else:
            a += ['-drive', 'file=%s,if=none,id=root,format=raw,snapshot=on,cache=unsafe' % self.image.rootfs]
        a += ['-device', 'virtio-blk-pci,drive=root']
        a += ['-chardev', 'file,id=con,path=%s' % self.console_log, '-serial', 'chardev:con']
        # max_ports=2: the agent's port (nr 1; nr 0 is kept for a console).
        # The default, 31, gives 64 virtqueues whose ioeventfds the main loop
        # polls on every iteration (73 fds in all, measured with strace),
        # once per frame a -netdev dgram delivers.
        a += ['-device', 'virtio-serial-pci,id=vser0,max_ports=2',
              '-chardev', 'socket,id=agent,path=%s' % self.agent_sock,
              '-device', 'virtserialport,bus=vser0.0,chardev=agent,name=%s' % AGENT_PORT]
        a += ['-qmp', 'unix:%s,server=on,wait=off' % self.qmp_sock]
        a += ['-device', 'virtio-rng-pci']
        for i, (model, netdev, mac) in enumerate(self.nics):
            nid = 'n%d' % i
            a += ['-netdev', '%s,id=%s' % (netdev, nid)]
            props = ',' + self.qrnic_props if model == 'qrnic' and self.qrnic_props else ''
            a += ['-device', '%s,netdev=%s,mac=%s,id=%s-%d%s' % (model, nid, mac, model.split('-')[0], i, props)]
        a += self.extra_args
        if self.incoming:
            a += ['-incoming', self.incoming]
        return a

    def qrnic_paths(self):
        """QOM paths of this VM's qrnic devices, in -device order."""
        return ['/machine/peripheral/qrnic-%d' % i for i, (m, _n, _mac) in enumerate(self.nics) if m == 'qrnic']

    # -- life cycle --
    def log(self, msg):
        if self.progress:
            dt = time.monotonic() - self._t0 if self._t0 else 0.0
            print('[%s +%5.1fs] %s' % (self.name, dt, msg), file=sys.stderr, flush=True)

    def start(self):
        """Start QEMU (non-blocking); wait_ready() waits for the agent."""
        for p in (self.agent_sock, self.qmp_sock):
            if os.path.exists(p):
                os.unlink(p)
        # The host listens and QEMU connects to it at start-up, before the guest runs, so
        # nothing the agent writes can be lost.
        self._lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._lsock.bind(self.agent_sock)
        self._lsock.listen(1)
        links = [n for _m, n, _mac in self.nics if isinstance(n, (DgramNet, UnixNet))]
        shm = [n for _m, n, _mac in self.nics if isinstance(n, ShmNet)]
        env = dict(os.environ)
        for n in shm:
            env.update(n.env())
        if self.incoming:
            # A migration target uses the very UDP sockets of its source (the runner keeps
            # them open, see below): the peer's frames keep arriving at the same port, and
            # whichever QEMU runs the guest reads them.  A stopped VM's netdev reads at most
            # one frame, which it queues until the VM runs.
            fds = [n.sock.fileno() for n in links if n.sock is not None]
        else:
            fds = [fd for fd in (n.open() for n in links) if fd is not None]
        fds += [fd for n in shm for fd in n.open()]
        if self.overlay and not self.incoming and not os.path.exists(self.overlay):
            make_qcow2_overlay(self.overlay, self.image.rootfs, 'raw')
        for n in links:
            if n.got_rcvbuf is not None:
                self.log(n.describe())
        args = self.qemu_args()
        if self.netns:
            # `ip netns exec` execs QEMU in the same process: self.proc.pid is QEMU's
            args = ['ip', 'netns', 'exec', self.netns] + args
            self.log('QEMU runs in network namespace %s' % self.netns)
        with open(os.path.join(self.rundir, self.name + '-cmdline.txt'), 'w') as f:
            f.write(' '.join(shlex.quote(x) for x in args) + '\n')
        open(self.console_log, 'w').close()
        self._t0 = time.monotonic()
        self.log('starting QEMU (console log %s)' % self.console_log)
        qlog = open(self.qemu_log, 'wb')
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT,
                                         start_new_session=True, pass_fds=fds, env=env)
        finally:
            qlog.close()
            # QEMU has its own copy now; a VM that may migrate keeps the runner's for its twin
            if not self.overlay:
                for n in links:
                    n.close()
        _live.add(self.proc)
        self._lsock.settimeout(0.2)
        deadline = time.monotonic() + 30
        while True:
            try:
                self._sock, _ = self._lsock.accept()
                break
            except socket.timeout:
                if self.proc.poll() is not None:
                    raise VMError('%s: QEMU exited at start-up (status %s):\n%s'
                                  % (self.name, self.proc.returncode, self._tail(self.qemu_log, 20)))
                if time.monotonic() > deadline:
                    raise VMError('%s: QEMU did not connect to the agent socket' % self.name)
        self._sock.settimeout(None)
        self._alog = open(self.agent_log, 'a')
        threading.Thread(target=self._reader, name=self.name + '-agent', daemon=True).start()
        threading.Thread(target=self._tail_console, name=self.name + '-console', daemon=True).start()
        if self.incoming:
            # the guest is already up (in the source): no 'ready' from its agent; QMP is
            # what the migration needs
            # QEMU binds the socket (the file appears) before it listens on it: wait until a
            # connection is accepted, not just for the file (CI saw ECONNREFUSED in between).
            while not self._qmp_listening():
                if self.proc.poll() is not None:
                    raise VMError('%s: QEMU exited at start-up (status %s):\n%s'
                                  % (self.name, self.proc.returncode, self._tail(self.qemu_log, 20)))
                if time.monotonic() > deadline:
                    raise VMError('%s: no QMP socket' % self.name)
                time.sleep(0.05)
            self.boot_time = 0.0
            self._ready.set()

    def _qmp_listening(self):
        """Whether QEMU accepts connections on its QMP socket yet (the probe connection is
        closed at once; QEMU's monitor then waits for the next client)."""
        if not os.path.exists(self.qmp_sock):
            return False
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.qmp_sock)
            return True
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        finally:
            s.close()

    def wait_ready(self, timeout=180):
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.25):
            if self._dead:
                raise VMError('%s: died while booting (%s); console log %s:\n%s'
                              % (self.name, self._dead, self.console_log, self._tail(self.console_log, 30)))
            if time.monotonic() > deadline:
                raise VMError('%s: agent not ready after %ds; console log %s:\n%s'
                              % (self.name, timeout, self.console_log, self._tail(self.console_log, 30)))
        self._nice_vcpus()
        self._place_threads()
        return self.boot_time

    def _threads(self):
        """[(thread id, is a vCPU thread)] of the QEMU process (names from -name
        debug-threads=on: 'CPU n/TCG')."""
        task = '/proc/%d/task' % self.proc.pid
        out = []
        for tid in os.listdir(task):
            with open('%s/%s/comm' % (task, tid)) as f:
                out.append((int(tid), _is_vcpu_thread(f.read().strip())))
        return out

    def sched_stats(self):
        """The QEMU process's threads as the host scheduler saw them so far:
        {'vcpu_run', 'vcpu_wait', 'other_run', 'other_wait'} in seconds (on a CPU;
        runnable but waiting for one: /proc/<tid>/schedstat) and 'other_sleeps' (the
        voluntary context switches of the non-vCPU threads, the main loop above all:
        each is a wake-up later).  Zeros for a VM that is not running."""
        st = dict(vcpu_run=0.0, vcpu_wait=0.0, other_run=0.0, other_wait=0.0, other_sleeps=0)
        if self.proc is None:
            return st
        try:
            for tid, vcpu in self._threads():
                base = '/proc/%d/task/%d/' % (self.proc.pid, tid)
                with open(base + 'schedstat') as f:
                    run_ns, wait_ns = (int(x) for x in f.read().split()[:2])
                k = 'vcpu' if vcpu else 'other'
                st[k + '_run'] += run_ns / 1e9
                st[k + '_wait'] += wait_ns / 1e9
                if not vcpu:
                    with open(base + 'status') as f:
                        for ln in f:
                            if ln.startswith('voluntary_ctxt_switches:'):
                                st['other_sleeps'] += int(ln.split()[1])
        except (OSError, ValueError, IndexError):
            pass        # a thread that ended meanwhile: the others still count
        return st

    def _nice_vcpus(self):
        """Lower the vCPU threads' priority (VCPU_NICE) below QEMU's main loop, where the
        devices (qrnic's model, virtio-net) and the netdevs run: a frame that arrives while the
        guest spins in a polling loop then wakes the main loop at once instead of waiting for
        the vCPU's time slice."""
        if not VCPU_NICE or self.proc is None:
            return
        n = 0
        try:
            for tid, vcpu in self._threads():
                if vcpu:
                    os.setpriority(os.PRIO_PROCESS, tid, VCPU_NICE)
                    n += 1
        except OSError as e:
            self.log('cannot renice the vCPU threads: %s' % e)
            return
        self.log('%d vCPU thread(s) at nice %d (QRNIC_VCPU_NICE)' % (n, VCPU_NICE))

    def _place_threads(self):
        """Pin QEMU's threads to host CPUs as CPU_PLACEMENT says (place_cpus())."""
        if CPU_PLACEMENT == 'none' or self.proc is None:
            return
        try:
            vcpu_cpus, other_cpus = place_cpus(CPU_PLACEMENT, self.place_index, sorted(os.sched_getaffinity(0)))
            for tid, vcpu in self._threads():
                cpus = vcpu_cpus if vcpu else other_cpus
                if cpus:
                    os.sched_setaffinity(tid, cpus)
        except OSError as e:
            self.log('cannot place the QEMU threads (%s): %s' % (CPU_PLACEMENT, e))
            return
        self.log('threads placed (QRNIC_CPU_PLACEMENT=%s): vCPUs on CPUs %s, the others on %s'
                 % (CPU_PLACEMENT, _cpulist(vcpu_cpus), _cpulist(other_cpus)))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and not self._dead

    # -- QMP, migration, snapshots --
    def qmp(self, timeout=30.0):
        """A QMP session with this VM's QEMU (use as a context manager)."""
        return Qmp(self.qmp_sock, timeout=timeout, name=self.name)

    def qmp_cmd(self, command, timeout=30.0, **arguments):
        with self.qmp(timeout) as q:
            return q.execute(command, arguments, timeout=timeout)

    def qrnic_stats(self):
        """{QOM path: the device's counters (qom-get stats)} of every qrnic device."""
        with self.qmp() as q:
            return {p: q.cmd('qom-get', path=p, property='stats') for p in self.qrnic_paths()}

    def hmp(self, command_line, timeout=300.0):
        """A human monitor command through QMP; returns its output."""
        return self.qmp_cmd('human-monitor-command', timeout=timeout, **{'command-line': command_line})

    def savevm(self, tag, timeout=300.0):
        """savevm TAG (the VM stops while its state is written into the qcow2 overlay, then
        runs on); returns the seconds it took.  Needs overlay=..."""
        return self._snapshot_cmd('savevm', tag, timeout)

    def loadvm(self, tag, timeout=300.0):
        """loadvm TAG: the VM goes back to the snapshot and runs on from there."""
        return self._snapshot_cmd('loadvm', tag, timeout)

    def _snapshot_cmd(self, what, tag, timeout):
        if not self.overlay:
            raise VMError('%s: %s needs a qcow2 root disk (VM(overlay=True))' % (self.name, what))
        t0 = time.monotonic()
        out = self.hmp('%s %s' % (what, tag), timeout=timeout)
        dt = time.monotonic() - t0
        if out.strip():             # HMP prints only errors for these
            raise VMError('%s: %s %s: %s' % (self.name, what, tag, out.strip()))
        self.log('%s %s: %.2fs' % (what, tag, dt))
        return dt

    def twin(self, name=None):
        """A VM with this one's configuration (same QEMU arguments, the same root overlay and
        the same UDP link sockets) plus '-incoming defer', with its own QMP, agent and console:
        the target of migrate_to().  Not started."""
        if not self.overlay:
            raise VMError('%s: migration needs a shared root disk (VM(overlay=True))' % self.name)
        if name is None:
            i = 1
            while os.path.exists(os.path.join(self.rundir, '%s.m%d-cmdline.txt' % (self.guest_name, i))):
                i += 1
            name = '%s.m%d' % (self.guest_name, i)
        t = VM(name, qemu=self.qemu, image=self.image, rundir=self.rundir, nics=self.nics,
               append=self.append, mem=self.mem, smp=self.smp, cpu=self.cpu, progress=self.progress,
               qrnic_props=self.qrnic_props, overlay=self.overlay, extra_args=self.extra_args,
               incoming='defer', guest_name=self.guest_name, accel=self.accel, netns=self.netns)
        t.place_index = self.place_index
        return t

    def migrate_to(self, dst, uri=None, params=None, timeout=600.0):
        """Live-migrate this VM into dst (a started twin()): QMP migrate-incoming on dst, migrate
        on this one, wait until both report completed and dst runs.  Returns the source's final
        query-migrate (status, total-time, downtime, setup-time in ms, ram stats), also kept in
        dst.migration.  This QEMU is left stopped (postmigrate); quit_migrated() ends it."""
        uri = uri or 'unix:' + os.path.join(self.rundir, dst.name + '-mig.sock')
        params = dict({'max-bandwidth': 1 << 30}, **(params or {}))
        with dst.qmp() as qd, self.qmp() as qs:
            qd.cmd('migrate-incoming', uri=uri)
            qs.cmd('migrate-set-parameters', **params)
            self.log('migrating to %s (%s)' % (dst.name, uri))
            t0 = time.monotonic()
            qs.cmd('migrate', uri=uri)
            deadline = t0 + timeout
            while True:
                st = qs.cmd('query-migrate')
                if st.get('status') in ('completed', 'failed', 'cancelled'):
                    break
                if time.monotonic() > deadline:
                    raise VMError('%s: migration to %s did not end within %ss: %s' % (self.name, dst.name, timeout, st))
                time.sleep(0.05)
            if st['status'] != 'completed':
                raise VMError('%s: migration to %s %s: %s\n%s' % (self.name, dst.name, st['status'],
                              st.get('error-desc', st), self._tail(dst.qemu_log, 10)))
            while True:
                dst_st = qd.cmd('query-migrate')
                run = qd.cmd('query-status')
                if dst_st.get('status') == 'failed' or dst.proc.poll() is not None:
                    raise VMError('%s: incoming migration failed: %s\n%s'
                                  % (dst.name, dst_st, self._tail(dst.qemu_log, 10)))
                if run.get('running'):
                    break
                if time.monotonic() > deadline:
                    raise VMError('%s: not running after the migration: %s %s' % (dst.name, dst_st, run))
                time.sleep(0.05)
        st['wall-time'] = time.monotonic() - t0
        dst.migration = st
        self.log('migrated to %s: %s, total %s ms, downtime %s ms, %.1f MiB transferred'
                 % (dst.name, st['status'], st.get('total-time'), st.get('downtime'),
                    st.get('ram', {}).get('transferred', 0) / 1048576.0))
        return st

    def quit_migrated(self, why='migrated'):
        """End this (migrated, stopped) QEMU with QMP quit: no poweroff through the agent,
        whose guest runs elsewhere now."""
        self._dead = why
        if self.proc is not None and self.proc.poll() is None:
            try:
                with Qmp(self.qmp_sock, timeout=5, name=self.name) as q:
                    q.quit()
                self.proc.wait(10)
            except (QmpError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._stop_tail.set()
        _live.discard(self.proc)
        for s in (self._sock, self._lsock):
            try:
                s and s.close()
            except OSError:
                pass
        self.log('stopped: %s' % why)

    def shutdown(self, timeout=30):
        """Power off from inside; then QMP quit; then SIGKILL.  Returns how it ended."""
        if self.proc is None:
            return 'not started'
        how = None
        if self.proc.poll() is None and not self._dead:
            self.save_dmesg()
            try:
                self.request({'op': 'poweroff'}, timeout=10)
                self.proc.wait(timeout)
                how = 'poweroff'
            except (VMError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            try:
                with Qmp(self.qmp_sock, timeout=5, name=self.name) as q:
                    q.quit()
                self.proc.wait(10)
                how = how or 'qmp quit'
            except (QmpError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            how = 'killed'
        how = how or 'exited (status %s)' % self.proc.returncode
        self._stop_tail.set()
        _live.discard(self.proc)
        for s in (self._sock, self._lsock):
            try:
                s and s.close()
            except OSError:
                pass
        self.log('stopped: %s' % how)
        return how

    def save_dmesg(self, path=None):
        """Write the guest's whole kernel log to <rundir>/<vm>-dmesg.log (the console log has only
        what was printed after boot at every level, and warnings and worse during boot)."""
        path = path or os.path.join(self.rundir, self.name + '-dmesg.log')
        try:
            recs = self.kmsg()
        except VMError:
            return None
        with open(path, 'w') as f:
            for seq, lvl, usec, text in recs:
                f.write('[%5d.%06d] <%d> %s\n' % (usec // 1000000, usec % 1000000, lvl, text))
        return path

    # -- agent I/O --
    def _reader(self):
        f = self._sock.makefile('rb')
        try:
            for line in f:
                try:
                    msg = json.loads(line)
                except ValueError:
                    self._alog.write('<< (bad line) %r\n' % line[:200])
                    continue
                if msg.get('event') == 'ready':
                    self.boot_time = time.monotonic() - self._t0
                    self.ready_info = msg
                    self._alog.write('<< ready %s\n' % json.dumps(msg))
                    self._alog.flush()
                    self.log('agent ready (guest uptime %.1fs, %.1fs since QEMU start)'
                             % (msg.get('uptime', 0), self.boot_time))
                    self._ready.set()
                    continue
                with self._plock:
                    slot = self._pending.get(msg.get('id'))
                if slot is None:
                    self._alog.write('<< (unexpected) %s\n' % line[:500])
                    continue
                slot[1] = msg
                slot[0].set()
        except (OSError, ValueError) as e:
            self._dead = 'agent connection error: %s' % e
        else:
            self._dead = 'agent connection closed (QEMU exited?)'
        with self._plock:
            for slot in self._pending.values():
                slot[0].set()

    def request(self, req, timeout):
        """Send one request, wait for its reply; raises AgentError on protocol failure."""
        if self._dead:
            raise AgentError('%s: %s' % (self.name, self._dead))
        with self._plock:
            rid = self._next_id
            self._next_id += 1
            slot = [threading.Event(), None]
            self._pending[rid] = slot
        req = dict(req, id=rid)
        data = (json.dumps(req) + '\n').encode()
        try:
            with self._wlock:
                self._sock.sendall(data)
            if self._alog:
                self._alog.write('>> %s\n' % (json.dumps(req)[:1000]))
                self._alog.flush()
            if not slot[0].wait(timeout):
                raise AgentError('%s: no reply to %s within %ss (guest hung? console log %s)'
                                 % (self.name, req.get('op'), timeout, self.console_log))
        finally:
            with self._plock:
                self._pending.pop(rid, None)
        rep = slot[1]
        if rep is None:
            raise AgentError('%s: %s (during %s %r); console log tail:\n%s' % (
                self.name, self._dead, req.get('op'), req.get('cmd', ''), self._tail(self.console_log, 20)))
        if self._alog:
            self._alog.write('<< %s\n' % json.dumps(rep)[:2000])
            self._alog.flush()
        if not rep.get('ok'):
            raise AgentError('%s: agent error for %s: %s' % (self.name, req.get('op'), rep.get('error')))
        return rep

    # -- commands --
    def run(self, cmd, timeout=60, check=True, env=None, merge=False, stdin=None):
        """Run CMD under /bin/sh -c in the guest; returns a Result (str = stdout).
        check=True raises CommandFailed on a non-zero status or timeout."""
        req = {'op': 'run', 'cmd': cmd, 'timeout': timeout, 'env': env or {}, 'merge': merge}
        if stdin is not None:
            req['stdin'] = stdin
        rep = self.request(req, timeout=timeout + REPLY_GRACE)
        res = Result(rep, cmd, self.name, timeout)
        return res.check() if check else res

    def spawn(self, cmd, env=None, merge=False):
        """Start CMD in the background; returns a Job (wait/kill/stop)."""
        rep = self.request({'op': 'spawn', 'cmd': cmd, 'env': env or {}, 'merge': merge}, timeout=REPLY_GRACE)
        return Job(self, rep['job'], rep['pid'], cmd)

    run_bg = spawn

    def put(self, path, data, mode=None):
        if isinstance(data, str):
            data = data.encode()
        self.request({'op': 'put', 'path': path, 'data': base64.b64encode(data).decode(), 'mode': mode},
                     timeout=REPLY_GRACE)

    def get(self, path):
        return base64.b64decode(self.request({'op': 'get', 'path': path}, timeout=REPLY_GRACE)['data'])

    def kmsg(self, since=-1, limit=None):
        """Kernel log records after sequence number since: [(seq, level, usec, text)]
        (limit=N: only the last N)."""
        rep = self.request({'op': 'kmsg', 'since': since, 'limit': limit}, timeout=REPLY_GRACE)
        return [tuple(r) for r in rep['records']]

    def kmsg_last_seq(self):
        """Sequence number of the newest kernel log record (-1 if none)."""
        return self.request({'op': 'kmsg', 'since': -1, 'limit': 0}, timeout=REPLY_GRACE)['last_seq']

    def ping(self, timeout=REPLY_GRACE):
        return self.request({'op': 'ping'}, timeout=timeout)

    # -- console --
    @staticmethod
    def _tail(path, n):
        try:
            with open(path, 'rb') as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 65536))
                lines = f.read().decode('utf-8', 'replace').splitlines()
            return '\n'.join('    ' + ln for ln in lines[-n:])
        except OSError:
            return '    (no %s)' % path

    def console(self):
        with open(self.console_log, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def _tail_console(self):
        """Echo boot milestones from the serial log as progress messages."""
        marks = ('qrnic-initramfs:', 'qrnic-init:', 'qrnic-netup:', 'QRNIC-INITRAMFS-FAIL', 'Kernel panic', 'BUG:',
                 'Oops', 'WARNING:', 'Call Trace', 'qrnic-agent:')
        pos, buf, seen_linux = 0, b'', False
        while not self._stop_tail.is_set():
            try:
                with open(self.console_log, 'rb') as f:
                    f.seek(pos)
                    chunk = f.read()
            except OSError:
                chunk = b''
            if chunk:
                pos += len(chunk)
                buf += chunk
                *lines, buf = buf.split(b'\n')
                for ln in lines:
                    s = ln.decode('utf-8', 'replace').rstrip('\r')
                    text = s.split('] ', 1)[1] if s.startswith('[') and '] ' in s else s
                    if not seen_linux and text.startswith('Linux version'):
                        seen_linux = True
                        self.log('kernel started')
                    elif any(m in text for m in marks) and (not self._ready.is_set() or not text.startswith('qrnic-')):
                        self.log(text.strip())
            else:
                if self.proc is not None and self.proc.poll() is not None:
                    if not self._dead:
                        self._dead = 'QEMU exited (status %s)' % self.proc.returncode
                    with self._plock:
                        for slot in self._pending.values():
                            slot[0].set()
                    if self._stop_tail.wait(0.5):
                        break
                    continue
                time.sleep(0.2)

    # -- guest facts --
    def rdma_endpoints(self):
        """[Endpoint] for every RDMA device in the guest, in PCI order of their netdevs."""
        script = r'''
for d in /sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  dev=$(basename "$d"); pci=$(basename "$(readlink -f "$d/device")")
  nd=-
  for n in /sys/class/net/*; do
    [ -e "$n/device" ] && [ "$(readlink -f "$n/device")" = "$(readlink -f "$d/device")" ] && nd=$(basename "$n")
  done
  if [ "$nd" = - ]; then
    nd=$(rdma link show "$dev/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p'); [ -n "$nd" ] || nd=-
  fi
  ip=-; [ "$nd" != - ] && ip=$(ip -4 -o addr show dev "$nd" | awk '{print $4}' | head -n1 | cut -d/ -f1)
  gid=-
  for g in "$d"/ports/1/gids/*; do
    i=$(basename "$g"); t=$(cat "$d/ports/1/gid_attrs/types/$i" 2>/dev/null)
    [ "$t" = "RoCE v2" ] || continue
    v=$(cat "$g" 2>/dev/null)
    case "$v" in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
    h=${v#0000:0000:0000:0000:0000:ffff:}
    a=$(printf '%d.%d.%d.%d' 0x$(echo $h | cut -c1-2) 0x$(echo $h | cut -c3-4) 0x$(echo $h | cut -c6-7) 0x$(echo $h | cut -c8-9))
    [ "$a" = "$ip" ] && { gid=$i; break; }
  done
  echo "$pci $dev $nd ${ip:--} $gid"
done | sort
'''
        eps = []
        for ln in self.run(script, timeout=60).splitlines():
            f = ln.split()
            if len(f) == 5:
                eps.append(Endpoint(self, f[1], None if f[2] == '-' else f[2], None if f[3] == '-' else f[3],
                                    None if f[4] == '-' else int(f[4])))
        return eps


# ---- topologies ----------------------------------------------------------------------
class Topology:
    """A set of VMs and the cables between their NICs.

    name       'T1' (default), 'T2', 'T3', or 'S4' (also S3..S16): that many VMs, one qrnic port
               each, on one qrnic-switch (the simulator's switch on UDP ports, a child of the
               runner started first; docs/congestion.md "VM topologies")
    switch_args  star only: extra qrnic-switch arguments (e.g. ['--rate', '200M', '--kmax', '0'])
    link       the cable between the qrnic ports.  T1: 'hub' (default, -netdev hubport), 'dgram'
               (UDP pair on 127.0.0.1) or 'unix'.  T2/T3: 'dgram' (default), 'unix' or 'shm'
               (env QRNIC_LINK).  'unix': a -netdev dgram on each end of a unix-domain datagram
               socketpair (UnixPair); 'shm' (an experiment, ShmWire): shared-memory rings under
               each QEMU's -netdev dgram (bench/shm_wire.so preloaded); both hosts='local' only.
               Star topologies: 'dgram' only.
    mem, smp   per VM (MiB, vCPUs); cpu: QEMU -cpu model (default: QEMU's)
    append     extra kernel command line words (all VMs); env QRNIC_GUEST_APPEND too
    build      run scripts/build-qemu.sh and scripts/guest-image.sh first (cheap when up to date)
    require_driver  raise PrereqError before booting if the image lacks qrnic.ko/the provider
    ips        addresses, one per qrnic port in topology order (default 10.0.0.1/24, 10.0.0.2/24)
    accel      QEMU -accel value (default 'tcg'; e.g. 'tcg,tb-size=64')
    extra_args appended to every VM's QEMU command line
    hosts      'local' (default; env QRNIC_HOSTS): every QEMU in our network namespace, dgram
               links on 127.0.0.1.  'netns': VM i's QEMU in a network namespace of its own that
               stands in for a host machine (address 10.77.<n>.<i+1>, a veth to a bridge in a
               hub namespace; hosts.py), its dgram link bound to that address and connected
               to the peer host's; the namespaces go at stop().  Needs root and `ip`.
               'netns-vxlan' (T2/T3): the same hosts, each VM on a tap (-netdev tap) in a
               bridge with a VXLAN device to the other host (hosts.py).
    """

    def __init__(self, name='T1', link=None, mem=1024, smp=1, cpu=None, append=(), build=False,
                 require_driver=False, progress=True, rundir=None, ips=None, boot_timeout=300,
                 qrnic_props='', image=None, qemu=None, overlay=False, extra_args=(), accel='tcg',
                 hosts=None, switch_args=()):
        nstar = star_size(name)
        if name not in TOPOLOGIES and not nstar:
            raise ValueError('unknown topology %r (choose from %s, or S%d..S%d)'
                             % (name, ', '.join(TOPOLOGIES), STAR_MIN, STAR_MAX))
        self.switch = None
        self.switch_args = [str(a) for a in switch_args]
        self.switch_final = None    # the switch's counters when it stopped (JSON)
        hosts = hosts or _env_choice('QRNIC_HOSTS', 'local', HOSTS)
        if hosts not in HOSTS:
            raise ValueError('unknown hosts %r (choose from %s)' % (hosts, ', '.join(HOSTS)))
        if nstar and hosts != 'local':
            raise ValueError("topology %s: its switch runs on 127.0.0.1; hosts=%r is for T1/T2/T3"
                             % (name, hosts))
        self.hosts = hosts
        if link is None:
            link = 'hub' if name == 'T1' else (_env_choice('QRNIC_LINK', 'dgram', LINKS[1:]) if not nstar
                                               else 'dgram')
        if link not in (LINKS[:3] if name == 'T1' else LINKS[1:] if not nstar else ('dgram',)):
            raise ValueError('topology %s: link %r is not one of its cables (T1: hub, dgram, unix; '
                             'T2/T3: dgram, unix, shm; star: dgram)' % (name, link))
        if link in ('unix', 'shm') and hosts != 'local':
            raise ValueError("link %r joins QEMUs of one host: hosts=%r needs 'dgram'" % (link, hosts))
        # the namespaces are made by start(), their names and addresses are known now
        if hosts == 'netns-vxlan' and name == 'T1':
            raise ValueError("hosts='netns-vxlan' needs two VMs (T2 or T3)")
        self.netns_hosts = (_hosts.NetnsHosts(1 if name == 'T1' else 2, vxlan=hosts == 'netns-vxlan')
                            if hosts != 'local' else None)
        if self.netns_hosts:
            try:
                _hosts.check_prereqs()
            except _hosts.HostsError as e:
                raise PrereqError(str(e))
        self.name, self.link = name, link
        self.progress = progress
        self.boot_timeout = boot_timeout
        self.qemu = qemu or find_qemu(build=build)
        check_qemu_devices(self.qemu, ('qrnic', 'virtio-blk-pci', 'virtio-serial-pci', 'virtserialport')
                           + (('virtio-net-pci',) if name == 'T3' else ()))
        self.image = image if isinstance(image, Image) else (Image(image) if image else find_image(build=build))
        if require_driver:
            self.image.require_driver()
        self.rundir = rundir or new_run_dir()
        ips = list(ips or ['10.0.0.%d/24' % (i + 1) for i in range(max(2, nstar or 0))])
        self.ips = ips
        self.vms = []
        kw = dict(qemu=self.qemu, image=self.image, rundir=self.rundir, mem=mem, smp=smp, cpu=cpu,
                  progress=progress, qrnic_props=qrnic_props, overlay=overlay, extra_args=extra_args,
                  accel=accel)
        nh = self.netns_hosts

        def dgram(local, remote, h, rh):
            # h, rh: the host numbers of this end and the other (hosts='netns')
            if nh is None:
                return _dgram(local, remote)
            if nh.vxlan:
                return TapNet(nh.tap(h))
            return DgramNet(local, remote, host=nh.addr(h), remote_host=nh.addr(rh), netns=nh.ns(h))

        def netns(h):
            return nh.ns(h) if nh else None
        if name == 'T1':
            if link == 'hub':
                nets = ['hubport,hubid=0', 'hubport,hubid=0']
            elif link == 'dgram':
                p0, p1 = free_udp_ports(2)
                nets = [dgram(p0, p1, 0, 0), dgram(p1, p0, 0, 0)]
            else:
                nets = list(unix_link())
            nics = [('qrnic', nets[0], _mac(0, 0)), ('qrnic', nets[1], _mac(0, 1))]
            self.vms.append(VM('vm0', nics=nics, append=list(append) + ['qrnicvm.ip=' + ','.join(ips[:2])],
                               netns=netns(0), **kw))
        elif nstar:
            if len(ips) < nstar:
                raise ValueError('topology %s needs %d addresses, got %d' % (name, nstar, len(ips)))
            ports = free_udp_ports(2 * nstar)
            self.switch = SwitchProc(self.rundir, [(ports[2 * i + 1], ports[2 * i]) for i in range(nstar)],
                                     self.switch_args)
            for i in range(nstar):
                self.vms.append(VM('vm%d' % i, nics=[('qrnic', _dgram(ports[2 * i], ports[2 * i + 1]), _mac(i, 0))],
                                   append=list(append) + ['qrnicvm.ip=' + ips[i]], **kw))
        else:
            if link == 'unix':
                net0, net1 = unix_link()
            elif link == 'shm':
                w = ShmWire()
                net0, net1 = ShmNet(w, 0), ShmNet(w, 1)
            else:
                p0, p1 = free_udp_ports(2)
                net0, net1 = dgram(p0, p1, 0, 1), dgram(p1, p0, 1, 0)
            self.vms.append(VM('vm0', nics=[('qrnic', net0, _mac(0, 0))],
                               append=list(append) + ['qrnicvm.ip=' + ips[0]], netns=netns(0), **kw))
            if name == 'T2':
                self.vms.append(VM('vm1', nics=[('qrnic', net1, _mac(1, 0))],
                                   append=list(append) + ['qrnicvm.ip=' + ips[1]], netns=netns(1), **kw))
            else:
                self.vms.append(VM('vm1', nics=[('virtio-net-pci', net1, _mac(1, 0))],
                                   append=list(append) + ['qrnicvm.vnet_ip=' + ips[1], 'qrnicvm.rxe=1'],
                                   netns=netns(1), **kw))
        self._eps = None

    def vm(self, i):
        return self.vms[i]

    def start(self):
        if self.progress:
            print('qrnic_vm: topology %s, run dir %s, image %s' % (self.name, self.rundir, self.image.path),
                  file=sys.stderr, flush=True)
        for i, v in enumerate(self.vms):
            v.place_index = i
        try:
            if self.netns_hosts and not self.netns_hosts.created:
                try:
                    self.netns_hosts.create()
                except _hosts.HostsError as e:
                    raise VMError('cannot make the hosts: %s' % e)
                if self.progress:
                    nh = self.netns_hosts
                    print('qrnic_vm: hosts %s' % ', '.join('%s (%s)' % (nh.ns(i), nh.addr(i)) for i in range(nh.n)),
                          file=sys.stderr, flush=True)
            if self.switch:
                self.switch.start()
            for v in self.vms:
                v.start()
            for v in self.vms:
                v.wait_ready(self.boot_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        threads = [threading.Thread(target=v.shutdown) for v in self.vms if v.proc is not None]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.netns_hosts:
            left = self.netns_hosts.destroy()
            if left:
                print('qrnic_vm: could not delete the namespaces %s' % ', '.join(left), file=sys.stderr, flush=True)
        if self.switch:
            self.switch_final = self.switch.stop()
        for w in {id(n.wire): n.wire for v in self.vms for _m, n, _mac in v.nics if isinstance(n, ShmNet)}.values():
            if w.memfd >= 0:
                w.close()

    def switch_stats(self):
        """Star topologies: the switch's counters now (its JSON, docs/congestion.md)."""
        if not self.switch:
            raise VMError('topology %s has no switch' % self.name)
        return self.switch.stats()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def migrate(self, i, jobs=(), **kw):
        """Live-migrate VM number i into a new QEMU (VM.twin, VM.migrate_to) and make the
        topology, its endpoints and the given Jobs use the new VM; the old QEMU quits.
        Returns the new VM (its .migration: query-migrate's figures).  The topology needs
        overlay=True.  Keep the agent idle meanwhile (no command of this VM in flight)."""
        src = self.vms[i]
        dst = src.twin()
        dst.start()
        try:
            dst.wait_ready()
            src.migrate_to(dst, **kw)
        except BaseException:
            dst.quit_migrated('migration failed')
            raise
        src.quit_migrated('migrated to %s' % dst.name)
        self.vms[i] = dst
        for e in self._eps or ():
            if e.vm is src:
                e.vm = dst
        for j in jobs:
            if j.vm is src:
                j.vm = dst
        return dst

    def endpoints(self, refresh=False):
        """All qrnic/rxe RDMA endpoints, VM order then PCI order."""
        if self._eps is None or refresh:
            self._eps = [e for v in self.vms for e in v.rdma_endpoints()]
        return self._eps

    def pair(self, refresh=False):
        """(server, client) Endpoints: T1 = port 0 / port 1 of vm0; T2/T3 = vm0 / vm1.
        Raises VMError when there are not two endpoints with an IPv4 address and RoCEv2 GID."""
        eps = self.endpoints(refresh)
        usable = [e for e in eps if e.ip and e.gid is not None]
        if len(usable) < 2:
            raise VMError('topology %s needs two RDMA endpoints with an IPv4 address and a RoCEv2 GID; found: %s'
                          % (self.name, eps or 'no RDMA devices'))
        if self.name == 'T1':
            return usable[0], usable[1]
        srv = next((e for e in usable if e.vm is self.vms[0]), None)
        cli = next((e for e in usable if e.vm is self.vms[1]), None)
        if not srv or not cli:
            raise VMError('topology %s: need an endpoint in each VM; found %s' % (self.name, usable))
        return srv, cli


# Receive buffer of each end of a dgram link.  QEMU sets none on its dgram socket, so it would
# get the host's net.core.rmem_default (212992 bytes on Debian, ~50 frames of 4 KiB): a burst of
# RoCE packets overflows it while the receiving QEMU runs its guest, and the host drops frames
# (docs/interop.md section 6).  RoCE assumes a lossless fabric, so the runner makes the UDP socket
# itself, with this buffer (SO_RCVBUFFORCE as root, else SO_RCVBUF up to net.core.rmem_max), and
# hands it to QEMU as local.type=fd.  QRNIC_LINK_RCVBUF=0: let QEMU make a plain socket (the lossy
# host default).
def _env_int(name, default, lo, hi, what):
    v = os.environ.get(name, '').strip()
    if not v:
        return default
    try:
        n = int(v, 0)
    except ValueError:
        n = None
    if n is None or not lo <= n <= hi:
        raise ValueError('%s=%r: must be %s, %d..%d' % (name, v, what, lo, hi))
    return n


LINK_RCVBUF = _env_int('QRNIC_LINK_RCVBUF', 8 << 20, 0, 1 << 30, 'a receive buffer size in bytes (0: QEMU\'s socket)')
# Nice value of the vCPU threads (VM._nice_vcpus); 0 leaves them as QEMU made them.
VCPU_NICE = _env_int('QRNIC_VCPU_NICE', 0, 0, 19, 'a nice value')

# Where QEMU's threads run (VM._place_threads, docs/guest.md "Host CPU placement"):
#   none    the host scheduler decides (default)
#   split   every VM's vCPU threads on the first half of the CPUs the runner may use, every
#           other QEMU thread (main loop: devices, netdevs; I/O) on the second half
#   spread  VM i's vCPU threads on CPU i (mod the CPU count); the other threads float
# A TCG vCPU that polls a CQ is always runnable; with no placement the scheduler tends to put
# the QEMU main loop that the vCPU wakes (doorbell) on the vCPU's own CPU, and the two then
# take turns on one CPU while the other idles (docs/interop.md section 6 has the figures).
CPU_PLACEMENTS = ('none', 'split', 'spread')


def _env_choice(name, default, choices):
    v = os.environ.get(name, '').strip()
    if not v:
        return default
    if v not in choices:
        raise ValueError('%s=%r: must be one of %s' % (name, v, ', '.join(choices)))
    return v


CPU_PLACEMENT = _env_choice('QRNIC_CPU_PLACEMENT', 'none', CPU_PLACEMENTS)


def _is_vcpu_thread(comm):
    return comm.startswith('CPU ') and comm.endswith('/TCG')


def _cpulist(cpus):
    return ','.join(str(c) for c in cpus) if cpus else 'any'


def place_cpus(placement, vm_index, cpus):
    """(CPUs for the vCPU threads, CPUs for the other threads) of VM number vm_index under a
    placement, given the host CPUs available (sorted); an empty list = leave as is.  With a
    single CPU there is nothing to place."""
    if placement not in CPU_PLACEMENTS:
        raise ValueError('unknown CPU placement %r (choose from %s)' % (placement, ', '.join(CPU_PLACEMENTS)))
    if placement == 'none' or len(cpus) < 2:
        return [], []
    if placement == 'split':
        half = len(cpus) // 2
        return list(cpus[:half]), list(cpus[half:])
    return [cpus[vm_index % len(cpus)]], []


SO_RCVBUFFORCE = getattr(socket, 'SO_RCVBUFFORCE', 33)
SO_SNDBUFFORCE = getattr(socket, 'SO_SNDBUFFORCE', 32)


class DgramNet:
    """One end of a -netdev dgram link: str() is the -netdev argument.  local/remote: UDP
    ports; host/remote_host: the IPv4 addresses of the two ends (127.0.0.1 unless the VMs are
    on "hosts", Topology(hosts='netns')); netns: the network namespace to make the socket in."""

    def __init__(self, local, remote, rcvbuf=None, host='127.0.0.1', remote_host='127.0.0.1', netns=None):
        self.local, self.remote = local, remote
        self.host, self.remote_host, self.netns = host, remote_host, netns
        self.rcvbuf = LINK_RCVBUF if rcvbuf is None else rcvbuf
        self.sock = None
        self.got_rcvbuf = None

    def open(self):
        """Create the connected UDP socket QEMU will use (no-op with rcvbuf 0)."""
        self.close()
        if not self.rcvbuf:
            return None
        try:
            # made inside the VM's namespace when it has one (hosts.run_in_netns)
            s = _hosts.udp_socket(self.netns, (self.host, self.local), (self.remote_host, self.remote),
                                  self.rcvbuf)
        except (OSError, _hosts.HostsError) as e:
            raise VMError('dgram link %s:%d -> %s:%d%s: %s' % (self.host, self.local, self.remote_host,
                          self.remote, ' (namespace %s)' % self.netns if self.netns else '', e))
        self.got_rcvbuf = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        self.sock = s
        return s.fileno()

    def describe(self):
        return ('dgram link %s:%d -> %s:%d, socket receive buffer %d bytes'
                % (self.host, self.local, self.remote_host, self.remote, self.got_rcvbuf))

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __str__(self):
        if self.sock is not None:
            return 'dgram,local.type=fd,local.str=%d' % self.sock.fileno()
        return ('dgram,local.type=inet,local.host=%s,local.port=%d,'
                'remote.type=inet,remote.host=%s,remote.port=%d' % (self.host, self.local, self.remote_host,
                                                                     self.remote))


class UnixPair:
    """A unix-domain datagram socketpair: the two ends of one link='unix' cable.  Made when the
    first end is opened; each end is handed to one QEMU once (a QEMU that stops takes its end
    with it: a unix link cannot be re-plugged, unlike a UDP port)."""

    def __init__(self, sndbuf):
        self.sndbuf = sndbuf
        self.socks = None
        self.taken = [False, False]

    def take(self, end):
        if self.taken[end]:
            raise VMError('unix link: end %d was handed to a QEMU already (it cannot be reopened)' % end)
        if self.socks is None:
            self.socks = list(socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
            for s in self.socks:
                if self.sndbuf:
                    # A datagram stays charged to its sender's buffer until the peer reads it;
                    # when that is full, send() says EAGAIN and QEMU's dgram netdev queues the
                    # frame and waits for the socket to drain: nothing is dropped.
                    try:
                        s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, self.sndbuf)
                    except OSError:
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
        self.taken[end] = True
        s, self.socks[end] = self.socks[end], None
        return s


class UnixNet:
    """One end of a link='unix' cable: a -netdev dgram on one end of a unix-domain datagram
    socketpair (UnixPair) the runner made and hands to QEMU as local.type=fd.  The frames cross
    the host kernel as on a UDP link, but without its IP and UDP layers, and a full peer makes the
    sender wait instead of dropping (docs/guest.md, "Topologies")."""

    def __init__(self, pair, end):
        self.pair, self.end = pair, end
        self.sock = None
        self.got_rcvbuf = None

    def open(self):
        s = self.pair.take(self.end)
        self.close()
        self.sock = s
        self.got_rcvbuf = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        return self.sock.fileno()

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def describe(self):
        return 'unix link end %d, socket send buffer %d bytes' % (self.end, self.got_rcvbuf)

    def __str__(self):
        if self.sock is None:
            raise VMError('unix link end %d is not open' % self.end)
        return 'dgram,local.type=fd,local.str=%d' % self.sock.fileno()


class ShmWire:
    """link='shm' (an experiment, issue 18): the memory file and the two eventfds of a wire of
    shared-memory rings that bench/shm_wire.c, preloaded into both QEMUs, puts under their
    -netdev dgram (docs/storage.md, "A wire in shared memory").  One per cable."""

    SIZE = 32 << 20     # >= sizeof(struct shm) in bench/shm_wire.c (checked there)

    def __init__(self):
        self.memfd = os.memfd_create('qrnic-shm-wire')
        os.ftruncate(self.memfd, self.SIZE)
        self.efd = [os.eventfd(0, os.EFD_NONBLOCK), os.eventfd(0, os.EFD_NONBLOCK)]

    def close(self):
        """The runner's copies (each QEMU has its own); at Topology.stop()."""
        for fd in [self.memfd] + self.efd:
            os.close(fd)
        self.memfd, self.efd = -1, [-1, -1]

    @staticmethod
    def library():
        bdir = os.environ.get('QRNIC_BUILD_DIR') or os.path.join(REPO, 'build')
        so = os.path.join(bdir if os.path.isabs(bdir) else os.path.join(REPO, bdir), 'bench', 'shm_wire.so')
        if not os.path.exists(so):
            raise VMError("link 'shm' needs %s (ninja -C build)" % so)
        return so


class ShmNet:
    """One end of a link='shm' cable: QEMU's -netdev dgram on this end's eventfd, with
    bench/shm_wire.so preloaded to answer its send() and recv() from the rings."""

    def __init__(self, wire, end):
        self.wire, self.end = wire, end

    def open(self):
        """The fds QEMU inherits (the runner keeps its copies until Topology.stop())."""
        w = self.wire
        return [w.memfd, w.efd[self.end], w.efd[1 - self.end]]

    def env(self):
        w = self.wire
        pre = os.environ.get('LD_PRELOAD', '')
        return {'LD_PRELOAD': (pre + ' ' if pre else '') + ShmWire.library(),
                'QRNIC_SHM_WIRE': '%d,%d,%d,%d,%d' % (w.efd[self.end], w.memfd, w.efd[self.end],
                                                       w.efd[1 - self.end], self.end)}

    def __str__(self):
        return 'dgram,local.type=fd,local.str=%d' % self.wire.efd[self.end]


def unix_link():
    """The two ends (UnixNet) of one link='unix' cable."""
    pair = UnixPair(LINK_RCVBUF)
    return UnixNet(pair, 0), UnixNet(pair, 1)


class TapNet:
    """A -netdev tap on an existing tap device (hosts='netns-vxlan': QEMU opens it in its
    host's namespace)."""

    def __init__(self, ifname):
        self.ifname = ifname

    def __str__(self):
        return 'tap,ifname=%s,script=no,downscript=no' % self.ifname


class SwitchProc:
    """qrnic-switch as a child of the runner: ports [(switch UDP port, VM UDP port)] on
    127.0.0.1; log <rundir>/switch.log, counters <rundir>/switch-stats.json (every second and
    on stats()) and <rundir>/switch-final.json (at stop()).  The binary: $QRNIC_SWITCH, else
    scripts/qrnic-switch (builds it in $QRNIC_BUILD_DIR or build/)."""

    def __init__(self, rundir, ports, args=()):
        self.rundir, self.ports, self.args = rundir, list(ports), list(args)
        self.log = os.path.join(rundir, 'switch.log')
        self.stats_path = os.path.join(rundir, 'switch-stats.json')
        self.final_path = os.path.join(rundir, 'switch-final.json')
        self.proc = None

    def cmdline(self):
        exe = os.environ.get('QRNIC_SWITCH') or os.path.join(REPO, 'scripts', 'qrnic-switch')
        a = [exe]
        for sp, vp in self.ports:
            a += ['--port', '127.0.0.1:%d=127.0.0.1:%d' % (sp, vp)]
        return a + ['--stats', self.stats_path, '--stats-interval', '1s'] + self.args

    def start(self, timeout=300):
        args = self.cmdline()
        with open(os.path.join(self.rundir, 'switch-cmdline.txt'), 'w') as f:
            f.write(' '.join(shlex.quote(x) for x in args) + '\n')
        with open(self.log, 'wb') as lg, open(self.final_path, 'wb') as out:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=lg,
                                         start_new_session=True)
        _live.add(self.proc)
        deadline = time.monotonic() + timeout     # the wrapper may build it first
        while True:
            with open(self.log, errors='replace') as f:
                text = f.read()
            if 'qrnic-switch: ready' in text:
                return
            if self.proc.poll() is not None:
                raise VMError('qrnic-switch exited at start-up (status %s):\n%s'
                              % (self.proc.returncode, text[-3000:]))
            if time.monotonic() > deadline:
                raise VMError('qrnic-switch: not ready after %d s' % timeout)
            time.sleep(0.1)

    def _read(self, path):
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def stats(self, timeout=10):
        """The counters now: SIGUSR1, then the stats file once it is newer."""
        if self.proc is None or self.proc.poll() is not None:
            return self._read(self.final_path)
        old = self._read(self.stats_path)
        t0 = old['uptime_ns'] if old else -1
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            j = self._read(self.stats_path)
            if j and j['uptime_ns'] > t0:
                return j
            time.sleep(0.05)
        raise VMError('qrnic-switch: no counters after SIGUSR1')

    def stop(self, timeout=20):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        _live.discard(self.proc)
        return self._read(self.final_path)


def _dgram(local, remote):
    return DgramNet(local, remote)


def _mac(vm, port):
    return '52:54:00:7a:%02x:%02x' % (vm, port)
