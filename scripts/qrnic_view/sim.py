# SPDX-License-Identifier: GPL-2.0-or-later
"""The simulator source of scripts/qrnic-view: two device models cabled back
to back in the harness world (tests/qrnic_harness.py, the same C harness and
model as scripts/qrnic-sim), with an RC connection between them that keeps
`depth` operations outstanding, stepped by the view.

Why the harness and not the qrnic-sim binary: the view must pause, step one
event, and read every QP's state between two events; the harness gives all
of that in-process (hx_next_event, hx_run, qrnic_dev_view), where a separate
qrnic-sim process would need a new control protocol for the same.
"""
import os
import sys
import threading

from . import core

TESTS = os.path.join(core.REPO, 'tests')
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

OPS = {'write': 'RDMA_WRITE', 'read': 'RDMA_READ', 'send': 'SEND'}


class SimError(Exception):
    pass


class SimSource:
    kind = 'sim'

    def __init__(self, op='write', size=4096, mtu=1024, depth=2, count=0, profile='teach',
                 latency_ns=2000, plan=None, plan_hosts=None, loss=0.0, seed=1,
                 trace_capacity=1 << 16):
        import qrnic_harness as h
        self.h = h
        if op not in OPS:
            raise SimError(f'unknown op {op!r} (write, read, send)')
        if not 1 <= size <= 1 << 20:
            raise SimError(f'size {size} out of range (1 .. 1 MiB)')
        if mtu not in (256, 512, 1024, 2048, 4096):
            raise SimError(f'mtu {mtu}: 256, 512, 1024, 2048 or 4096')
        if not 1 <= depth <= 32:
            raise SimError(f'depth {depth} out of range (1 .. 32)')
        if count < 0:
            raise SimError('count must be >= 0 (0: forever)')
        if not 0.0 <= loss < 1.0:
            raise SimError('loss must be in [0, 1)')
        self.lock = threading.RLock()
        self.op, self.size, self.depth, self.count = op, size, depth, count
        self.config = {'op': op, 'size': size, 'mtu': mtu, 'depth': depth, 'count': count,
                       'profile': profile, 'latency_ns': latency_ns, 'loss': loss,
                       'seed': seed, 'plan': plan}
        if plan:
            try:
                h.check_fault_plan(plan)
            except h.HarnessError as e:
                raise SimError(f'fault plan: {e}')
        self.w = w = h.World(2, seed=seed)
        try:
            for d in w.devs:
                d.set_timing(profile)
        except h.HarnessError as e:
            raise SimError(f'profile {profile!r}: {e}')
        w.set_latency(latency_ns)
        c = self.c = h.connect_rc(w.devs[0], w.devs[1], mtu=mtu, sq_log=6, rq_log=7, cq_log=8)
        nbytes = max(4096, depth * size)
        self.src = c.a.dev.reg_mr(c.pda, nbytes)
        self.dst = c.b.dev.reg_mr(c.pdb, nbytes)
        self.src.write(0, bytes((i * 7 + seed) & 0xff for i in range(min(nbytes, 65536))))
        if loss:
            w.random_impairments(loss=loss, seed=seed)
        if plan:
            for i in (plan_hosts if plan_hosts is not None else range(2)):
                w.devs[i].fault_plan(plan)
        w.trace_enable(trace_capacity)
        self.trace_capacity = trace_capacity
        self.trace_seq = self._trace_total()
        self.frames = core.FrameTracker()
        self.posted = self.completed = 0
        self.outstanding = 0
        self.errors = []
        self.trace_lost = 0
        self.running = True
        self.steps = 0
        if op == 'send':
            for i in range(2 * depth):
                self._post_recv(i)
        self._pump()

    # -- the workload -------------------------------------------------------------
    def _trace_total(self):
        return self.w._l.hx_trace_total(self.w.w)

    def _post_recv(self, i):
        slot = (i % self.depth) * self.size
        self.c.qb.post_recv([(self.dst, slot, self.size)], wr_id=i)

    def _pump(self):
        """Poll the CQs, then post what the window allows (one doorbell each)."""
        for cqe in self.c.a.cq.poll():
            self.outstanding -= 1
            self.completed += 1
            if cqe['status_name'] != 'SUCCESS':
                self.errors.append(f'requester CQE {cqe["wqe_index"]}: {cqe["status_name"]}')
        if self.op == 'send':
            for cqe in self.c.b.rcq.poll():
                if cqe['status_name'] != 'SUCCESS':
                    self.errors.append(f'responder CQE: {cqe["status_name"]}')
                else:
                    self._post_recv(cqe['wr_id'] + 2 * self.depth)
        while (not self.errors and self.outstanding < self.depth
               and (self.count == 0 or self.posted < self.count)):
            slot = (self.posted % self.depth) * self.size
            if self.op == 'read':
                self.c.qa.post_send('RDMA_READ', [(self.src, slot, self.size)],
                                    remote=(self.dst, slot), wr_id=self.posted)
            elif self.op == 'write':
                self.c.qa.post_send('RDMA_WRITE', [(self.src, slot, self.size)],
                                    remote=(self.dst, slot), wr_id=self.posted)
            else:
                self.c.qa.post_send('SEND', [(self.src, slot, self.size)], wr_id=self.posted)
            self.posted += 1
            self.outstanding += 1
        self._drain_trace()

    def _drain_trace(self):
        total = self._trace_total()
        if total - self.trace_seq > self.trace_capacity:
            self.trace_lost += total - self.trace_seq - self.trace_capacity
            self.trace_seq = total - self.trace_capacity
        while self.trace_seq < total:
            recs = self.w.trace(self.trace_seq, max_events=min(4096, total - self.trace_seq))
            if not recs:
                break
            for r in recs:
                self.frames.feed({'dev': r['dev'], 't_ns': r['t_ns'], 'type': r['name'],
                                  'qpn': r['qpn'], 'psn': r['psn'], 'a': r['a'], 'b': r['b'],
                                  'addr': r['addr']})
            self.trace_seq += len(recs)

    # -- controls -----------------------------------------------------------------
    def advance(self, ns):
        """Run ns of simulated time (while running), then poll and post."""
        with self.lock:
            if not self.running:
                return
            self.w.advance(int(ns))
            self._pump()

    def pause(self):
        with self.lock:
            self.running = False
            return {'ok': True, 'running': False}

    def resume(self):
        with self.lock:
            self.running = True
            return {'ok': True, 'running': True}

    def step(self):
        """One event instant: the work pending at the current instant if there
        is any (e.g. a doorbell just rung), otherwise the next frame arrival or
        device timer with everything it sets off at that instant.  Pauses."""
        with self.lock:
            self.running = False
            lib, w = self.w._l, self.w
            before, t0 = self._trace_total(), w.now
            lib.hx_run(w.w, 0, 0)
            what = 'settled the current instant'
            if self._trace_total() == before:
                nxt = w.next_event()
                if nxt is None:
                    self._pump()
                    return {'ok': True, 'stepped': False, 't_ns': w.now, 'events': 0,
                            'what': 'nothing pending'}
                lib.hx_run(w.w, max(0, nxt - t0), 0)
                what = 'ran to the next event'
            new = self._trace_total() - before
            self._pump()
            self.steps += 1
            return {'ok': True, 'stepped': True, 't_ns': w.now, 'events': new, 'what': what}

    def timeline_svg(self, n):
        with self.lock:
            return self.frames.timeline_svg(n)

    # -- state --------------------------------------------------------------------
    def state(self, nframes=60):
        with self.lock:
            devs = []
            for i, d in enumerate(self.w.devs):
                stats = d.stats()
                devs.append({
                    'index': i,
                    'name': f'host {i} ({"requester" if i == 0 else "responder"})',
                    'qps': d.view('qp'), 'cqs': d.view('cq'), 'eqs': d.view('eq'),
                    'srqs': d.view('srq'),
                    'stats': {k: v for k, v in stats.items() if v},
                    'shown_stats': {k: stats.get(k, 0) for k in core.SHOWN_STATS},
                    'caches': core.cache_rates(stats),
                })
            return {
                'source': 'sim', 'config': self.config, 'running': self.running,
                'now_ns': self.w.now, 'steps': self.steps,
                'workload': {'posted': self.posted, 'completed': self.completed,
                             'outstanding': self.outstanding, 'errors': self.errors[-5:]},
                'devices': devs,
                'frames': self.frames.recent(nframes),
                'incidents': self.frames.recent_incidents(),
                'frame_counts': dict(self.frames.counts),
                'trace_lost': self.trace_lost,
            }

    def close(self):
        with self.lock:
            if self.w is not None:
                self.w.close()
                self.w = None
