# SPDX-License-Identifier: GPL-2.0-or-later
"""Scale, asserted at a small size (issue 21, item 5; the full size with
figures is bench/scale: 65536 QPs, 1M MRs): every QPN of a max_qp 4096
device and 65536 MRs are created and destroyed through the admin queue,
three rounds; the model's memory (this process's RSS: the model runs in
it) must come back to the same level after each round.

What "baseline" means here: the device's object tables are allocated
once when the device is made (calloc of max_qp entries; the MPT and the
MTT, max_mr and max_mtt entries, as anonymous mappings when large: see
model/device.c table_alloc); their pages become resident the first time they are used and
stay so, like the rings' simulated guest memory (reused each round with
hx_mem_mark/hx_mem_release).  Per-object memory (a rung QP's send window,
~42 KB) is freed on destroy.  So the baseline is RSS after the first
round; rounds 2 and 3 must end within 2 MiB of it (malloc arena noise;
one QP's leaked send window per 8 rung QPs would already be ~23 MiB, one
leaked 64-byte record per MR 4 MiB), and peak RSS with everything created
must not grow from round to round either.  (Freed memory may stay in
malloc's arena, so RSS after a round need not drop below its peak: run
alone, round 1 peaks ~21 MiB above its end, the 512 rung QPs' windows;
after other tests in the same process it may not drop at all.  Hence
round against round, not peak against end.)"""
import os

import pytest

import scale_common as s

# Under the san tier ASan's quarantine holds freed memory (and its shadow
# grows with it): RSS then says nothing about the model's own use.
pytestmark = pytest.mark.skipif('libasan' in os.environ.get('LD_PRELOAD', ''),
                                reason='RSS is meaningless under ASan (quarantine)')

TOL_KIB = 2048


def test_qps_memory_returns_to_baseline():
    with s.qp_world(4096) as w:
        d = w.devs[0]
        pd, cq = d.alloc_pd(), d.create_cq(12)
        r0 = s.rss_kib()
        rounds = []
        for _ in range(3):
            n, full, _secs = s.qp_cycle(d, pd, cq, ring_every=8)
            assert n == 4094
            rounds.append((full, s.rss_kib()))
            d.check()
        print(f'\nQPs: start {r0} KiB; (with all, after destroy) per round: {rounds}')
        (f1, a1), (f2, a2), (f3, a3) = rounds
        assert a2 - a1 <= TOL_KIB and a3 - a1 <= TOL_KIB, rounds
        assert f3 - f1 <= TOL_KIB, rounds
        assert d.create_qp(pd, cq) is not None


def test_mrs_memory_returns_to_baseline():
    n = 65536
    with s.mr_world(n) as w:
        d = w.devs[0]
        pd, page, pbl = s.mr_setup(d)
        r0 = s.rss_kib()
        rounds = []
        for _ in range(3):
            full, _secs = s.mr_cycle(d, pd, page, pbl, n)
            rounds.append((full, s.rss_kib()))
            d.check()
        print(f'\nMRs: start {r0} KiB; (with all, after dereg) per round: {rounds}')
        (f1, a1), (f2, a2), (f3, a3) = rounds
        assert a2 - a1 <= TOL_KIB and a3 - a1 <= TOL_KIB, rounds
        assert f3 - f1 <= TOL_KIB, rounds


def test_default_limits_cost_memory_only_when_used():
    """The default number spaces are a ConnectX-5's (65536 QPs, CQs, PDs,
    AHs, SRQs; issue 16 item 5): their tables are host arrays, calloc'd
    and backed only where a slot is used, so a device with the defaults,
    made and reset, costs far less than its tables' size: eight of them
    must take less than 10 MiB beyond eight devices of 64 slots, where the
    tables of QPs (1968 bytes a slot), CQs, PDs, AHs and SRQs, if touched,
    would be 8 x 144 MiB.  Measured in a fresh process, as QEMU makes its
    devices: in a long one glibc serves large callocs from memory freed
    earlier (its mmap threshold grows after frees) and zeroes, so
    touches, it -- that is the allocator's cost, not the model's."""
    import subprocess
    import sys
    code = r"""
import sys
sys.path.insert(0, 'tests')
import scale_common as s
def rss_of(cfg):
    r0 = s.rss_kib()
    ws = [s.q.World(1, cfg=cfg, mem_mb=16, framelog=0) for _ in range(8)]
    attr = ws[0].devs[0].attr
    for w in ws:            # a reset (QEMU resets each device at boot)
        w.devs[0].flr()     # must not touch the tables either
    return ws, s.rss_kib() - r0, attr
ws, dflt, a = rss_of('')
ws2, base, _ = rss_of('max_qp=64,max_cq=64,max_pd=64,max_ah=64,max_srq=64')
print(dflt, base, a['max_qp'], a['max_cq'], a['max_pd'], a['max_srq'], a['max_sge'])
"""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, '-c', code], cwd=repo, env=dict(os.environ),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    dflt, base, *limits = map(int, out.stdout.split())
    print(f'\n8 devices: {base} KiB with 64-slot spaces, {dflt} KiB with the defaults')
    assert limits == [65536, 65536, 65536, 65536, 30], limits
    assert dflt - base < 10240, (base, dflt)
