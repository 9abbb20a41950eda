# SPDX-License-Identifier: GPL-2.0-or-later
"""TIMELY (cc_algo 2, model/cc_timely.c; Mittal et al., SIGCOMM 2015):
RTT samples from a request packet's departure to the ACK that covers it;
the rate falls when the RTT rises (the cable's latency goes from 0 to
10 us: a gradient, as a growing queue gives) and climbs back when it
falls; a constant RTT between Tlow and Thigh does not cut the rate (the
gradient is what counts); the state survives a snapshot."""
import pytest

import qrnic_harness as q

MSG = 8192
CFG = 'cc_algo=2,timely_t_low=5,timely_t_high=40,timely_min_rtt=2,timely_delta=2000'
LINE = 100000.0


class Stream:
    def __init__(self, cfg=CFG):
        self.w = q.World(2, cfg=cfg)
        self.a, self.b = self.w.devs
        for d in (self.a, self.b):
            d.set_timing('cx5-100g')
        self.conn = q.connect_rc(self.a, self.b, mtu=4096, sq_log=8)
        self.la = self.a.reg_mr(self.conn.pda, MSG)
        self.rb = self.b.reg_mr(self.conn.pdb, MSG)
        self.posted = self.done = 0

    def run(self, ns):
        end = self.w.now + ns
        while self.w.now < end:
            self.done += len(self.conn.cqa.poll(256))
            while self.posted - self.done < 16:
                self.conn.qa.post_send('RDMA_WRITE', [(self.la, 0, MSG)], remote=(self.rb, 0))
                self.posted += 1
            self.w.run(ns=min(2000, end - self.w.now))
        return self.a.qp_cc(self.conn.qa.qpn)


def test_rate_falls_when_rtt_rises_and_recovers():
    s = Stream()
    try:
        c = s.run(100_000)
        assert c['algo'] == 2 and c['rtts'] > 20
        assert c['rtt'] < 5_000 and c['rate'] == LINE        # below Tlow: line rate
        s.w.set_latency(10_000)                                # RTT now > 20 us
        c = s.run(60_000)
        assert c['rtt'] > 20_000
        low = c['rate']
        assert low < 0.1 * LINE
        s.w.set_latency(0)
        rates = []
        for _ in range(100):
            c = s.run(10_000)
            rates.append(c['rate'])
            if c['rate'] >= 0.9 * LINE:
                break
        assert c['rtt'] < 5_000
        assert rates[-1] >= 0.9 * LINE, rates
        assert rates == sorted(rates)                          # it only climbs back
    finally:
        s.w.close()


def test_no_samples_without_timely():
    s = Stream(cfg='cc_algo=1')
    try:
        c = s.run(50_000)
        assert c['rtts'] == 0 and c['rtt'] == 0 and not c['limited']
    finally:
        s.w.close()


def test_timely_state_in_snapshots():
    s = Stream()
    try:
        s.run(50_000)
        s.w.set_latency(10_000)
        c = s.run(60_000)
        assert c['rtts'] > 0 and c['limited'] and c['rate'] < LINE
        snap = s.a.save()
        assert q.snap_sections(snap)['QPS.'][0] >= 2     # 2: + TIMELY's RTT sampling
        s.a.load(snap)
        assert s.a.qp_cc(s.conn.qa.qpn) == c
        assert s.a.save() == snap
        s.w.set_latency(0)
        c2 = s.run(200_000)
        assert c2['rtts'] > c['rtts'] and c2['rate'] > c['rate']
    finally:
        s.w.close()


def test_a_constant_rtt_between_the_thresholds_keeps_the_rate():
    s = Stream()
    try:
        s.w.set_latency(10_000)      # from the start: ~20 us, between Tlow and Thigh
        c = s.run(150_000)
        assert 5_000 < c['rtt'] < 40_000 and c['rtts'] > 3
        assert c['rate'] == LINE
    finally:
        s.w.close()
