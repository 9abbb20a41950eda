# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: the timing model in QEMU.  -device qrnic,profile=...,<param>=...,
the read-only QOM properties `timing`, `late-events`, `late-ns-total` and
`stats`, completions released on QEMU's virtual clock at their modelled time,
and a deterministic event timeline (the same qtest script twice gives the same
`-trace qrnic_event` output).

Time in these tests is deterministic: World(fixed_step_ns=...) advances the
virtual clock by a fixed amount per poll, never by real time, and the device
does its work at the virtual time it is due (hw/qrnic.c: the kick timer), so
every run of a test sees the same timeline."""
import random
import re

import pytest

import qrnic_harness as h
from qtest import Qemu, abi, scenarios
from qtest.driver import World
from qtest.qemu import run_device_help, try_start
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

# QRNIC_TIMING_PARAMS (model/qrnic_timing.h) as QEMU properties
PARAMS = ['clock-mhz', 'doorbell-cycles', 'wqe-cycles', 'req-pkt-cycles', 'resp-pkt-cycles',
          'ack-cycles', 'cqe-cycles', 'num-pu', 'pcie-read-ns', 'pcie-write-ns', 'pcie-mbps',
          'pcie-mrrs', 'pcie-mps', 'pcie-tlp-overhead', 'pcie-read-credits', 'link-mbps',
          'link-overhead', 'prop-ns', 'qpc-entries', 'qpc-ways', 'mpt-entries', 'mpt-ways',
          'mtt-entries', 'mtt-ways', 'mtt-miss-slots', 'mtt-miss-ns', 'mtt-prefetch', 'atomic-ns',
          'irq-moderation-ns', 'bf-write-ns']
TEACH = {'clock-mhz': 1, 'pcie-read-ns': 4000, 'pcie-write-ns': 2000, 'prop-ns': 5000,
         'link-mbps': 1000, 'num-pu': 1}
STEP = 1000     # ns of virtual time per poll while waiting


def test_every_timing_parameter_is_a_property(qemu_binary):  # noqa: F811
    rc, out = run_device_help(qemu_binary)
    assert rc == 0, out
    for p in PARAMS:
        m = re.search(rf'^\s*{p}=<uint32>\s+- timing: .*\(default: the profile\'s value\)$',
                      out, re.M)
        assert m, f'timing property {p} missing from -device qrnic,help'
    for p in ('profile', 'fault-plan', 'fault', 'late-events', 'late-ns-total',
              'faults-injected', 'stats', 'timing', 'fault-rules', 'fault-totals'):
        assert re.search(rf'^\s*{p}=<', out, re.M), p
    # the help lists the same parameters as the model (no property left out)
    listed = set(re.findall(r'^\s*([a-z0-9-]+)=<uint32>\s+- timing:', out, re.M))
    assert listed == set(PARAMS)


@pytest.mark.parametrize('opts,msg', [
    ('profile=bogus', "unknown timing profile 'bogus' (available: functional, cx5-100g, teach)"),
    ('profile=teach,clock-mhz=0', "clock_mhz must be 1..10000 (property 'clock-mhz')"),
    ('profile=cx5-100g,num-pu=65', "(property 'num-pu')"),
    ('profile=cx5-100g,pcie-mrrs=100', "(properties 'pcie-mrrs', 'pcie-mps')"),
    ('profile=teach,qpc-ways=3', "multiple of the ways, at most 2^20 (timing properties given: "
                                 "qpc-ways=3)"),
    ('pcie-read-ns=500', "timing property 'pcie-read-ns' has no effect with profile=functional"),
    ('profile=functional,prop-ns=1', "'prop-ns' has no effect with profile=functional"),
    ('profile=teach,prop-ns=-1', 'prop-ns'),
])
def test_bad_timing_options_refused(qemu_binary, opts, msg):  # noqa: F811
    rc, out = try_start(qemu_binary, ['-device', f'qrnic,{opts}'])
    assert rc not in (None, 0), f'QEMU accepted -device qrnic,{opts}:\n{out}'
    assert msg in out and 'qrnic' in out, out


def test_profiles_and_overrides_reach_the_model(qemu_binary):  # noqa: F811
    q = Qemu(qemu_binary, [
        '-device', 'qrnic,id=f,addr=04.0',
        '-device', 'qrnic,id=cx,addr=05.0,profile=cx5-100g',
        '-device', 'qrnic,id=t,addr=06.0,profile=teach,pcie-read-ns=123,num-pu=2',
        '-device', 'qrnic,id=x,addr=07.0,profile=functional'], name='profiles')
    try:
        def tm(dev):
            return q.qmp('qom-get', path=f'/machine/peripheral/{dev}', property='timing')
        assert tm('f')['profile'] == 'functional' and tm('x')['profile'] == 'functional'
        cx = tm('cx')
        assert cx['profile'] == 'cx5-100g' and cx['link-mbps'] == 100000
        assert cx['pcie-read-ns'] == 250 and set(cx) == set(PARAMS) | {'profile'}
        t = tm('t')
        assert t['profile'] == 'teach'
        assert t['pcie-read-ns'] == 123 and t['num-pu'] == 2     # overridden
        assert t['prop-ns'] == 5000 and t['clock-mhz'] == 1       # the profile's
        # the properties themselves: UINT32_MAX = unset
        get = lambda d, p: q.qmp('qom-get', path=f'/machine/peripheral/{d}', property=p)  # noqa
        assert get('t', 'pcie-read-ns') == 123
        assert get('t', 'prop-ns') == 0xffffffff
        assert get('cx', 'profile') == 'cx5-100g'
        for d in ('f', 'cx', 't'):
            assert get(d, 'late-events') == 0 and get(d, 'late-ns-total') == 0
            st = get(d, 'stats')
            assert set(st) == set(abi.STAT_NAMES)
            assert st['late_events'] == 0 and st['faults_injected'] == 0
    finally:
        q.close()


# ---- completions at their modelled time --------------------------------------------------
def _pair(binary, opts, name):
    w = World.single(binary, 2, dev_opts=opts, fixed_step_ns=STEP, name=name)
    a, b = w.devs
    conn = h.connect_rc(a, b, mtu=1024, cq_log=6)
    la, rb = a.reg_mr(conn.pda, 8192), b.reg_mr(conn.pdb, 8192)
    la.write(0, bytes(range(256)) * 4)
    w.settle()
    return w, conn, la, rb


def _post_write(w, conn, la, rb, n=1024):
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=0x77)
    w.settle()
    return w.qemus[0].clock()


def _cqe_time_by_deadlines(binary, opts, name):
    """Post one WRITE on a fresh pair and step the virtual clock from one
    timer deadline to the next until its CQE shows: returns (ns from the
    doorbell to the CQE, the deadlines on the way)."""
    w, conn, la, rb = _pair(binary, opts, name)
    try:
        q = w.qemus[0]
        t0 = _post_write(w, conn, la, rb)
        stops = []
        while not conn.cqa.peek():
            t = q.clock_step()
            assert t is not None and len(stops) < 1000, 'no CQE and no timer pending'
            w.settle(2)
            stops.append(t - t0)
        c = conn.cqa.poll()[0]
        assert c['status_name'] == 'SUCCESS' and c['wr_id'] == 0x77, c
        assert rb.read(0, 1024) == bytes(range(256)) * 4
        return q.clock() - t0, stops
    finally:
        w.close()


@pytest.fixture(scope='module')
def teach_write(qemu_binary):  # noqa: F811
    return _cqe_time_by_deadlines(qemu_binary, 'profile=teach', 'teach')


def test_functional_completes_without_time(qemu_binary):  # noqa: F811
    """profile=functional: the CQE is in memory before the clock moves at all."""
    w, conn, la, rb = _pair(qemu_binary, '', 'functional')
    try:
        t0 = _post_write(w, conn, la, rb)
        w.settle()
        assert conn.cqa.peek() == 1
        assert w.qemus[0].clock() == t0
        assert rb.read(0, 1024) == bytes(range(256)) * 4
    finally:
        w.close()


def test_teach_write_takes_its_modelled_time(teach_write):
    """profile=teach: the WRITE's CQE appears only after the modelled time,
    which covers at least the WQE fetch and payload reads over PCIe, the
    cable twice (data, ACK) and the posted CQE write."""
    t, stops = teach_write
    lower = 2 * TEACH['pcie-read-ns'] + 2 * TEACH['prop-ns'] + TEACH['pcie-write-ns'] \
        + 2 * 1024 * 8 * 1000 // (TEACH['link-mbps'] * 1000)
    assert t >= lower, (t, lower, stops)
    assert t < 1_000_000, (t, stops)
    assert len(stops) >= 3, stops          # frame out, ACK back, CQE write at least


def test_teach_cqe_not_before_its_time_one_jump(qemu_binary, teach_write):  # noqa: F811
    """The same script on a fresh QEMU: clock_step to 1 ns before the modelled
    time in one jump -> no CQE; 1 ns more -> the CQE.  (The device handles a
    frame at the virtual time it arrives even inside one long clock_step.)"""
    t, _ = teach_write
    w, conn, la, rb = _pair(qemu_binary, 'profile=teach', 'teach-jump')
    try:
        q = w.qemus[0]
        t0 = _post_write(w, conn, la, rb)
        q.clock_step(t - 1)
        w.settle()
        assert conn.cqa.peek() == 0, 'CQE visible before its modelled time'
        assert q.clock() - t0 == t - 1
        q.clock_step(1)
        w.settle()
        assert conn.cqa.peek() == 1, 'no CQE at its modelled time'
        assert conn.cqa.poll()[0]['status_name'] == 'SUCCESS'
        assert conn.a.dev.qom_get('late-events') == 0
    finally:
        w.close()


def test_override_shifts_the_completion(qemu_binary, teach_write):  # noqa: F811
    """prop-ns=50000 instead of the profile's 5000: the WRITE crosses the
    cable twice (data, then the ACK), so its CQE comes exactly 90 us later."""
    t, _ = teach_write
    t2, _ = _cqe_time_by_deadlines(qemu_binary, 'profile=teach,prop-ns=50000', 'teach-prop')
    assert t2 - t == 2 * (50000 - TEACH['prop-ns'])


def test_cx5_profile_moves_data(qemu_binary):  # noqa: F811
    """profile=cx5-100g runs the usual RC operations (run_until moves the clock)."""
    w = World.single(qemu_binary, 2, dev_opts='profile=cx5-100g', fixed_step_ns=STEP,
                     name='cx5')
    try:
        conn = h.connect_rc(*w.devs, mtu=4096, cq_log=6)
        scenarios.exercise_rc(conn, seed=5)
        assert w.devs[0].qom_get('timing')['profile'] == 'cx5-100g'
    finally:
        w.close()


# ---- late events -------------------------------------------------------------------------
def test_late_events_counted_and_readable_over_qmp(qemu_binary):  # noqa: F811
    """A stopped VM does not run virtual-clock timers; the clock still moves
    under qtest.  Effects due meanwhile are released late when it continues:
    late-events / late-ns-total (QOM) equal QUERY_STATS late_events /
    late_ns_total."""
    w, conn, la, rb = _pair(qemu_binary, 'profile=teach', 'late')
    try:
        q = w.qemus[0]
        a, b = w.devs
        assert a.qom_get('late-events') == 0
        t0 = _post_write(w, conn, la, rb)
        q.qmp('stop')
        q.clock_step(1_000_000)
        w.settle()
        assert conn.cqa.peek() == 0
        q.qmp('cont')
        w.wait(lambda: conn.cqa.peek() == 1, 10, 'the CQE after cont')
        assert conn.cqa.poll()[0]['status_name'] == 'SUCCESS'
        late, late_ns = a.qom_get('late-events'), a.qom_get('late-ns-total')
        assert late >= 1
        # the WRITE's frame was due well before the 1 ms the VM stood still
        assert 500_000 < late_ns <= 1_000_000 * late, (late, late_ns)
        st = a.query_stats()
        assert (st['late_events'], st['late_ns_total']) == (late, late_ns)
        assert a.qom_get('stats')['late_events'] == late
        assert q.clock() - t0 >= 1_000_000
        # a device reset clears the counters, like every counter
        w.reset_devices()
        assert a.qom_get('late-events') == 0 and a.qom_get('late-ns-total') == 0
    finally:
        w.close()


# ---- determinism ---------------------------------------------------------------------------
def test_icount_needs_tcg(qemu_binary):  # noqa: F811
    """Why determinism is tested on the qtest clock: QEMU refuses -icount
    with the qtest accelerator (icount is a TCG feature).  Under qtest the
    virtual clock moves only on clock_step, which is as deterministic."""
    rc, out = try_start(qemu_binary, ['-icount', 'shift=0,sleep=off'])
    assert rc not in (None, 0) and 'icount' in out, out


def _timeline(binary, tmp_path, tag):
    """One scripted run: two teach-profile devices, fault rules through QMP,
    WRITE, READ (a lost response), SEND, atomics; returns the qrnic_event
    trace lines."""
    log = tmp_path / f'events-{tag}.log'
    w = World.single(binary, 2, dev_opts='profile=teach', fixed_step_ns=2000,
                     name=f'det-{tag}', extra_args=['-trace', f'qrnic_event,file={log}'])
    try:
        a, b = w.devs
        conn = h.connect_rc(a, b, mtu=1024, cq_log=6)
        b.fault(f'drop dir=tx qp={conn.qa.qpn} op=read-resp nth=3 count=1')
        b.fault('corrupt dir=rx part=payload prob=10% seed=9 count=2')
        la, rb = scenarios.mrs(conn, 16384)
        rng = random.Random(11)
        scenarios.rdma_write(conn, la, rb, rng, n=6000, sges=2)
        scenarios.rdma_read(conn, la, rb, rng, n=5000)
        scenarios.send_recv(conn, la, rb, rng, n=2500)
        scenarios.atomics(conn, la, rb)
        fired = [r['fired'] for r in b.qom_get('fault-rules')]
        clock = w.qemus[0].clock()
    finally:
        w.close()
    lines = [ln for ln in log.read_text().splitlines() if ln.startswith('qrnic_event ')]
    return lines, fired, clock


def test_same_script_same_timeline(qemu_binary, tmp_path):  # noqa: F811
    """Run the same qtest script twice: the device traces (every pipeline
    event with its virtual time) are identical, faults included."""
    l1, f1, c1 = _timeline(qemu_binary, tmp_path, 'one')
    l2, f2, c2 = _timeline(qemu_binary, tmp_path, 'two')
    assert len(l1) > 200, len(l1)
    assert f1[0] == 1, f1                       # the READ response was dropped
    assert (f1, c1) == (f2, c2)
    if l1 != l2:
        first = next(i for i, (x, y) in enumerate(zip(l1, l2)) if x != y) \
            if any(x != y for x, y in zip(l1, l2)) else min(len(l1), len(l2))
        pytest.fail(f'timelines differ at event {first}:\n  {l1[first:first + 1]}\n'
                    f'  {l2[first:first + 1]}  ({len(l1)} vs {len(l2)} events)')
    times = {int(re.search(r' t=(\d+) ', ln).group(1)) for ln in l1}
    assert len(times) > 50, 'the events should be spread over virtual time'
