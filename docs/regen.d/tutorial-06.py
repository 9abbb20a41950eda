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
