# SPDX-License-Identifier: GPL-2.0-or-later
"""Scale and soak in a booted T2 guest pair (issue 21, section 5), shared by
bench/soak (long run, figures) and tests/test_guest_soak.py (short run in CI).

cm_scale(): N rdma_cm connections between the two guests with rdma-core's own
tools: `ucmatose -c N -C M` (N connections, M SENDs each way over every one,
every completion checked by ucmatose) and `cmtime -c N` (per-step setup times).

Soak(topology).run(seconds): until the time is up, cycles of
  - QP/MR churn in both guests (a pyverbs program creating and destroying
    batches of CQs, RC QPs moved to INIT and MRs whose contents it writes and
    reads back), running concurrently with
  - traffic between the guests, each step under a random wire fault on the
    client's device (drop, dup, reorder, corrupt of the ICRC or the payload,
    or none): ibv_rc_pingpong -c and rping -V (payload checked), ucmatose
    (rdma_cm connections with SENDs), ib_write_bw and ib_read_bw (volume);
and after every cycle: both guests answer, the kernel logs hold no
WARN/BUG/Oops, the device counters (QOM "stats") never go down, every frame a
corrupt rule changed was dropped by the receiver's ICRC or header checks (and
no frame was dropped so when no corrupt rule fired), faults_injected moved by
what the rules say they fired.  QEMU's VmRSS is sampled throughout; at the
end, with all programs gone: no user verbs object left (rdma res), the
devices hold as many QPs and CQs as before the soak.

Drops can exhaust an RC QP's retries (7 retransmissions without progress):
such a run is counted as `retry_exc` and not as a failure (a transport
giving up is the documented outcome, nothing was delivered wrong), and so is
ibv_rc_pingpong's end-of-run race under loss (test_guest_faults.pingpong).
So is an rdma_cm server that never sees the disconnect after its client
checked everything and exited (`dreq_lost`; the likely cause: the client's
DREQ, a MAD on QP1, was lost to the fault, and a CM whose cm_id is
destroyed does not resend it; the IB CM has no keepalive).
Wrong data, a hang, a crash, or any other error is a failure.
"""
import json
import random
import re
import time

from .vmlib import DmesgWatch  # (first: it puts scripts/ on sys.path)
from qrnic_vm.tools import ListenTimeout, client_server, next_port, perftest_table  # noqa: E402

CHURN = '/tmp/qrnic_soak_churn.py'
CHURN_SCRIPT = r'''#!/usr/bin/env python3
# Guest side of tests/guest/soak.py: QP/MR churn for SECS seconds on DEV.
import json, os, sys, time
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

dev, secs, batch = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
ctx = Context(name=dev)
end = time.monotonic() + secs
rounds = qps = mrs = bad = 0
while time.monotonic() < end:
    pd = PD(ctx)
    objs = []
    for i in range(batch):
        cq = CQ(ctx, 16 << (i % 4), None, None, 0)
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                               cap=QPCap(max_send_wr=16 << (i % 3), max_recv_wr=16, max_send_sge=1,
                                         max_recv_sge=1)))
        attr = QPAttr(port_num=1)
        attr.qp_access_flags = ACCESS
        attr.pkey_index = 0
        qp.to_init(attr)
        size = 4096 * (1 + (i * 7 + rounds) % 33)
        mr = MR(pd, size, ACCESS)
        data = os.urandom(64)
        mr.write(data, 64, size - 64)
        if mr.read(64, size - 64) != data:
            bad += 1
        objs.append((qp, mr, cq))
        qps += 1
        mrs += 1
    for qp, mr, cq in reversed(objs):
        qp.close()
        mr.close()
        cq.close()
    pd.close()
    rounds += 1
print('RESULT %s' % json.dumps({'rounds': rounds, 'qps': qps, 'mrs': mrs, 'bad': bad}), flush=True)
'''

# fault rules on the client's device, dir=any (its frames out and in)
FAULTS = {
    'none': None,
    'drop': 'drop prob={p}% seed={seed}',
    'dup': 'dup prob={p}% seed={seed}',
    'reorder': 'reorder prob={p}% hold=2 release=3 seed={seed}',
    'corrupt-icrc': 'corrupt part=icrc prob={p}% seed={seed}',
    'corrupt-payload': 'corrupt part=payload prob={p}% seed={seed}',
}
_END_RACE = re.compile(r'^Failed status transport retry counter exceeded \(12\) for wr_id 2$', re.M)
RETRY_EXC = re.compile(r'transport retry counter exceeded|[Ss]tatus:? 12\b|RETRY_EXC|'
                       r'status 12\b|retry exceeded')
