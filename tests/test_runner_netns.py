# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tier: the VM runner's "hosts" in network namespaces (Topology(hosts='netns'),
scripts/qrnic_vm/hosts.py, docs/guest.md "VMs on several hosts"), without QEMU: two
namespaces made by the runner's code, a dgram link's sockets made in them the way the runner
makes them for QEMU, a datagram from one host address to the other across the veths and the
bridge, clean-up (also after a failure, and of a dead run's namespaces)."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, 'scripts')
sys.path.insert(0, SCRIPTS)

from qrnic_vm import hosts, runner  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('ip'),
                                reason='network namespaces need root and iproute2')


def ours(h):
    """Which of h's namespaces exist."""
    names = set(hosts.list_netns())
    return [n for n in h.names + [h.hub] if n in names]


@needs_root
def test_two_hosts_datagram_crosses_the_veths():
    h = hosts.NetnsHosts(2)
    assert ours(h) == []
    h.create()
    try:
        assert sorted(ours(h)) == sorted(h.names + [h.hub])
        assert h.addr(0) != h.addr(1) and h.addr(0).startswith('10.77.')
        # the runner's link ends, as Topology(hosts='netns') makes them for T2
        a = runner.DgramNet(47001, 47002, rcvbuf=1 << 20, host=h.addr(0), remote_host=h.addr(1), netns=h.ns(0))
        b = runner.DgramNet(47002, 47001, rcvbuf=1 << 20, host=h.addr(1), remote_host=h.addr(0), netns=h.ns(1))
        try:
            assert a.open() is not None and b.open() is not None
            assert str(a) == 'dgram,local.type=fd,local.str=%d' % a.sock.fileno()
            assert a.sock.getsockname() == (h.addr(0), 47001)
            assert a.sock.getpeername() == (h.addr(1), 47002)
            assert a.got_rcvbuf >= 1 << 20
            before = [h.link_stats(i, hub=True) for i in (0, 1)]
            before_eth = h.link_stats(1)
            # a frame of a qrnic port at its default eth_mtu (4200 + 14 + 4): one datagram,
            # no IP fragmentation at the hosts' MTU
            frame = bytes(range(256)) * 16 + b'x' * (4218 - 4096)
            for s in (a, b):
                s.sock.settimeout(10)
            a.sock.send(frame)
            got, src = b.sock.recvfrom(65536)
            assert got == frame
            assert src == (h.addr(0), 47001)
            b.sock.send(b'back')
            assert a.sock.recvfrom(100) == (b'back', (h.addr(1), 47002))
            after = [h.link_stats(i, hub=True) for i in (0, 1)]
            after_eth = h.link_stats(1)
            # host 0 -> p0 (the bridge receives) -> p1 (the bridge sends) -> host 1's eth0
            assert after[0]['rx_packets'] - before[0]['rx_packets'] >= 1
            assert after[0]['rx_bytes'] - before[0]['rx_bytes'] >= len(frame) + 28
            assert after[1]['tx_bytes'] - before[1]['tx_bytes'] >= len(frame) + 28
            assert after_eth['rx_bytes'] - before_eth['rx_bytes'] >= len(frame) + 28
            assert after_eth['tx_packets'] - before_eth['tx_packets'] >= 1
        finally:
            a.close()
            b.close()
        # the host addresses exist only inside the namespaces
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with pytest.raises(OSError):
            s.bind((h.addr(0), 0))
        s.close()
        # a program started with the runner's prefix runs in host 1's namespace, same pid
        p = subprocess.Popen(h.exec_prefix(1) + ['sh', '-c', 'readlink /proc/self/ns/net; echo $$'],
                             stdout=subprocess.PIPE, text=True)
        out, _ = p.communicate(timeout=30)
        ns, pid = out.split()
        assert int(pid) == p.pid
        assert ns != hosts.netns_of_pid(os.getpid())
    finally:
        left = h.destroy()
    assert left == [] and ours(h) == []


@needs_root
def test_hosts_are_separate_namespaces_with_own_pids():
    h = hosts.NetnsHosts(2).create()
    try:
        ps = [subprocess.Popen(h.exec_prefix(i) + ['sleep', '30']) for i in (0, 1)]
        try:
            ids = []
            for p in ps:
                for _ in range(100):        # bounded: until ip has exec'd sleep
                    with open('/proc/%d/comm' % p.pid) as f:
                        if f.read().strip() == 'sleep':
                            break
                    subprocess.run(['sleep', '0.05'])
                ids.append(hosts.netns_of_pid(p.pid))
            assert len(set(ids + [hosts.netns_of_pid(os.getpid())])) == 3, ids
        finally:
            for p in ps:
                p.kill()
                p.wait(10)
    finally:
        assert h.destroy() == []


@needs_root
def test_failure_half_way_leaves_nothing(monkeypatch):
    h = hosts.NetnsHosts(2)
    real = hosts.ip

    def failing(*args, **kw):
        if args[:1] == ('addr',) and kw.get('ns') == h.ns(1):
            raise hosts.HostsError('injected')
        return real(*args, **kw)
    monkeypatch.setattr(hosts, 'ip', failing)
    with pytest.raises(hosts.HostsError, match='injected'):
        h.create()
    monkeypatch.setattr(hosts, 'ip', real)
    assert ours(h) == []


@needs_root
def test_stale_namespaces_of_dead_runs_are_swept():
    p = subprocess.Popen(['true'])
    p.wait(10)
    dead = p.pid
    stale = ['qrnic-%d-7-hub' % dead, 'qrnic-%d-7-h0' % dead]
    mine = 'qrnic-%d-999-h0' % os.getpid()
    other = 'qrnicx-%d-1-h0' % dead         # not the runner's pattern: left alone
    for n in stale + [mine, other]:
        hosts.ip('netns', 'add', n)
    try:
        gone = hosts.sweep_stale()
        assert sorted(n for n in gone if n in stale) == sorted(stale)
        left = set(hosts.list_netns())
        assert not left & set(stale)
        assert mine in left and other in left
    finally:
        for n in stale + [mine, other]:
            hosts.ip('netns', 'del', n, check=False)


