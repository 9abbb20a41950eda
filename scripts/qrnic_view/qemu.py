# SPDX-License-Identifier: GPL-2.0-or-later
"""The QEMU source of scripts/qrnic-view: a running QEMU with -device qrnic,
read over QMP (scripts/qrnic_vm/qmp.py, the project's one QMP client).

State: the device objects' read-only QOM properties "qps", "cqs", "eqs",
"srqs" (the model's qrnic_dev_view, model/query.c) and "stats".
Frames: QEMU's `qrnic_event` trace records, which QEMU writes to the file
given with `-trace qrnic_event,file=FILE` (the log backend flushes every
line).  They carry the device, the virtual time, QPN, PSN, opcode and
length of every frame sent and received, and the NAK and retransmit
events, which is what the sequence diagram needs; a pcap (the device's
pcap= property) has the frames but not the NAK/retransmit decisions, and
would have to be decoded.

Pause and continue are QMP `stop` and `cont`.  Single-stepping the device
is not possible honestly: the device runs from QEMU's main loop (bottom
halves, timers) and from the guest's register writes, and QMP has no
command that runs one device event.  `step` does the closest honest
thing: continue the VM until at least one new device trace record has
appeared (or a time limit), then stop it; the guest and the device run
for that short while, and several events may happen before the stop lands.
"""
import os
import re
import sys
import threading
import time

from . import core

sys.path.insert(0, core.SCRIPTS)
from qrnic_vm.qmp import Qmp, QmpError  # noqa: E402

VIEWS = ('qps', 'cqs', 'eqs', 'srqs')
TAIL_BYTES = 4 << 20


class QemuSourceError(Exception):
    pass


