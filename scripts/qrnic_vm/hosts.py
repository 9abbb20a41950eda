# SPDX-License-Identifier: GPL-2.0-or-later
"""Network namespaces that stand in for host machines (Topology(hosts='netns')).

Each "host" is a network namespace qrnic-<pid>-<n>-h<i> with one interface, eth0, address
10.77.<n % 250 + 1>.<i + 1>/24 and MTU LINK_MTU; eth0 is one end of a veth pair whose other
end, p<i>, is a port of the bridge br0 in the hub namespace qrnic-<pid>-<n>-hub (the "switch"
between the hosts).  <pid> is the runner's process id and <n> counts the sets it made: a set
whose process is gone is removed by the next NetnsHosts.create() (sweep_stale()).

A VM's QEMU runs in its host's namespace (`ip netns exec`), and the UDP socket of its
-netdev dgram link is made by the runner inside that namespace (a thread that setns()es into
it; a network namespace is a per-thread attribute on Linux) bound to the host's address and
connected to the peer host's address, then handed to QEMU as local.type=fd; with
QRNIC_LINK_RCVBUF=0 QEMU binds local.host=<host address> itself.  The frames between the VMs
then really cross eth0 -> veth -> br0 -> veth -> eth0, as UDP datagrams between two IPv4
hosts, which is what the same -netdev dgram does between two machines (docs/guest.md, "VMs on
several hosts").  Nothing here is a transport of its own: the kernel's veth and bridge carry
the datagrams.

vxlan=True (Topology(hosts='netns-vxlan')) adds, in every host, the other variant of
docs/guest.md: a bridge brq with a VXLAN device vxq (VNI 77, UDP 4789 over eth0, one
all-zero fdb entry per other host) and a tap qtap0 for the host's VM, which QEMU opens with
-netdev tap; the VMs' frames then cross eth0 as VXLAN packets.

Needs root and iproute2's `ip`.  Every `ip` call is bounded (IP_TIMEOUT)."""
import atexit
import ctypes
import ctypes.util
import json
import os
import re
import shutil
import socket
import subprocess
import threading

IP_TIMEOUT = 30
# MTU of the veths and the bridge: the largest frame of a qrnic port at its default eth_mtu
# (4200, plus the Ethernet and a VLAN header) inside UDP/IPv4 (28 bytes) must cross without IP
# fragmentation: 4200 + 18 + 28 = 4246 <= 9000.
LINK_MTU = 9000
# MTU of the tap, bridge and vxlan devices of the VXLAN variant: the qrnic port's default eth_mtu
TAP_MTU = 4200
VXLAN_VNI = 77
VXLAN_PORT = 4789
CLONE_NEWNET = 0x40000000
PREFIX = 'qrnic-'
_NAME_RE = re.compile(r'^qrnic-(\d+)-(\d+)-(hub|h\d+)$')
SO_RCVBUFFORCE = getattr(socket, 'SO_RCVBUFFORCE', 33)

_count = [0]
_count_lock = threading.Lock()
_live = set()       # NetnsHosts created and not yet destroyed (removed at interpreter exit)


class HostsError(RuntimeError):
    """The namespaces could not be made (not root, no `ip`, an `ip` command failed)."""


def check_prereqs():
    """HostsError unless we can make network namespaces: root and iproute2's `ip`."""
    if os.geteuid() != 0:
        raise HostsError("hosts='netns' needs root (network namespaces, veths, a bridge); "
                         "run as root or use the default hosts='local'")
    if not shutil.which('ip'):
        raise HostsError("hosts='netns' needs iproute2's `ip` (apt-get install iproute2)")
    if not os.path.exists('/proc/self/ns/net'):
        raise HostsError("hosts='netns': this kernel has no network namespaces")


def ip(*args, check=True, ns=None):
    """Run `ip [-n NS] ARGS` (bounded); returns stdout.  HostsError when it fails and check."""
    cmd = ['ip'] + (['-n', ns] if ns else []) + list(args)
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=IP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise HostsError('`%s` did not finish within %ds' % (' '.join(cmd), IP_TIMEOUT))
    except OSError as e:
        raise HostsError('`%s`: %s' % (' '.join(cmd), e))
    if check and p.returncode:
        raise HostsError('`%s` failed (exit %d): %s' % (' '.join(cmd), p.returncode, p.stderr.strip()))
    return p.stdout


