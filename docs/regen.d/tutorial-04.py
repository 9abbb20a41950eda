"""docs/tutorial/04-timeline.md: the simulator's WRITE (picture, --list, stage times)."""


def generate(r):
    t = r.sim('--op', 'write', '--size', '4096', '--mtu', '1024', '--depth', '1', '--count', '1',
              '--profile', 'teach', '--quiet', trace='qrnic-sim-write.jsonl')
    r.picture('docs/tutorial/img/sim-write-teach.svg', t)
    r.block('l04-sim-list', r.timeline(t, '--list'))
    ev = r.events(t)
    db = next(e for e in ev if e['type'] == 'doorbell' and e['a'] == 0)['t_ns']
    fetch = next(e for e in ev if e['type'] == 'wqe_fetch')['t_ns']
    rd64, rd16 = [e for e in ev if e['type'] == 'dma_read'][:2]
    tr = min(e['t_ns'] for e in ev if e['type'] == 'translate' and e['dev'] == 0)
    txs = [e for e in ev if e['type'] == 'tx' and e['dev'] == 0]
    rx0 = next(e for e in ev if e['type'] == 'rx' and e['dev'] == 1)
    cqe = next(e for e in ev if e['type'] == 'cqe')['t_ns']
    r.figure('l04-fetch', r.us(fetch - db))
    r.figure('l04-pcie-read', r.us(rd16['t_ns'] - rd64['t_ns'], 2))
    r.figure('l04-pkt-gap', r.us(txs[1]['t_ns'] - txs[0]['t_ns']))
    r.figure('l04-pkt-bytes', str(txs[0]['b']))
    r.figure('l04-wire', r.us(rx0['t_ns'] - txs[0]['t_ns']))
    r.figure('l04-total', r.us(cqe - db))
    r.figure('l04-ex1-gap', r.us(tr - rd16['t_ns']))
    r.claim(len(txs) == 4, 'a 4 KiB WRITE at MTU 1024 is four packets')
    # exercise 2: "Fewer packets, yet the WRITE takes *longer* than at MTU 1024"
    t4 = r.sim('--op', 'write', '--size', '4096', '--mtu', '4096', '--depth', '1', '--count', '1',
               '--profile', 'teach', '--quiet', trace='mtu4096.jsonl')
    ev4 = r.events(t4)
    total4 = next(e for e in ev4 if e['type'] == 'cqe')['t_ns'] - \
        next(e for e in ev4 if e['type'] == 'doorbell' and e['a'] == 0)['t_ns']
    r.claim(total4 > cqe - db and sum(e['type'] == 'tx' and e['dev'] == 0 for e in ev4) == 1,
            'exercise 2: at MTU 4096 one packet, and the WRITE takes longer')
