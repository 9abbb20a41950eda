# SPDX-License-Identifier: GPL-2.0-or-later
"""The live view (scripts/qrnic-view, docs/view.md): the model's queue
snapshots (qrnic_dev_view, model/query.c) through the harness, fuzzed QPs
in every state, the server's JSON and HTTP API on the simulator, bad input.
The browser test is tests/test_view_browser.py."""
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

import qrnic_harness as h

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
VIEW = os.path.join(REPO, 'scripts', 'qrnic-view')
PSN_MASK = 0xffffff


def _env():
    env = dict(os.environ)
    env['QRNIC_BUILD_DIR'] = h.build_dir()
    return env


# ---- the model's snapshots ----------------------------------------------------------
def test_view_after_connect_and_writes(world):
    a, b = world.devs
    c = h.connect_rc(a, b, mtu=1024, psn_a=0x100, psn_b=0x200, sq_log=5, rq_log=4, cq_log=7)
    qa, = [q for q in a.view('qp') if q['qpn'] == c.qa.qpn]
    assert (qa['state_name'], qa['type_name'], qa['state']) == ('RTS', 'RC', 3)
    assert qa['dest_qpn'] == c.qb.qpn and qa['path_mtu'] == 1024
    assert (qa['next_psn'], qa['una_psn'], qa['epsn']) == (0x100, 0x100, 0x200)
    assert (qa['sq_depth'], qa['rq_depth']) == (32, 16)
    assert (qa['retry_cnt'], qa['retry_left'], qa['timeout']) == (7, 7, 14)
    src = a.reg_mr(c.pda, 8192)
    dst = b.reg_mr(c.pdb, 8192)
    for i in range(3):      # 3 WRITEs of 2 KiB at MTU 1024: 2 packets each
        c.qa.post_send('RDMA_WRITE', [(src, 0, 2048)], remote=(dst, 0))
    qa = a.view('qp')[0]
    assert (qa['sq_pi'], qa['sq_ci']) == (3, 0)          # rung, nothing done yet
    world.run()
    qa, = a.view('qp')
    qb, = b.view('qp')
    assert (qa['sq_pi'], qa['sq_next'], qa['sq_ci']) == (3, 3, 3)
    assert (qa['next_psn'], qa['una_psn'], qa['high_psn'], qa['inflight']) == \
        (0x106, 0x106, 0x106, 0)
    assert qb['epsn'] == 0x106 and qb['msn'] == 3
    cq, = [x for x in a.view('cq') if x['cqn'] == c.cqa.cqn]
    assert (cq['depth'], cq['pi'], cq['written']) == (128, 3, 3)
    assert cq['ci'] == 0                    # the driver has not polled yet
    assert (cq['mod_count'], cq['mod_period_us']) == (0, 0)
    c.cqa.moderate(count=7, period_us=300)  # MODIFY_CQ: shown as the device keeps it
    cq, = [x for x in a.view('cq') if x['cqn'] == c.cqa.cqn]
    assert (cq['mod_count'], cq['mod_period_us']) == (7, 300)
    assert len(c.cqa.poll()) == 3
    eqs = a.view('eq')
    assert [e['eqn'] for e in eqs] == sorted(e['eqn'] for e in eqs) and eqs
    assert all(e['depth'] and e['pi'] >= e['ci'] for e in eqs)


def test_view_error_state_and_srq(world):
    a, b = world.devs
    c = h.connect_rc(a, b)
    c.qa.modify('ERR')
    qa, = [q for q in a.view('qp') if q['qpn'] == c.qa.qpn]
    assert qa['state_name'] == 'ERR'
    pd = a.alloc_pd()
    srq = a.create_srq(pd, log_depth=5)
    s, = a.view('srq')
    assert (s['srqn'], s['depth'], s['pi'], s['ci']) == (srq.srqn, 32, 0, 0)
    c.qa.destroy()
    assert c.qa.qpn not in [q['qpn'] for q in a.view('qp')]


