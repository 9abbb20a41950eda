# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tier: the VM runner's host settings from the environment
(QRNIC_LINK_RCVBUF, QRNIC_VCPU_NICE, docs/guest.md) and the dgram link
socket it hands to QEMU; garbage gives a clear error naming the variable."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, 'scripts')
sys.path.insert(0, SCRIPTS)

from qrnic_vm import runner  # noqa: E402


def settings(**env):
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, '-c', 'import qrnic_vm.runner as r; '
                        'print(r.LINK_RCVBUF, r.VCPU_NICE)'],
                       cwd=SCRIPTS, env=e, capture_output=True, text=True)
    return r.returncode, r.stdout.split(), r.stderr


def test_defaults_and_values():
    assert settings(QRNIC_LINK_RCVBUF='', QRNIC_VCPU_NICE='')[1] == [str(8 << 20), '0']
    assert settings(QRNIC_LINK_RCVBUF='0', QRNIC_VCPU_NICE='10')[1] == ['0', '10']
    assert settings(QRNIC_LINK_RCVBUF='0x10000')[1][0] == '65536'


@pytest.mark.parametrize('var,val', [('QRNIC_LINK_RCVBUF', 'abc'), ('QRNIC_LINK_RCVBUF', '-1'),
                                     ('QRNIC_LINK_RCVBUF', str(1 << 31)),
                                     ('QRNIC_VCPU_NICE', '20'), ('QRNIC_VCPU_NICE', 'x')])
def test_garbage_is_refused_by_name(var, val):
    rc, _, err = settings(**{var: val})
    assert rc != 0 and '%s=%r' % (var, val) in err


def test_dgram_link_socket():
    """The socket QEMU gets: bound to the local port, connected to the peer's, with the
    requested receive buffer (Linux doubles it); rcvbuf 0 = QEMU's own inet socket."""
    p0, p1 = runner._free_udp_ports(2)
    a, b = runner.DgramNet(p0, p1, rcvbuf=1 << 20), runner.DgramNet(p1, p0, rcvbuf=1 << 20)
    try:
        assert a.open() is not None and b.open() is not None
        assert str(a) == 'dgram,local.type=fd,local.str=%d' % a.sock.fileno()
        assert a.sock.getsockname() == ('127.0.0.1', p0)
        assert a.sock.getpeername() == ('127.0.0.1', p1)
        assert a.got_rcvbuf >= 1 << 20 or os.geteuid() != 0
        a.sock.send(b'frame')
        assert b.sock.recv(100) == b'frame'
    finally:
        a.close()
        b.close()
    plain = runner.DgramNet(p0, p1, rcvbuf=0)
    assert plain.open() is None
    assert str(plain) == ('dgram,local.type=inet,local.host=127.0.0.1,local.port=%d,'
                          'remote.type=inet,remote.host=127.0.0.1,remote.port=%d' % (p0, p1))
