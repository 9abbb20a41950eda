"""docs/timeline.md: the WRITE vs READ picture, the --list of a lossy READ run, cold/warm caches."""


def generate(r):
    w = r.sim('--op', 'write', '--size', '4096', '--depth', '1', '--count', '1', '--profile',
              'teach', '--quiet', trace='qrnic-write.jsonl')
    rd = r.sim('--op', 'read', '--size', '4096', '--depth', '1', '--count', '1', '--profile',
               'teach', '--quiet', trace='qrnic-read.jsonl')
    r.picture('docs/img/timeline-write-vs-read.svg', w, '--compare', rd,
              '--label', 'RDMA WRITE 4 KiB', '--label', 'RDMA READ 4 KiB',
              '--title', 'qrnic, profile teach: one 4 KiB WRITE and one 4 KiB READ')
    # the example label of section 3: the responder's rx of the WRITE
    ev = r.events(w)
    db = next(e for e in ev if e['type'] == 'doorbell' and e['a'] == 0)['t_ns']
    rx = next(e for e in ev if e['type'] == 'rx' and e['dev'] == 1)['t_ns']
    r.figure('timeline-example-rel', f'`+{(rx - db) / 1000:.3f} µs`')
    loss = r.sim('--op', 'read', '--size', '8K', '--mtu', '1024', '--depth', '1', '--count', '20',
                 '--loss', '2%', '--seed', '3', '--profile', 'teach', '--quiet',
                 trace='qrnic-read-loss.jsonl')
    rows = r.timeline(loss, '--list').splitlines()
    r.block('timeline-loss-list', '\n'.join(rows[:5] + ['...']))
    pkts = [int(row.split()[-7]) for row in rows[1:5]]
    r.claim(pkts == [1, 1, 1, 2], 'Operation 3 lost a READ response (2 request frames)')
    r.claim(128 in range(int(rows[4].split()[3]), int(rows[4].split()[3]) + 8),
            '--qpn 2 --psn 128 selects operation 3')
    w3 = r.sim('--op', 'write', '--size', '4096', '--depth', '1', '--count', '3', '--profile',
               'teach', '--quiet', trace='qrnic-write3.jsonl')
    lat = [ln.split()[-2] for ln in r.timeline(w3, '--list').splitlines()[1:]]
    r.figure('timeline-cold-warm', f'{lat[0]} µs against {lat[1]} µs')
    r.claim(float(lat[0]) > float(lat[1]), 'the first WRITE (cold caches) is slower')
