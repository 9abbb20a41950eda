#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""When do an RC requester's retransmission timeouts happen around a live migration?

    QRNIC_QEMU=... python3 scripts/migration-probe.py [ACK timeout exponent, default 14] [runs, default 2]

Boots T2 with qcow2 overlays, runs ib_send_bw -D 12 -u N from vm1 to vm0 and, 4 s in,
live-migrates vm1 (the requester) while sampling every 50 ms, over the QMP connections
the migration uses, its device counters (retransmit_timeouts, retransmitted_packets,
tx_packets), query-migrate's status and the host's drop counters of both link sockets
(/proc/net/udp).  Prints the samples where something changed, then the tools' exit
status.  docs/qemu.md section 9 quotes what it showed.
"""
import os
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qrnic_vm import Topology
from qrnic_vm.tools import next_port, wait_tcp_listen

def udp_drops():
    ports = {}
    for n in t.vms:
        for _m, net, _mac in n.nics:
            ports[net.local] = n.guest_name
    out = {}
    for ln in open('/proc/net/udp').read().splitlines()[1:]:
        f = ln.split()
        p = int(f[1].split(':')[1], 16)
        if p in ports:
            out[ports[p]] = int(f[-1])
    return out

U = int(sys.argv[1]) if len(sys.argv) > 1 else 14
t = Topology('T2', overlay=True, qemu=os.environ.get('QRNIC_QEMU')).start()
try:
    for rep in range(int(sys.argv[2]) if len(sys.argv) > 2 else 2):
        s, c = t.pair(refresh=True)
        port = next_port()
        common = 'ib_send_bw -p %d -F -D 12 -u %d' % (port, U)
        sj = s.vm.spawn('%s -d %s -x %d' % (common, s.ibdev, s.gid))
        assert wait_tcp_listen(s.vm, port)
        cj = c.vm.spawn('%s -d %s -x %d %s' % (common, c.ibdev, c.gid, s.ip))
        src = t.vms[1]
        time.sleep(4)
        dst = src.twin(); dst.start(); dst.wait_ready()
        uri = 'unix:' + os.path.join(src.rundir, dst.name + '-mig.sock')
        path = src.qrnic_paths()[0]
        samples = []
        with dst.qmp() as qd, src.qmp() as qs:
            qd.cmd('migrate-incoming', uri=uri)
            qs.cmd('migrate-set-parameters', **{'max-bandwidth': 1 << 30})
            t0 = time.monotonic()
            def sample(q, tag):
                st = q.cmd('qom-get', path=path, property='stats')
                samples.append((time.monotonic() - t0, tag, st['retransmit_timeouts'], st['retransmitted_packets'], st['tx_packets'], udp_drops()))
            sample(qs, 'pre')
            qs.cmd('migrate', uri=uri)
            while True:
                m = qs.cmd('query-migrate')
                sample(qs, 'src:' + m['status'])
                if m['status'] in ('completed', 'failed'):
                    break
                time.sleep(0.05)
            while not qd.cmd('query-status').get('running'):
                time.sleep(0.02)
            for i in range(30):
                sample(qd, 'dst')
                time.sleep(0.1)
        print('downtime', m.get('downtime'), 'total', m.get('total-time'))
        last = None
        for x in samples:
            if last is None or x[2] != last[2] or x[1] != last[1]:
                print('%6.2fs %-16s timeouts %3d resent %5d tx %7d udp drops %s' % x)
            last = x
        src.quit_migrated(); t.vms[1] = dst
        for e in t._eps:
            if e.vm is src: e.vm = dst
        cj.vm = dst
        r = cj.wait(120); r2 = sj.wait(60)
        print('client rc', r.rc, 'server rc', r2.rc, r.output[-200:] if r.rc else '')
finally:
    t.stop()
