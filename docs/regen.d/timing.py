"""docs/timing.md: cx5-100g calibration (4.1), the latency breakdown, teach latencies (4.3)."""

CX5 = ('--profile', 'cx5-100g', '--rate', '0', '--latency', '0')
MINUS = '\u2212'


def pct(model, published):
    """Gap in per cent.  Callers pass the modelled figure rounded as the table
    quotes it, so that a reader recomputes the same gap from the table."""
    return model / published * 100 - 100


def signed(v, digits=0):
    s = f'{abs(v):.{digits}f}'
    return ('+' if v >= 0 else MINUS) + s


def generate(r):
    def run(*args):
        import json
        return json.loads(r.sim(*CX5, *args, '--json'))

    def p50(*args):
        return run(*args)['latency_ns']['p50']

    wrtt = p50('--op', 'write', '--size', '8', '--depth', '1', '--count', '1000')
    half = int(wrtt / 2 + 0.5)
    r.figure('timing-wlat-half', str(half))
    r.figure('timing-wlat', str(wrtt))
    r.figure('timing-wlat-gap', f'{signed(pct(half, 608))} % vs 608 ns, '
                                f'{signed(pct(half, 600))} % vs 600 ns')
    # one-way time of an 8 B inline WRITE, post to data visible at the
    # responder: the trace gives the SQ doorbell (or BF write) on host 0
    # and the responder's payload write on host 1; the write is visible
    # pcie_write_ns (150) + its TLP at pcie_mbps ((8 + 24) B / 15000 MB/s
    # = 2 ns) later on an idle write direction.
    def one_way(*extra):
        ev = r.events(r.sim(*CX5, '--op', 'write', '--size', '8', '--inline', '--depth', '1',
                            '--count', '1000', *extra, trace='oneway.jsonl'))
        posts = [e['t_ns'] for e in ev if e['dev'] == 0 and e['type'] == 'doorbell'
                 and e['a'] == 0 and e['qpn'] != 0]
        writes = [e['t_ns'] for e in ev if e['dev'] == 1 and e['type'] == 'dma_write'
                  and e['a'] == 8]
        r.claim(len(posts) == len(writes) == 1000, 'one doorbell and one payload write a WRITE')
        t = sorted(w + 152 - p for p, w in zip(posts, writes))
        return t[len(t) // 2]
    ow_bf = one_way('--bf')
    ow_ring = one_way()
    r.figure('timing-oneway-bf', str(ow_bf))
    r.figure('timing-oneway-ring', str(ow_ring))
    r.figure('timing-oneway-gap', f'{signed(pct(ow_bf, 600), 1)} % vs 600 ns')
    rrtt = p50('--op', 'read', '--size', '8', '--depth', '1', '--count', '1000')
    r.figure('timing-rlat', str(rrtt))
    r.figure('timing-rlat-gap', f'{signed(pct(rrtt, 1200))} %')
    atom = run('--op', 'faa', '--qps', '8', '--depth', '16', '--count', '2000')['msg_rate'] / 1e6
    r.figure('timing-atomic', f'{atom:.3f}')
    r.figure('timing-atomic-gap', f'{signed(pct(atom, 5), 1)} %')
    rate = run('--op', 'write', '--size', '8', '--qps', '16', '--depth', '64',
               '--count', '12500')['msg_rate'] / 1e6
    r.figure('timing-msgrate', f'{rate:.1f}')
    r.figure('timing-msgrate-gap', f'{signed(pct(round(rate, 1), 90), 1)} % vs 90 M; '
                                   f'{signed(pct(rate, 215))} % vs 215 M')

    def gbps(*args):
        return run(*args)['bandwidth_bps'] / 1e9
    peak = gbps('--op', 'write', '--size', '1M', '--depth', '128', '--count', '64')
    r.figure('timing-peak', f'{peak:.1f}')
    r.figure('timing-peak-gap', f'{signed(pct(round(peak, 1), 96.6), 1)} %')
    bw = {k: gbps('--op', 'write', '--size', f'{k}K', '--depth', '128', '--count', '5000')
          for k in (1, 2, 4, 8)}
    sat = next(k for k in (1, 2, 4, 8) if round(bw[k], 1) >= 0.95 * round(peak, 1))
    r.figure('timing-sat', f'{sat} KiB')
    others = '; '.join(f'{k} KiB: {bw[k]:.1f}' for k in (1, 2, 4, 8) if k != sat)
    share = round(bw[sat], 1) / round(peak, 1) * 100
    r.figure('timing-sat-sweep', f'{bw[sat]:.1f} Gb/s, {share:.1f} % of {peak:.1f}; {others}')

    def mtt(mr, order='random'):
        args = ['--op', 'write', '--size', '4K', '--depth', '128', '--count', '60000',
                '--mr-size', mr] + (['--offsets', 'random'] if order == 'random' else [])
        j = run(*args)
        c = j['caches']['responder']
        miss = 100 * c['mtt_misses'] / (c['mtt_hits'] + c['mtt_misses'])
        return miss, j['bandwidth_bps'] / 1e9
    m66, b66 = mtt('66M')
    m124, b124 = mtt('124M')
    m1g, b1g = mtt('1G')
    mseq, bseq = mtt('124M', 'in order')
    r.figure('timing-mtt-66', f'{m66:.1f} %, {b66:.1f} Gb/s')
    r.figure('timing-mtt-124', f'{m124:.1f} %, {b124:.1f} Gb/s')
    r.figure('timing-mtt-1g', f'{m1g:.1f} %, {b1g:.1f} Gb/s')
    r.figure('timing-mtt-seq', f'{mseq:.1f} %, {bseq:.1f} Gb/s')
    r.figure('timing-mtt-gap', f'{signed(pct(round(b66, 1), 96.6), 1)} % at Husky\'s baseline '
                               f'point, **{signed(pct(round(b124, 1), 48), 1)} %**')

    def teach(op):
        return r.sim('--profile', 'teach', '--rate', '0', '--latency', '0', '--op', op, '--size',
                     '8', '--depth', '1', '--count', '20', '--json')
    import json
    r.figure('timing-teach-write', r.us(json.loads(teach('write'))['latency_ns']['p50']))
    r.figure('timing-teach-read', r.us(json.loads(teach('read'))['latency_ns']['p50']))
