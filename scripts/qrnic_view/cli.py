# SPDX-License-Identifier: GPL-2.0-or-later
"""Command line of scripts/qrnic-view (docs/view.md)."""
import argparse
import asyncio
import json
import re
import signal
import sys

from . import core

SIZE_RE = re.compile(r'^(\d+)([kKmM]?)$')
TIME_RE = re.compile(r'^(\d+(?:\.\d+)?)(ns|us|ms|s)$')
TIME_UNIT = {'ns': 1, 'us': 1000, 'ms': 1_000_000, 's': 1_000_000_000}


def size_arg(text):
    m = SIZE_RE.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f'{text!r}: a size is a number with an optional K or M')
    return int(m.group(1)) * {'': 1, 'k': 1024, 'm': 1 << 20}[m.group(2).lower()]


def time_arg(text):
    m = TIME_RE.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f'{text!r}: a time is a number with ns, us, ms or s')
    return int(float(m.group(1)) * TIME_UNIT[m.group(2)])


def hosts_arg(text):
    try:
        hosts = [int(x) for x in text.split(',')]
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r}: hosts are 0, 1 or 0,1')
    if not hosts or any(h not in (0, 1) for h in hosts):
        raise argparse.ArgumentTypeError(f'{text!r}: hosts are 0, 1 or 0,1')
    return hosts


def parser():
    ap = argparse.ArgumentParser(
        prog='qrnic-view',
        description='A live view of qrnic devices in the browser: QPs, rings, caches and the '
                    'frames between the devices, with pause, step and timeline SVGs '
                    '(docs/view.md).')
    ap.add_argument('--host', default='127.0.0.1', help='address to listen on (default 127.0.0.1)')
    ap.add_argument('--port', type=int, default=8480,
                    help='TCP port (default 8480; 0: any free port, printed)')
    ap.add_argument('--refresh', type=time_arg, default=250_000_000, metavar='T',
                    help='how often the page gets the state (default 250ms)')
    ap.add_argument('--frames', type=int, default=60,
                    help='frames in the sequence diagram (default 60)')
    ap.add_argument('--state', action='store_true',
                    help='print the state as JSON once and exit (no server)')
    sub = ap.add_subparsers(dest='source', required=True, metavar='{sim,qemu}')
    s = sub.add_parser('sim', help='two simulated devices (the model in the harness world)')
    s.add_argument('--op', choices=('write', 'read', 'send'), default='write')
    s.add_argument('--size', type=size_arg, default=4096, help='message size (default 4K)')
    s.add_argument('--mtu', type=int, default=1024, help='path MTU (default 1024)')
    s.add_argument('--depth', type=int, default=2, help='operations outstanding (default 2)')
    s.add_argument('--count', type=int, default=0, help='operations to post (default 0: forever)')
    s.add_argument('--profile', default='teach',
                   help='timing profile: teach (default), cx5-100g, functional')
    s.add_argument('--latency', type=time_arg, default=2000, metavar='T',
                   help='one-way wire latency (default 2us)')
    s.add_argument('--loss', type=float, default=0.0, help='random frame loss, 0..1 (default 0)')
    s.add_argument('--seed', type=int, default=1)
    s.add_argument('--plan', metavar='FILE', help='fault plan file (docs/faults.md)')
    s.add_argument('--rule', action='append', default=[],
                   help="a fault rule, e.g. 'drop dir=tx op=write nth=5 count=1' (repeatable)")
    s.add_argument('--plan-hosts', type=hosts_arg, default=None, metavar='LIST',
                   help='hosts that get the plan: 0, 1 or 0,1 (default: both)')
    s.add_argument('--speed', type=time_arg, default=200_000, metavar='T',
                   help='simulated time per wall-clock second while running (default 200us)')
    s.add_argument('--run-for', type=time_arg, default=0, metavar='T',
                   help='with --state: simulate this long first')
    s.add_argument('--paused', action='store_true', help='start paused')
    q = sub.add_parser('qemu', help='a running QEMU with -device qrnic, over QMP')
    q.add_argument('--qmp', required=True, metavar='SOCK',
                   help='QMP socket (QEMU: -qmp unix:SOCK,server=on,wait=off)')
    q.add_argument('--dev', action='append', default=[], metavar='ID',
                   help='device id (-device qrnic,id=ID; repeatable; default: every qrnic)')
    q.add_argument('--trace-log', metavar='FILE',
                   help='the file of -trace qrnic_event,file=FILE (frames, step, timeline)')
    q.add_argument('--paused', action='store_true', help='stop the VM at start')
    return ap


def make_source(args):
    """The source of the parsed arguments; raises SystemExit(2) with a clear message."""
    def fail(msg):
        print(f'qrnic-view: {msg}', file=sys.stderr)
        raise SystemExit(2)
    if args.source == 'sim':
        from .sim import SimSource, SimError
        plan = []
        if args.plan:
            try:
                with open(args.plan, encoding='utf-8') as f:
                    plan.append(f.read())
            except OSError as e:
                fail(f'{args.plan}: {e.strerror}')
        plan += args.rule
        try:
            src = SimSource(op=args.op, size=args.size, mtu=args.mtu, depth=args.depth,
                            count=args.count, profile=args.profile, latency_ns=args.latency,
                            plan='\n'.join(plan) or None, plan_hosts=args.plan_hosts,
                            loss=args.loss, seed=args.seed)
        except SimError as e:
            fail(str(e))
        if args.paused:
            src.pause()
        return src
    from .qemu import QemuSource, QemuSourceError
    try:
        src = QemuSource(args.qmp, devs=args.dev or None, trace_log=args.trace_log)
        if args.paused:
            src.pause()
    except QemuSourceError as e:
        fail(str(e))
    return src


async def serve(app, host, port):
    from aiohttp import web
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        print(f'qrnic-view: cannot listen on {host}:{port}: {e.strerror}', file=sys.stderr)
        return 2
    real = site._server.sockets[0].getsockname()[1] if port == 0 else port
    print(f'qrnic-view: serving on http://{host}:{real}/', flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    return 0


def main(argv=None):
    args = parser().parse_args(argv)
    if args.frames < 1 or args.frames > 1000:
        print('qrnic-view: --frames must be 1..1000', file=sys.stderr)
        return 2
    if not 20_000_000 <= args.refresh <= 60_000_000_000:
        print('qrnic-view: --refresh must be 20ms..60s', file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print('qrnic-view: --port must be 0..65535', file=sys.stderr)
        return 2
    src = make_source(args)
    if args.state:
        if args.source == 'sim' and args.run_for:
            done = 0                    # in slices, as the server does, polling between
            while done < args.run_for:
                step = min(20_000, args.run_for - done)
                src.advance(step)
                done += step
        json.dump(src.state(args.frames), sys.stdout, sort_keys=True)
        print()
        src.close()
        return 0
    try:
        from .server import make_app
    except ImportError as e:
        print(f'qrnic-view: {e} (Debian: apt install python3-aiohttp)', file=sys.stderr)
        src.close()
        return 2
    speed = getattr(args, 'speed', 0)
    app = make_app(src, speed_ns=speed, refresh_s=args.refresh / 1e9, nframes=args.frames)
    return asyncio.run(serve(app, args.host, args.port))
