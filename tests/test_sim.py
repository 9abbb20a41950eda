# SPDX-License-Identifier: GPL-2.0-or-later
"""The standalone simulator (tests/harness/qrnic_sim.c, scripts/qrnic-sim,
docs/simulator.md): every operation runs and verifies its data, the JSON
figures are consistent, the link model bounds them, runs are deterministic,
loss is survived, trace/pcap/workload files work, the docs' examples run."""
import json
import os
import re
import struct
import subprocess

import pytest

import qrnic_harness as q

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
OPS = ['write', 'read', 'send', 'cas', 'faa', 'ud-send']
ATOMIC = ('cas', 'faa')


def run_sim(*args, json_out=True, deterministic=True, expect_rc=0):
    cmd = [SIM] + (['--json'] if json_out else []) + \
        (['--deterministic'] if deterministic else []) + [str(a) for a in args]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == expect_rc, \
        f'{" ".join(cmd)}: rc {r.returncode}\nstdout: {r.stdout[-3000:]}\nstderr: {r.stderr[-3000:]}'
    return r


def sim_json(*args, **kw):
    r = run_sim(*args, **kw)
    runs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    return runs[0] if len(runs) == 1 else runs


def check_sane(j, op, size, qps, count, hosts=2, rate_bps=None):
    """The invariants every successful run must satisfy."""
    links = hosts // 2
    assert j['ok'] and j['error'] is None
    assert j['config']['op'] == op
    assert j['links'] == links and j['qps_total'] == qps * links
    size = 8 if op in ATOMIC else size
    assert j['config']['size'] == size
    assert j['posted'] == qps * links * count
    if op == 'ud-send':
        assert j['messages'] + j['lost'] == j['posted']
    else:
        assert j['messages'] == j['posted'] and j['lost'] == 0
    assert j['bytes'] == j['messages'] * size
    v = j['verified']
    assert v['errors'] == 0
    if v['mode'] == 'each':
        if op in ATOMIC:
            assert v['atomics'] == j['messages']
        else:
            assert v['messages'] == j['messages'] and v['bytes'] == j['bytes']
    if v['mode'] != 'off':
        assert v['final_buffers'] > 0
    lat = j['latency_ns']
    assert 0 < lat['min'] <= lat['p50'] <= lat['p90'] <= lat['p99'] <= lat['p999'] <= lat['max']
    assert lat['min'] <= lat['mean'] <= lat['max']
    assert j['sim_ns'] >= lat['max'] > 0
    assert j['msg_rate'] == pytest.approx(j['messages'] * 1e9 / j['sim_ns'], rel=1e-6)
    assert j['bandwidth_bps'] == pytest.approx(j['bytes'] * 8e9 / j['sim_ns'], rel=1e-6, abs=1e-3)
    if rate_bps:
        assert j['bandwidth_bps'] <= rate_bps * links
    assert j['wire']['frames'] >= j['messages']
    assert j['warnings'] == {'guest_errors': 0, 'busy_unscheduled': 0}
    assert 'host' not in j      # --deterministic


# ---- every operation ---------------------------------------------------------------
@pytest.mark.parametrize('op', OPS)
def test_each_op_runs_and_verifies(op):
    j = sim_json('--op', op, '--size', 1000, '--qps', 2, '--depth', 4, '--count', 40)
    check_sane(j, op, 1000, 2, 40, rate_bps=100e9)
    assert j['lost'] == 0


@pytest.mark.parametrize('op', OPS)
def test_each_op_multi_packet_messages_and_several_pairs(op):
    size = 4096 if op == 'ud-send' else 10000
    j = sim_json('--op', op, '--size', size, '--mtu', 1024, '--qps', 3, '--depth', 8,
                 '--count', 20, '--hosts', 4, '--rate', '25G', '--latency', '2us')
    check_sane(j, op, size, 3, 20, hosts=4, rate_bps=25e9)


def test_zero_length_messages():
    for op in ('write', 'read', 'send', 'ud-send'):
        j = sim_json('--op', op, '--size', 0, '--count', 10)
        assert j['ok'] and j['messages'] == 10 and j['bytes'] == 0


