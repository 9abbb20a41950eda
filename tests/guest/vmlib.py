# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers and fixtures for the guest tests (tests/test_guest_*.py).

Import the fixtures into a test module with
    from guest.vmlib import topo, guest_dmesg  # noqa: F401  (pytest fixtures)
and mark the tests @pytest.mark.guest (they run only when QRNIC_TIERS includes
"guest").  `topo` is parametrized indirectly:
    @pytest.mark.parametrize('topo', ['T1', 'T2'], indirect=True)

Booted topologies are shared by every test of the session (one at a time is
alive: asking for another powers the current one off).  Environment:
    QRNIC_GUEST_NO_BUILD=1   do not run build-qemu.sh / guest-image.sh first
                             (use the newest cached QEMU and images/latest)
    QRNIC_GUEST_IMAGE=DIR    use this image directory; QRNIC_QEMU=PATH this QEMU
    QRNIC_GUEST_SMP, QRNIC_GUEST_MEM   vCPUs / MiB per VM (default 1 / 1024)
    QRNIC_GUEST_APPEND       extra kernel command line words
    QRNIC_GUEST_PROPS        more -device qrnic properties (e.g. unlocked-run=off)
Logs of every boot: /tmp/qrnic-runs/<time>-<pid>/ (path printed at boot and
in failure messages).
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'scripts'))

from qrnic_vm import PrereqError, Topology, VMError  # noqa: E402
from qrnic_vm import tools as _tools  # noqa: E402
from qrnic_vm.tools import next_port, perftest_figure, perftest_table, wait_cm_listen, wait_tcp_listen, wait_until  # noqa: E402,F401

# ---- dmesg -------------------------------------------------------------------------
# Kernel log lines that fail a test (they mean a kernel or driver bug, or a
# user-space crash of a verbs program).
DMESG_BAD = re.compile(
    r'WARNING:|\bBUG[: ]|Oops|general protection fault|Call Trace|kernel BUG|UBSAN|KFENCE|KASAN|'
    r'list_(add|del) corruption|refcount_t:|INFO: task .* blocked|soft lockup|hard LOCKUP|'
    r'rcu: INFO|rcu_preempt detected stalls|Kernel panic|stack-protector|Unable to handle|'
    r'DMA-API|segfault at|traps:.*trap|double free|use-after-free|Bad page|BUG kmalloc|'
    r'Object already free|Poison overwritten|Redzone|unreferenced object')


class DmesgWatch:
    """Kernel log records of the guests since the last mark, checked against DMESG_BAD."""

    def __init__(self, topology):
        self.t = topology
        self.allowed = []
        self.marks = {}
        self.mark()

    # keyed by the guest's name: a migrated VM (Topology.migrate) is the same guest
    def mark(self):
        for v in self.t.vms:
            self.marks[v.guest_name] = v.kmsg_last_seq()

    def allow(self, regex):
        """Do not fail on lines matching regex (for tests that provoke a kernel message)."""
        self.allowed.append(re.compile(regex))

    def new(self):
        """{vm name: [(level, text)]} since the mark; moves the mark."""
        out = {}
        for v in self.t.vms:
            if not v.alive():
                continue
            recs = v.kmsg(self.marks.get(v.guest_name, -1))
            if recs:
                self.marks[v.guest_name] = recs[-1][0]
            out[v.name] = [(r[1], r[3]) for r in recs]
        return out

    def problems(self, new=None):
        bad = []
        for name, recs in (new if new is not None else self.new()).items():
            for lvl, text in recs:
                if (DMESG_BAD.search(text) or lvl <= 2) and not any(a.search(text) for a in self.allowed):
                    bad.append('%s: <%d> %s' % (name, lvl, text))
        return bad


# ---- topologies (shared, one alive at a time) -----------------------------------------
_topos = {}
_cleanup_registered = [False]


def _stop_all(keep=None):
    for name, t in list(_topos.items()):
        if name != keep:
            t.stop()
            del _topos[name]


def _healthy(t):
    try:
        for v in t.vms:
            if not v.alive():
                return False
            v.ping(timeout=20)
        return True
    except VMError:
        return False


def ensure_driver(t):
    """qrnic loaded and interfaces addressed in every qrnic VM (tests may leave it unloaded)."""
    if not t.image.has_driver:
        return
    for v in t.vms:
        if any(n[0] == 'qrnic' for n in v.nics):
            v.run('[ -d /sys/module/qrnic ] || modprobe qrnic; qrnic-netup >/dev/null', timeout=120)


