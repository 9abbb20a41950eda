# SPDX-License-Identifier: GPL-2.0-or-later
"""What every source of scripts/qrnic-view shares: the frames of the sequence
diagram, made from the device's trace records, the cache hit rates, and the
timeline SVG (drawn by scripts/qrnic-timeline's own code).

A trace record here is a dict with dev, t_ns, type (the name: 'tx', 'rx',
'nak', ...), qpn, psn, a, b, addr -- what the harness's World.trace() gives
and what a QEMU `-trace qrnic_event` line holds.
"""
import collections
import importlib.machinery
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)
REPO = os.path.dirname(SCRIPTS)

_timeline = None


def timeline():
    """scripts/qrnic-timeline as a module (it is a script without .py; loaded,
    not copied, so the live view draws exactly what the tool draws)."""
    global _timeline
    if _timeline is None:
        path = os.path.join(SCRIPTS, 'qrnic-timeline')
        loader = importlib.machinery.SourceFileLoader('qrnic_timeline', path)
        spec = importlib.util.spec_from_loader('qrnic_timeline', loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        _timeline = mod
    return _timeline


ACK = 0x11
ATOMIC_ACK = 0x12
# AETH syndromes (IBTA 9.7.5.2.3): 0x20..0x3f RNR NAK, 0x60 sequence error,
# 0x61 invalid request, 0x62 remote access, 0x63 remote operational
NAK_KIND = {0x60: 'seq', 0x61: 'inv-req', 0x62: 'access', 0x63: 'rem-op'}


def nak_kind(syndrome):
    if 0x20 <= syndrome <= 0x3f:
        return 'rnr'
    return NAK_KIND.get(syndrome, f'{syndrome:#x}')


def opname(opcode):
    return timeline().OPCODES.get(opcode, f'opcode {opcode:#04x}')


class FrameTracker:
    """The frames between the devices, from their tx and rx trace records.

    A tx record is a frame put on the wire; the rx record on another device
    with the same opcode, PSN and length is its arrival.  A link delivers in
    order, so when a frame from device X arrives, every older frame from X
    still waiting was lost (dropped by a fault rule, the wire, or the
    receiver's checks); when a frame and its retransmitted copy both wait,
    the arrival is taken to be the copy's.  A request or response frame whose (device, QP, PSN,
    opcode) was sent before is a retransmission; an ACK frame that follows
    the device's own 'nak' record for that PSN is a NAK.  Bounded: the last
    `keep` frames, at most `max_pending` frames waiting for their arrival,
    the last `keep_events` records (for the SVG).

    Not scripts/qrnic-timeline's pair_frames(): that pairs a whole trace at
    once, while the view takes records as they come and must say at every
    moment which frames are in flight."""

    def __init__(self, keep=300, max_pending=4096, keep_events=50000, remember=65536):
        self.frames = collections.deque(maxlen=keep)
        self.incidents = collections.deque(maxlen=40)  # lost, NAK and retransmitted frames
        self.pending = collections.deque()
        self.max_pending = max_pending
        self.events = collections.deque(maxlen=keep_events)
        self.sent = collections.OrderedDict()   # (dev, qpn, psn, opcode) -> times sent
        self.remember = remember
        self.naks = {}                          # (dev, psn) -> syndrome of the 'nak' record
        self.next_id = 0
        self.seq = 0
        self.devs = set()
        self.last_t = 0
        self.counts = {'frames': 0, 'delivered': 0, 'lost': 0, 'retransmitted': 0,
                       'naks': 0, 'events': 0}

    def feed(self, ev):
        ev = dict(ev)
        ev['seq'] = self.seq
        self.seq += 1
        self.counts['events'] += 1
        self.events.append(ev)
        self.devs.add(ev['dev'])
        self.last_t = max(self.last_t, ev['t_ns'])
        t = ev['type']
        if t == 'nak':
            self.naks[(ev['dev'], ev['psn'])] = ev['a']
            if len(self.naks) > 1024:
                self.naks.pop(next(iter(self.naks)))
        elif t == 'tx':
            self._tx(ev)
        elif t == 'rx':
            self._rx(ev)

    def _tx(self, ev):
        opc = ev['a']
        f = {'id': self.next_id, 'src': ev['dev'], 'dst': None, 't_tx': ev['t_ns'],
             't_rx': None, 'qpn': ev['qpn'], 'psn': ev['psn'], 'opcode': opc,
             'op': opname(opc), 'len': ev['b'], 'status': 'flight', 'retx': False,
             'nak': None}
        self.next_id += 1
        self.counts['frames'] += 1
        if opc == ACK:
            syn = self.naks.pop((ev['dev'], ev['psn']), None)
            if syn is not None:
                f['nak'] = nak_kind(syn)
                f['op'] = 'RNR NAK' if f['nak'] == 'rnr' else f'NAK {f["nak"]}'
                self.counts['naks'] += 1
        else:
            key = (ev['dev'], ev['qpn'], ev['psn'], opc)
            n = self.sent.get(key, 0)
            if n:
                f['retx'] = True
                self.counts['retransmitted'] += 1
                self.sent.move_to_end(key)
            self.sent[key] = n + 1
            if len(self.sent) > self.remember:
                self.sent.popitem(last=False)
        self.frames.append(f)
        if f['retx'] or f['nak']:
            self.incidents.append(f)
        self.pending.append(f)
        if len(self.pending) > self.max_pending:
            self.pending.popleft()['status'] = 'unknown'

    def _rx(self, ev):
        # the newest matching frame: when the original of a retransmitted
        # frame was lost at the tail (nothing after it arrived), both wait
        # here and the arrival is the copy's
        i = None
        for j, f in enumerate(self.pending):
            if (f['src'] != ev['dev'] and f['opcode'] == ev['a'] and f['psn'] == ev['psn']
                    and f['len'] == ev['b'] and f['t_tx'] <= ev['t_ns']):
                i = j
        if i is None:
            return                  # its tx is older than what we keep
        f = self.pending[i]
        keep = collections.deque()
        for j in range(i):
            g = self.pending[j]
            if g['src'] == f['src'] and g['dst'] in (None, ev['dev']):
                g['status'] = 'lost'
                g['dst'] = ev['dev']
                self.counts['lost'] += 1
                self.incidents.append(g)
            else:
                keep.append(g)
        f['status'] = 'delivered'
        f['dst'] = ev['dev']
        f['t_rx'] = ev['t_ns']
        self.counts['delivered'] += 1
        for j in range(i + 1, len(self.pending)):
            keep.append(self.pending[j])
        self.pending = keep

    def recent(self, n=60):
        """The last n frames, oldest first; a frame without a known receiver
        goes to the other device when there are two."""
        out = []
        devs = sorted(self.devs)
        for f in list(self.frames)[-n:]:
            g = dict(f)
            if g['dst'] is None and len(devs) == 2:
                g['dst'] = devs[1] if g['src'] == devs[0] else devs[0]
            out.append(g)
        return out

    def recent_incidents(self, n=20):
        """The last n lost, NAK and retransmitted frames, oldest first."""
        return [dict(f) for f in list(self.incidents)[-n:]]

    def timeline_svg(self, n=1, title=None):
        """The last n complete operations (doorbell to CQE) of the records
        kept, side by side, as scripts/qrnic-timeline draws them.  Raises
        ValueError when there is none."""
        tl = timeline()
        evs = []
        for e in self.events:
            if e['type'] not in tl.TYPES:
                continue
            evs.append(tl.Ev(e['seq'], e['dev'], e['t_ns'], e['type'], e['qpn'], e['psn'],
                             e['a'], e['b'], e.get('addr', 0)))
        if not evs:
            raise ValueError('no trace records yet')
        ops = [op for op in tl.find_ops(evs) if op.cqe is not None and op.doorbell is not None]
        if not ops:
            raise ValueError('no complete operation (doorbell to CQE) in the last '
                             f'{len(evs)} trace records yet')
        ops = ops[-n:]
        panels = [(op, f'{op.kind}, dev {op.dev} QP {op.qpn}, PSN {op.psn}') for op in ops]
        return tl.render(panels, title=title or f'qrnic-view: the last {len(ops)} operation(s)')


CACHES = ('qpc', 'mpt', 'mtt')


def cache_rates(stats):
    """{'qpc': {'hits', 'misses', 'rate'}, ...} from the device counters;
    rate None when there was no lookup (no cache model, e.g. profile functional)."""
    out = {}
    for c in CACHES:
        h = int(stats.get(f'{c}_cache_hits', 0))
        m = int(stats.get(f'{c}_cache_misses', 0))
        out[c] = {'hits': h, 'misses': m, 'rate': (h / (h + m)) if h + m else None}
    return out


# the counters the page shows (all of them are in the JSON)
SHOWN_STATS = ('tx_packets', 'rx_packets', 'retransmitted_packets', 'retransmit_timeouts',
               'seq_naks_sent', 'seq_naks_rcvd', 'rnr_naks_sent', 'rnr_naks_rcvd',
               'duplicate_requests', 'acks_sent', 'acks_rcvd', 'cqes', 'cqe_errors',
               'doorbells', 'interrupts', 'faults_injected', 'window_cuts')