def test_prerequisites_give_clear_errors(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    with pytest.raises(hosts.HostsError, match='needs root'):
        hosts.check_prereqs()
    monkeypatch.setattr(os, 'geteuid', lambda: 0)
    monkeypatch.setattr(shutil, 'which', lambda name: None)
    with pytest.raises(hosts.HostsError, match="needs iproute2's `ip`"):
        hosts.check_prereqs()


def test_bad_hosts_value_is_refused():
    with pytest.raises(ValueError, match="unknown hosts 'vxlan'"):
        runner.Topology('T2', hosts='vxlan')
    r = subprocess.run([sys.executable, '-c', 'import qrnic_vm.runner as r; r.Topology("T2")'],
                       cwd=SCRIPTS, env=dict(os.environ, QRNIC_HOSTS='bogus'), capture_output=True, text=True)
    assert r.returncode != 0 and "QRNIC_HOSTS='bogus'" in r.stderr, r.stderr


def test_qemu_socket_variant_binds_the_host_address():
    """QRNIC_LINK_RCVBUF=0: QEMU (running in the namespace) binds the host address itself."""
    n = runner.DgramNet(47001, 47002, rcvbuf=0, host='10.77.3.1', remote_host='10.77.3.2', netns='x')
    assert n.open() is None
    assert str(n) == ('dgram,local.type=inet,local.host=10.77.3.1,local.port=47001,'
                      'remote.type=inet,remote.host=10.77.3.2,remote.port=47002')


TUNSETIFF = 0x400454ca
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def open_tap(name):
    """Attach to the tap `name` of the calling thread's namespace, as QEMU's -netdev tap does."""
    import fcntl
    import struct
    fd = os.open('/dev/net/tun', os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack('16sH', name.encode(), IFF_TAP | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


def read_frame(fd, want, timeout=10):
    """The first frame on the tap whose bytes start with want (bounded: timeout s)."""
    import select
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if r:
            f = os.read(fd, 65536)
            if f.startswith(want):
                return f
    return None


@needs_root
@pytest.mark.skipif(not os.path.exists('/dev/net/tun'), reason='no /dev/net/tun')
def test_vxlan_variant_carries_frames_between_the_taps():
    """hosts='netns-vxlan': a frame written into host 0's tap (as the VM's NIC would send it)
    leaves host 0 as a VXLAN packet and comes out of host 1's tap; the answer, unicast to the
    MAC the bridges learned, comes back."""
    h = hosts.NetnsHosts(2, vxlan=True).create()
    try:
        fds = [hosts.run_in_netns(h.ns(i), lambda i=i: open_tap(h.tap(i))) for i in (0, 1)]
        try:
            mac0, mac1 = bytes.fromhex('52547a000000'), bytes.fromhex('52547a010000')
            payload = bytes(range(256)) * 16 + bytes(4200 - 4096)      # eth_mtu-sized payload
            before = h.link_stats(0)
            # the bridge ports may still be coming up right after create(): a frame then
            # goes nowhere (seen 1 in ~6 runs at load 12), so send until one arrives
            got = None
            for _ in range(20):
                os.write(fds[0], b'\xff' * 6 + mac0 + b'\x88\xb5' + payload)
                got = read_frame(fds[1], b'\xff' * 6 + mac0 + b'\x88\xb5', timeout=0.5)
                if got is not None:
                    break
            assert got is not None and got[14:] == payload
            after = h.link_stats(0)
            # VXLAN: the 4214-byte frame + 50 bytes of outer headers left host 0's eth0
            assert after['tx_bytes'] - before['tx_bytes'] >= 14 + len(payload) + 36
            os.write(fds[1], mac0 + mac1 + b'\x88\xb5' + b'pong')
            back = read_frame(fds[0], mac0 + mac1 + b'\x88\xb5')
            assert back is not None and back[14:18] == b'pong'
        finally:
            for fd in fds:
                os.close(fd)
    finally:
        assert h.destroy() == []
    assert ours(h) == []


@needs_root
def test_topology_start_failure_removes_the_namespaces(tmp_path):
    """Topology(hosts='netns').start() with a QEMU that dies at once: VMError, and the hosts
    it made are gone (and the fake QEMU ran inside host 0's namespace)."""
    qemu = tmp_path / 'qemu'
    seen = tmp_path / 'seen'
    qemu.write_text('#!/bin/sh\n'
                    'if [ "$1" = -device ]; then\n'
                    '  for d in qrnic virtio-blk-pci virtio-serial-pci virtserialport; do echo "name \\"$d\\""; done\n'
                    '  exit 0\n'
                    'fi\n'
                    'readlink /proc/self/ns/net >> %s\n'
                    'echo "fake qemu: no" >&2; exit 1\n' % seen)
    qemu.chmod(0o755)
    img = tmp_path / 'img'
    img.mkdir()
    for f in ('vmlinuz', 'initrd.img', 'rootfs.img'):
        (img / f).write_bytes(b'')
    t = runner.Topology('T2', hosts='netns', qemu=str(qemu), image=str(img), rundir=str(tmp_path / 'run'),
                        progress=False)
    os.makedirs(t.rundir)
    h = t.netns_hosts
    with pytest.raises(runner.VMError, match='QEMU exited at start-up'):
        t.start()
    assert ours(h) == [] and not h.created
    ns = seen.read_text().split()
    assert ns and ns[0] != hosts.netns_of_pid(os.getpid())
