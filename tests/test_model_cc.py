# SPDX-License-Identifier: GPL-2.0-or-later
"""Congestion control (docs/spec.md 12.15): ECN, CNPs (the notification
point) and DCQCN (the reaction point) against the equations of Zhu et al.
(SIGCOMM 2015) computed here from the same parameters.  The wire rule
'mark_ce' stands in for a switch that marks CE."""
import pytest

import qrnic_harness as q
from test_wire import ref_icrc, wire_icrc

DCQCN = 'cc_algo=1'
LINE = 100000.0


class Dcqcn:
    """The reaction point as spec 12.15 writes it (model/cc_dcqcn.c)."""

    def __init__(self, line=LINE, g=1019, rtt=1, alpha0=1023, min_rate=1, min_dec=50,
                 t_reset=300, b_reset=32767, f=1, ai=5, hai=50):
        self.line, self.keep, self.k = line, g / 1024, rtt * 1000
        self.alpha0, self.min_rate, self.min_dec = alpha0 / 1024, min_rate, min_dec
        self.t, self.b, self.f, self.ai, self.hai = t_reset * 1000, b_reset, f, ai, hai
        self.active = False
        self.rc = self.rt = line
        self.alpha = 0.0

    def timer(self, now):
        if not self.active:
            return
        now = max(now, self.last)
        self.last = now
        n = (now - self.alpha_t) // self.k
        if n:
            self.alpha *= self.keep ** n
            self.alpha_t += n * self.k
        while self.active and now - self.inc_t >= self.t:
            self.inc_t += self.t
            self.ts += 1
            self.increase()

    def increase(self):
        hi = lo = self.ts
        if self.b:
            hi, lo = max(self.ts, self.bs), min(self.ts, self.bs)
        if hi < self.f:
            self.phase = 'fast'
            self.rc = (self.rt + self.rc) / 2
        else:
            if lo > self.f:
                self.phase = 'hyper'
                self.rt += (lo - self.f) * self.hai
            else:
                self.phase = 'additive'
                self.rt += self.ai
            self.rt = min(self.rt, self.line)
            self.rc = (self.rt + self.rc) / 2
        self.rc = min(self.rc, self.line)
        if self.rt >= self.line and self.line - self.rc < 1.0:
            self.rc = self.rt = self.line
            self.active = False

    def cnp(self, now):
        self.timer(now)
        if not self.active:
            self.active = True
            self.rc = self.rt = self.line
            self.alpha = self.alpha0
            self.alpha_t = self.inc_t = self.last = now
            self.ts = self.bs = 0
        now = self.last
        g = 1 - self.keep
        self.rt = self.rc
        self.rc = max(self.rc * (1 - self.alpha / 2), self.rc * self.min_dec / 100, self.min_rate)
        self.alpha = (1 - g) * self.alpha + g
        self.alpha_t = self.inc_t = now
        self.ts = self.bs = 0


def cnp_frames(world, src=None):
    return [f for f in world.frames(roce_only=True) if f.opcode == 0x81 and
            (src is None or f.src == src)]


def marked_stream(world, a, b, n=16, size=16384, mtu=1024, every=1):
    conn = q.connect_rc(a, b, mtu=mtu)
    la, rb = a.reg_mr(conn.pda, size), b.reg_mr(conn.pdb, size)
    rid = world.rule('mark_ce', src=0, count=-1, arg=every)
    for i in range(n):
        conn.qa.post_send('RDMA_WRITE', [(la, 0, size)], remote=(rb, 0), wr_id=i,
                          signaled=(i == n - 1))
    return conn, rid


def test_ect_only_with_cc():
    """cc_algo=0: packets are Not-ECT, as before.  DCQCN: ECT(0), both ways."""
    for cfg, ecn in (('', 0), (DCQCN, 2)):
        w = q.World(2, cfg=cfg)
        try:
            a, b = w.devs
            conn = q.connect_rc(a, b)
            la, rb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
            conn.qa.post_send('RDMA_WRITE', [(la, 0, 4096)], remote=(rb, 0))
            w.run()
            fr = w.frames(roce_only=True)
            assert {f.src for f in fr} == {0, 1}
            assert {f.ecn for f in fr} == {ecn}
        finally:
            w.close()


def test_no_marking_nothing_happens(world):
    """Without CC the CE rule finds nothing ECN-capable to mark."""
    a, b = world.devs
    conn, rid = marked_stream(world, a, b, n=2)
    world.run()
    assert world.rule_fired(rid) == 0 and not cnp_frames(world)
    assert b.stat('ecn_marked_received') == 0 and b.stat('cnp_sent') == 0


