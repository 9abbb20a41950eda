#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A SEND that finds no receive WQE: RNR NAK, RNR wait, retry -- without a VM.

    python3 docs/tutorial/rnr_sim.py [--size 4096] [--mtu 1024] [--profile teach]
                                     [--min-rnr-timer 1] [--rnr-retry 7]
                                     [--recv-after 30us | --recv-after never]
                                     [--trace FILE.jsonl]

Two qrnic device models cabled back to back, in simulated time (the test
harness of tests/qrnic_harness.py, the same code as scripts/qrnic-sim, which
always keeps receive WQEs posted and so can never show a real RNR).  Device 0
(the requester) posts one SEND; device 1 (the responder) has posted no receive
WQE, so it answers with an RNR NAK carrying its min_rnr_timer; the requester
waits that long and sends again, once per RNR NAK, while device 1's program
posts its receive WQE --recv-after the SEND's doorbell (never: not at all).
Each RNR NAK costs one of --rnr-retry retries (7 = retry for ever); when
they run out the SEND completes with RNR_RETRY_EXC_ERR.

Prints the packets on the wire, the completions and the RNR counters, and with
--trace writes the devices' trace records in qrnic-sim's JSON lines format
(scripts/qrnic-timeline --list / -o FILE.svg draw it).

Docs: docs/tutorial/08-send-recv.md.  Needs the build (libqrnic_harness.so).
"""
import argparse
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tests'))
import qrnic_harness as q  # noqa: E402

# The IBTA RNR timer encoding (spec.md 12.4), in microseconds; code 0 is 655.36 ms.
RNR_US = [655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
          2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
          163840, 245760, 327680, 491520]
UNITS = {'ns': 1, 'us': 1000, 'ms': 1000_000, 's': 1000_000_000}


def duration(text):
    if text == 'never':
        return None
    m = re.fullmatch(r'(\d+(?:\.\d+)?)(ns|us|ms|s)', text)
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}' is not a time like 30us, 2ms or 'never'")
    return int(float(m.group(1)) * UNITS[m.group(2)])


def int_range(lo, hi):
    def parse(text):
        try:
            v = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f'{v} is not in {lo}..{hi}')
        return v
    return parse


def syndrome_text(s):
    if s & 0x60 == 0x20:
        code = s & 0x1f
        return f'RNR NAK, timer code {code} = {RNR_US[code] / 1000:g} ms'
    if s & 0x60 == 0x60:
        return {0x60: 'NAK PSN sequence error'}.get(s, f'NAK {s:#x}')
    return 'ACK'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 epilog=__doc__.split('\n\n', 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--size', type=int_range(0, 1 << 20), default=4096, help='SEND size in bytes')
    ap.add_argument('--mtu', type=int, choices=sorted(q.MTU), default=1024, help='path MTU')
    ap.add_argument('--profile', choices=['functional', 'cx5-100g', 'teach'], default='teach',
                    help='timing profile of both devices (docs/timing.md)')
    ap.add_argument('--min-rnr-timer', type=int_range(0, 31), default=1, metavar='CODE',
                    help="the responder's min_rnr_timer, IBTA code 0..31 (1 = 10 us)")
    ap.add_argument('--rnr-retry', type=int_range(0, 7), default=7, metavar='N',
                    help="the requester's rnr_retry, 0..7 (7 = for ever)")
    ap.add_argument('--recv-after', type=duration, default=duration('100us'), metavar='TIME',
                    help="post the receive WQE this long after the SEND's doorbell, or 'never'")
    ap.add_argument('--trace', metavar='FILE', help='write the trace (JSON lines)')
    a = ap.parse_args()
    if a.recv_after is None and a.rnr_retry == 7:
        ap.error("--recv-after never with --rnr-retry 7 would retry for ever; give --rnr-retry 0..6")
    if not os.path.exists(q.lib_path()):
        sys.exit(f'rnr_sim.py: {q.lib_path()} is missing: build first (ninja -C build)')

    w = q.World(2)
    for d in w.devs:
        d.set_timing(a.profile)
    a_dev, b_dev = w.devs
    conn = q.connect_rc(a_dev, b_dev, mtu=a.mtu, min_rnr_timer=a.min_rnr_timer,
                        rnr_retry=a.rnr_retry)
    src = a_dev.reg_mr(conn.a.pd, max(a.size, 1))
    dst = b_dev.reg_mr(conn.b.pd, max(a.size, 1))
    payload = bytes((i * 7 + 3) & 0xff for i in range(a.size))
    src.write(0, payload)
    w.run()                                   # settle the setup
    w.clear_frames()
    w.trace_enable()
    t0 = w.now
    conn.a.qp.post_send('SEND', [(src, 0, a.size)], wr_id=1)
    print(f'SEND of {a.size} B posted on dev 0 at t=0; dev 1 has no receive WQE '
          f'(min_rnr_timer {a.min_rnr_timer} = {RNR_US[a.min_rnr_timer] / 1000:g} ms, '
          f'rnr_retry {a.rnr_retry}{" = for ever" if a.rnr_retry == 7 else ""})')
    posted_at = None
    if a.recv_after is not None:
        w.run(ns=a.recv_after)
        if w.now < t0 + a.recv_after:
            w.advance(t0 + a.recv_after - w.now)
        conn.b.qp.post_recv([(dst, 0, max(a.size, 1))], wr_id=2)
        posted_at = w.now - t0
    w.run()
    end = w.now - t0

    events = sorted((e for e in w.trace() if e['name'] in ('tx', 'cqe')),
                    key=lambda e: e['t_ns'])   # stable: trace order within an instant
    print(f'\n{"time":>12}  dev  event')
    shown_recv = posted_at is None
    for e in events:
        t = e['t_ns'] - t0
        if not shown_recv and t >= posted_at:
            print(f'{posted_at / 1000:>9.3f} us   1   receive WQE posted')
            shown_recv = True
        if e['name'] == 'cqe':
            st = q.WC_STATUS[e['b']] if e['b'] < len(q.WC_STATUS) else e['b']
            print(f'{t / 1000:>9.3f} us   {e["dev"]}   CQE on CQ {e["a"]}: {st}')
            continue
        if e['name'] != 'tx':
            continue
        op = e['a']
        name = q.OP_NAME.get(op, f'opcode {op:#x}')
        what = f'tx {name} psn {e["psn"]}'
        if op == q.OP['RC_ACK']:
            syn = [x for x in w.frames(roce_only=True)
                   if x.src == e['dev'] and x.psn == e['psn'] and x.opcode == op]
            if syn:
                what = f'tx {syndrome_text(syn[0].syndrome)}, psn {e["psn"]}'
        print(f'{t / 1000:>9.3f} us   {e["dev"]}   {what}')
    if not shown_recv:
        print(f'{posted_at / 1000:>9.3f} us   1   receive WQE posted')

    ca, cb = conn.a.cq.poll(), conn.b.cq.poll()
    print()
    for who, cs in (('dev 0 (requester)', ca), ('dev 1 (responder)', cb)):
        for c in cs:
            print(f'{who}: wr_id {c["wr_id"]} {c["opcode_name"]} {c["status_name"]}'
                  + (f', {c["byte_len"]} bytes' if c['status_name'] == 'SUCCESS' and who[4] == '1' else ''))
        if not cs:
            print(f'{who}: no completion')
    if cb and cb[0]['status_name'] == 'SUCCESS':
        print('data:', 'identical' if dst.read(0, a.size) == payload else 'DIFFERENT')
    print(f'rnr_naks_sent {b_dev.stat("rnr_naks_sent")}, rnr_naks_rcvd {a_dev.stat("rnr_naks_rcvd")}, '
          f'done after {end / 1000:.3f} us')
    if a.trace:
        with open(a.trace, 'w') as f:
            for i, e in enumerate(w.trace()):
                f.write(json.dumps({'seq': i, 'dev': e['dev'], 't_ns': e['t_ns'] - t0 + 1000,
                                    'type': e['name'], 'qpn': e['qpn'], 'psn': e['psn'],
                                    'a': e['a'], 'b': e['b'], 'addr': e['addr']},
                                   separators=(',', ':')) + '\n')
    ok = ca and ca[0]['status_name'] == 'SUCCESS'
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
