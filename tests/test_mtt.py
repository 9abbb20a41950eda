# SPDX-License-Identifier: GPL-2.0-or-later
"""MTT-cache misses in the timing model (issue 5; model/timing.c, docs/timing.md
sections 2-4) and the translation cache counters (docs/spec.md section 15):

* an MTT miss is served by one of mtt_miss_slots miss handlers, busy for the
  fill read plus mtt_miss_ns; random WRITEs over a remote MR much larger than
  the cache's reach lose bandwidth, the same MR written in order does not
  (sequential next-line prefetch), unlimited handlers bring the old
  behaviour back (misses cost latency, not bandwidth);
* calibration: Husky's ConnectX-5 points (17.2 % MTT misses -> 96.6 Gb/s,
  49.1 % -> 48 Gb/s) within 10 %;
* qpc/mpt/mtt_cache_hits/misses count what they say, are 0 without a timing
  model, and QUERY_STATS, the harness and docs/spec.md agree on them;
* functional results do not change, runs stay deterministic.
"""
import json
import os
import re

import pytest

import qrnic_harness as q
from test_timing import ALONE, run_sim, sim

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W4K = ['--op', 'write', '--size', '4K', '--depth', 128, *ALONE]
CACHE_STATS = ['qpc_cache_hits', 'qpc_cache_misses', 'mpt_cache_hits', 'mpt_cache_misses',
               'mtt_cache_hits', 'mtt_cache_misses']


def mtt_miss_rate(j, role='responder'):
    c = j['caches'][role]
    return c['mtt_misses'] / max(1, c['mtt_hits'] + c['mtt_misses'])


def verified(j):
    return {k: j['verified'][k] for k in ('messages', 'bytes', 'final_buffers', 'final_bytes',
                                          'errors')}


# ---- bandwidth -------------------------------------------------------------------------------
def test_random_offsets_over_a_large_mr_cut_bandwidth():
    """128 MiB remote MR (twice the 64 MiB the default MTT cache maps):
    written in order, every line is prefetched and the port is the limit;
    written at random pages, about half the lookups miss and the single miss
    handler caps the bandwidth well below it."""
    args = [*W4K, '--count', 8000, '--mr-size', '128M', '--profile', 'cx5-100g']
    seq = sim(*args, '--offsets', 'seq')
    rnd = sim(*args, '--offsets', 'random')
    assert seq['bandwidth_bps'] > 90e9, seq['bandwidth_bps']
    assert rnd['bandwidth_bps'] < 0.7 * seq['bandwidth_bps'], (seq['bandwidth_bps'],
                                                               rnd['bandwidth_bps'])
    assert mtt_miss_rate(seq) < 0.01 and mtt_miss_rate(rnd) > 0.4, (mtt_miss_rate(seq),
                                                                    mtt_miss_rate(rnd))
    # the requester reads its 128 source slots over and over: warm after the first pass
    for j in (seq, rnd):
        assert j['caches']['requester']['mtt_misses'] <= 16, j['caches']
        assert j['caches']['responder']['mtt_hits'] + j['caches']['responder']['mtt_misses'] \
            == 8000                 # one 4 KiB page per message
        assert j['stats']['mtt_cache_misses'] == (j['caches']['requester']['mtt_misses'] +
                                                  j['caches']['responder']['mtt_misses'])
    # latency grows with the queue in front of the miss handler
    assert rnd['latency_ns']['p50'] > seq['latency_ns']['p50']


@pytest.mark.parametrize('mr, published_miss, published_bps', [
    ('66M', 0.172, 96.6e9),      # Husky baseline
    ('124M', 0.491, 48e9),       # Husky with MR churn
])
def test_calibration_husky(mr, published_miss, published_bps):
    """docs/timing.md 4.1, row "bandwidth under MTT-cache misses": a remote MR
    sized so that the responder's MTT miss rate is Husky's gives Husky's
    bandwidth within 10 %."""
    j = sim(*W4K, '--count', 60000, '--mr-size', mr, '--offsets', 'random',
            '--profile', 'cx5-100g')
    assert abs(mtt_miss_rate(j) - published_miss) < 0.03, mtt_miss_rate(j)
    assert abs(j['bandwidth_bps'] / published_bps - 1) < 0.10, j['bandwidth_bps']