@pytest.mark.parametrize('profile', ['functional', 'cx5-100g'])
def test_ce_makes_cnps_at_most_one_per_interval(profile):
    w = q.World(2, cfg=DCQCN + ',np_min_time_between_cnps=2')
    try:
        a, b = w.devs
        if profile != 'functional':
            for d in (a, b):
                d.set_timing(profile)
        conn, rid = marked_stream(w, a, b, n=32)
        w.run()
        marked = w.rule_fired(rid)
        cnps = cnp_frames(w)
        assert marked > 0 and cnps
        assert b.stat('ecn_marked_received') == marked
        assert b.stat('cnp_sent') == len(cnps) == a.stat('cnp_received')
        assert all(f.src == 1 and f.dqpn == conn.qa.qpn for f in cnps)
        assert all(t1.t - t0.t >= 2000 for t0, t1 in zip(cnps, cnps[1:]))
        if profile != 'functional':   # packets spread over time: several CNPs
            span = max(f.t for f in w.frames(roce_only=True) if f.src == 0) - cnps[0].t
            assert 2 <= len(cnps) <= span // 2000 + 1
        assert a.stat('rx_drop_malformed') == 0 and a.qp_cc(conn.qa.qpn)['cnps'] == len(cnps)
        assert all(c['status_name'] == 'SUCCESS' for c in conn.cqa.poll(64))
    finally:
        w.close()


def test_cnp_frame_bytes():
    world = q.World(2, cfg=DCQCN)
    a, b = world.devs
    conn, _ = marked_stream(world, a, b, n=1, size=1024)
    world.run()
    (f,) = cnp_frames(world)
    assert len(f.data) == 14 + 20 + 8 + 12 + 16 + 4
    assert f.opname == 'CNP' and f.becn and not f.fecn and f.psn == 0 and f.pkey == 0xffff
    assert f.dqpn == conn.qa.qpn and f.cnp_rsvd == bytes(16) and f.payload == b''
    assert f.tclass == 48 << 2 | 2           # np_cnp_dscp 48, ECT(0): as ConnectX sends them
    assert f.udp_sport == 0xc000 | (conn.qb.qpn & 0x3fff)
    assert wire_icrc(f.data) == ref_icrc(f.data)
    world.close()


def inject_cnps(world, a, cnp, times):
    """Hand the CNP frame to device a at each absolute time."""
    for t in times:
        world.advance(t - world.now)
        assert world.now == t
        a.inject(cnp)
        world.run(0)


def captured_cnp(world, a, b, cfg_rate=None):
    conn, _ = marked_stream(world, a, b, n=1, size=1024)
    world.run()
    (f,) = cnp_frames(world)
    world.clear_rules()
    return conn, f.data


def check(info, m):
    assert info['limited'] == m.active
    assert info['rate'] == pytest.approx(m.rc, rel=1e-12)
    assert info['target'] == pytest.approx(m.rt, rel=1e-12)
    if m.active:
        assert info['alpha'] == pytest.approx(m.alpha, rel=1e-12)


PARAMS = dict(g=1000, rtt=5, alpha0=800, t_reset=50, b_reset=0, f=5, ai=400, hai=2000, min_rate=100)
CFG = (DCQCN + ',rp_dce_tcp_g=1000,rp_dce_tcp_rtt=5,rp_initial_alpha_value=800,'
       'rp_time_reset=50,rp_byte_reset=0,rp_threshold=5,rp_ai_rate=400,rp_hai_rate=2000,'
       'rp_min_rate=100,np_min_time_between_cnps=0')


def test_dcqcn_rate_after_cnps():
    """N CNPs at irregular times: rate, target and alpha follow the equations
    (alpha decays in between)."""
    w = q.World(2, cfg=CFG)
    try:
        a, b = w.devs
        conn, cnp = captured_cnp(w, a, b)
        # the captured CNP already reached a: start the model there
        m = Dcqcn(**PARAMS)
        first = a.qp_cc(conn.qa.qpn)
        m.cnp(w.now)            # processed at the instant it arrived (settled run)
        check(first, m)
        t = w.now
        for dt in (3_000, 7_000, 12_000, 1_000, 26_000, 4_000, 49_000):
            t += dt
            inject_cnps(w, a, cnp, [t])
            m.cnp(t)
            check(a.qp_cc(conn.qa.qpn), m)
        assert a.qp_cc(conn.qa.qpn)['cnps'] == 8
    finally:
        w.close()


def test_dcqcn_min_rate_floor():
    w = q.World(2, cfg=CFG)
    try:
        a, b = w.devs
        conn, cnp = captured_cnp(w, a, b)
        m = Dcqcn(**PARAMS)
        m.cnp(w.now)
        t = w.now
        for _ in range(40):
            t += 1000
            inject_cnps(w, a, cnp, [t])
            m.cnp(t)
        check(a.qp_cc(conn.qa.qpn), m)
        assert m.rc == 100
    finally:
        w.close()


def test_dcqcn_recovery_phases():
    """No CNPs after two: the timer alone (rp_byte_reset=0) brings the rate back
    through fast recovery (F=5 stages), additive and hyper increase to the line
    rate, each step as the equations say."""
    w = q.World(2, cfg=CFG)
    try:
        a, b = w.devs
        conn, cnp = captured_cnp(w, a, b)
        m = Dcqcn(**PARAMS)
        m.cnp(w.now)
        t = w.now + 2000
        inject_cnps(w, a, cnp, [t])
        m.cnp(t)
        phases = []
        step = 0
        while m.active:
            step += 1
            w.advance(t + step * 50_000 + 10 - w.now)   # just after each timer period
            m.timer(w.now)
            info = a.qp_cc(conn.qa.qpn)
            check(info, m)
            assert info['t_stage'] == step or not m.active
            phases.append(m.phase)
            assert step < 500
        assert phases[:4] == ['fast'] * 4 and phases[4] == 'additive'
        assert 'hyper' in phases and phases[-1] == 'hyper'
        info = a.qp_cc(conn.qa.qpn)
        assert not info['limited'] and info['rate'] == LINE
    finally:
        w.close()


