# SPDX-License-Identifier: GPL-2.0-or-later
"""Running the stock RDMA tools (perftest, pingpong, rping) between two endpoints,
and the demo of scripts/run-demo.sh (`scripts/vm.py demo`)."""
import itertools
import re
import sys
import time

from .runner import VMError

_ports = itertools.count(18600)


def next_port():
    """A fresh TCP/RDMA-CM port for the next client/server pair (no TIME_WAIT clashes)."""
    return next(_ports)


def wait_until(vm, cmd, timeout=30):
    """Poll the guest command until it succeeds; False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if vm.run(cmd, timeout=20, check=False).ok:
            return True
        time.sleep(0.3)
    return False


def wait_tcp_listen(vm, port, timeout=30):
    return wait_until(vm, "ss -Hltn 'sport = :%d' | grep -q LISTEN" % port, timeout)


def wait_cm_listen(vm, port, timeout=30):
    return wait_until(vm, "rdma res show cm_id | grep LISTEN | grep -q ':%d '" % port, timeout)


class ListenTimeout(VMError):
    def __init__(self, cmd, port, output):
        self.output = output
        super().__init__('server `%s` did not listen on port %d within 30 s; its output:\n%s'
                         % (cmd, port, output[-3000:]))


def client_server(server_vm, server_cmd, client_vm, client_cmd, port, listen='tcp', timeout=120,
                  server_timeout=60):
    """Start server_cmd, wait until it listens on port (listen='tcp': a TCP socket, as perftest
    and the pingpongs use; 'cm': an RDMA-CM id, as rping and perftest -R use), run client_cmd.
    Returns (server Result, client Result).  A server still running server_timeout s after the
    client ended is stopped and reported as timed out."""
    job = server_vm.spawn(server_cmd)
    try:
        waiter = wait_tcp_listen if listen == 'tcp' else wait_cm_listen
        if not waiter(server_vm, port):
            raise ListenTimeout(server_cmd, port, job.stop().output)
        cli = client_vm.run(client_cmd, timeout=timeout, check=False)
        srv = job.wait(server_timeout)
        if srv.running:
            srv = job.stop()
            srv.timed_out = True
    except BaseException:
        job.stop()
        raise
    return srv, cli


def perftest_table(out):
    """Parse a perftest result table: {column: value} of the first data row under the '#bytes'
    header.  Columns as printed, with inner spaces replaced by '_': '#bytes', '#iterations',
    'BW_peak[MiB/sec]', 'BW_average[MiB/sec]', 'MsgRate[Mpps]' / 't_min[usec]', 't_avg[usec]',
    't_typical[usec]', '99%_percentile[usec]', ..."""
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip().startswith('#bytes'):
            hdr = re.sub(r'(BW|%) (peak|average|percentile)', r'\1_\2', ln.strip()).split()
            for row in lines[i + 1:]:
                f = row.split()
                if f and f[0].isdigit():
                    return dict(zip(hdr, f))
    return None


# perftest 25.01's get_clock.c: it converts cycles to time with a CPU frequency it
# measures against gettimeofday over ~10 steps; when that regression fails (r^2 < 0.9,
# e.g. a TCG vCPU descheduled between the two clocks) it prints this and uses 0 MHz,
# so every rate and time it reports is 0.
PERFTEST_NO_CLOCK = re.compile(r'Correlation coefficient r\^2: \S+ < 0\.9')


def perftest_figure(row, out):
    """The result row's BW_average or t_avg as a float, or None when perftest said
    that it could not measure its clock (PERFTEST_NO_CLOCK in out, stdout and stderr)
    and printed 0: a figure perftest does not know, not a measurement."""
    key = next(k for k in row if k.startswith(('BW_average', 't_avg')))
    v = float(row[key])
    return None if v == 0 and PERFTEST_NO_CLOCK.search(out) else v


# ---- demo --------------------------------------------------------------------------------
def _tail(r, n=12):
    return '\n'.join('      ' + ln for ln in r.output.rstrip().splitlines()[-n:])


def _perftest(t, tool, args, figure):
    s, c = t.pair()
    port = next_port()
    common = '-p %d -F %s' % (port, args)
    srv, cli = client_server(s.vm, '%s -d %s -x %d %s' % (tool, s.ibdev, s.gid, common),
                             c.vm, '%s -d %s -x %d %s %s' % (tool, c.ibdev, c.gid, common, s.ip), port,
                             timeout=300)
    row = perftest_table(cli.output)
    if not (cli.ok and srv.ok and row):
        bad = cli if not cli.ok or not row else srv
        return False, 'failed (rc %s)' % bad.rc, _tail(bad)
    return True, figure(row), ''


def demo(t, out=sys.stdout):
    """Run the demo on a started Topology; print a summary table; True if every step passed."""
    steps = []

    def step(name, fn):
        print('demo: %s ...' % name, file=sys.stderr, flush=True)
        t0 = time.monotonic()
        try:
            ok, fig, detail = fn()
        except VMError as e:
            ok, fig, detail = False, 'error', '      ' + str(e).replace('\n', '\n      ')
        steps.append((name, ok, fig, time.monotonic() - t0))
        print('demo: %s: %s - %s' % (name, 'ok' if ok else 'FAILED', fig), file=sys.stderr, flush=True)
        if detail:
            print(detail, file=sys.stderr, flush=True)
        return ok

    def devinfo():
        figs, good = [], True
        for e in t.endpoints(refresh=True):
            r = e.vm.run('ibv_devinfo -d %s' % e.ibdev, check=False)
            st = re.search(r'state:\s+(\S+)', r.out)
            mtu = re.search(r'active_mtu:\s+(\d+)', r.out)
            good &= r.ok and bool(st) and st.group(1) == 'PORT_ACTIVE'
            figs.append('%s %s %s MTU %s' % (e.ibdev, e.ip or '-', st.group(1) if st else '?',
                                              mtu.group(1) if mtu else '?'))
        if not figs:
            return False, 'no RDMA devices', ''
        return good and len(figs) >= 2, '; '.join(figs), ''

    def rping():
        s, c = t.pair()
        port = next_port()
        srv, cli = client_server(s.vm, 'rping -s -a %s -p %d -v -V -C 5' % (s.ip, port),
                                 c.vm, 'rping -c -a %s -I %s -p %d -v -V -C 5' % (s.ip, c.ip, port), port,
                                 listen='cm')
        n = cli.output.count('ping data: rdma-ping-')
        if not (cli.ok and srv.ok and n == 5):
            return False, 'failed (rc %s, %d/5 pings)' % (cli.rc, n), _tail(cli if not cli.ok else srv)
        return True, '5/5 pings, payload validated (-V), %.1f s' % cli.dt, ''

    if not step('ibv_devinfo', devinfo):
        steps.append(('(rest skipped)', False, 'no usable devices', 0.0))
    else:
        step('ib_write_bw', lambda: _perftest(
            t, 'ib_write_bw', '-s 65536 -n 1000',
            lambda r: '%s MiB/s average (64 KiB x %s)' % (r['BW_average[MiB/sec]'], r['#iterations'])))
        step('ib_read_lat', lambda: _perftest(
            t, 'ib_read_lat', '-s 8 -n 200',
            lambda r: 't_avg %s us, t_typical %s us (8 B x %s)' % (r['t_avg[usec]'], r['t_typical[usec]'],
                                                                  r['#iterations'])))
        step('ib_atomic_bw', lambda: _perftest(
            t, 'ib_atomic_bw', '-A FETCH_AND_ADD -n 1000',
            lambda r: '%.0f kops/s fetch-and-add' % (float(r['MsgRate[Mpps]']) * 1000)))
        step('rping', rping)
    w = max(len(s[0]) for s in steps)
    print('', file=out)
    print('qrnic demo on topology %s (QEMU TCG; figures measure the emulator, not a NIC)' % t.name, file=out)
    print('%-*s  %-6s  %7s  %s' % (w, 'tool', 'result', 'time', 'key figure'), file=out)
    print('%s  %s  %s  %s' % ('-' * w, '-' * 6, '-' * 7, '-' * 40), file=out)
    for name, ok, fig, dt in steps:
        print('%-*s  %-6s  %6.1fs  %s' % (w, name, 'PASS' if ok else 'FAIL', dt, fig), file=out)
    print('logs: %s' % t.rundir, file=out)
    return all(s[1] for s in steps)
