"""docs/tutorial/06-read-vs-write.md, "As a guest measures it": perftest in T2 (lab, ~4 min)."""
import os
import re

GUEST = True
PICTURES = []


def generate(r):
    lab = os.path.join(r.work, 'lab')
    env = {'QRNIC_LAB': lab}
    L = 'docs/tutorial/lab'
    tables = []
    r.sh(f'{L} up -t T2', env=env, timeout=1800)
    try:
        for tool in ('ib_write_lat', 'ib_read_lat'):
            job = r.sh(f"{L} run --vm 0 --bg '{tool} -d qrnic_0 -x 1 -n 200'", env=env).strip()
            out = r.sh(f"sleep 1; {L} run --vm 1 '{tool} -d qrnic_0 -x 1 -n 200 10.0.0.1 "
                       f"2>/dev/null | grep -A1 \"#bytes\"'", env=env, timeout=900)
            r.sh(f'{L} wait --vm 0 {job}', env=env, timeout=900)
            tables.append('\n'.join(ln.rstrip() for ln in out.rstrip('\n').splitlines()))
    finally:
        r.sh(f'{L} down', env=env, timeout=600)
    r.block('guest-l06-perftest', '\n'.join(tables))

    def typical(table):
        # columns: #bytes #iterations t_min t_max t_typical ...
        row = table.splitlines()[1].split()
        return float(row[4])
    r.figure('guest-l06-write-typical', f'{typical(tables[0]):.0f}')
    r.figure('guest-l06-read-typical', f'{typical(tables[1]):.2f}')
    assert re.match(r'\s*#bytes', tables[0])