def test_host_figures_without_deterministic():
    j = sim_json('--count', 200, deterministic=False)
    h = j['host']
    assert h['seconds'] > 0 and h['packets_per_s'] > 0 and h['messages_per_s'] > 0
    assert h['packets_per_s'] == pytest.approx(j['wire']['frames'] / h['seconds'], rel=0.01)
    assert h['cpu_seconds'] > 0  # the run loop's CPU time
    # first touches in the run loop (getrusage): the frame buffers at least
    assert isinstance(h['page_faults'], int) and h['page_faults'] > 0


def test_host_loop_counters():
    # what the run loop did (for profiling): each clock advance follows an
    # idle scan, which is an iteration; the counts do not depend on the host
    args = ('--op', 'write', '--size', '8K', '--qps', 2, '--count', 100, '--profile', 'cx5-100g')
    a = sim_json(*args, deterministic=False)['host']['loop']
    b = sim_json(*args, deterministic=False)['host']['loop']
    assert a == b
    assert a['iterations'] >= a['idle_scans'] >= a['instants'] > 0
    assert a['dev_runs'] > 0 and a['timer_fires'] > 0   # timed: TX effects are events
    assert 'host' not in sim_json(*args)   # --deterministic leaves it out


def test_readable_table():
    r = run_sim('--op', 'read', '--size', '2K', '--count', 50, json_out=False, deterministic=False)
    out = r.stdout
    for word in ('messages completed', 'data verified', 'simulated time', 'bandwidth',
                 'message rate', 'p50', 'p99.9', 'max', 'host:', 'functional profile'):
        assert word in out, out


# ---- the link model ------------------------------------------------------------------
@pytest.mark.parametrize('rate,rate_bps', [('10G', 10e9), ('25Gbps', 25e9), ('100G', 100e9)])
def test_bandwidth_bounded_by_and_close_to_link_rate(rate, rate_bps):
    j = sim_json('--op', 'write', '--size', '64K', '--qps', 2, '--depth', 8, '--count', 30,
                 '--rate', rate, '--latency', '1us')
    check_sane(j, 'write', 65536, 2, 30, rate_bps=rate_bps)
    assert j['bandwidth_bps'] > 0.9 * rate_bps     # headers are ~1%


def test_framing_overhead_lowers_bandwidth():
    a = sim_json('--size', 1024, '--count', 200, '--rate', '10G')
    b = sim_json('--size', 1024, '--count', 200, '--rate', '10G', '--overhead', 24)
    assert b['bandwidth_bps'] < a['bandwidth_bps'] <= 10e9


def test_two_links_carry_twice_one():
    one = sim_json('--size', '16K', '--count', 50, '--rate', '10G', '--hosts', 2)
    two = sim_json('--size', '16K', '--count', 50, '--rate', '10G', '--hosts', 4)
    assert 10e9 < two['bandwidth_bps'] <= 20e9
    assert two['bandwidth_bps'] == pytest.approx(2 * one['bandwidth_bps'], rel=0.01)


@pytest.mark.parametrize('op', ['write', 'read', 'send', 'cas', 'ud-send'])
def test_latency_at_least_the_wire(op):
    """Today latency is wire latency + serialization; a timing model can only add."""
    j = sim_json('--op', op, '--size', 100, '--depth', 1, '--count', 20, '--latency', '3us',
                 '--rate', 0)
    hops = 1 if op == 'ud-send' else 2
    assert j['latency_ns']['min'] >= hops * 3000


@pytest.mark.parametrize('op', ['write', 'read', 'send', 'ud-send'])
def test_bigger_messages_never_have_lower_latency(op):
    sizes = [0, 1, 64, 1000, 1024, 1025, 4096] + ([] if op == 'ud-send' else [8192, 65536])
    prev = None
    for size in sizes:
        j = sim_json('--op', op, '--size', size, '--qps', 2, '--depth', 4, '--count', 30,
                     '--mtu', 1024, '--rate', '40G', '--latency', '700ns')
        lat = j['latency_ns']
        if prev:
            for k in ('min', 'p50', 'p90', 'p99', 'p999', 'max'):
                assert lat[k] >= prev[1][k], f'{op}: {k} of {size} B < of {prev[0]} B'
        prev = (size, lat)


def test_infinite_rate_zero_latency_takes_no_simulated_time():
    j = sim_json('--rate', 0, '--latency', 0, '--count', 100)
    assert j['ok'] and j['sim_ns'] == 0 and j['messages'] == 100
    assert j['bandwidth_bps'] is None and j['msg_rate'] is None