def bridge(*args, ns=None):
    """Run `bridge [-n NS] ARGS` (bounded); HostsError when it fails."""
    cmd = ['bridge'] + (['-n', ns] if ns else []) + list(args)
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=IP_TIMEOUT)
    except (subprocess.TimeoutExpired, OSError) as e:
        raise HostsError('`%s`: %s' % (' '.join(cmd), e))
    if p.returncode:
        raise HostsError('`%s` failed (exit %d): %s' % (' '.join(cmd), p.returncode, p.stderr.strip()))
    return p.stdout


def list_netns():
    """Names of the named network namespaces (`ip netns list`)."""
    return [ln.split()[0] for ln in ip('netns', 'list').splitlines() if ln.strip()]


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(names=None):
    """Delete the runner's namespaces (qrnic-<pid>-<n>-...) whose process no longer exists
    (a runner that was killed before its clean-up).  Returns the names deleted."""
    gone = []
    for name in list_netns() if names is None else names:
        m = _NAME_RE.match(name)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            ip('netns', 'del', name, check=False)
            gone.append(name)
    return gone


_libc = None


def _setns(fd):
    """setns(fd, CLONE_NEWNET) for the calling thread (os.setns is Python 3.12+)."""
    global _libc
    if hasattr(os, 'setns'):
        os.setns(fd, CLONE_NEWNET)
        return
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, 'setns: %s' % os.strerror(e))


