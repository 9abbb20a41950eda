#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot qrnic test guests and run commands in them (CLI over scripts/qrnic_vm).

  scripts/vm.py check                       prerequisites; what the guest image contains
  scripts/vm.py run [opts] CMD [CMD ...]    boot, run each CMD (sh -c) in --vm N, print, power off
  scripts/vm.py shell [opts]                boot, then read commands from stdin
                                            (":vm N" switches VM, ":eps" lists endpoints, ":q" quits)
  scripts/vm.py boot-time [opts] [-n N]     boot N times, report seconds to agent ready
  scripts/vm.py demo [opts]                 boot, run the demo of scripts/run-demo.sh, print a table
  scripts/vm.py det-run [det opts] SCRIPT   deterministic run (T1 from an initramfs, -icount, no
                                            host input): /init runs SCRIPT (a file, or - for stdin)
                                            and powers off; prints its output (qrnic_vm/det.py)

Common options: -t T1|T2|T3|S4 (default T1; S3..S16: that many VMs on one
qrnic-switch, --switch 'ARGS' passes it arguments, e.g. '--rate 200M'),
--qrnic-props 'k=v,...' (every qrnic device), --link hub|dgram|unix|shm, --hosts
local|netns|netns-vxlan (netns: each VM in a network namespace of its own
standing in for a host machine, linked by veths and a bridge; netns-vxlan: the
VMs on taps in bridges with VXLAN between the hosts; root; default $QRNIC_HOSTS
or local), --mem MiB, --smp N, --cpu MODEL, --append 'k=v ...', --build (run build-qemu.sh and
guest-image.sh first), --quiet.  Logs: /tmp/qrnic-runs/<time>-<pid>/
(vmN-console.log, vmN-qemu.log, vmN-agent.log, vmN-cmdline.txt).
Exit status of run: the first non-zero command status (124 on timeout).
As a library: `from qrnic_vm import Topology` (add scripts/ to sys.path), or
import this file.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qrnic_vm import *  # noqa: E402,F401,F403
from qrnic_vm import PrereqError, Topology, VMError, find_image, find_qemu  # noqa: E402


def _topo(a, progress=True):
    return Topology(a.topology, link=a.link, hosts=a.hosts, mem=a.mem, smp=a.smp, cpu=a.cpu,
                    append=a.append.split() if a.append else (), build=a.build,
                    progress=progress and not a.quiet, qrnic_props=a.qrnic_props,
                    switch_args=a.switch.split() if a.switch else ())


def _topology_name(v):
    from qrnic_vm.runner import star_size
    if v in ('T1', 'T2', 'T3') or star_size(v):
        return v
    raise argparse.ArgumentTypeError('%r: choose from T1, T2, T3, S3..S16' % v)


def cmd_check(a):
    ok = True
    try:
        q = find_qemu(build=a.build)
        print('qemu:     %s' % q)
    except PrereqError as e:
        ok = False
        print('qemu:     MISSING - %s' % e)
    try:
        img = find_image(build=a.build)
        print('image:    %s' % img.path)
        print('qrnic.ko: %s' % img.driver_note)
        print('provider: %s' % img.provider_note)
    except PrereqError as e:
        ok = False
        print('image:    MISSING - %s' % e)
    return 0 if ok else 1


def cmd_run(a):
    rc = 0
    with _topo(a) as t:
        v = t.vm(a.vm)
        for c in a.cmds:
            r = v.run(c, timeout=a.timeout, check=False)
            sys.stdout.write(r.output)
            if r.output and not r.output.endswith('\n'):
                sys.stdout.write('\n')
            st = 'timeout' if r.timed_out else r.rc
            print('[%s] `%s` -> %s (%.1fs)' % (v.name, c, st, r.dt), file=sys.stderr)
            if not r.ok and rc == 0:
                rc = 124 if r.timed_out else (r.rc or 1)
        if a.keep:
            print('VM(s) kept running; press Enter to power off (run dir %s)' % t.rundir, file=sys.stderr)
            sys.stdin.readline()
    return rc


def cmd_shell(a):
    with _topo(a) as t:
        cur = a.vm
        while True:
            try:
                line = input('%s# ' % t.vm(cur).name)
            except EOFError:
                break
            line = line.strip()
            if not line:
                continue
            if line in (':q', ':quit', 'exit'):
                break
            if line.startswith(':vm'):
                cur = int(line.split()[1])
                continue
            if line == ':eps':
                for e in t.endpoints(refresh=True):
                    print(e)
                continue
            r = t.vm(cur).run(line, timeout=a.timeout, check=False)
            sys.stdout.write(r.output)
            if r.rc:
                print('[rc=%s]' % ('timeout' if r.timed_out else r.rc))
    return 0