def test_harness_rate_serializes_frames_of_one_port():
    """hx_wire_set_rate (harness): at 1 Gb/s one bit is one ns; a WRITE of
    three frames then its ACK cannot finish before all their bits are sent."""
    import ctypes
    with q.World(2) as w:
        c = q.connect_rc(w.devs[0], w.devs[1], mtu=1024)
        a, b = c.a.dev, c.b.dev
        ma, mb = a.reg_mr(c.pda, 4096), b.reg_mr(c.pdb, 4096)
        fn = w._l.hx_wire_set_rate
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32], None
        fn(w.w, 1_000_000_000, 0)
        w.set_latency(0)
        t0 = w.now
        c.qa.post_send('RDMA_WRITE', [(ma, 0, 3000)], remote=(mb, 0))
        assert w.run() == 'idle'
        assert [x['status_name'] for x in c.a.cq.poll()] == ['SUCCESS']
        frames = [f for f in w.frames() if f.t >= t0]
        assert len(frames) == 4     # 3 requests, 1 ACK
        assert w.now - t0 >= 8 * sum(len(f.data) for f in frames)


# ---- determinism ----------------------------------------------------------------------
@pytest.mark.parametrize('op', OPS)
def test_same_seed_same_json(op):
    args = ('--op', op, '--size', 3000, '--mtu', 1024, '--qps', 2, '--depth', 4, '--count', 60,
            '--loss', '0.5%', '--seed', 11)
    if op not in ('write', 'send', 'ud-send'):
        args += ('--depth', 1)      # see test_loss_read_atomic_pipelined
    a, b = run_sim(*args), run_sim(*args)
    assert a.stdout == b.stdout and json.loads(a.stdout)['ok']


def test_same_seed_same_json_apart_from_host_figures():
    args = ('--count', 300, '--loss', '1%', '--seed', 5, '--qps', 2)
    a = sim_json(*args, deterministic=False)
    b = sim_json(*args, deterministic=False)
    a.pop('host'), b.pop('host')
    assert a == b


def test_other_seed_other_losses():
    a = sim_json('--count', 500, '--loss', '2%', '--seed', 1)
    b = sim_json('--count', 500, '--loss', '2%', '--seed', 2)
    assert a['ok'] and b['ok'] and a['wire']['dropped'] and b['wire']['dropped']
    assert (a['wire'], a['latency_ns']) != (b['wire'], b['latency_ns'])


# ---- loss -------------------------------------------------------------------------------
@pytest.mark.parametrize('op', OPS)
def test_loss_1pct_still_verifies(op):
    # pipelined READ/atomics under loss: see test_loss_read_atomic_pipelined
    depth = 8 if op in ('write', 'send', 'ud-send') else 1
    size = 2000 if op == 'ud-send' else 5000
    j = sim_json('--op', op, '--size', size, '--mtu', 1024, '--qps', 3, '--depth', depth,
                 '--count', 300, '--loss', '1%', '--seed', 3)
    check_sane(j, op, size, 3, 300, rate_bps=100e9)
    assert j['wire']['dropped'] > 0
    if op == 'ud-send':
        assert j['lost'] == j['wire']['dropped']    # one packet per message, no recovery
    else:
        assert j['stats']['retransmitted_packets'] > 0


@pytest.mark.parametrize('op', ['read', 'cas', 'faa'])
def test_loss_read_atomic_pipelined(op):
    """Regression: a sequence NAK must not move una_psn past a READ/ATOMIC
    whose response was lost (it was never re-requested: RETRY_EXC_ERR)."""
    for seed in (1, 2, 3, 4):
        j = sim_json('--op', op, '--size', 3000, '--mtu', 1024, '--depth', 8, '--count', 1000,
                     '--loss', '1%', '--seed', seed)
        check_sane(j, op, 3000, 1, 1000)


# ---- duration, profile, checker ------------------------------------------------------------
def test_duration_instead_of_count():
    j = sim_json('--op', 'write', '--size', '8K', '--qps', 2, '--depth', 4, '--duration', '100us',
                 '--rate', '25G')
    assert j['ok'] and j['config']['count'] == 0 and j['config']['duration_ns'] == 100000
    assert j['messages'] == j['posted'] > 0
    # posting stops at 100 us; what was in flight then completes
    assert 100000 <= j['sim_ns'] < 100000 + 8 * 4 * 8192 * 8 / 25 + 10000