ROCE_DROPS = ('rx_drop_icrc', 'rx_drop_malformed')


def rss_kib(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for ln in f:
                if ln.startswith('VmRSS:'):
                    return int(ln.split()[1])
    except OSError:
        return None
    return None


BIG_MAPPING_KIB = 128 << 10


def smaps_split_kib(pid):
    """(RSS of mappings of 128 MiB or more, RSS of the rest) of a process, in
    KiB, or None.  In a QEMU the big mappings are the guest's RAM and TCG's
    code buffer, which fill on first touch; the rest is QEMU's own heap,
    stacks and libraries, where a host-side leak (the device model's
    allocations among them) would show."""
    big = rest = 0
    size = 0
    try:
        with open('/proc/%d/smaps' % pid) as f:
            for ln in f:
                if ln.startswith('Size:'):
                    size = int(ln.split()[1])
                elif ln.startswith('Rss:'):
                    if size >= BIG_MAPPING_KIB:
                        big += int(ln.split()[1])
                    else:
                        rest += int(ln.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return big, rest


def guest_used_kib(vm):
    """MemTotal - MemAvailable inside the guest (KiB), or None."""
    try:
        out = vm.run("grep -E '^(MemTotal|MemAvailable):' /proc/meminfo", timeout=30).output
        kv = {ln.split(':')[0]: int(ln.split()[1]) for ln in out.splitlines() if ':' in ln}
        return kv['MemTotal'] - kv['MemAvailable']
    except Exception:   # a busy or faulted guest: skip this sample
        return None


def slope_per_min(samples):
    """Least-squares slope of [(t seconds, KiB)] in KiB per minute (None with < 2 samples)."""
    if len(samples) < 2:
        return None
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    den = sum((t - mt) ** 2 for t, _ in samples)
    if den == 0:
        return None
    return 60.0 * sum((t - mt) * (v - mv) for t, v in samples) / den


def cm_scale(s, c, conns=1000, msgs=10, size=100, cmtime=True, timeout=900):
    """ucmatose (and cmtime) with `conns` connections from c to s.  Returns a dict: 'ucmatose'
    (ok, secs, output tails) and 'cmtime' (ok, secs, the client's per-step table)."""
    res = {}
    port = next_port()
    fmt = dict(port=port, sip=s.ip, cip=c.ip, n=conns, m=msgs, size=size)
    t0 = time.monotonic()
    srv, cli = client_server(s.vm, 'ucmatose -p %(port)d -c %(n)d -C %(m)d -S %(size)d' % fmt,
                             c.vm, 'ucmatose -s %(sip)s -b %(cip)s -p %(port)d -c %(n)d -C %(m)d -S %(size)d'
                             % fmt, port, listen='cm', timeout=timeout, server_timeout=120)
    res['ucmatose'] = {'secs': time.monotonic() - t0, 'srv': srv, 'cli': cli,
                       'ok': all(r.ok and 'test complete' in r.output and 'return status 0' in r.output
                                 for r in (srv, cli))}
    if cmtime:
        port = next_port()
        fmt['port'] = port
        t0 = time.monotonic()
        srv, cli = client_server(s.vm, 'cmtime -p %(port)d -c %(n)d' % fmt,
                                 c.vm, 'cmtime -s %(sip)s -b %(cip)s -p %(port)d -c %(n)d' % fmt,
                                 port, listen='cm', timeout=timeout, server_timeout=120)
        res['cmtime'] = {'secs': time.monotonic() - t0, 'srv': srv, 'cli': cli,
                         'ok': srv.ok and cli.ok, 'steps': cmtime_steps(cli.output)}
    return res


def cmtime_steps(out):
    """cmtime's tables: [{'test': title, 'step': {name: {col: int}}}] in the order printed."""
    tables, cur, title = [], None, ''
    cols = None
    for ln in out.splitlines():
        if ln and not ln[0].isspace() and 'test' in ln and '(' in ln:
            title = ln.strip()
        elif ln.startswith('step'):
            cols = ln.split()[1:]
            cur = {'test': title, 'step': {}}
            tables.append(cur)
        elif cur is not None and cols:
            f = ln.rsplit(None, len(cols))
            if len(f) == len(cols) + 1 and all(x.isdigit() for x in f[1:]):
                cur['step'][f[0].strip()] = dict(zip(cols, map(int, f[1:])))
    return tables


class Soak:
    def __init__(self, topology, seed=None, churn_batch=16, log=print):
        self.t = topology
        self.s, self.c = topology.pair(refresh=True)
        self.seed = seed if seed is not None else random.randrange(1 << 30)
        self.rng = random.Random(self.seed)
        self.churn_batch = churn_batch
        self.log = log
        self.counts = {}
        self.failures = []
        self.rss = {v.name: [] for v in topology.vms}
        self.rss_rest = {v.name: [] for v in topology.vms}     # outside guest RAM/TCG buffer
        self.guest_used = {v.name: [] for v in topology.vms}   # the guest's own MemAvailable
        self.checks = {'stats_monotonic': 0, 'corrupt_dropped': 0, 'faults_accounted': 0}
        self.fired = {}
        self.churn = {'rounds': 0, 'qps': 0, 'mrs': 0, 'bad': 0}
        self.dmesg = DmesgWatch(topology)
        self.t0 = None

    # ---- helpers ----------------------------------------------------------------------------
    def count(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def fail(self, what):
        self.failures.append('%7.1f s: %s' % (time.monotonic() - self.t0, what))
        self.log('soak: FAILURE %s' % what[:3000])

    def qom_ids(self, vm):
        return ['%s-%d' % (m.split('-')[0], i) for i, (m, _, _) in enumerate(vm.nics) if m == 'qrnic']

    def qom(self, vm, dev, prop, value=None):
        path = '/machine/peripheral/' + dev
        if value is None:
            return vm.qmp_cmd('qom-get', path=path, property=prop)
        return vm.qmp_cmd('qom-set', path=path, property=prop, value=value)

    def stats(self):
        return {(v.name, d): self.qom(v, d, 'stats') for v in self.t.vms for d in self.qom_ids(v)}

    def objects(self):
        return {(v.name, d): (len(self.qom(v, d, 'qps')), len(self.qom(v, d, 'cqs')))
                for v in self.t.vms for d in self.qom_ids(v)}

    def sample_rss(self, guest=False):
        """QEMU VmRSS, and its part outside the big mappings; with guest=True
        also the guest's own memory in use (one command per guest)."""
        now = time.monotonic() - self.t0
        for v in self.t.vms:
            k = rss_kib(v.proc.pid)
            if k is not None:
                self.rss[v.name].append((now, k))
            sp = smaps_split_kib(v.proc.pid)
            if sp is not None:
                self.rss_rest[v.name].append((now, sp[1]))
            if guest:
                g = guest_used_kib(v)
                if g is not None:
                    self.guest_used[v.name].append((now, g))

    # ---- traffic steps (client c -> server s) ---------------------------------------------------
    def _pair(self, what, srv_cmd, cli_cmd, listen='tcp', timeout=300):
        port = next_port()
        try:
            return client_server(self.s.vm, srv_cmd % {'port': port}, self.c.vm, cli_cmd % {'port': port},
                                 port, listen=listen, timeout=timeout)
        except ListenTimeout as e:
            self.fail('%s: %s' % (what, e))
            return None, None

    def _judge(self, what, fault, srv, cli, good):
        if srv is None:
            return
        if srv.ok and cli.ok and good(srv, cli):
            self.count(what + ':ok')
            return
        outp = srv.output + cli.output
        if fault == 'drop' and RETRY_EXC.search(outp):
            self.count(what + ':retry_exc')
            return
        if (what in ('rping', 'ucmatose') and fault != 'none' and cli.ok and srv.timed_out
                and not srv.output.strip()):
            # The client checked every message and exited; the server never saw the disconnect.
            # The likely cause (seen once under corrupt-icrc, not traced further): the client's
            # DREQ, a MAD on QP1, was lost to the fault, and a CM whose cm_id is destroyed does
            # not resend it; the IB CM has no keepalive, so the server waits.
            self.count(what + ':dreq_lost')
            return
        if what == 'pingpong' and fault == 'drop':
            for done, other in ((srv, cli), (cli, srv)):
                if (done.ok and ' iters in' in done.output and not other.ok and not other.timed_out
                        and _END_RACE.search(other.output)):
                    self.count(what + ':end_race')
                    return
        self.fail('%s under %s: server rc %s%s, client rc %s%s\n--- server\n%s\n--- client\n%s'
                  % (what, fault, srv.rc, ' (timeout)' if srv.timed_out else '', cli.rc,
                     ' (timeout)' if cli.timed_out else '', srv.output[-1500:], cli.output[-1500:]))

    def step_pingpong(self, fault):
        s, c = self.s, self.c
        n = 100
        common = '-p %%(port)d -s 4096 -n %d -c' % n
        srv, cli = self._pair('pingpong', 'ibv_rc_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                              'ibv_rc_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip))
        self._judge('pingpong', fault, srv, cli, lambda a, b: '%d iters in' % n in b.output)
        if srv is not None and srv.ok and cli.ok:
            self.count('bytes_checked', 2 * n * 4096)

    def step_rping(self, fault):
        s, c = self.s, self.c
        srv, cli = self._pair('rping', 'rping -s -a %s -p %%(port)d -V -C 50 -S 4096' % s.ip,
                              'rping -c -a %s -I %s -p %%(port)d -V -C 50 -S 4096' % (s.ip, c.ip), listen='cm')
        self._judge('rping', fault, srv, cli, lambda a, b: 'rping data transfer error' not in a.output + b.output)
        if srv is not None and srv.ok and cli.ok:
            self.count('bytes_checked', 50 * 4096)

    def step_ucmatose(self, fault):
        s, c = self.s, self.c
        n, m, size = 20, 20, 1024
        srv, cli = self._pair('ucmatose', 'ucmatose -p %%(port)d -c %d -C %d -S %d' % (n, m, size),
                              'ucmatose -s %s -b %s -p %%(port)d -c %d -C %d -S %d' % (s.ip, c.ip, n, m, size),
                              listen='cm')
        self._judge('ucmatose', fault, srv, cli,
                    lambda a, b: all('return status 0' in r.output for r in (a, b)))
        if srv is not None and srv.ok and cli.ok:
            self.count('cm_connections', n)

    def _perftest(self, tool, fault):
        s, c = self.s, self.c
        common = '-p %(port)d -F -n 300 -s 65536'
        srv, cli = self._pair(tool, '%s -d %s -x %d %s' % (tool, s.ibdev, s.gid, common),
                              '%s -d %s -x %d %s %s' % (tool, c.ibdev, c.gid, common, s.ip))
        self._judge(tool, fault, srv, cli, lambda a, b: perftest_table(b.output) is not None)
        if srv is not None and srv.ok and cli.ok:
            self.count('bytes_moved', 300 * 65536)

    def step_write_bw(self, fault):
        self._perftest('ib_write_bw', fault)

    def step_read_bw(self, fault):
        self._perftest('ib_read_bw', fault)

    STEPS = ('pingpong', 'rping', 'ucmatose', 'write_bw', 'read_bw')

    # ---- one cycle ------------------------------------------------------------------------------
    def cycle(self, churn_secs):
        jobs = []
        for ep in (self.s, self.c):
            jobs.append((ep.vm, ep.vm.spawn('python3 -u %s %s %d %d' % (CHURN, ep.ibdev, churn_secs,
                                                                      self.churn_batch))))
        cdev = self.qom_ids(self.c.vm)[0]
        for name in self.STEPS:
            fault = self.rng.choice(sorted(FAULTS))
            before = self.stats()
            rule = FAULTS[fault]
            if rule:
                rule = rule.format(p=self.rng.choice((1, 2, 5)), seed=self.rng.randrange(1 << 30))
                self.qom(self.c.vm, cdev, 'fault', rule)
            getattr(self, 'step_' + name)(fault)
            fired = sum(r['fired'] for r in self.qom(self.c.vm, cdev, 'fault-rules')) if rule else 0
            self.qom(self.c.vm, cdev, 'fault-clear', True)
            time.sleep(0.5)                     # frames a reorder rule held are released by now
            after = self.stats()
            self.count('steps')
            self.fired[fault] = self.fired.get(fault, 0) + fired
            self.check_stats(name, fault, fired, before, after, (self.c.vm.name, cdev))
            self.sample_rss()
        for vm, job in jobs:
            r = job.wait(churn_secs + 300)
            if r.running:
                r = job.stop()
                self.fail('churn in %s did not finish:\n%s' % (vm.name, r.output[-2000:]))
                continue
            m = re.search(r'^RESULT (.*)$', r.output, re.M)
            if r.rc != 0 or not m:
                self.fail('churn in %s failed (rc %s):\n%s' % (vm.name, r.rc, r.output[-2000:]))
                continue
            res = json.loads(m.group(1))
            for k in self.churn:
                self.churn[k] += res[k]
            if res['bad']:
                self.fail('churn in %s: %d MR contents read back wrong' % (vm.name, res['bad']))
        for v in self.t.vms:
            try:
                v.ping(timeout=30)
            except Exception as e:      # noqa: BLE001  (a hung agent is what this looks for)
                self.fail('%s does not answer: %s' % (v.name, e))
        bad = self.dmesg.problems()
        if bad:
            self.fail('kernel log:\n  ' + '\n  '.join(bad[:20]))
        self.count('cycles')

    def check_stats(self, step, fault, fired, before, after, faulted):
        for key in after:
            down = [k for k in after[key] if after[key][k] < before[key].get(k, 0)]
            if down:
                self.fail('%s/%s: counters went down during %s: %s' % (key[0], key[1], step, down))
            else:
                self.checks['stats_monotonic'] += 1
        d = {key: {k: after[key][k] - before[key].get(k, 0) for k in after[key]} for key in after}
        roce_drops = sum(d[key][k] for key in d for k in ROCE_DROPS)
        if fault.startswith('corrupt'):
            if roce_drops != fired:
                self.fail('%s under %s: %d frames corrupted, receivers dropped %d (%s)'
                          % (step, fault, fired, roce_drops,
                             {'%s/%s' % key: {k: d[key][k] for k in ROCE_DROPS} for key in d}))
            else:
                self.checks['corrupt_dropped'] += 1
        elif roce_drops:
            self.fail('%s under %s: %d frames dropped by ICRC/header checks with no corrupt rule'
                      % (step, fault, roce_drops))
        inj = d[faulted]['faults_injected']
        if inj != fired:
            self.fail('%s under %s: faults_injected moved by %d, the rule fired %d' % (step, fault, inj, fired))
        else:
            self.checks['faults_accounted'] += 1

    # ---- the whole run ---------------------------------------------------------------------------
    def run(self, seconds, cycle_secs=60):
        for v in self.t.vms:
            v.put(CHURN, CHURN_SCRIPT.encode())
            for d in self.qom_ids(v):
                self.qom(v, d, 'fault-clear', True)
        self.base_objects = self.objects()
        self.t0 = time.monotonic()
        self.sample_rss(guest=True)
        end = self.t0 + seconds
        while time.monotonic() < end:
            left = end - time.monotonic()
            self.cycle(max(5, min(cycle_secs, int(left * 0.6))))
            self.sample_rss(guest=True)
            self.log('soak: %.0f s, %d cycles, %d failures, counts %s, churn %s'
                     % (time.monotonic() - self.t0, self.counts.get('cycles', 0), len(self.failures),
                        self.counts, self.churn))
        self.elapsed = time.monotonic() - self.t0
        self.sample_rss(guest=True)
        users = {}
        for v in self.t.vms:
            out = v.run('rdma -j res show qp; rdma -j res show mr; rdma -j res show cq', timeout=60,
                        check=False).output
            users[v.name] = out.count('"pid"')
        if any(users.values()):
            self.fail('user verbs objects left after the soak: %s' % users)
        self.end_objects = self.objects()
        if self.end_objects != self.base_objects:
            self.fail('device QPs/CQs before %s, after %s' % (self.base_objects, self.end_objects))
        return self

    def summary(self):
        """{figure: value} of the run."""
        def fig(smp):
            warm = [p for p in smp if p[0] >= min(60.0, self.elapsed / 4)]
            return {'first_kib': smp[0][1] if smp else None, 'last_kib': smp[-1][1] if smp else None,
                    'slope_kib_per_min': slope_per_min(warm), 'samples': len(warm),
                    'series': [(round(t, 1), k) for t, k in smp]}
        slopes = {}
        for name, smp in self.rss.items():
            slopes[name] = fig(smp)
            slopes[name]['outside_big_mappings'] = fig(self.rss_rest[name])
            slopes[name]['guest_used'] = fig(self.guest_used[name])
        return {'seed': self.seed, 'seconds': round(self.elapsed, 1), 'counts': self.counts,
                'churn': self.churn, 'faults_fired': self.fired, 'checks': self.checks, 'rss': slopes,
                'objects_before': {'%s/%s' % k: v for k, v in self.base_objects.items()},
                'objects_after': {'%s/%s' % k: v for k, v in self.end_objects.items()},
                'failures': self.failures}
