"""docs/tutorial/06-read-vs-write.md: WRITE vs READ at teach; cx5-100g latencies."""


def generate(r):
    args = ('--size', '4096', '--mtu', '1024', '--depth', '1', '--count', '1', '--profile',
            'teach', '--quiet')
    w = r.sim('--op', 'write', *args, trace='qrnic-sim-write.jsonl')
    rd = r.sim('--op', 'read', *args, trace='qrnic-sim-read.jsonl')
    r.picture('docs/tutorial/img/sim-write-vs-read.svg', w, '--compare', rd,
              '--label', 'RDMA WRITE 4 KiB', '--label', 'RDMA READ 4 KiB')
    r.block('l06-read-list', r.timeline(rd, '--list'))

    def times(path):
        ev = r.events(path)
        db = next(e for e in ev if e['type'] == 'doorbell' and e['a'] == 0)['t_ns']
        tx = next(e for e in ev if e['type'] == 'tx' and e['dev'] == 0)['t_ns']
        cqe = next(e for e in ev if e['type'] == 'cqe' and e['dev'] == 0)['t_ns']
        return tx - db, cqe - db
    wtx, wtot = times(w)
    rtx, rtot = times(rd)
    r.figure('l06-write-total', r.us(wtot))
    r.figure('l06-read-total', r.us(rtot))
    r.figure('l06-read-req-tx', r.us(rtx))
    r.figure('l06-write-tx', r.us(wtx))
    r.claim(rtot > wtot, 'the READ takes longer than the WRITE at teach')
    r.claim(rtx < wtx, 'the READ request leaves before the WRITE\'s first packet')
    out, p50 = [], {}
    for op in ('write', 'read'):
        text = r.sim('--op', op, '--size', '64', '--depth', '1', '--count', '1000', '--profile',
                     'cx5-100g')
        lines = text.splitlines()
        i = next(k for k, ln in enumerate(lines) if 'latency, post' in ln)
        out += lines[i:i + 3]                     # grep -A2 'latency, post'
        p50[op] = int(lines[i + 2].split()[1])
    r.block('l06-cx5-latency', '\n'.join(out))
    r.figure('l06-cx5-write', f'{p50["write"] / 1000:.2f}')
    r.figure('l06-cx5-read', f'{p50["read"] / 1000:.2f}')
    r.claim(p50['read'] > p50['write'], 'at cx5-100g a small READ costs a little more')
    cx5_table(r, p50['write'])


def cx5_table(r, write64_p50):
    """The ConnectX-5 comparison: the table is what the lesson's own command
    prints; the prose's gaps and the two WRITE latencies come from it."""
    page = 'docs/tutorial/06-read-vs-write.md'
    out = r.lesson_sh(page, 'l06-cx5-table')
    r.block('l06-cx5-table', out)
    rows = {}
    for ln in out.splitlines()[1:]:
        name, rest = ln[:30].strip(), ln[30:].split()
        rows[name] = (float(rest[0]), float(rest[1]), float(rest[2].rstrip('%')))
    lat = [g for n, (_, _, g) in rows.items() if '(ns)' in n]
    rate = [g for n, (_, _, g) in rows.items() if '(ns)' not in n]
    r.claim(len(lat) == 2 and len(rate) == 3, 'the table has two latency rows and three rates')
    r.figure('l06-cx5-rate-gap', f'{max(abs(g) for g in rate):.0f}')
    r.claim(max(abs(g) for g in rate) < 2, 'the rates and the bandwidth are within about 1 %')
    r.figure('l06-cx5-lat-gap', f'{min(lat):.0f}–{max(lat):.0f}')
    r.claim(all(g > 0 for g in lat), 'the model\'s latencies are above the published ones')
    here = 2 * rows['8 B WRITE, half the RTT (ns)'][0] / 1000
    r.figure('l06-cx5-write-there', f'{write64_p50 / 1000:.2f}')
    r.figure('l06-cx5-rtt-here', f'{here:.2f}')
    # --sim-arg reaches r.sim, not the page's own command: compare the two
    # runs only when both ran with the same model
    if not r.sim_args:
        r.claim(0.7 < write64_p50 / 1000 - here < 1.3,
                'most of the difference between the two WRITE latencies is a microsecond of wire')