def test_duration_needs_time_to_advance():
    r = run_sim('--duration', '1us', '--rate', 0, '--latency', 0, expect_rc=2)
    assert 'never advances' in r.stderr


def test_profile_selects_timing_and_rejects_unknown():
    j = sim_json('--profile', 'cx5-100g', '--count', 10)
    assert j['ok'] and j['config']['profile'] == 'cx5-100g' and j['timing'] == 'timed'
    r = run_sim('--profile', 'asic-v1', '--count', 10, expect_rc=2)
    assert 'unknown timing profile' in r.stderr and 'asic-v1' in r.stderr
    r = run_sim('--profile', 'cx5-100g', '--timing', 'no_such=1', '--count', 10, expect_rc=2)
    assert 'no_such' in r.stderr


@pytest.mark.parametrize('op', OPS)
def test_checker_catches_a_corrupted_destination(op):
    r = run_sim('--op', op, '--count', 20, '--inject-mismatch', 5, expect_rc=1)
    j = json.loads(r.stdout)
    assert not j['ok'] and j['verified']['errors'] == 1
    assert 'differs' in j['error'] or 'returned' in j['error']
    assert 'message 5' in r.stderr or 'atomic 5' in r.stderr


def test_checker_end_mode_catches_final_contents():
    r = run_sim('--count', 20, '--depth', 4, '--verify', 'end', '--inject-mismatch', 19,
                expect_rc=1)
    assert 'final destination data differs' in r.stderr


def test_usage_errors():
    for args, msg in ((['--op', 'nope'], 'unknown operation'),
                      (['--bogus'], 'unknown option'),
                      (['--trusted-wire'], 'trusted by default now'),
                      (['--hosts', 3], 'odd'),
                      (['--rate', '10Q'], 'bad rate unit'),
                      (['--op', 'ud-send', '--size', 5000], 'UD MTU'),
                      (['--loss', 2], 'below 1')):
        r = run_sim(*args, expect_rc=2)
        assert msg in r.stderr, (args, r.stderr)


def test_help():
    r = subprocess.run([SIM, '--help'], stdout=subprocess.PIPE, text=True, timeout=30)
    assert r.returncode == 0 and '--op' in r.stdout and '--trace' in r.stdout


# ---- trace and pcap ---------------------------------------------------------------------------
TRACE_FIELDS = ['seq', 'dev', 't_ns', 'type', 'qpn', 'psn', 'a', 'b', 'addr']
TRACE_TYPES = {'doorbell', 'wqe_fetch', 'translate', 'tx', 'rx', 'dma_read', 'dma_write', 'ack',
               'nak', 'retransmit', 'cqe', 'eqe', 'irq', 'drop', 'qp_state', 'admin',
               'window'}


def test_trace_jsonl(tmp_path):
    path = tmp_path / 'trace.jsonl'
    j = sim_json('--op', 'read', '--size', 3000, '--mtu', 1024, '--depth', 1, '--count', 10,
                 '--loss', '5%', '--seed', 4, '--trace', path)
    ev = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(ev) == j['trace']['events'] > 0 and j['trace']['lost'] == 0
    assert all(list(e) == TRACE_FIELDS for e in ev)
    assert [e['seq'] for e in ev] == list(range(len(ev)))
    assert all(a['t_ns'] <= b['t_ns'] for a, b in zip(ev, ev[1:]))
    types = {e['type'] for e in ev}
    assert types <= TRACE_TYPES and {'tx', 'rx', 'cqe', 'dma_write'} <= types
    assert {e['dev'] for e in ev} == {0, 1}
    tx = [e for e in ev if e['type'] == 'tx']
    assert len(tx) == j['wire']['frames']
    # every request of the requester carries its PSN
    assert {e['psn'] for e in tx if e['dev'] == 0} >= {100 + 3 * i for i in range(10)}


def test_trace_csv_and_pcap(tmp_path):
    tr, pc = tmp_path / 'trace.csv', tmp_path / 'wire.pcap'
    j = sim_json('--op', 'send', '--size', 2500, '--mtu', 1024, '--count', 7, '--trace', tr,
                 '--pcap', pc)
    lines = tr.read_text().splitlines()
    assert lines[0].split(',') == TRACE_FIELDS
    rows = [line.split(',') for line in lines[1:]]
    assert len(rows) == j['trace']['events'] and all(len(r) == 9 for r in rows)
    assert sum(r[3] == 'tx' for r in rows) == j['wire']['frames']
    data = pc.read_bytes()
    magic, = struct.unpack_from('<I', data, 0)
    assert magic == 0xa1b23c4d           # nanosecond pcap
    off, n = 24, 0
    while off < len(data):
        _, _, incl, _ = struct.unpack_from('<IIII', data, off)
        off += 16 + incl
        n += 1
    assert off == len(data) and n == j['wire']['frames']


