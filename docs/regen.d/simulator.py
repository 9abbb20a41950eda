"""docs/simulator.md: the example output table (the first example of the page)."""


def generate(r):
    out = r.sim('--op', 'write', '--size', '4096', '--qps', '4', '--depth', '16', '--count',
                '10000', '--rate', '100G', '--latency', '500ns', '--loss', '0.001', '--seed', '1')
    lines = out.rstrip().splitlines()
    # the last line is the simulator's own speed on this machine: not a result
    assert lines[-1].lstrip().startswith('host:'), lines[-1]
    r.block('sim-output-table', '\n'.join(lines[:-1]).rstrip())