def test_miss_handlers_bound_the_bandwidth():
    """More miss handlers or a cheaper miss: more bandwidth; unlimited
    handlers and no handler time: misses overlap and the port is the limit
    again (the model before the miss handlers)."""
    args = [*W4K, '--count', 6000, '--mr-size', '256M', '--offsets', 'random',
            '--profile', 'cx5-100g']
    bw = {t: sim(*args, '--timing', t)['bandwidth_bps'] for t in
          ['mtt_miss_slots=1', 'mtt_miss_slots=2', 'mtt_miss_slots=4',
           'mtt_miss_slots=1,mtt_miss_ns=0', 'mtt_miss_slots=0,mtt_miss_ns=0']}
    assert bw['mtt_miss_slots=1'] < bw['mtt_miss_slots=2'] < bw['mtt_miss_slots=4'], bw
    assert bw['mtt_miss_slots=1'] < 0.8 * bw['mtt_miss_slots=1,mtt_miss_ns=0'], bw
    assert bw['mtt_miss_slots=0,mtt_miss_ns=0'] > 90e9, bw


@pytest.mark.parametrize('op', ['write', 'read'])
def test_prefetch_hides_sequential_streams(op):
    """8 messages of 1 MiB through 16 distinct 1 MiB slots, cold caches: the
    stream detector prefetches each next MTT line, so at most a couple of
    lookups miss and the port stays the limit; without the prefetch every
    eighth page misses and costs bandwidth."""
    args = ['--op', op, '--size', '1M', '--depth', 16, '--count', 8, '--profile', 'cx5-100g',
            *ALONE]
    on = sim(*args)
    off = sim(*args, '--timing', 'mtt_prefetch=0')
    for role in ('requester', 'responder'):
        assert on['caches'][role]['mtt_misses'] <= 4, on['caches']
        assert off['caches'][role]['mtt_misses'] >= 8 * 256 // 8 - 2, off['caches']
    assert on['bandwidth_bps'] > 0.95 * 98e9, on['bandwidth_bps']
    assert off['bandwidth_bps'] < 0.9 * on['bandwidth_bps'], (on['bandwidth_bps'],
                                                              off['bandwidth_bps'])


# ---- functional results, determinism ---------------------------------------------------------
@pytest.mark.parametrize('op', ['write', 'read'])
def test_timing_changes_no_bytes(op):
    """The random slots are the workload's, not the timing's: the same
    messages land in the same slots under every profile and are verified
    alike; without a timing model the cache counters stay 0."""
    args = ['--op', op, '--size', '4K', '--depth', 32, '--count', 1500, '--mr-size', '64M',
            '--offsets', 'random', *ALONE]
    runs = {p: sim(*args, '--profile', p) for p in ['functional', 'cx5-100g', 'teach']}
    assert verified(runs['functional']) == verified(runs['cx5-100g']) == verified(runs['teach'])
    assert runs['functional']['verified']['messages'] == 1500
    assert not any(runs['functional']['stats'].get(k) for k in CACHE_STATS)
    assert all(runs['cx5-100g']['stats'].get(k, 0) > 0 for k in CACHE_STATS
               if k.endswith('hits')), runs['cx5-100g']['stats']
    assert runs['cx5-100g']['stats']['mtt_cache_misses'] > 100


def test_random_offsets_deterministic():
    args = [*W4K, '--count', 3000, '--mr-size', '256M', '--offsets', 'random', '--seed', 7,
            '--profile', 'cx5-100g']
    a, b = run_sim(*args).stdout, run_sim(*args).stdout
    assert a == b
    c = json.loads(run_sim(*args[:-4], '--seed', 8, '--profile', 'cx5-100g').stdout)
    assert c['bandwidth_bps'] != json.loads(a)['bandwidth_bps']