def data_gaps(world, qpn_dst):
    fr = [f for f in world.frames(roce_only=True) if f.src == 0 and f.opname.startswith('RC_WRITE')]
    return [(f1.t - f0.t, len(f0.data)) for f0, f1 in zip(fr, fr[1:])]


def test_paced_at_the_current_rate():
    """cx5-100g: after CNPs the requester's packets leave at the DCQCN rate."""
    w = q.World(2, cfg=DCQCN + ',rp_time_reset=100000,rp_byte_reset=0')
    try:
        a, b = w.devs
        for d in (a, b):
            d.set_timing('cx5-100g')
        conn, cnp = captured_cnp(w, a, b)
        inject_cnps(w, a, cnp, [w.now + 1000, w.now + 2000])
        rate = a.qp_cc(conn.qa.qpn)['rate']
        assert 10000 < rate < 40000
        start = len(w.frames())
        la, rb = a.reg_mr(conn.pda, 65536), b.reg_mr(conn.pdb, 65536)
        conn.qa.post_send('RDMA_WRITE', [(la, 0, 65536)], remote=(rb, 0))
        w.run()
        fr = [f for f in w.frames()[start:] if f.roce and f.src == 0 and f.opname.startswith('RC_WRITE')]
        assert len(fr) == 64
        for f0, f1 in zip(fr, fr[1:]):
            want = (len(f0.data) + 24) * 8000 / rate
            assert abs((f1.t - f0.t) - want) <= 2, (f1.t - f0.t, want)
        assert all(c['status_name'] == 'SUCCESS' for c in conn.cqa.poll(8))
    finally:
        w.close()


def test_cc_on_unmarked_changes_no_time():
    """DCQCN without marks: the same completion times as without CC."""
    ends = []
    for cfg in ('', DCQCN):
        w = q.World(2, cfg=cfg)
        try:
            a, b = w.devs
            for d in (a, b):
                d.set_timing('cx5-100g')
            conn = q.connect_rc(a, b, mtu=4096)
            la, rb = a.reg_mr(conn.pda, 1 << 16), b.reg_mr(conn.pdb, 1 << 16)
            for i in range(16):
                conn.qa.post_send('RDMA_WRITE', [(la, 0, 1 << 16)], remote=(rb, 0))
            w.run()
            ends.append(([f.t for f in w.frames()], w.now))
        finally:
            w.close()
    assert ends[0] == ends[1]


def test_initial_rate_paces_the_first_packets():
    """rp_initial_rate: a DCQCN QP entering RTS is limited at that rate with
    Rt at the line rate, so its first packets leave spaced at that rate
    (not back to back at 100 Gb/s); the rate-increase timer then brings it
    back to the line rate (fast recovery halves the gap every period)."""
    gaps = {}
    for rate in (0, 10000):
        w = q.World(2, cfg=DCQCN + f',rp_initial_rate={rate},rp_time_reset=50')
        try:
            a, b = w.devs
            for d in w.devs:
                d.set_timing('cx5-100g')
            conn = q.connect_rc(a, b, mtu=4096)
            info = a.qp_cc(conn.qa.qpn)
            if rate:
                assert info['limited'] and info['rate'] == rate and info['target'] == LINE
            else:
                assert not info['limited']
            la, rb = a.reg_mr(conn.pda, 1 << 16), b.reg_mr(conn.pdb, 1 << 16)
            conn.qa.post_send('RDMA_WRITE', [(la, 0, 1 << 16)], remote=(rb, 0))
            w.run()
            fr = [f for f in w.frames(roce_only=True) if f.src == 0]
            assert len(fr) == 16
            # the time a frame takes at 'rate': its bytes x 8 / rate (Mb/s = bits/us)
            gaps[rate] = [(y.t - x.t) / (len(x.data) * 8 / 10000 * 1000)
                          for x, y in zip(fr, fr[1:])]
            assert rb.read(0, 1 << 16) == la.read(0, 1 << 16)
            w.advance(2_000_000)        # 2 ms, 40 increase periods, no CNP
            assert not a.qp_cc(conn.qa.qpn)['limited']
        finally:
            w.close()
    # the timer runs from RTS: the first 6 frames (20 us) leave at 10 Gb/s
    # (the frame plus the port's overhead: just over 1.0)
    g = gaps[10000]
    assert all(1.0 <= x < 1.1 for x in g[:6])
    # the first increase (fast recovery, F = 1): Rc = (Rt + Rc) / 2 = 55 Gb/s
    assert g[-1] == pytest.approx(g[1] * 10 / 55, rel=0.01)
    assert max(gaps[0]) < 0.11              # without: at 100 Gb/s
