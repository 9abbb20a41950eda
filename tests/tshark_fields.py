# SPDX-License-Identifier: GPL-2.0-or-later
"""One way for tests to read a capture through tshark: `tshark -T fields`
rows as dicts {field: text} (empty text where a frame has no such field),
the first occurrence of each field, RoCEv2's UDP port decoded as
InfiniBand.  Without tshark the test is skipped, or fails when required."""
import shutil
import subprocess

import pytest


def tshark_fields(pcap, fields, display_filter=None, required=False):
    exe = shutil.which('tshark')
    if not exe:
        if required:
            pytest.fail('tshark is required for this test (apt-get install tshark)')
        pytest.skip('tshark not installed')
    cmd = [exe, '-n', '-r', str(pcap), '-d', 'udp.port==4791,infiniband', '-T', 'fields',
           '-E', 'separator=\t', '-E', 'occurrence=f', '-E', 'quote=n']
    if display_filter:
        cmd += ['-Y', display_filter]
    for f in fields:
        cmd += ['-e', f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [dict(zip(fields, line.split('\t'))) for line in r.stdout.splitlines()]