def get_topology(name, config=None, overlay=False, smp=None, append=(), vm_append=None, hosts=None,
                 link=None):
    """The booted topology NAME (T1/T2/T3); overlay=True: one whose root disks are qcow2
    overlays (savevm/loadvm and migration need them), cached as NAME+overlay; smp: vCPUs
    per VM when a test needs a number other than QRNIC_GUEST_SMP's (cached as NAME+smpN);
    append: kernel command line words for this topology's guests (QRNIC_GUEST_APPEND's
    follow them), vm_append: {VM index: words} for some of them only (cached as
    NAME+append=...); hosts: Topology's hosts ('netns': each VM in a network namespace of
    its own; cached as NAME+hosts=...; None: $QRNIC_HOSTS or local); link: Topology's cable
    (cached as NAME+link=...; None: the topology's default)."""
    default_smp = int(os.environ.get('QRNIC_GUEST_SMP', '1'))
    smp = default_smp if smp is None else smp
    append = tuple(append)
    vm_append = {i: tuple(w) for i, w in (vm_append or {}).items() if w}
    key = name + ('+overlay' if overlay else '') + ('+smp%d' % smp if smp != default_smp else '') + \
        ('+append=' + ' '.join(append) if append else '') + \
        ''.join('+vm%d=%s' % (i, ' '.join(w)) for i, w in sorted(vm_append.items())) + \
        ('+hosts=' + hosts if hosts else '') + ('+link=' + link if link else '')
    t = _topos.get(key)
    if t is not None and not _healthy(t):
        print('vmlib: %s is not healthy any more; rebooting it (logs of the old one: %s)' % (name, t.rundir),
              file=sys.stderr)
        t.stop()
        del _topos[key]
        t = None
    if t is None:
        _stop_all()
        t = Topology(name, build=os.environ.get('QRNIC_GUEST_NO_BUILD') != '1',
                     smp=smp,
                     mem=int(os.environ.get('QRNIC_GUEST_MEM', '1024')), overlay=overlay,
                     append=append, hosts=hosts, link=link,
                     qrnic_props=os.environ.get('QRNIC_GUEST_PROPS', ''))
        for i, words in vm_append.items():
            t.vms[i].append += list(words)
        t.start()
        _topos[key] = t
        if config is not None and not _cleanup_registered[0]:
            config.add_cleanup(_stop_all)
            _cleanup_registered[0] = True
    ensure_driver(t)
    t.endpoints(refresh=True)
    return t


def host_calls(vm):
    """Sum over the VM's qrnic devices of the QOM host-calls counters
    (hw/qrnic.c: what entered the device from QEMU, docs/qemu.md)."""
    tot = {}
    for p in vm.qrnic_paths():
        for k, v in vm.qmp_cmd('qom-get', path=p, property='host-calls').items():
            tot[k] = tot.get(k, 0) + v
    return tot


@pytest.fixture(scope='module')
def topo(request):
    """A booted Topology; param 'T1' (default), 'T2' or 'T3'."""
    name = getattr(request, 'param', 'T1')
    try:
        return get_topology(name, request.config)
    except PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)


@pytest.fixture(autouse=True)
def guest_dmesg(request):
    """For tests that use `topo`: fail the test if the guests' kernel log shows a
    WARN/BUG/Oops/... during it.  Yields a DmesgWatch (call .allow(regex))."""
    if 'topo' not in request.fixturenames:
        yield None
        return
    t = request.getfixturevalue('topo')
    w = DmesgWatch(t)
    yield w
    if not all(v.alive() for v in t.vms):
        pytest.fail('a guest died during the test; logs in %s' % t.rundir, pytrace=False)
    bad = w.problems()
    if bad:
        pytest.fail('kernel log shows problems during the test (logs in %s):\n  %s'
                    % (t.rundir, '\n  '.join(bad[:40])), pytrace=False)


def need_driver(t, provider=True):
    if not t.image.has_driver:
        pytest.fail('the guest image has no qrnic.ko: %s' % t.image.driver_note, pytrace=False)
    if provider and not t.image.has_provider:
        pytest.fail('the guest image has no qrnic provider: %s' % t.image.provider_note, pytrace=False)


def pair(t):
    need_driver(t)
    try:
        return t.pair()
    except VMError as e:
        pytest.fail(str(e), pytrace=False)


# ---- client/server runs --------------------------------------------------------------
def client_server(*args, **kw):
    """qrnic_vm.tools.client_server; a server that never listens fails the test."""
    try:
        return _tools.client_server(*args, **kw)
    except _tools.ListenTimeout as e:
        pytest.fail(str(e), pytrace=False)


def check_pair(srv, cli):
    msgs = []
    for who, r in (('client', cli), ('server', srv)):
        if not r.ok:
            why = 'timed out' if r.timed_out else 'exit status %s' % r.rc
            msgs.append('%s `%s` %s:\n%s' % (who, r.cmd, why, r.output[-3000:]))
    if msgs:
        pytest.fail('\n'.join(msgs), pytrace=False)


