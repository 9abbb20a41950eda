# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: driver life cycle on topology T1.

- qrnic unload/reload 10 times: refcount 0 before each unload, both devices
  back after each load, no growth of unreclaimable slab / vmalloc / percpu
  memory (Debian's kernel has no kmemleak), kernel log clean;
- a verbs process killed with SIGKILL in the middle of a transfer: the kernel
  releases its QPs, CQs, MRs, PDs (rdma res shows none left) and the device
  still works afterwards."""
import time

import pytest

from guest.vmlib import (check_pair, client_server, ensure_driver, guest_dmesg, meminfo, need_driver,  # noqa: F401
                         next_port, pair, perftest_table, rdma_res, topo, wait_tcp_listen)

pytestmark = [pytest.mark.guest, pytest.mark.slow,
              pytest.mark.parametrize('topo', ['T1'], indirect=True)]

RELOADS = 10
WARMUP = 5
# Allowed growth over RELOADS load/unload cycles after WARMUP ones (KiB).
# Measured: the first few cycles move SUnreclaim by up to ~300 KiB (caches
# settling), later ones by 0-8 KiB per 5 cycles; a leak grows linearly.
LEAK_SLAB_KIB = 256
LEAK_VMALLOC_KIB = 256


def _reload(v, n_dev):
    r = v.run('''set -e
test "$(cat /sys/module/qrnic/refcnt)" = 0 || { echo "refcnt $(cat /sys/module/qrnic/refcnt)"; exit 10; }
rmmod qrnic
test ! -e /sys/module/qrnic
test -z "$(ls /sys/class/infiniband 2>/dev/null)" || { echo "left: $(ls /sys/class/infiniband)"; exit 11; }
modprobe qrnic
for i in $(seq 50); do [ "$(ls /sys/class/infiniband | wc -l)" -ge %d ] && break; sleep 0.2; done
ls /sys/class/infiniband''' % n_dev, timeout=120, check=False)
    assert r.ok, 'reload failed (rc %s):\n%s' % (r.rc, r.output)
    assert len(r.out.split()) == n_dev, r.out


def test_module_reload_loop(topo):
    need_driver(topo, provider=False)
    v = topo.vm(0)
    n_dev = len(v.run('ls /sys/class/infiniband').split())
    assert n_dev == 2
    try:
        for _ in range(WARMUP):           # first-time allocations are not leaks
            _reload(v, n_dev)
        before = meminfo(v)
        t0 = time.monotonic()
        for _ in range(RELOADS):
            _reload(v, n_dev)
        dt = time.monotonic() - t0
        after = meminfo(v)
    finally:
        ensure_driver(topo)
    grow = {k: after[k] - before[k] for k in ('SUnreclaim', 'VmallocUsed', 'Percpu', 'Slab')}
    print('%d reloads in %.1fs; growth KiB: %s' % (RELOADS, dt, grow))
    assert grow['SUnreclaim'] <= LEAK_SLAB_KIB, grow
    assert grow['VmallocUsed'] <= LEAK_VMALLOC_KIB, grow
    assert grow['Percpu'] <= 64, grow
    # and the devices work again
    topo.endpoints(refresh=True)
    s, c = pair(topo)
    port = next_port()
    srv, cli = client_server(s.vm, 'ibv_rc_pingpong -d %s -g %d -p %d -n 20 -c' % (s.ibdev, s.gid, port),
                             c.vm, 'ibv_rc_pingpong -d %s -g %d -p %d -n 20 -c %s' % (c.ibdev, c.gid, port, s.ip),
                             port)
    check_pair(srv, cli)


@pytest.mark.parametrize('victim', ['client', 'server'])
def test_kill9_mid_transfer(topo, victim):
    s, c = pair(topo)
    port = next_port()
    common = '-p %d -D 30 -F -s 65536' % port
    # stdbuf: perftest's stdout is a file here; line buffering shows when it is connected
    sjob = s.vm.spawn('stdbuf -oL ib_write_bw -d %s -x %d %s' % (s.ibdev, s.gid, common))
    cjob = None
    try:
        assert wait_tcp_listen(s.vm, port), sjob.stop().output
        cjob = c.vm.spawn('stdbuf -oL ib_write_bw -d %s -x %d %s %s' % (c.ibdev, c.gid, common, s.ip))
        # connected once both sides printed the peer's address; then let data flow a little
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if 'remote address' in cjob.poll().output and 'remote address' in sjob.poll().output:
                break
            time.sleep(0.5)
        else:
            pytest.fail('ib_write_bw never connected:\nclient:\n%s\nserver:\n%s'
                        % (cjob.poll().output[-2000:], sjob.poll().output[-2000:]), pytrace=False)
        time.sleep(3)
        assert rdma_res(c.vm, 'qp') and rdma_res(s.vm, 'qp'), 'no user QPs listed by rdma res during the run'
        job = cjob if victim == 'client' else sjob
        assert job.poll().running, 'the %s finished before it could be killed:\n%s' % (victim, job.poll().output)
        job.kill(9)
        res = job.wait(30)
        assert res.rc == -9 or res.rc == 137, 'rc %s' % res.rc
        # the survivor sees the peer vanish: it must exit (error) or be stoppable
        other = sjob if victim == 'client' else cjob
        other.wait(40)
        other.stop(5)
    finally:
        for j in (cjob, sjob):
            if j is not None:
                j.stop(5)
    # every user object is gone once the processes have exited
    deadline = time.monotonic() + 20
    left = {}
    while time.monotonic() < deadline:
        left = {(v.name, kind): rdma_res(v, kind) for v in {s.vm, c.vm} for kind in ('qp', 'cq', 'mr', 'pd')}
        left = {k: x for k, x in left.items() if x}
        if not left:
            break
        time.sleep(1)
    assert not left, 'RDMA resources left after kill -9: %s' % left
    # the device still works
    port = next_port()
    srv, cli = client_server(s.vm, 'ib_write_bw -d %s -x %d -p %d -n 100 -F' % (s.ibdev, s.gid, port),
                             c.vm, 'ib_write_bw -d %s -x %d -p %d -n 100 -F %s' % (c.ibdev, c.gid, port, s.ip),
                             port, timeout=180)
    check_pair(srv, cli)
    assert perftest_table(cli.output), cli.output

