# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tier: bench/shm_wire.so, the shared-memory wire that the VM runner's link='shm'
preloads into QEMU (an experiment for issue 18, docs/storage.md "A wire in shared memory").
Two processes stand in for the two QEMUs: each preloads the library with the runner's
ShmWire fds and calls libc's send()/recv() on its eventfd the way QEMU's -netdev dgram does.
Frames cross whole and in order both ways; the receiver's eventfd is readable exactly while
frames wait; the sender kicks only a receiver that said it waits; a peer's nonsense (an
index beyond the ring, a length beyond a slot) is counted and skipped, never read out of
bounds; without the environment the library changes nothing."""
import os
import subprocess
import sys
import textwrap

import pytest

import qrnic_harness as q

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))

from qrnic_vm import runner  # noqa: E402

# One side: a loop over commands from the test; libc's send/recv are the preloaded ones.
SIDE = textwrap.dedent('''
    import ctypes, os, select, sys
    libc = ctypes.CDLL(None, use_errno=True)
    fd = int(sys.argv[1])
    buf = ctypes.create_string_buffer(16384)
    for line in sys.stdin:
        cmd, *a = line.split()
        if cmd == 'send':
            n, size = int(a[0]), int(a[1])
            for i in range(n):
                data = bytes([(i + k) & 255 for k in range(size)])
                assert libc.send(fd, data, size, 0) == size
            out = 'sent %d' % n
        elif cmd == 'readable':
            out = 'readable %d' % bool(select.select([fd], [], [], float(a[0]))[0])
        elif cmd == 'recv':
            got = []
            while True:
                r = libc.recv(fd, buf, 16384, 0)
                if r < 0:
                    assert ctypes.get_errno() == 11, ctypes.get_errno()
                    break
                got.append(buf.raw[:r])
            ok = all(g == bytes([(g[0] + k) & 255 for k in range(len(g))]) for g in got)
            out = 'recv %d %s %s' % (len(got), ','.join(str(len(g)) for g in got[:3]), ok)
        elif cmd == 'quit':
            break
        print(out, flush=True)
''')


def so():
    p = os.path.join(q.build_dir(), 'bench', 'shm_wire.so')
    if not os.path.exists(p):
        pytest.skip('bench/shm_wire.so not built')
    return p


class Side:
    def __init__(self, wire, end, lib=True):
        n = runner.ShmNet(wire, end)
        env = dict(os.environ)
        if lib:
            env.update(n.env())
            env['LD_PRELOAD'] = so()
        self.p = subprocess.Popen([sys.executable, '-c', SIDE, str(wire.efd[end])], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, pass_fds=n.open())

    def do(self, cmd):
        self.p.stdin.write(cmd + '\n')
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line, self.p.stderr.read()
        return line.split()

    def stop(self):
        """The library's counters, printed at exit."""
        self.p.stdin.write('quit\n')
        self.p.stdin.close()
        err = self.p.stderr.read()
        assert self.p.wait(10) == 0, err
        line = [ln for ln in err.splitlines() if ln.startswith('shm_wire side')]
        return dict(zip(line[0].split()[3::2], map(int, line[0].split()[4::2]))) if line else {}


def pair():
    w = runner.ShmWire()
    return w, Side(w, 0), Side(w, 1)


def test_frames_cross_whole_in_order_and_kicks_only_a_waiting_receiver():
    w, a, b = pair()
    try:
        assert b.do('readable 0') == ['readable', '0']
        assert a.do('send 300 4150') == ['sent', '300']
        assert b.do('readable 1') == ['readable', '1']
        assert b.do('recv') == ['recv', '300', '4150,4150,4150', 'True']
        assert b.do('readable 0') == ['readable', '0']      # cleared once the ring was empty
        assert b.do('send 5 60') == ['sent', '5']
        assert a.do('recv') == ['recv', '5', '60,60,60', 'True']
        assert a.do('send 2 9216') == ['sent', '2']         # the largest frame a slot holds
        assert b.do('recv') == ['recv', '2', '9216,9216', 'True']
    finally:
        sa, sb = a.stop(), b.stop()
    # 300 frames into a waiting receiver: one kick, not one per frame
    assert sa == {'tx': 302, 'rx': 5, 'kicks': 2, 'clears': 1, 'drops': 0, 'bad': 0}, sa
    assert sb['rx'] == 302 and sb['tx'] == 5 and sb['kicks'] == 1 and sb['bad'] == 0, sb


