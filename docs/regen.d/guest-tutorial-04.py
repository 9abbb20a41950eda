"""docs/tutorial/04-timeline.md, "In the guest": a T1 guest at profile teach (lab, ~3 min)."""
import os
import re

GUEST = True
PICTURES = ['docs/tutorial/img/guest-write-teach.svg']


def generate(r):
    # a lab of its own, so that a lab left up by a student or another run is not touched
    lab = os.path.join(r.work, 'lab')
    env = {'QRNIC_LAB': lab}
    labcmd = 'docs/tutorial/lab'
    r.sh(f'{labcmd} up --profile teach --trace', env=env, timeout=1800)
    try:
        r.sh(f'{labcmd} put docs/tutorial/first_write.py /root/first_write.py', env=env)
        r.sh(f"{labcmd} run 'python3 first_write.py --ops write,read,write --size 4096'",
             env=env, timeout=900)
        stats = r.sh(f'scripts/qrnic-fault --qmp {lab}/vm0-qmp.sock --dev qrnic-1 stats',
                     env=env)
    finally:
        r.sh(f'{labcmd} down', env=env, timeout=600)
    log = os.path.join(lab, 'vm0-events.log')
    r.block('guest-l04-list', r.timeline(log, '--list'))
    r.picture('docs/tutorial/img/guest-write-teach.svg', log, '--op-index', '0')
    r.block('guest-l04-stats', stats)
    n = int(re.search(r'late-events\s+(\d+)', stats).group(1))
    ns = int(re.search(r'late-ns-total\s+(\d+)', stats).group(1))
    r.figure('guest-l04-late', f'{n} effects were released {ns / max(n, 1) / 1000:.0f} µs late '
                               f'on average')
    # the first WRITE: doorbell -> WQE fetch, and the first frame's time on the wire
    rows = r.timeline(log, '--list').splitlines()[1:]
    dev = int(rows[0].split()[1])
    svg = open(os.path.join(r.out_root, PICTURES[0]), encoding='utf-8').read()
    rel = {m.group(1): int(m.group(2)) for m in re.finditer(
        r'data-type="(doorbell|wqe_fetch)" data-dev="%d"[^>]*data-rel-ns="(\d+)"' % dev, svg)}
    pkt = re.search(r'class="packet"[^>]*data-tx-ns="(\d+)" data-rx-ns="(\d+)"', svg)
    r.figure('guest-l04-fetch', f'{(rel["wqe_fetch"] - rel["doorbell"]) / 1000:.0f}')
    r.figure('guest-l04-wire', f'{(int(pkt.group(2)) - int(pkt.group(1))) / 1000:.0f}')