def cmd_boot_time(a):
    times = []
    for i in range(a.n):
        t0 = time.monotonic()
        t = _topo(a, progress=not a.quiet)
        with t:
            bt = [v.boot_time for v in t.vms]
            up = [v.ready_info.get('uptime') for v in t.vms]
        total = time.monotonic() - t0
        times.append(max(bt))
        print('boot %d: agent ready %s s after QEMU start (guest uptime %s s); '
              'boot + poweroff %.1f s' % (i + 1, ', '.join('%.1f' % x for x in bt),
                                          ', '.join('%.1f' % x for x in up), total))
    print('%s smp=%d mem=%d: min %.1f s, max %.1f s' % (a.topology, a.smp, a.mem, min(times), max(times)))
    return 0


def cmd_demo(a):
    from qrnic_vm.tools import demo
    with _topo(a) as t:
        t.image.require_driver()
        ok = demo(t)
    return 0 if ok else 1


def cmd_det_run(a):
    from qrnic_vm.det import ICOUNT, det_run
    script = sys.stdin.read() if a.script == '-' else open(a.script).read()
    r = det_run(script, build=a.build, smp=a.smp, mem=a.mem, profile=a.profile,
                icount=None if a.icount == 'off' else (a.icount or ICOUNT),
                seed=None if a.seed == 'off' else int(a.seed), timeout=a.timeout, progress=not a.quiet)
    sys.stdout.write(r.output)
    if r.failure:
        print(r.failure, file=sys.stderr)
    for dev, q in sorted(r.qom.items()):
        print('%s: late-events %s, late-ns-total %s' % (dev, q.get('late-events'), q.get('late-ns-total')),
              file=sys.stderr)
    print('det-run: workload rc %s, %.1f s, logs in %s' % (r.rc, r.wall, r.rundir), file=sys.stderr)
    return 0 if r.ok else (r.rc or 1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)

    def common(sp):
        sp.add_argument('-t', '--topology', default='T1', type=_topology_name,
                        help='T1, T2, T3, or S3..S16 (VMs on one qrnic-switch)')
        sp.add_argument('--switch', default='', help="star topologies: qrnic-switch arguments")
        sp.add_argument('--qrnic-props', default='', help='QEMU properties of every qrnic device')
        sp.add_argument('--link', default=None, choices=('hub', 'dgram', 'unix', 'shm'),
                        help="the cable: T1 hub (default), dgram or unix; T2/T3 dgram (default; env "
                             "QRNIC_LINK), unix (a unix-domain datagram socketpair) or shm (shared-memory "
                             "rings, an experiment)")
        sp.add_argument('--hosts', default=None, choices=('local', 'netns', 'netns-vxlan'),
                        help="local (default; env QRNIC_HOSTS); netns: each VM's QEMU in a network "
                             "namespace of its own; netns-vxlan: the same, the VMs on taps in bridges "
                             "with VXLAN between the hosts (docs/guest.md, VMs on several hosts)")
        sp.add_argument('--mem', type=int, default=1024)
        sp.add_argument('--smp', type=int, default=1)
        sp.add_argument('--cpu', default=None)
        sp.add_argument('--append', default='')
        sp.add_argument('--build', action='store_true', help='run build-qemu.sh and guest-image.sh first')
        sp.add_argument('--quiet', action='store_true')
        sp.add_argument('--vm', type=int, default=0)
        sp.add_argument('--timeout', type=int, default=120)

    sp = sub.add_parser('check')
    sp.add_argument('--build', action='store_true')
    sp.set_defaults(fn=cmd_check)
    sp = sub.add_parser('run')
    common(sp)
    sp.add_argument('--keep', action='store_true', help='keep the VMs up until Enter is pressed')
    sp.add_argument('cmds', nargs='+')
    sp.set_defaults(fn=cmd_run)
    sp = sub.add_parser('shell')
    common(sp)
    sp.set_defaults(fn=cmd_shell)
    sp = sub.add_parser('boot-time')
    common(sp)
    sp.add_argument('-n', type=int, default=3)
    sp.set_defaults(fn=cmd_boot_time)
    sp = sub.add_parser('demo')
    common(sp)
    sp.set_defaults(fn=cmd_demo)
    sp = sub.add_parser('det-run', help='deterministic run of a guest script (see docs/guest.md)')
    sp.add_argument('--smp', type=int, default=2)
    sp.add_argument('--mem', type=int, default=1024)
    sp.add_argument('--profile', default=None, help='timing profile of both qrnic devices (cx5-100g, teach...)')
    sp.add_argument('--icount', default=None, help="-icount value (default shift=0,sleep=off,align=off; 'off': none)")
    sp.add_argument('--seed', default='1', help="-seed value ('off': none)")
    sp.add_argument('--timeout', type=int, default=900)
    sp.add_argument('--build', action='store_true', help='run build-qemu.sh and guest-image.sh first')
    sp.add_argument('--quiet', action='store_true')
    sp.add_argument('script')
    sp.set_defaults(fn=cmd_det_run)
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except PrereqError as e:
        print('vm.py: %s' % e, file=sys.stderr)
        return 2
    except VMError as e:
        print('vm.py: %s' % e, file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