def test_a_late_kick_does_not_leave_the_receiver_deaf():
    """A sender stores its frame, the receiver takes it and waits again, and only then the
    sender sets no_kick and writes the eventfd (it saw the receiver waiting): the receiver
    wakes to an empty ring.  That wake-up must reset no_kick, or the next frame would wake
    nobody (seen as a hang of rxe over the wire)."""
    import mmap
    w, a, b = pair()
    m = mmap.mmap(w.memfd, runner.ShmWire.SIZE)
    try:
        ring1 = (192 + 1024 * 9220 + 63) // 64 * 64
        assert a.do('send 1 100') == ['sent', '1']
        assert b.do('recv') == ['recv', '1', '100', 'True']
        # the late sender: no_kick set, eventfd written, the ring empty
        m[ring1 + 128:ring1 + 132] = (1).to_bytes(4, 'little')
        os.write(w.efd[1], (1).to_bytes(8, 'little'))
        assert b.do('readable 0') == ['readable', '1']
        assert b.do('recv') == ['recv', '0', 'True']
        assert b.do('readable 0') == ['readable', '0']
        assert a.do('send 1 100') == ['sent', '1']
        assert b.do('readable 1') == ['readable', '1']       # woken
        assert b.do('recv') == ['recv', '1', '100', 'True']
    finally:
        m.close()
        a.stop()
        b.stop()


def test_full_ring_and_oversized_frames_are_dropped_and_counted():
    w, a, b = pair()
    try:
        assert a.do('send 1030 100') == ['sent', '1030']    # 1024 slots
        assert a.do('send 1 9217') == ['sent', '1']
        assert b.do('recv') == ['recv', '1024', '100,100,100', 'True']
    finally:
        sa, _ = a.stop(), b.stop()
    assert sa['drops'] == 7 and sa['tx'] == 1024, sa


def test_a_peers_nonsense_is_skipped_not_read():
    """The ring's indices and lengths come from the other process: an index
    beyond the ring stops taking frames, a length beyond a slot skips it."""
    import mmap
    w, a, b = pair()
    m = mmap.mmap(w.memfd, runner.ShmWire.SIZE)
    try:
        assert a.do('send 3 100') == ['sent', '3']
        # ring[1] (what side 1 receives): prod at 0, cons at 64, no_kick at 128;
        # slots from 192, each a u32 length and 9216 bytes
        ring1 = 192 + 1024 * 9220
        ring1 = (ring1 + 63) // 64 * 64
        slot1 = ring1 + 192 + 1 * 9220
        m[slot1:slot1 + 4] = (1 << 31).to_bytes(4, 'little')
        assert b.do('recv') == ['recv', '1', '100', 'True']        # frame 0; frame 1 skipped
        assert b.do('recv') == ['recv', '1', '100', 'True']        # frame 2
        assert b.do('readable 0') == ['readable', '0']
        m[ring1:ring1 + 4] = (1 << 20).to_bytes(4, 'little')       # prod far ahead
        assert b.do('recv') == ['recv', '0', 'True']               # nothing taken
        assert b.do('readable 0') == ['readable', '0']
    finally:
        m.close()
        a.stop()
        sb = b.stop()
    assert sb['bad'] >= 2 and sb['rx'] == 2, sb


def test_without_the_environment_nothing_changes():
    """Preloaded without QRNIC_SHM_WIRE, send and recv are libc's: on the eventfd (not a
    socket) they fail with ENOTSOCK, as they would without the library."""
    w = runner.ShmWire()
    env = dict(os.environ, LD_PRELOAD=so())
    env.pop('QRNIC_SHM_WIRE', None)
    r = subprocess.run([sys.executable, '-c', 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); '
                        'print(libc.send(int(sys.argv[1]), b"x", 1, 0), ctypes.get_errno())', str(w.efd[0])],
                       env=env, capture_output=True, text=True, pass_fds=[w.efd[0]])
    assert r.stdout.split() == ['-1', '88'], r        # ENOTSOCK


def test_bad_environment_is_refused():
    env = dict(os.environ, LD_PRELOAD=so(), QRNIC_SHM_WIRE='1,2,3')
    r = subprocess.run([sys.executable, '-c', 'pass'], env=env, capture_output=True, text=True)
    assert r.returncode == 1 and 'want SOCKFD,MEMFD,MY_EFD,PEER_EFD,SIDE' in r.stderr