def test_trace_format_override(tmp_path):
    path = tmp_path / 'trace.txt'
    sim_json('--count', 3, '--trace', path, '--trace-format', 'csv')
    assert path.read_text().startswith('seq,dev,t_ns,')


# ---- workload files ------------------------------------------------------------------------------
def test_workload_file_sections_and_overrides(tmp_path):
    wl = tmp_path / 'w.conf'
    wl.write_text('# shared\nop = write\nqps 2\n--depth 4\ncount 30\nrate 25G\n\n'
                  '[small]\nsize 64\n\n[big]\nsize = 32K\nverify end\n\n[atomic]\nop faa\n')
    runs = sim_json('--workload', wl, '--seed', 9)
    assert [r['name'] for r in runs] == ['small', 'big', 'atomic']
    assert [r['config']['size'] for r in runs] == [64, 32768, 8]
    assert [r['config']['op'] for r in runs] == ['write', 'write', 'faa']
    assert runs[1]['verified']['mode'] == 'end'
    for r, size in zip(runs, (64, 32768, 8)):
        check_sane(r, r['config']['op'], size, 2, 30, rate_bps=25e9)
        assert r['config']['seed'] == 9 and r['config']['depth'] == 4
    # the command line wins over the file
    runs = sim_json('--workload', wl, '--count', 5)
    assert [r['messages'] for r in runs] == [10, 10, 10]


def test_workload_file_errors(tmp_path):
    wl = tmp_path / 'bad.conf'
    wl.write_text('op write\nfrobnicate 3\n')
    r = run_sim('--workload', wl, expect_rc=2)
    assert 'bad.conf:2:' in r.stderr and 'frobnicate' in r.stderr