def run_in_netns(name, fn, timeout=IP_TIMEOUT):
    """fn() in a thread that has entered the named network namespace; returns its result or
    raises its exception.  The thread ends afterwards (its namespace goes with it); sockets it
    made stay in the namespace they were made in."""
    out = {}

    def body():
        try:
            fd = os.open('/run/netns/' + name, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(fd)
            finally:
                os.close(fd)
            out['value'] = fn()
        except BaseException as e:     # handed to the caller
            out['error'] = e

    t = threading.Thread(target=body, name='netns-' + name, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise HostsError('work in namespace %s did not finish within %ss' % (name, timeout))
    if 'error' in out:
        raise out['error']
    return out.get('value')


def udp_socket(name, local, remote, rcvbuf=0):
    """A UDP socket made in namespace name (None: ours), bound to local (host, port) and
    connected to remote; rcvbuf: its receive buffer (SO_RCVBUFFORCE, else SO_RCVBUF; 0 keeps
    the default)."""
    def make():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if rcvbuf:
                try:
                    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
                except PermissionError:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.bind(local)
            s.connect(remote)
        except BaseException:
            s.close()
            raise
        return s
    return make() if name is None else run_in_netns(name, make)


class NetnsHosts:
    """n "hosts" (network namespaces) on one bridge; see the module docstring.
    create() makes them, destroy() removes them (also at interpreter exit)."""

    def __init__(self, n, mtu=LINK_MTU, vxlan=False, tap_mtu=TAP_MTU):
        if not 1 <= n <= 250:
            raise ValueError('NetnsHosts: 1..250 hosts, not %r' % (n,))
        self.vxlan, self.tap_mtu = vxlan, tap_mtu
        with _count_lock:
            _count[0] += 1
            k = _count[0]
        self.n, self.mtu = n, mtu
        self.run = '%d-%d' % (os.getpid(), k)
        self.subnet = k % 250 + 1
        self.hub = '%s%s-hub' % (PREFIX, self.run)
        self.names = ['%s%s-h%d' % (PREFIX, self.run, i) for i in range(n)]
        self.created = False

    def addr(self, i):
        """IPv4 address of host i."""
        return '10.77.%d.%d' % (self.subnet, i + 1)

    def ns(self, i):
        return self.names[i]

    def hub_port(self, i):
        """Name of host i's veth end on the hub's bridge (in the hub namespace)."""
        return 'p%d' % i

    def create(self):
        check_prereqs()
        sweep_stale()
        _live.add(self)
        self.created = True
        try:
            ip('netns', 'add', self.hub)
            ip('link', 'set', 'lo', 'up', ns=self.hub)
            ip('link', 'add', 'br0', 'mtu', str(self.mtu), 'type', 'bridge', 'stp_state', '0',
               'forward_delay', '0', ns=self.hub)
            for i, name in enumerate(self.names):
                ip('netns', 'add', name)
                ip('link', 'set', 'lo', 'up', ns=name)
                # made inside the hub with its peer moved straight into the host: no name
                # ever appears in the namespace we run in, so runs cannot collide
                ip('link', 'add', self.hub_port(i), 'mtu', str(self.mtu), 'type', 'veth',
                   'peer', 'name', 'eth0', 'mtu', str(self.mtu), 'netns', name, ns=self.hub)
                ip('link', 'set', self.hub_port(i), 'master', 'br0', 'up', ns=self.hub)
                ip('addr', 'add', '%s/24' % self.addr(i), 'dev', 'eth0', ns=name)
                ip('link', 'set', 'eth0', 'up', ns=name)
            ip('link', 'set', 'br0', 'up', ns=self.hub)
            if self.vxlan:
                for i in range(self.n):
                    self._add_vxlan(i)
        except BaseException:
            self.destroy()
            raise
        return self

    def _add_vxlan(self, i):
        ns, m = self.names[i], str(self.tap_mtu)
        ip('link', 'add', 'vxq', 'mtu', m, 'type', 'vxlan', 'id', str(VXLAN_VNI), 'local', self.addr(i),
           'dstport', str(VXLAN_PORT), 'dev', 'eth0', ns=ns)
        for j in range(self.n):
            if j != i:          # head-end replication of broadcasts to every other host
                bridge('fdb', 'append', '00:00:00:00:00:00', 'dev', 'vxq', 'dst', self.addr(j), ns=ns)
        ip('link', 'add', 'brq', 'mtu', m, 'type', 'bridge', 'stp_state', '0', 'forward_delay', '0', ns=ns)
        ip('link', 'set', 'vxq', 'master', 'brq', 'up', ns=ns)
        ip('tuntap', 'add', self.tap(i), 'mode', 'tap', ns=ns)
        ip('link', 'set', self.tap(i), 'mtu', m, 'master', 'brq', 'up', ns=ns)
        ip('link', 'set', 'brq', 'up', ns=ns)

    def tap(self, i):
        """Name of host i's tap for its VM (VXLAN variant), in host i's namespace."""
        return 'qtap0'

    def exec_prefix(self, i):
        """Command prefix that runs a program in host i's namespace (same pid: ip execs it)."""
        return ['ip', 'netns', 'exec', self.names[i]]

    def udp_socket(self, i, port, peer, peer_port, rcvbuf=0):
        """A UDP socket in host i bound to (addr(i), port) and connected to (addr(peer), peer_port)."""
        return udp_socket(self.names[i], (self.addr(i), port), (self.addr(peer), peer_port), rcvbuf)

    def link_stats(self, i, hub=False, dev='eth0'):
        """Counters of host i's dev (hub=True: of its port p<i> on the bridge):
        {'rx_packets', 'rx_bytes', 'tx_packets', 'tx_bytes', ...} from `ip -s -j link`."""
        ns, dev = (self.hub, self.hub_port(i)) if hub else (self.names[i], dev)
        data = json.loads(ip('-s', '-j', 'link', 'show', 'dev', dev, ns=ns))
        st = data[0]['stats64']
        return dict({'rx_' + k: v for k, v in st['rx'].items()}, **{'tx_' + k: v for k, v in st['tx'].items()})

    def destroy(self):
        """Delete the namespaces (their veths and the bridge go with them).  Errors are
        ignored (a namespace may be gone already); returns the names still present."""
        if not self.created:
            return []
        for name in self.names + [self.hub]:
            try:
                ip('netns', 'del', name, check=False)
            except HostsError:
                pass
        self.created = False
        _live.discard(self)
        try:
            left = set(list_netns())
        except HostsError:
            return []
        return [x for x in self.names + [self.hub] if x in left]


def netns_of_pid(pid):
    """The network namespace identity of a process (the /proc/PID/ns/net link, e.g.
    'net:[4026532281]')."""
    return os.readlink('/proc/%d/ns/net' % pid)


def _destroy_all():
    for h in list(_live):
        h.destroy()


atexit.register(_destroy_all)

__all__ = ['HostsError', 'NetnsHosts', 'check_prereqs', 'sweep_stale', 'run_in_netns', 'udp_socket',
           'netns_of_pid', 'list_netns', 'LINK_MTU']