@pytest.mark.parametrize('bad, msg', [
    (['--op', 'send', '--mr-size', '1M'], 'for write and read'),
    (['--op', 'faa', '--offsets', 'random'], 'for write and read'),
    (['--size', '4K', '--depth', 16, '--mr-size', '32K'], 'below --depth'),
    (['--offsets', 'sideways'], 'seq or random'),
])
def test_bad_mr_options(bad, msg):
    r = run_sim(*bad, expect_rc=2)
    assert msg in r.stdout + r.stderr


# ---- counters --------------------------------------------------------------------------------
def test_cache_counters_harness():
    """Harness API: each 4 KiB WRITE looks up the responder's QPC, its MPT
    (twice: check and write) and the MTT once (a page-aligned one: one page).  QUERY_STATS (the
    firmware's answer) says the same as the device counters."""
    w = q.World(2, mem_mb=64)
    try:
        a, b = w.devs
        c = q.connect_rc(a, b, mtu=4096)
        la = a.reg_mr(c.pda, 1 << 16, iova=0x7f00_0000_0000)
        lb = b.reg_mr(c.pdb, 1 << 20, iova=0x7f10_0000_0000)     # page aligned
        # functional: no caches, no counts
        c.qa.post_send('RDMA_WRITE', sges=[(la, 0, 4096)], remote=(lb, 0), wr_id=0)
        assert [e['status_name'] for e in c.cqa.wait(1)] == ['SUCCESS']
        assert not any(b.stat(k) for k in CACHE_STATS)
        for d in w.devs:
            d.set_timing('cx5-100g')
        before = {k: b.stat(k) for k in CACHE_STATS}
        pages = [0, 0, 64, 64, 128, 0]  # three MTT lines, far apart (no prefetch)
        for i, p in enumerate(pages):
            c.qa.post_send('RDMA_WRITE', sges=[(la, 0, 4096)], remote=(lb, p * 4096), wr_id=i)
            assert [e['status_name'] for e in c.cqa.wait(1, ns=1_000_000_000)] == ['SUCCESS']
        d = {k: b.stat(k) - before[k] for k in CACHE_STATS}
        assert d['mtt_cache_hits'] + d['mtt_cache_misses'] == len(pages)
        assert d['mtt_cache_misses'] == 3, d        # each line once
        # the R_Key is checked when the request arrives and again by the write
        assert d['mpt_cache_hits'] + d['mpt_cache_misses'] == 2 * len(pages)
        assert d['mpt_cache_misses'] == 1, d
        assert d['qpc_cache_hits'] + d['qpc_cache_misses'] >= len(pages)
        assert a.stat('mtt_cache_misses') >= 1 and a.stat('mtt_cache_hits') >= len(pages) - 1
        qs = b.query_stats()
        assert {k: qs[k] for k in CACHE_STATS} == {k: b.stat(k) for k in CACHE_STATS}
    finally:
        w.close()


def test_stat_names_match_spec_and_abi_mirror():
    """docs/spec.md section 15, the QRNIC_STATS() list (through the harness)
    and the Python mirror tests/qtest/abi.py name the same counters in the
    same order; the spec's count and answer size agree."""
    names = [q.lib().hx_stat_name(i).decode() for i in range(q.lib().hx_stat_count())]
    spec = open(os.path.join(REPO, 'docs', 'spec.md')).read()
    sec = spec[spec.index('## 15. Statistics'):spec.index('## 16.')]
    rows = re.findall(r'^\| (\d+) \| `(\w+)` \|', sec, re.M)
    assert [(int(i), n) for i, n in rows] == list(enumerate(names))
    assert f'({len(names)} counters,\n{8 * len(names)} bytes)' in sec or \
        f'({len(names)} counters, {8 * len(names)} bytes)' in sec.replace('\n', ' ')
    from qtest import abi
    assert abi.STAT_NAMES == names


@pytest.mark.parametrize('bad, msg', [
    ('mtt_miss_slots=65', 'mtt_miss_slots must be 0 (unlimited)..64'),
    ('mtt_prefetch=2', 'mtt_prefetch must be 0 or 1'),
])
def test_bad_miss_parameters(bad, msg):
    r = run_sim('--profile', 'cx5-100g', '--count', 1, '--timing', bad, expect_rc=2)
    assert msg in r.stdout + r.stderr
