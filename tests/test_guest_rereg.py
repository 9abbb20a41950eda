# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: ibv_rereg_mr and ibv_modify_cq through the kernel driver
(rereg_user_mr, modify_cq) and the provider, in one T1 guest, both ends on one
device (local loopback):

- tests/guest/qrnic_mr_cq.c, built here on the host against the cached rdma-core
  56.1 build (the guest has no compiler) and copied in:
  ``rereg``: IBV_REREG_MR_CHANGE_TRANSLATION (the same rkey writes and reads the
  new range, byte for byte; the old range and a byte past the new end are
  REM_ACCESS_ERR and the old pages keep their bytes), _CHANGE_ACCESS (REMOTE_WRITE
  taken away: refused and memory unchanged; given back: written; a registration
  pinned read-only made writable: written), _CHANGE_PD (a QP of the old PD
  refused, one of the new PD written, the new PD busy), TRANSLATION and PD
  together, and bad input (no flags, PROT_NONE pages, REMOTE_WRITE without
  LOCAL_WRITE: refused, the MR unchanged);
  ``modcq``: an armed CQ's event without moderation (first CQE), with cq_count 4
  (none after 3 CQEs, one after the 4th), with cq_period (one CQE of 1000), for an
  error CQE (at once), modify_cq without attributes refused, moderation off again;
  ``xrcini`` (issue 16): an XRC SEND QP given ACCESS_FLAGS at INIT, RTR and RTS
  reports each in ibv_query_qp; MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER are accepted
  but read 0, because Linux's ib_uverbs removes them from an XRC INI QP's mask
  before the driver (modify_qp_mask(); kernel users' ib_modify_qp passes them, and
  the model and qtest tests check that the device keeps them); an attribute outside
  the transition's is refused and changes nothing; bad arguments get a usage
  message;
- the driver's debugfs counters show the reregistrations it did in place
  (rereg_mr) and those that pinned pages again (rereg_repin);
- rdma-core 56.1's own pyverbs test_mr.MRTest (rereg of access, atomic access,
  PD and address with traffic, and bad flags): all 6 pass, none skipped.