class QemuSource:
    kind = 'qemu'

    def __init__(self, qmp_path, devs=None, trace_log=None, timeout=10):
        self.lock = threading.RLock()
        self.qmp_path = qmp_path
        try:
            self.q = Qmp(qmp_path, timeout=timeout)
        except QmpError as e:
            raise QemuSourceError(f'QMP {qmp_path}: {e}')
        self.paths = self._find_devices(devs)
        self.trace_log = trace_log
        self.trace_pos = 0
        self.skip_partial = False
        self.partial = b''
        self.frames = core.FrameTracker()
        self.steps = 0
        if trace_log is not None and not os.path.exists(trace_log):
            raise QemuSourceError(f'{trace_log}: no such trace log (start QEMU with '
                                  f'-trace qrnic_event,file={trace_log})')
        if trace_log is not None:
            # a long log: start with its last TAIL_BYTES (from a line start)
            size = os.path.getsize(trace_log)
            if size > TAIL_BYTES:
                self.trace_pos = size - TAIL_BYTES
                self.skip_partial = True

    def _find_devices(self, devs):
        """QOM paths of the qrnic devices: the given ids, or every qrnic."""
        found = []
        for parent in ('/machine/peripheral', '/machine/peripheral-anon'):
            try:
                kids = self.q.cmd('qom-list', path=parent)
            except QmpError:
                continue
            for k in kids:
                if k.get('type') == 'child<qrnic>':
                    found.append((k['name'], f'{parent}/{k["name"]}'))
        # qom-list has no order: sort by id, numbers in their order (qrnic2 < qrnic10)
        found.sort(key=lambda f: [int(t) if t.isdigit() else t
                                  for t in re.split(r'(\d+)', f[0])])
        if devs:
            by_id = dict(found)
            missing = [d for d in devs if d not in by_id]
            if missing:
                raise QemuSourceError(f'no qrnic device with id {", ".join(missing)} (found: '
                                      f'{", ".join(n for n, _ in found) or "none"})')
            return [(d, by_id[d]) for d in devs]
        if not found:
            raise QemuSourceError('this QEMU has no qrnic device')
        return found

    # -- trace log ------------------------------------------------------------------
    def _read_log(self):
        if not self.trace_log:
            return 0
        try:
            with open(self.trace_log, 'rb') as f:
                size = os.fstat(f.fileno()).st_size
                if size < self.trace_pos:          # truncated: QEMU restarted
                    self.trace_pos, self.partial = 0, b''
                f.seek(self.trace_pos)
                data = f.read(min(size - self.trace_pos, 8 << 20))
        except OSError:
            return 0
        self.trace_pos += len(data)
        data = self.partial + data
        lines = data.split(b'\n')
        self.partial = lines.pop()
        if self.skip_partial and lines:
            lines.pop(0)                # the rest of a line begun before where we started
            self.skip_partial = False
        if len(self.partial) > 65536:              # not a trace line anyway
            self.partial = b''
        rx = core.timeline().QEMU_RE
        n = 0
        for ln in lines:
            m = rx.search(ln.decode('utf-8', 'replace'))
            if not m or m.group('dev') is None:
                continue
            self.frames.feed({'dev': int(m.group('dev')), 't_ns': int(m.group('t')),
                              'type': m.group('type'), 'qpn': int(m.group('qpn')),
                              'psn': int(m.group('psn')), 'a': int(m.group('a'), 16),
                              'b': int(m.group('b'), 16), 'addr': int(m.group('addr'), 16)})
            n += 1
        return n

    # -- controls -------------------------------------------------------------------
    def _running(self):
        return bool(self.q.cmd('query-status').get('running'))

    def advance(self, ns):
        """The VM runs by itself; only take in new trace records."""
        with self.lock:
            self._read_log()

    def pause(self):
        with self.lock:
            self.q.cmd('stop')
            return {'ok': True, 'running': False}

    def resume(self):
        with self.lock:
            self.q.cmd('cont')
            return {'ok': True, 'running': True}

    def step(self, limit_s=2.0):
        """Continue until a new device trace record appears, then stop (see the
        module comment for why this is not a single device event)."""
        with self.lock:
            if not self.trace_log:
                return {'ok': False, 'error': 'step needs the trace log (--trace-log)'}
            self._read_log()
            if self._running():
                self.q.cmd('stop')
            before = self.frames.counts['events']
            self.q.cmd('cont')
            deadline = time.monotonic() + limit_s
            try:
                while self.frames.counts['events'] == before and time.monotonic() < deadline:
                    time.sleep(0.002)
                    self._read_log()
            finally:
                self.q.cmd('stop')
            time.sleep(0.01)
            self._read_log()
            self.steps += 1
            new = self.frames.counts['events'] - before
            return {'ok': True, 'stepped': new > 0, 'events': new, 't_ns': self.frames.last_t,
                    'what': 'ran the VM until the device traced something, then stopped it'
                    if new else f'nothing traced within {limit_s:g} s'}

    def timeline_svg(self, n):
        with self.lock:
            self._read_log()
            return self.frames.timeline_svg(n)

    # -- state ----------------------------------------------------------------------
    def state(self, nframes=60):
        with self.lock:
            self._read_log()
            devs = []
            for i, (name, path) in enumerate(self.paths):
                d = {'index': i, 'name': f'{name} ({path})'}
                for v in VIEWS:
                    recs = self.q.cmd('qom-get', path=path, property=v)
                    for r in recs:
                        if 'state-name' in r:
                            r['state_name'] = r.pop('state-name')
                            r['type_name'] = r.pop('type-name')
                    d[v] = recs
                stats = self.q.cmd('qom-get', path=path, property='stats')
                d['stats'] = {k: v for k, v in stats.items() if v}
                d['shown_stats'] = {k: stats.get(k, 0) for k in core.SHOWN_STATS}
                d['caches'] = core.cache_rates(stats)
                devs.append(d)
            return {
                'source': 'qemu', 'config': {'qmp': self.qmp_path, 'trace_log': self.trace_log},
                'running': self._running(), 'now_ns': self.frames.last_t, 'steps': self.steps,
                'workload': None, 'devices': devs,
                'frames': self.frames.recent(nframes),
                'incidents': self.frames.recent_incidents(),
                'frame_counts': dict(self.frames.counts), 'trace_lost': 0,
            }

    def close(self):
        with self.lock:
            try:
                self.q.close()
            except Exception:
                pass
