# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tier: the VM runner's host settings from the environment
(QRNIC_LINK_RCVBUF, QRNIC_VCPU_NICE, QRNIC_CPU_PLACEMENT, docs/guest.md) and the dgram link
socket it hands to QEMU; garbage gives a clear error naming the variable."""
import os
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, 'scripts')
sys.path.insert(0, SCRIPTS)

from qrnic_vm import runner  # noqa: E402


def settings(**env):
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, '-c', 'import qrnic_vm.runner as r; '
                        'print(r.LINK_RCVBUF, r.VCPU_NICE, r.CPU_PLACEMENT)'],
                       cwd=SCRIPTS, env=e, capture_output=True, text=True)
    return r.returncode, r.stdout.split(), r.stderr


def test_defaults_and_values():
    assert settings(QRNIC_LINK_RCVBUF='', QRNIC_VCPU_NICE='', QRNIC_CPU_PLACEMENT='')[1] == \
        [str(8 << 20), '0', 'none']
    assert settings(QRNIC_LINK_RCVBUF='0', QRNIC_VCPU_NICE='10', QRNIC_CPU_PLACEMENT='split')[1] == \
        ['0', '10', 'split']
    assert settings(QRNIC_LINK_RCVBUF='0x10000')[1][0] == '65536'


@pytest.mark.parametrize('var,val', [('QRNIC_LINK_RCVBUF', 'abc'), ('QRNIC_LINK_RCVBUF', '-1'),
                                     ('QRNIC_LINK_RCVBUF', str(1 << 31)),
                                     ('QRNIC_VCPU_NICE', '20'), ('QRNIC_VCPU_NICE', 'x'),
                                     ('QRNIC_CPU_PLACEMENT', 'pinned'), ('QRNIC_CPU_PLACEMENT', '1')])
def test_garbage_is_refused_by_name(var, val):
    rc, _, err = settings(**{var: val})
    assert rc != 0 and '%s=%r' % (var, val) in err


def test_dgram_link_socket():
    """The socket QEMU gets: bound to the local port, connected to the peer's, with the
    requested receive buffer (Linux doubles it); rcvbuf 0 = QEMU's own inet socket."""
    p0, p1 = runner.free_udp_ports(2)
    a, b = runner.DgramNet(p0, p1, rcvbuf=1 << 20), runner.DgramNet(p1, p0, rcvbuf=1 << 20)
    try:
        assert a.open() is not None and b.open() is not None
        assert str(a) == 'dgram,local.type=fd,local.str=%d' % a.sock.fileno()
        assert a.sock.getsockname() == ('127.0.0.1', p0)
        assert a.sock.getpeername() == ('127.0.0.1', p1)
        assert a.got_rcvbuf >= 1 << 20 or os.geteuid() != 0
        a.sock.send(b'frame')
        assert b.sock.recv(100) == b'frame'
    finally:
        a.close()
        b.close()
    plain = runner.DgramNet(p0, p1, rcvbuf=0)
    assert plain.open() is None
    assert str(plain) == ('dgram,local.type=inet,local.host=127.0.0.1,local.port=%d,'
                          'remote.type=inet,remote.host=127.0.0.1,remote.port=%d' % (p0, p1))


def test_unix_link_ends():
    """link='unix' (runner.unix_link): the two ends of one unix-domain datagram socketpair,
    handed to QEMU as local.type=fd; a frame crosses each way whole; a peer that does not read
    makes the sender wait (EAGAIN, which QEMU's dgram netdev queues on) instead of losing
    frames; each end goes to one QEMU only."""
    a, b = runner.unix_link()
    try:
        fa, fb = a.open(), b.open()
        assert str(a) == 'dgram,local.type=fd,local.str=%d' % fa and fa != fb
        assert a.sock.type == socket.SOCK_DGRAM and a.sock.family == socket.AF_UNIX
        frame = bytes(range(256)) * 16
        a.sock.send(frame)
        assert b.sock.recv(8192) == frame
        b.sock.send(b'ack')
        assert a.sock.recv(100) == b'ack'
        a.sock.setblocking(False)
        b.sock.setblocking(False)
        sent = 0
        while True:
            try:
                a.sock.send(frame)
            except BlockingIOError:
                break
            sent += 1
            assert sent < 1 << 16, 'the sender never had to wait'
        got = 0
        while True:
            try:
                assert b.sock.recv(8192) == frame
            except BlockingIOError:
                break
            got += 1
        assert got == sent > 0
        with pytest.raises(runner.VMError, match='cannot be reopened'):
            a.open()
        assert a.sock is not None       # the refused reopen left the open end alone
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize('name,kw', [('T2', dict(link='hub')), ('S4', dict(link='unix')),
                                     ('T1', dict(link='udp')), ('T1', dict(link='shm')),
                                     ('T2', dict(link='unix', hosts='netns')), ('T3', dict(link='shm', hosts='netns'))])
def test_link_must_fit_the_topology(name, kw):
    with pytest.raises(ValueError, match='link'):
        runner.Topology(name, **kw)