STATES = ['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'ERR']


def test_view_fuzzed_qps_any_state(world):
    """Many QPs of every type, driven through random (also invalid)
    transitions with random attributes, random raw WQEs and doorbells, some
    destroyed: the snapshot lists exactly the live QPs, in order, with their
    state as QUERY_QP reports it, and PSNs within 24 bits."""
    rng = random.Random(24)
    a, b = world.devs
    pd = a.alloc_pd()
    cq = a.create_cq(6)
    qps = []
    for i in range(40):
        t = rng.choice(['RC', 'UC', 'UD'])
        q = a.create_qp(pd, cq, cq, t, sq_log=rng.randint(0, 8), rq_log=rng.randint(0, 8),
                        check=False)
        if q is not None:
            qps.append(q)
    assert len(qps) > 20
    for rnd in range(300):
        q = rng.choice(qps)
        act = rng.random()
        if act < 0.6:
            attrs = {}
            if rng.random() < 0.5:
                attrs['sq_psn'] = rng.getrandbits(32)
            if rng.random() < 0.5:
                attrs['rq_psn'] = rng.getrandbits(32)
            if rng.random() < 0.3:
                attrs['path_mtu'] = rng.randint(0, 7)
            if rng.random() < 0.3:
                attrs['dest_qpn'] = rng.getrandbits(32)
            q.modify(rng.choice(STATES), check=False, **attrs)
        elif act < 0.85:
            q.post_send_raw(bytes(rng.getrandbits(8) for _ in range(64)))
        elif act < 0.95:
            a.db_write(rng.randrange(0, 1 << 16) & ~7, rng.getrandbits(64))
        elif len(qps) > 5:
            q.destroy(check=False)
            qps.remove(q)
        world.run(ns=1_000_000)
        if rnd % 25 == 0 or rnd == 299:
            view = a.view('qp')
            nums = [v['qpn'] for v in view]
            assert nums == sorted(set(nums))
            live = {q.qpn: q for q in qps}
            assert set(live) <= set(nums)
            for v in view:
                assert v['next_psn'] <= PSN_MASK and v['una_psn'] <= PSN_MASK
                assert v['epsn'] <= PSN_MASK and v['inflight'] <= PSN_MASK
                if v['qpn'] in live:
                    qa = live[v['qpn']].query(check=False)
                    if qa:
                        assert v['state'] == qa['qp_state'], (v, qa)
            for k in ('cq', 'eq', 'srq'):
                a.view(k)
    assert not a.check()


# ---- the server -------------------------------------------------------------------------
def run_view(*args, timeout=120):
    return subprocess.run([sys.executable, VIEW] + list(args), env=_env(), capture_output=True,
                          text=True, timeout=timeout)


def test_state_json_from_simulator():
    """4 WRITEs of 4 KiB at MTU 1024 = 16 packets; the 3rd WRITE packet is
    dropped: the JSON shows the PSNs moved by exactly 16, the lost frame,
    the sequence NAK and the retransmissions."""
    r = run_view('--state', 'sim', '--count', '4', '--depth', '2', '--run-for', '2ms',
                 '--rule', 'drop dir=tx op=write nth=3 count=1', '--plan-hosts', '0')
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st['source'] == 'sim' and st['running'] is True
    assert st['workload'] == {'posted': 4, 'completed': 4, 'outstanding': 0, 'errors': []}
    req, resp = st['devices']
    qa, = req['qps']
    qb, = resp['qps']
    assert qa['state_name'] == qb['state_name'] == 'RTS'
    assert (qa['next_psn'], qa['una_psn'], qa['inflight']) == (0x100 + 16, 0x100 + 16, 0)
    assert qb['epsn'] == 0x100 + 16
    assert qa['sq_pi'] == qa['sq_ci'] == 4
    frames = st['frames']
    lost = [f for f in frames if f['status'] == 'lost']
    assert len(lost) == 1 and lost[0]['psn'] == 0x102 and lost[0]['src'] == 0
    naks = [f for f in frames if f['nak']]
    assert naks and naks[0]['nak'] == 'seq' and naks[0]['psn'] == 0x102 and naks[0]['src'] == 1
    retx = [f for f in frames if f['retx']]
    assert retx and retx[0]['psn'] == 0x102 and retx[0]['status'] == 'delivered'
    assert st['frame_counts']['lost'] == 1 and st['frame_counts']['naks'] == 1
    assert req['stats']['retransmitted_packets'] == st['frame_counts']['retransmitted']
    assert resp['shown_stats']['seq_naks_sent'] == 1
    # teach has translation caches: every lookup is a hit or a miss
    for c in ('qpc', 'mpt', 'mtt'):
        x = req['caches'][c]
        assert x['hits'] + x['misses'] > 0
        assert x['rate'] == pytest.approx(x['hits'] / (x['hits'] + x['misses']))


def test_state_json_functional_profile_has_no_cache_figures():
    r = run_view('--state', 'sim', '--profile', 'functional', '--count', '2', '--run-for', '1ms')
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert all(d['caches']['mtt']['rate'] is None for d in st['devices'])
    assert st['workload']['completed'] == 2


@pytest.mark.parametrize('args,msg', [
    (['sim', '--rule', 'bogus x=1'], "unknown fault 'bogus'"),
    (['sim', '--size', '4Q'], 'a size is a number'),
    (['sim', '--mtu', '1000'], 'mtu 1000'),
    (['sim', '--depth', '0'], 'depth 0 out of range'),
    (['sim', '--profile', 'nope'], "profile 'nope'"),
    (['sim', '--latency', 'fast'], 'a time is a number'),
    (['sim', '--plan', '/nonexistent/plan'], 'No such file'),
    (['sim', '--plan-hosts', '3'], 'hosts are 0, 1 or 0,1'),
    (['--refresh', '1ms', 'sim'], '--refresh must be'),
    (['--port', '70000', 'sim'], '--port must be'),
    (['qemu', '--qmp', '/nonexistent/qmp.sock'], 'QMP /nonexistent/qmp.sock'),
    (['bogus'], 'invalid choice'),
])
def test_bad_arguments(args, msg):
    r = run_view(*args)
    assert r.returncode == 2
    assert msg in r.stderr
    assert 'Traceback' not in r.stderr


class Server:
    def __init__(self, *args):
        self.p = subprocess.Popen([sys.executable, VIEW, '--port', '0', '--refresh', '100ms']
                                  + list(args), env=_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        m = re.search(r'serving on (http://\S+?)/?$', line.strip())
        if not m:
            self.p.kill()
            raise AssertionError(f'no URL from qrnic-view: {line!r} {self.p.stderr.read()}')
        self.url = m.group(1)

    def get(self, path, method='GET'):
        req = urllib.request.Request(self.url + path, method=method,
                                     data=b'' if method == 'POST' else None)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.headers.get('Content-Type', ''), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get('Content-Type', ''), e.read()

    def json(self, path, method='GET'):
        st, ct, body = self.get(path, method)
        assert 'json' in ct, (st, ct, body[:200])
        return st, json.loads(body)

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def server():
    s = Server('sim', '--speed', '2ms', '--rule', 'drop dir=tx op=write nth=4 count=1')
    yield s
    s.close()


def _wait(cond, what, limit=60):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f'timed out waiting for {what}')


def test_http_api(server):
    st, page = server.get('/')[0], server.get('/')[2]
    assert st == 200 and b'qrnic live view' in page and b'/static/view.js' in page
    assert server.get('/static/view.js')[0] == 200
    assert server.get('/static/%2e%2e/server.py')[0] == 404
    # traffic runs: the requester's next PSN moves
    psn0 = server.json('/api/state')[1]['devices'][0]['qps'][0]['next_psn']
    _wait(lambda: server.json('/api/state')[1]['devices'][0]['qps'][0]['next_psn'] != psn0,
          'the PSN to move')
    # pause: time stands still; each step moves to one event instant
    assert server.json('/api/pause', 'POST')[1] == {'ok': True, 'running': False}
    s1 = server.json('/api/state')[1]
    time.sleep(0.5)
    s2 = server.json('/api/state')[1]
    assert s1['running'] is False and s2['now_ns'] == s1['now_ns']
    times = [s2['now_ns']]
    for _ in range(6):
        code, r = server.json('/api/step', 'POST')
        assert code == 200 and r['ok'] and r['stepped']
        times.append(r['t_ns'])
    assert times == sorted(times) and times[-1] > times[0]
    assert server.json('/api/state')[1]['steps'] == 6
    assert server.json('/api/continue', 'POST')[1]['running'] is True
    # the timeline of the last operations, as qrnic-timeline draws it
    _wait(lambda: server.get('/api/timeline.svg?n=2')[0] == 200, 'two complete operations')
    code, ct, svg = server.get('/api/timeline.svg?n=2')
    assert ct.startswith('image/svg+xml') and svg.startswith(b'<?xml') and b'<svg' in svg
    assert svg.count(b'RDMA WRITE') >= 2
    for bad in ('n=0', 'n=17', 'n=x', 'n='):
        code, j = server.json('/api/timeline.svg?' + bad)
        assert code == 400 and 'n=' in j['error']
    assert server.get('/api/nothing')[0] == 404
    # the retransmission of the dropped 4th WRITE packet shows
    st = _wait(lambda: (lambda s: s if s['frame_counts']['retransmitted'] else None)(
        server.json('/api/state')[1]), 'a retransmission')
    assert st['frame_counts']['lost'] == 1 and st['frame_counts']['naks'] >= 1


def test_timeline_svg_before_any_operation():
    s = Server('sim', '--paused')
    try:
        code, j = s.json('/api/timeline.svg?n=1')
        assert code == 404 and ('no complete operation' in j['error'] or
                                'no trace records' in j['error'])
    finally:
        s.close()


def test_timeline_svg_is_qrnic_timelines(tmp_path):
    """The view's SVG of the last 2 operations is byte for byte what
    scripts/qrnic-timeline draws from the same trace records, selected and
    labelled the same way."""
    sys.path.insert(0, os.path.join(REPO, 'scripts'))
    from qrnic_view.sim import SimSource
    src = SimSource(op='read', size=2048, depth=1, count=3, profile='teach')
    try:
        for _ in range(400):
            if src.completed == 3:
                break
            src.advance(5000)
        assert src.completed == 3 and not src.errors
        svg = src.timeline_svg(2)
        trace = tmp_path / 'trace.jsonl'
        with open(trace, 'w') as f:
            for e in src.frames.events:
                f.write(json.dumps({'seq': e['seq'], 'dev': e['dev'], 't_ns': e['t_ns'],
                                    'type': e['type'], 'qpn': e['qpn'], 'psn': e['psn'],
                                    'a': e['a'], 'b': e['b'], 'addr': e['addr']}) + '\n')
        tl = os.path.join(REPO, 'scripts', 'qrnic-timeline')
        r = subprocess.run([sys.executable, tl, str(trace), '--list'], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert len([ln for ln in r.stdout.splitlines() if 'RDMA READ' in ln]) == 3
        qa = src.c.qa.qpn
        labels = []
        for idx in (1, 2):
            psn = 0x100 + idx * 2           # 2 KiB READs at MTU 1024: 2 response packets each
            labels += ['--label', f'RDMA READ, dev 0 QP {qa}, PSN {psn}']
        out = tmp_path / 'tl.svg'
        r = subprocess.run([sys.executable, tl, str(trace), '--op', 'index=1', '--op', 'index=2',
                            '--title', 'qrnic-view: the last 2 operation(s)', '-o', str(out)]
                           + labels, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert out.read_text() == svg
    finally:
        src.close()
