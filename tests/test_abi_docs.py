# SPDX-License-Identifier: GPL-2.0-or-later
"""docs/spec.md against the ABI headers of model/abi/ (the headers win).

Unit tier, no build: every structure of model/abi/*.h has a static size
assertion (QRNIC_ASSERT_SIZE, which the build checks), as spec.md 1.1
says; every "`struct qrnic_x` (N bytes" of spec.md gives the asserted
size; QUERY_STATS's answer size in spec.md is QRNIC_STAT_COUNT x 8, with
the counters counted in the QRNIC_STATS list of qrnic_admin.h."""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = sorted(glob.glob(os.path.join(ROOT, 'model', 'abi', '*.h')))


def header_text():
    return {os.path.basename(h): open(h, encoding='utf-8').read() for h in HEADERS}


def asserted_sizes():
    out = {}
    for text in header_text().values():
        for m in re.finditer(r'QRNIC_ASSERT_SIZE\(struct (\w+),\s*(\w+)\)', text):
            out[m.group(1)] = m.group(2)
    return out


def spec():
    return open(os.path.join(ROOT, 'docs', 'spec.md'), encoding='utf-8').read()


def test_every_structure_has_a_size_assertion():
    sizes = asserted_sizes()
    structs = [(h, m.group(1)) for h, text in header_text().items()
               for m in re.finditer(r'^struct (\w+) \{', text, re.M)]
    assert len(structs) > 40
    missing = [f'{h}: struct {s}' for h, s in structs if s not in sizes]
    assert not missing, 'no QRNIC_ASSERT_SIZE for ' + ', '.join(missing)
    assert 'each has a static size assertion' in spec()


def test_spec_sizes_are_the_asserted_sizes():
    sizes = asserted_sizes()
    quoted = re.findall(r'`struct (qrnic_\w+)` \((\d+) bytes', spec())
    assert len(quoted) > 20
    wrong = [f'{s}: spec {n}, header {sizes[s]}' for s, n in quoted
             if s in sizes and sizes[s].isdigit() and int(sizes[s]) != int(n)]
    assert not wrong, wrong


def test_query_stats_size():
    text = header_text()['qrnic_admin.h']
    body = re.search(r'#define QRNIC_STATS\(X\)(.*?)\n\n', text, re.S).group(1)
    n = len(re.findall(r'\bX\(\w+,', body))
    assert n >= 50
    s = spec()
    assert f'({n} counters,\n{n * 8} bytes)' in s or f'({n} counters, {n * 8} bytes)' in s
    assert f'({n} × 8 = {n * 8} bytes' in s
    dev = asserted_sizes()['qrnic_device_attr']
    port = asserted_sizes()['qrnic_port_attr']
    qp = asserted_sizes()['qrnic_qp_attr']
    mpt = asserted_sizes()['qrnic_mpt_entry']
    assert f'({dev}, {port}, {n * 8}, {qp} or {mpt} bytes)' in s


def test_spec_names_every_timing_profile():
    """spec.md once said only the functional profile exists: the profile
    property's sentence must name every profile the model has (the
    simulator's --help lists them from the model's table)."""
    import subprocess
    import qrnic_harness as q
    sim = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
    r = subprocess.run([sim, '--help'], capture_output=True, text=True, timeout=60)
    line = next(ln for ln in (r.stdout + r.stderr).splitlines() if '--profile NAME' in ln)
    names = re.findall(r'[a-z][a-z0-9-]+(?=\s*(?:\(default\))?(?:,|$))', line.split(':', 1)[1])
    assert 'functional' in names and 'teach' in names and len(names) >= 3, names
    m = re.search(r'has a `profile` property selecting the timing model\n(.*?)\)', spec(), re.S)
    assert m, 'spec.md section 16: the profile sentence moved'
    for n in names:
        assert f'`{n}`' in m.group(1), f'spec.md does not name the {n} profile'