def test_cpu_placement_sets():
    """(vCPU CPUs, other threads' CPUs) per placement; [] = left to the scheduler."""
    assert runner.place_cpus('none', 0, [0, 1]) == ([], [])
    assert runner.place_cpus('split', 0, [0, 1]) == ([0], [1])
    assert runner.place_cpus('split', 1, [0, 1]) == ([0], [1])      # same for every VM
    assert runner.place_cpus('split', 0, [2, 3, 5, 7]) == ([2, 3], [5, 7])
    assert runner.place_cpus('split', 0, [4, 5, 6]) == ([4], [5, 6])
    assert [runner.place_cpus('spread', i, [0, 1]) for i in range(3)] == [([0], []), ([1], []), ([0], [])]
    assert runner.place_cpus('split', 0, [3]) == ([], [])            # one CPU: nothing to place
    with pytest.raises(ValueError, match='unknown CPU placement'):
        runner.place_cpus('pinned', 0, [0, 1])


def test_place_threads_pins_a_process():
    """_place_threads on a stand-in process: its threads (none named like a vCPU) all go
    to the 'other' CPUs under split."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip('needs two CPUs')
    p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])
    try:
        vm = runner.VM.__new__(runner.VM)
        vm.proc, vm.name, vm.place_index = p, 'vmX', 0
        vm.log = lambda msg: None
        old = runner.CPU_PLACEMENT
        runner.CPU_PLACEMENT = 'split'
        try:
            vm._place_threads()
        finally:
            runner.CPU_PLACEMENT = old
        _v, other = runner.place_cpus('split', 0, sorted(os.sched_getaffinity(0)))
        assert os.sched_getaffinity(p.pid) == set(other)
    finally:
        p.kill()
        p.wait()


def _bench():
    import script_module
    return script_module.load(os.path.join(ROOT, 'bench', 'guest_vs_rxe'))


def test_bench_tunings():
    """bench/guest_vs_rxe --tunings: PLACEMENT or PLACEMENT:NICE, comma-separated."""
    b = _bench()
    assert b.parse_tunings(b.DEFAULT_TUNINGS) == [('none', None), ('split', None), ('spread', None),
                                                  ('none', 10)]
    assert b.parse_tunings(' spread:0 , ') == [('spread', 0)]
    assert b.tuning_label('none', 10) == 'none vcpu-nice 10' and b.tuning_label('split', 0) == 'split'
    for bad in ('', 'pinned', 'none:20', 'none:x', 'split:-1'):
        with pytest.raises(ValueError):
            b.parse_tunings(bad)


def test_bench_cpu_note():
    """bench/guest_vs_rxe's bandwidth note: shares of a CPU per second of the run, client
    and server, and the sum of all QEMU threads against the host's CPUs."""
    b = _bench()
    z = dict(vcpu_run=0.0, vcpu_wait=0.0, other_run=0.0, other_wait=0.0, other_sleeps=0)
    after = [dict(z, other_run=2.0, other_wait=1.0, vcpu_run=3.9),
             dict(z, other_run=1.5, other_wait=0.5, vcpu_run=0.1)]
    note = b.cpu_note(4.0, [z, z], after, ncpu=2)
    assert note == ('host CPU share (client VM / server VM): main loop on a CPU 0.50 / 0.38, '
                    'runnable-waiting 0.25 / 0.12; vCPU on a CPU 0.97 / 0.03; '
                    'all QEMU threads 1.88 of 2 CPUs'), note
    # differences, not totals: the same 'before' as 'after' is an idle run
    assert 'all QEMU threads 0.00 of 2 CPUs' in b.cpu_note(4.0, after, after, ncpu=2)


def test_sched_stats_of_a_process():
    """VM.sched_stats on a stand-in process that burns CPU then sleeps in steps: its
    thread (not named like a vCPU) counts as 'other', its CPU time and its sleeps
    show, the vCPU figures stay 0; a VM without a process gives zeros."""
    code = ('import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n'
            'for _ in range(20): time.sleep(0.01)\ntime.sleep(60)\n')
    p = subprocess.Popen([sys.executable, '-c', code])
    try:
        vm = runner.VM.__new__(runner.VM)
        vm.proc = p
        deadline = time.monotonic() + 30
        while True:     # the burn and the 20 sleeps take ~0.5 s on a quiet host
            st = vm.sched_stats()
            if (st['other_run'] >= 0.25 and st['other_sleeps'] >= 20) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert st['vcpu_run'] == st['vcpu_wait'] == 0
        assert st['other_run'] >= 0.25, st
        assert st['other_sleeps'] >= 20, st
        assert st['other_wait'] >= 0
    finally:
        p.kill()
        p.wait()
    vm.proc = None
    assert vm.sched_stats() == dict(vcpu_run=0.0, vcpu_wait=0.0, other_run=0.0, other_wait=0.0,
                                    other_sleeps=0)


def test_perftest_figure_knows_when_perftest_could_not_time_itself():
    """perftest reports 0 for every rate and time when its CPU-frequency
    regression fails (r^2 < 0.9, said on stderr); perftest_figure gives None
    then, the figure otherwise, and 0 without that message stays 0 (a
    failure for the tests that ask for a positive figure)."""
    from qrnic_vm.tools import perftest_figure, perftest_table
    table = (' #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n'
             ' 65536      100              %s                 %s                    0.000\n')
    zero = perftest_table(table % ('0.00', '0.00'))
    assert perftest_figure(zero, 'Correlation coefficient r^2: 0.853 < 0.9\n' + table) is None
    assert perftest_figure(zero, table) == 0.0
    assert perftest_figure(zero, 'Correlation coefficient r^2: 0.95 > 0.9') == 0.0
    assert perftest_figure(perftest_table(table % ('1.50', '1.25')), 'r^2: 0.8 < 0.9') == 1.25
    lat = perftest_table(' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n'
                         ' 2       100          10.5           40.1         12.0               13.25\n')
    assert perftest_figure(lat, '') == 13.25