def rc_pingpong(s, c, opts, timeout=300):
    """ibv_rc_pingpong from endpoint c to endpoint s with options opts (-n, -s, -c...) on a
    fresh port; both must succeed.  Returns (server result, client result)."""
    port = next_port()
    common = '-p %d %s' % (port, opts)
    srv, cli = client_server(s.vm, 'ibv_rc_pingpong -d %s -g %d %s' % (s.ibdev, s.gid, common),
                             c.vm, 'ibv_rc_pingpong -d %s -g %d %s %s' % (c.ibdev, c.gid, common, s.ip),
                             port, timeout=timeout)
    check_pair(srv, cli)
    return srv, cli


def rdma_res(vm, kind):
    """`rdma -j res show KIND` entries that belong to user processes."""
    r = vm.run('rdma -j res show %s' % kind, timeout=30)
    try:
        data = json.loads(r.out or '[]')
    except ValueError:
        pytest.fail('rdma -j res show %s: not JSON: %r' % (kind, r.out[:500]), pytrace=False)
    if isinstance(data, dict):          # older iproute2: {"<kind>": [...]}
        data = next(iter(data.values()), [])
    # kernel objects (GSI QP, ib_core's CQ and PD...) carry no pid
    return [e for e in data if isinstance(e, dict) and 'pid' in e]


def meminfo(vm):
    out = vm.run('sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1; cat /proc/meminfo', timeout=60)
    return {k.strip(): int(v.split()[0]) for k, v in (ln.split(':', 1) for ln in out.splitlines() if ':' in ln)}


# ---- the kernel driver's module parameters (guest-driver/kernel/README.md) ---------------
def module_param(vm, name, module='qrnic'):
    """A module parameter of the guest's kernel as sysfs shows it ('Y'/'N' for a bool)."""
    return vm.run('cat /sys/module/%s/parameters/%s' % (module, name)).out.strip()


def set_module_param(vm, name, value, module='qrnic'):
    """Writes a module parameter (True/False as 1/0) and checks sysfs reads it back
    (a bool as Y/N); the driver reads most of them when an object is created, so
    set it before the QPs, CQs or contexts it is for."""
    want = ('Y' if value else 'N') if isinstance(value, bool) else str(value)
    vm.run('echo %s > /sys/module/%s/parameters/%s'
           % (int(value) if isinstance(value, bool) else value, module, name))
    got = module_param(vm, name, module)
    assert got == want, (name, value, got)
    return got


# ---- both ends on one device (local loopback, spec 12.8) ---------------------------------
def hw_counters(vm, ibdev):
    """The device's QUERY_STATS counters (the driver's hw_counters in sysfs)."""
    out = vm.run('cd /sys/class/infiniband/%s/ports/1/hw_counters && grep . *' % ibdev,
                 timeout=60).output
    return {k: int(v) for k, v in (ln.split(':', 1) for ln in out.split() if ':' in ln)}


def one_device(topo):
    s, _ = pair(topo)
    return s


def run_local(ep, server_cmd, client_cmd, **kw):
    """Server and client in the same guest, on the same device (the commands'
    %(port)d is a fresh port); returns the server's and the client's results
    and how many frames the device looped back meanwhile."""
    before = hw_counters(ep.vm, ep.ibdev)
    port = next_port()
    srv, cli = client_server(ep.vm, server_cmd % {'port': port},
                             ep.vm, client_cmd % {'port': port}, port, **kw)
    check_pair(srv, cli)
    after = hw_counters(ep.vm, ep.ibdev)
    looped = after['loopback_frames'] - before['loopback_frames']
    assert looped > 0, (before, after)
    # every RoCE frame this device sent came back to it: nothing went on the
    # wire (tx_packets also counts the netdev's own Ethernet frames)
    d = {k: after[k] - before[k] for k in after}
    assert d['tx_packets'] - d['eth_tx_frames'] == looped, d
    return srv, cli, looped


# ---- verbs programs built on the host ----------------------------------------------
CACHE = os.environ.get('QRNIC_CACHE', '/var/cache/qrnic')
RDMA_BUILD = os.path.join(CACHE, 'rdma-core-56.1-build')


def host_verbs_program(src, out_dir):
    """Compile the C program SRC on the host against the cached rdma-core 56.1
    (the guest's version: scripts/build-provider.sh builds it; the guest image
    has no compiler) into OUT_DIR; returns the binary's bytes, for vm.put()."""
    inc, lib = os.path.join(RDMA_BUILD, 'include'), os.path.join(RDMA_BUILD, 'lib')
    if not os.path.exists(os.path.join(inc, 'infiniband', 'verbs.h')):
        pytest.fail('rdma-core 56.1 build not cached at %s (scripts/build-provider.sh makes it)'
                    % RDMA_BUILD, pytrace=False)
    out = os.path.join(str(out_dir), os.path.splitext(os.path.basename(src))[0])
    r = subprocess.run(['cc', '-O2', '-Wall', '-Wextra', '-Werror', '-std=gnu11', '-I', inc,
                        src, '-L', lib, '-libverbs', '-o', out],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with open(out, 'rb') as f:
        return f.read()