# ---- fault plans -------------------------------------------------------------------------------------
def test_plan(tmp_path):
    plan = tmp_path / 'plan.txt'
    plan.write_text('# drop the third frame the requester sends\ndrop dir=tx nth=3 count=1\n')
    r = subprocess.run([SIM, '--json', '--deterministic', '--count', '20', '--plan', str(plan),
                        '--plan-hosts', '0'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    if r.returncode == 2 and 'not available yet' in r.stderr:
        pytest.skip('fault engine not in this build: ' + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j['ok'] and j['messages'] == 20
    assert j['stats'].get('faults_injected', 0) >= 1
    assert j['stats'].get('retransmitted_packets', 0) >= 1


@pytest.mark.parametrize('depth', [2, 8])
def test_plan_rnr_nak_with_sends_in_flight(tmp_path, depth):
    """Regression: one forged RNR NAK with more than one SEND in flight.
    The ACKs of the later SENDs arrive during the RNR wait; they used to
    cancel the RNR timer, and the run ended "stalled: 2 messages
    outstanding and nothing left to happen" (test_model_rnr.py)."""
    plan = tmp_path / 'plan.txt'
    plan.write_text('nak dir=tx type=rnr timer=4 count=1\n')
    args = ['--op', 'send', '--size', '4096', '--depth', str(depth), '--count', '100',
            '--plan', str(plan), '--plan-hosts', '1', '--json', '--deterministic']
    r = subprocess.run([os.path.join(REPO, 'scripts', 'qrnic-sim')] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                       env=dict(os.environ, QRNIC_BUILD_DIR=q.build_dir()))
    assert r.returncode == 0 and 'stalled' not in r.stderr, r.stderr
    j = json.loads(r.stdout)
    check_sane(j, 'send', 4096, 1, 100)
    st = j['stats']
    assert st['faults_injected'] == 1
    assert st['rnr_naks_rcvd'] == 1 and st.get('rnr_naks_sent', 0) == 0
    assert st.get('retransmit_timeouts', 0) == 0
    assert j['sim_ns'] >= 40_000            # the RNR wait (timer code 4) was kept


def test_plan_missing_file_or_feature():
    r = run_sim('--plan', '/nonexistent/plan', expect_rc=2)
    assert 'not available yet' in r.stderr or 'No such file' in r.stderr


# ---- the wrapper and the documentation ------------------------------------------------------------
def test_wrapper_script():
    r = subprocess.run([os.path.join(REPO, 'scripts', 'qrnic-sim'), '--op', 'cas', '--count', '5',
                        '--json', '--deterministic'], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300,
                       env=dict(os.environ, QRNIC_BUILD_DIR=q.build_dir()))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)['messages'] == 5


def doc_examples():
    text = open(os.path.join(REPO, 'docs', 'simulator.md')).read()
    return re.findall(r'^```sh\n(.*?)^```', text, flags=re.S | re.M)


def test_docs_have_examples():
    ex = doc_examples()
    assert len(ex) >= 5 and all('scripts/qrnic-sim' in e for e in ex)


@pytest.mark.parametrize('i', range(len(doc_examples())))
def test_docs_example_runs_as_written(i, tmp_path):
    script = doc_examples()[i]
    r = subprocess.run(['bash', '-euo', 'pipefail', '-c', script], cwd=REPO,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=dict(os.environ, QRNIC_BUILD_DIR=q.build_dir(), TMPDIR=str(tmp_path)))
    assert r.returncode == 0, f'example {i}:\n{script}\n---\n{r.stdout[-4000:]}'


def test_loss_window_vs_fixed_window():
    """--loss with the loss window (default) and with --fixed-window: both
    deliver every byte (--verify each); only the default cuts windows, and
    go-back-N then resends fewer packets (spec 12.3)."""
    args = ('--op', 'write', '--size', '64K', '--mtu', 1024, '--depth', 16, '--count', 300,
            '--loss', '1%', '--seed', 3, '--verify', 'each')
    win = sim_json(*args)
    fixed = sim_json(*args, '--fixed-window')
    for j in (win, fixed):
        check_sane(j, 'write', 65536, 1, 300)
        assert j['wire']['dropped'] > 0
    assert win['stats']['window_cuts'] >= 1
    assert fixed['stats'].get('window_cuts', 0) == 0   # zero counters are left out
    assert win['stats']['retransmitted_packets'] < fixed['stats']['retransmitted_packets']


def test_device_configuration_by_name():
    """--device K=V,... sets the model's configuration parameters (names
    and bounds from model/config.c) on every host; --device
    loss_window=off is --fixed-window; bad items are refused up front."""
    args = ('--op', 'write', '--size', '64K', '--mtu', 1024, '--depth', 16, '--count', 300,
            '--loss', '1%', '--seed', 3)
    assert sim_json(*args, '--device', 'loss_window=off') == sim_json(*args, '--fixed-window')
    # --fixed-window wins over the --device item
    assert sim_json(*args, '--device', 'loss_window=on', '--fixed-window') == \
        sim_json(*args, '--fixed-window')
    assert sim_json('--count', 100, '--device', 'max_mtt=4096,gid_tbl_len=4')['ok']
    run_sim('--count', 100, '--device', 'max_mtt=8', expect_rc=2)    # too few pages for the MRs
    for item, msg in [('max_qp=1', 'max_qp must be in 4..65536 (got 1)'),
                      ('max_qp_wr=3', 'max_qp_wr must be a power of two in 2..4194304 (got 3)'),
                      ('bogus=1', 'bogus is not a configuration parameter'),
                      ('max_qp', "'max_qp' is not name=value"),
                      ('eth_mtu=x', 'eth_mtu must be a number')]:
        r = run_sim('--count', 10, '--device', item, expect_rc=2)
        assert f'--device: {msg}' in r.stderr, (item, r.stderr)


@pytest.mark.parametrize('profile', ['functional', 'cx5-100g'])
@pytest.mark.parametrize('op', ['write', 'read', 'send'])
def test_trusted_wire_changes_nothing_but_the_icrc(profile, op, tmp_path):
    # by default the wire is trusted (no ICRCs, payloads by reference);
    # --icrc computes and checks them: the same simulated results, the
    # same data checks; --plan and --pcap turn the trusted wire off
    args = ['--op', op, '--size', 10000, '--mtu', 1024, '--qps', 2, '--count', 200,
            '--loss', '1%', '--ack-timeout', 8, '--profile', profile]
    args += ['--rate', 0, '--latency', 0] if profile != 'functional' else []
    args += ['--offsets', 'random', '--mr-size', '1M'] if op != 'send' else []
    trusted = sim_json(*args)
    checked = sim_json(*args, '--icrc')
    assert trusted['config']['trusted_wire'] is True and checked['config']['trusted_wire'] is False
    assert trusted['ok'] and trusted['wire']['dropped'] > 0
    checked['config']['trusted_wire'] = True
    assert trusted == checked
    plan = tmp_path / 'plan.txt'
    plan.write_text('corrupt dir=rx prob=2% seed=3\n')
    j = sim_json(*args, '--plan', plan)
    assert j['ok'] and j['config']['trusted_wire'] is False and j['stats']['rx_drop_icrc'] > 0
    j = sim_json(*args, '--pcap', tmp_path / 'w.pcap')
    assert j['ok'] and j['config']['trusted_wire'] is False
    for extra, says in (([], 'skipped: nothing corrupts or captures frames'),
                        (['--icrc'], 'computed and checked (--icrc)'),
                        (['--plan', plan], 'computed and checked (--plan/--pcap)')):
        out = run_sim(*args, *extra, json_out=False).stdout
        assert 'ICRC                   ' + says in out


# ---- selective signaling (--signal) -------------------------------------------------------
@pytest.mark.parametrize('op', OPS)
def test_signal_every_nth_completes_and_verifies_all(op):
    # a CQE for every 4th send WQE and the last of each post burst: every
    # message is still counted and its data checked; fewer CQEs come
    j = sim_json('--op', op, '--size', 1000, '--qps', 2, '--depth', 8, '--count', 60, '--signal', 4)
    check_sane(j, op, 1000, 2, 60, rate_bps=100e9)
    assert j['config']['signal'] == 4
    every = sim_json('--op', op, '--size', 1000, '--qps', 2, '--depth', 8, '--count', 60)
    assert every['config']['signal'] == 1
    recv_cqes = 120 if op in ('send', 'ud-send') else 0     # receive CQEs are always there
    assert every['stats']['cqes'] == 120 + recv_cqes
    assert j['stats']['cqes'] == recv_cqes + 120 // 4      # 60 per QP: 3, 7, ..., 59
    if op not in ('ud-send', 'read') and op not in ATOMIC:
        # unsignaled SEND/WRITE messages are acknowledged by later ACKs
        assert j['stats']['acks_sent'] < every['stats']['acks_sent']


def test_signal_1_is_the_default_and_n_may_not_exceed_the_depth():
    base = ['--count', 64, '--depth', 16]
    assert sim_json(*base) == sim_json(*base, '--signal', 1)
    # every 16th and the last: a full window always holds one
    j = sim_json(*base, '--count', 70, '--signal', 16)
    check_sane(j, 'write', 4096, 1, 70)
    assert j['stats']['cqes'] == 5      # 15, 31, 47, 63 and 69
    r = run_sim(*base, '--signal', 17, expect_rc=2)
    assert '--signal 17 is above --depth 16' in r.stderr


def test_signal_checker_catches_an_unsignaled_message():
    # message 5 is not signaled with --signal 4 (3 and 7 are): its data is
    # checked when message 7's CQE reports it
    r = run_sim('--count', 20, '--depth', 8, '--signal', 4, '--inject-mismatch', 5, expect_rc=1)
    assert 'message 5' in r.stderr and 'differs' in r.stderr


@pytest.mark.parametrize('op', ['write', 'read', 'send'])
def test_signal_with_loss_and_duration(op):
    j = sim_json('--op', op, '--count', 300, '--signal', 8, '--loss', '1%', '--ack-timeout', 8)
    check_sane(j, op, 4096, 1, 300)
    assert j['wire']['dropped'] > 0
    # --duration: the run may stop on unsignaled WQEs; they are counted
    # (and checked) once nothing is left in flight
    for d in ('30us', '31us', '32us', '33us'):
        j = sim_json('--op', op, '--duration', d, '--count', 0, '--signal', 8)
        assert j['ok'] and j['messages'] == j['posted'] > 0 and j['verified']['errors'] == 0
        assert j['verified']['messages'] == j['messages']


def test_signal_usage_errors():
    for v in (0, 4097, 'x', 17):
        r = run_sim('--signal', v, expect_rc=2)
        assert '--signal' in r.stderr, (v, r.stderr)


def test_selective_signaling_keeps_the_port_busy():
    # cx5-100g, 1 QP x 128 outstanding 4 KiB WRITEs: the port limit (97.3
    # Gb/s) whether each WQE asks for a CQE or 1 in 2 or 1 in 100 do.  The
    # requester used to fetch a WQE only after the payload of the one
    # before it when one step started several WQEs: 45 and 34 Gb/s.
    args = ['--profile', 'cx5-100g', '--rate', 0, '--latency', 0, '--op', 'write',
            '--size', '4K', '--depth', 128, '--count', 3000, '--verify', 'off']
    each = sim_json(*args)['bandwidth_bps']
    assert each > 95e9
    for n in (2, 100):
        j = sim_json(*args, '--signal', n)
        assert j['bandwidth_bps'] > 0.98 * each, (n, j['bandwidth_bps'], each)


@pytest.mark.parametrize('profile', ['functional', 'cx5-100g'])
def test_deep_unsignaled_queue_acks_every_16_messages(profile):
    # perftest-like: 128 outstanding unsignaled 4 KiB WRITEs, a CQE per 100.
    # The requester asks for an ACK every 16 messages and on signaled ones
    # (spec 12.1); the full WQE window adds none while an AckReq is still
    # unanswered.  (It used to add one per window reopening: 295 ACKs here.)
    count = 3000
    wire = ['--rate', 0, '--latency', 0] if profile != 'functional' else []   # functional: 100G, 500 ns
    j = sim_json('--profile', profile, *wire, '--op', 'write', '--size', '4K',
                 '--depth', 128, '--signal', 100, '--count', count, '--verify', 'off')
    assert j['ok'] and j['stats']['cqes'] == count // 100
    assert count // 16 <= j['stats']['acks_sent'] <= count // 16 + count // 100 + 5
    assert j['wire']['frames'] == count + j['stats']['acks_sent']


def _asan_instrumented(path):
    try:
        with open(path, 'rb') as f:
            return b'__asan_init' in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not _asan_instrumented(SIM),
                    reason='qrnic-sim is not an ASan build (the san tier runs this)')
@pytest.mark.parametrize('args', [
    ['--count', '50', '--device', 'cc_algo=1', '--profile', 'cx5-100g', '--timing', 'link_mbps=40000',
     '--trace-format', 'csv', '--plan-hosts', 'all', '--name', 'x'],
    ['--workload', 'WL', '--quiet'],
    ['--bogus-option'],
], ids=['options', 'workload', 'refused'])
def test_sim_frees_its_options(tmp_path, args):
    """LeakSanitizer finds nothing at exit: option values, the command line's
    and a workload file's option lists (they leaked before)."""
    wl = tmp_path / 'wl.txt'
    wl.write_text('size 4096\ncount 20\n[a]\nqps 2\n[b]\nqps 3\nprofile cx5-100g\n')
    args = [str(wl) if a == 'WL' else a for a in args]
    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=1:halt_on_error=1:exitcode=99')
    env.pop('LD_PRELOAD', None)
    r = subprocess.run([SIM, '--deterministic'] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300, env=env)
    assert r.returncode in (0, 2), r.stderr[-3000:]
    assert 'LeakSanitizer' not in r.stderr, r.stderr[-3000:]


def test_incast_stagger_starts_senders_one_after_the_other():
    """--stagger T: incast sender i starts posting at (i - 1) x T; the idle
    time before a start is skipped, the data verified; refused without
    --incast."""
    j = sim_json('--hosts', 4, '--incast', '--op', 'write', '--size', 4096, '--depth', 4,
                 '--duration', '600us', '--count', 0, '--rate', '10G', '--sample', '50us',
                 '--stagger', '200us')
    assert j['ok'] and j['error'] is None
    cum = j['incast']['samples']['flow_msgs']         # per flow, cumulative, every 50 us
    assert len(cum) == 3
    for i, f in enumerate(cum):
        start = i * 200 // 50                         # samples before the flow's start
        assert all(v == 0 for v in f[:start]), (i, f[:start + 2])
        assert f[start + 1] > 0, (i, f[:start + 3])
    assert all(f['bytes'] > 0 for f in j['incast']['flows'])   # each sent (data checked: ok)
    r = run_sim('--hosts', 2, '--stagger', '1ms', expect_rc=2)
    assert '--stagger is for --incast' in r.stderr
