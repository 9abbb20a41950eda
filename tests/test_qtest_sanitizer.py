# SPDX-License-Identifier: GPL-2.0-or-later
"""The qtest driver's sanitizer check (tests/qtest/qemu.py, used by the qsan
tier of scripts/test.sh): Qemu.close() stops QEMU with SIGTERM, finds an
ASan/LSan/UBSan report in its output and raises SanitizerReport after the
cleanup, keeping the log; a clean exit raises nothing.  A stand-in "QEMU"
(a Python script that connects the qtest socket, answers nothing, and on
SIGTERM prints what it was told) plays the sanitized binary.  Unit tier."""
import os
import stat
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qtest import qemu as qm  # noqa: E402

FAKE = r'''#!/usr/bin/env python3
import os, signal, socket, sys, time
def term(*_):
    sys.stderr.write(os.environ.get('FAKE_REPORT', ''))
    sys.stderr.flush()
    os._exit(int(os.environ.get('FAKE_EXIT', '0')))
signal.signal(signal.SIGTERM, term)     # before connecting: close() may follow at once
path = sys.argv[sys.argv.index('-qtest') + 1].split(':', 1)[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
while True:
    time.sleep(1)
'''

LEAK = ('=================================================================\n'
        '==4242==ERROR: LeakSanitizer: detected memory leaks\n\n'
        'Direct leak of 64 byte(s) in 1 object(s) allocated from:\n'
        '    #0 0x4a in malloc\n    #1 0x4b in qrnic_something hw/qrnic/qrnic.c:12\n\n'
        'SUMMARY: AddressSanitizer: 64 byte(s) leaked in 1 allocation(s).\n')
UBSAN = 'hw/qrnic/model/regs.c:99:12: runtime error: shift exponent 40 is too large\n'


@pytest.fixture
def fake(tmp_path):
    p = tmp_path / 'fake-qemu'
    p.write_text(FAKE)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


@pytest.mark.parametrize('report,marker', [(LEAK, 'ERROR: LeakSanitizer'),
                                           (UBSAN, 'runtime error: shift exponent')],
                         ids=['lsan', 'ubsan'])
def test_close_raises_on_a_sanitizer_report(fake, monkeypatch, report, marker):
    monkeypatch.setenv('FAKE_REPORT', report)
    monkeypatch.setenv('FAKE_EXIT', '23')
    q = qm.Qemu(fake, qmp=False, name='fake', timeout=10)
    with pytest.raises(qm.SanitizerReport) as e:
        q.close()
    assert marker in str(e.value)
    assert os.path.exists(q.log_path)           # kept for the reader
    with open(q.log_path) as f:
        assert marker in f.read()


def test_close_of_a_clean_qemu_raises_nothing(fake, monkeypatch):
    monkeypatch.setenv('FAKE_REPORT', 'qemu-system-x86_64: terminating on signal 15\n')
    q = qm.Qemu(fake, qmp=False, name='fake', timeout=10)
    q.close()
    assert not os.path.exists(q.dir)


def test_sanitizer_report_starts_at_the_marker():
    text = 'boot\nnoise\n' + LEAK + 'more\n'
    r = qm.sanitizer_report(text)
    assert r.splitlines()[0] == 'noise' and 'Direct leak of 64 byte(s)' in r
    assert qm.sanitizer_report('qemu: terminating on signal 15\n') == ''