- tests/guest/kmod/qrnic_ktest.c, a test module built here against the guest
  kernel's headers and loaded in the guest: ib_resize_cq on a *kernel* CQ (the
  driver's path without udata, which switches its own ring under the CQ lock)
  with CQEs pending (too small: -EINVAL and nothing lost; bigger; smaller with
  some polled), new CQEs on the new ring across its end, and
  rdma_set_cq_moderation (the kernel's ib_modify_cq): accepted, an error CQE
  still raises the event at once.  Its CQEs come from receive WQEs flushed by
  ERROR, so no network is needed.  A kernel QP going to RESET takes its unpolled
  CQEs out of a CQ it shares with another QP (whose CQEs stay, in order).  Then a
  kernel XRC INI QP given ACCESS_FLAGS,
  MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER through ib_modify_qp reports all three in
  ib_query_qp (issue 16: the driver passes them, the device keeps them).

- qrnic_ktest fatal=1: software flush completions of a dead device's kernel
  work requests (CQEs in the ring first, then every outstanding send, signaled
  or not, and receive, in order, IB_WC_WR_FLUSH_ERR), the CQ handler called
  once, -EIO from later posts, ib_drain_qp on the dead device, then the
  recovery, with no WARN in dmesg.

User CQ resize goes through the driver's resize_cq with udata and is tested by
tests/test_guest_mw_cq.py.  Not tested: moderation of successful completions on a
kernel CQ (the userspace program covers it through the same driver op), a kernel
CQ resized while a peer's traffic completes into it.
"""
import json
import os
import subprocess

import pytest

from guest.vmlib import DmesgWatch, host_verbs_program, pair, topo  # noqa: F401
from guest.rdma_core_suite import run_suite

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get('QRNIC_CACHE', '/var/cache/qrnic')
PROG_SRC = os.path.join(HERE, 'guest', 'qrnic_mr_cq.c')
GUEST_PROG = '/tmp/qrnic_mr_cq'
SUITE_DIR = '/tmp/rdma-core-tests-mr'


@pytest.fixture(scope='module')
def prog(tmp_path_factory):
    """qrnic_mr_cq built on the host against rdma-core 56.1 (the guest's version)."""
    return host_verbs_program(PROG_SRC, tmp_path_factory.mktemp('prog'))


KMOD_DIR = os.path.join(HERE, 'guest', 'kmod')
KVER = '6.12.95+deb12-amd64'


@pytest.fixture(scope='module')
def ktest_ko(tmp_path_factory):
    """qrnic_ktest.ko built against the guest kernel's headers (scripts/build-kmod.sh
    unpacks them), with warnings as errors as the driver."""
    kdir = os.environ.get('QRNIC_KDIR') or os.path.join(
        CACHE, 'kroot-' + KVER, 'usr', 'src', 'linux-headers-' + KVER)
    if not os.path.exists(os.path.join(kdir, 'Makefile')):
        pytest.fail('no kernel build dir at %s (scripts/build-kmod.sh prepares it)' % kdir,
                    pytrace=False)
    bld = tmp_path_factory.mktemp('ktest')
    for f in ('Kbuild', 'qrnic_ktest.c'):
        with open(os.path.join(KMOD_DIR, f), 'rb') as src, open(bld / f, 'wb') as dst:
            dst.write(src.read())
    r = subprocess.run(['make', '-C', kdir, 'M=%s' % bld, 'W=1', 'modules'],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and 'warning:' not in r.stderr, r.stdout[-3000:] + r.stderr[-3000:]
    with open(bld / 'qrnic_ktest.ko', 'rb') as f:
        return f.read()


def _mem_mgt(ep):
    pci = ep.vm.run('basename $(readlink -f /sys/class/infiniband/%s/device)' % ep.ibdev).strip()
    out = ep.vm.run('cat /sys/kernel/debug/qrnic/%s/mem_mgt' % pci)
    return {k: int(v) for k, v in (ln.split() for ln in out.splitlines() if len(ln.split()) == 2)}


def _run(ep, prog, mode):
    ep.vm.put(GUEST_PROG, prog, mode=0o755)
    r = ep.vm.run('%s %s %s %d' % (GUEST_PROG, mode, ep.ibdev, ep.gid), timeout=300,
                  check=False, merge=True)
    print('qrnic_mr_cq %s on %s:\n%s' % (mode, ep.ibdev, r.output))
    return r


def test_rereg_mr_program(topo, prog):
    """Translation, access and PD changes enforced by the device; bad input refused."""
    s, _ = pair(topo)
    before = _mem_mgt(s)
    r = _run(s, prog, 'rereg')
    assert r.rc == 0 and r.output.rstrip().endswith('ALL OK'), r.output
    oks = [ln for ln in r.output.splitlines() if ln.startswith('ok ')]
    assert len(oks) == 9, oks
    after = _mem_mgt(s)
    d = {k: after[k] - before.get(k, 0) for k in ('rereg_mr', 'rereg_repin')}
    # in place: translation, access x2, read-only -> writable, PD, PD+translation
    # (the three bad ones fail); pinned again: the translations and read-only -> writable
    assert d == {'rereg_mr': 6, 'rereg_repin': 3}, (before, after)


def test_modify_cq_program(topo, prog):
    """CQ event moderation by count and period through the kernel's modify_cq."""
    s, _ = pair(topo)
    r = _run(s, prog, 'modcq')
    assert r.rc == 0 and r.output.rstrip().endswith('ALL OK'), r.output
    oks = [ln for ln in r.output.splitlines() if ln.startswith('ok ')]
    assert len(oks) == 7, oks


def test_xrc_ini_keeps_access_flags(topo, prog):
    """Issue 16: an XRC SEND QP's ACCESS_FLAGS reaches the device and comes back from
    ibv_query_qp (ib_uverbs removes MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER on the way);
    a refused modify changes nothing."""
    s, _ = pair(topo)
    r = _run(s, prog, 'xrcini')
    assert r.rc == 0 and r.output.rstrip().endswith('ALL OK'), r.output
    oks = [ln for ln in r.output.splitlines() if ln.startswith('ok ')]
    assert len(oks) == 5, oks


def test_usage_errors(topo, prog):
    """The program's bad arguments: a usage message and exit status 2, no crash."""
    s, _ = pair(topo)
    s.vm.put(GUEST_PROG, prog, mode=0o755)
    for args in ('', 'bogus %s 0' % s.ibdev, 'rereg no_such_dev 0', 'rereg %s x' % s.ibdev,
                 'rereg %s 999' % s.ibdev):
        r = s.vm.run('%s %s' % (GUEST_PROG, args), timeout=60, check=False, merge=True)
        assert r.rc == 2 and ('usage' in r.output or 'no device' in r.output or
                              'bad GID index' in r.output), (args, r.rc, r.output)


def test_rdma_core_mr_tests(topo):
    """rdma-core's MRTest (its rereg tests) against one qrnic device: all pass."""
    s, c = pair(topo)
    res, r = run_suite(c, ['test_mr.py', 'test_cq.py'], ['test_mr.MRTest'], SUITE_DIR,
                       if_missing='fail')
    print('rdma-core MRTest on %s: %s' % (c.ibdev, json.dumps(res, indent=1, sort_keys=True)))
    want = {'MRTest.test_mr_rereg_atomic', 'MRTest.test_mr_rereg_access',
            'MRTest.test_mr_rereg_access_bad_flow', 'MRTest.test_mr_rereg_pd',
            'MRTest.test_mr_rereg_addr', 'MRTest.test_reg_mr_bad_flags'}
    assert set(res) == want, (sorted(res), r.output[-6000:])
    bad = {k: v_ for k, v_ in res.items() if v_ != 'ok'}
    assert not bad and r.rc == 0, '%s\n%s' % (bad, r.output[-8000:])


def test_kernel_module_cq_resize_moderation_xrc_ini(topo, ktest_ko):
    """From a kernel module: ib_resize_cq and rdma_set_cq_moderation on a kernel CQ;
    an XRC INI QP's responder attributes through ib_modify_qp / ib_query_qp."""
    s, _ = pair(topo)
    v = s.vm
    v.put('/tmp/qrnic_ktest.ko', ktest_ko)
    v.run('rmmod qrnic_ktest 2>/dev/null', timeout=30, check=False)
    r = v.run('insmod /tmp/qrnic_ktest.ko dev=%s' % s.ibdev, timeout=120, check=False,
              merge=True)
    log = v.run('dmesg | grep qrnic_ktest', timeout=30, check=False).output
    print('insmod qrnic_ktest on %s: rc %s %s\n%s' % (s.ibdev, r.rc, r.output, log))
    v.run('rmmod qrnic_ktest', timeout=30, check=False)
    assert r.rc == 0 and 'qrnic_ktest: PASS' in log and 'FAIL' not in log, log
    assert 'grown' in log and 'shrunk to 16 with 3 of 5 pending' in log, log
    assert 'XRC INI kept access 0x2 max_dest_rd_atomic 3 min_rnr_timer 20' in log, log
    assert 'RESET took 3 CQEs of its QP, kept 2 of another' in log, log


def test_kernel_module_flush_completions_on_fatal(topo, ktest_ko):
    """qrnic_ktest fatal=1: after inject_fatal a kernel CQ returns the CQEs left in its
    ring, then one IB_WC_WR_FLUSH_ERR completion per outstanding send (signaled or not)
    and receive, in posting order, with wr_id, QP and opcode; its handler ran once; an
    ib_alloc_cq (softirq) CQ gets its flushes by itself; posts fail with -EIO; the drain
    returns.  Then the device recovers (a new ib_device) without a WARN in dmesg.  Fails on a driver without software flushes: no
    completion after the two CQEs in the ring, and the handler is never called."""
    from test_guest_faults import debugfs, wait_recovered
    s, _ = pair(topo)
    v = s.vm
    dmesg = DmesgWatch(topo)
    before = int(debugfs(s, 'recoveries'))
    n_eps = len(topo.endpoints(refresh=True))
    v.put('/tmp/qrnic_ktest.ko', ktest_ko)
    v.run('rmmod qrnic_ktest 2>/dev/null', timeout=30, check=False)
    r = v.run('insmod /tmp/qrnic_ktest.ko dev=%s fatal=1' % s.ibdev, timeout=180, check=False,
              merge=True)
    # this test's kernel log only (an earlier test of the module loaded it too)
    new = dmesg.new()
    log = '\n'.join(t for recs in new.values() for _, t in recs
                    if 'qrnic_ktest' in t or 'flushing outstanding' in t)
    bad = dmesg.problems(new)
    assert not bad, '\n'.join(bad)
    print('insmod qrnic_ktest fatal=1 on %s: rc %s %s\n%s' % (s.ibdev, r.rc, r.output, log))
    v.run('rmmod qrnic_ktest', timeout=30, check=False)
    assert r.rc == 0 and 'qrnic_ktest: PASS' in log, log
    assert 'qrnic_ktest: fatal: 13 flush completions in order' in log, log
    # the device comes back: a new ib_device with an ACTIVE port, one more recovery
    wait_recovered(topo, n_eps, timeout=120)
    s2, _ = pair(topo)
    assert int(debugfs(s2, 'recoveries')) == before + 1
    bad = dmesg.problems()
    assert not bad, '\n'.join(bad)
