# SPDX-License-Identifier: GPL-2.0-or-later
"""unit tier: scripts/qrnic_vm/qmp.py, the project's one QMP client (QEMU's
qemu.qmp), against a scripted QMP server on a socketpair: answers, error
answers, events, timeouts, a server that hangs up, and the message when
qemu.qmp cannot be found.  The qemu tier covers it against QEMU itself."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(REPO, 'scripts')
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)

from qrnic_vm import qmp as Q  # noqa: E402

GREETING = {'QMP': {'version': {'qemu': {'micro': 2, 'minor': 0, 'major': 10}, 'package': ''},
                    'capabilities': []}}


@pytest.fixture(autouse=True)
def need_qemu_qmp():
    try:
        Q.qmp_lib()
    except Q.QmpError as e:
        pytest.skip(str(e))


class FakeQemu:
    """A QMP server on one end of a socketpair.  handler(command, arguments) returns
    a list of messages to send back (the answer needs the command's id: use ans())."""

    def __init__(self, handler, greeting=GREETING):
        self.ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = theirs
        self.handler, self.greeting = handler, greeting
        self.seen = []
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()

    def send(self, msg):
        self.sock.sendall(json.dumps(msg).encode() + b'\n')

    def _messages(self):
        """The client's messages: a JSON stream (qemu.qmp sends no newlines)."""
        dec, buf = json.JSONDecoder(), ''
        while True:
            data = self.sock.recv(65536)
            if not data:
                return
            buf += data.decode()
            while buf.strip():
                try:
                    msg, end = dec.raw_decode(buf.lstrip())
                except ValueError:
                    break
                buf = buf.lstrip()[end:]
                yield msg

    def _serve(self):
        try:
            if self.greeting is not None:
                self.send(self.greeting)
            for msg in self._messages():
                self.seen.append(msg)
                if msg['execute'] == 'qmp_capabilities':
                    self.send({'return': {}, 'id': msg.get('id')})
                    continue
                out = self.handler(msg['execute'], msg.get('arguments', {}))
                if out == 'hang-up':
                    break
                for m in out:
                    if m == 'hang-up':
                        return
                    self.send(dict(m, id=msg.get('id')) if 'event' not in m else m)
        except OSError:
            pass
        finally:
            self.sock.close()

    def client(self, **kw):
        return Q.Qmp(self.ours, **kw)


def event(name, **data):
    return {'event': name, 'data': data, 'timestamp': {'seconds': 1, 'microseconds': 2}}


def test_command_answer_and_arguments():
    srv = FakeQemu(lambda c, a: [{'return': {'echo': c, 'args': a}}])
    with srv.client(timeout=5) as q:
        assert q.greeting['QMP']['version']['qemu']['major'] == 10
        assert q.cmd('qom-get', path='/machine/peripheral/rn0', property='stats') == \
            {'echo': 'qom-get', 'args': {'path': '/machine/peripheral/rn0', 'property': 'stats'}}
        assert q.execute('human-monitor-command', {'command-line': 'info qtree'})['args'] == \
            {'command-line': 'info qtree'}
        assert q.cmd('query-status')['args'] == {}
    assert srv.seen[0]['execute'] == 'qmp_capabilities'
    assert 'arguments' not in srv.seen[-1], 'no arguments: no "arguments" member'


def test_error_answer_names_class_and_desc():
    srv = FakeQemu(lambda c, a: [{'error': {'class': 'GenericError', 'desc': 'qrnic: fault: line 2: nope'}}])
    with srv.client(timeout=5, name='vm0') as q:
        with pytest.raises(Q.QmpCommandError) as ei:
            q.cmd('qom-set', path='/p', property='fault', value='x')
        e = ei.value
        assert (e.command, e.error_class, e.desc) == ('qom-set', 'GenericError', 'qrnic: fault: line 2: nope')
        assert e.arguments == {'path': '/p', 'property': 'fault', 'value': 'x'}
        assert str(e) == 'vm0: QMP qom-set: GenericError: qrnic: fault: line 2: nope'
        assert isinstance(e, Q.QmpError) and isinstance(e, RuntimeError)


def test_events_kept_in_order_and_awaited():
    def handler(c, a):
        if c == 'system_reset':
            return [event('STOP'), {'return': {}}, event('RESET', reason='host-qmp-system-reset')]
        if c == 'device_del':
            return [{'return': {}}, event('DEVICE_DELETED', device='d1'), event('DEVICE_DELETED', device='d2')]
        return [{'return': {}}]
    srv = FakeQemu(handler)
    with srv.client(timeout=5) as q:
        q.cmd('system_reset')
        assert q.wait_event('RESET', 5)['data']['reason'] == 'host-qmp-system-reset'
        assert [e['event'] for e in q.events()] == ['STOP']     # the other one stayed
        assert q.events() == []
        q.cmd('device_del', id='d1')
        assert q.wait_event('DEVICE_DELETED', 5)['data']['device'] == 'd1'
        assert q.wait_event('DEVICE_DELETED', 5)['data']['device'] == 'd2'
        with pytest.raises(Q.QmpTimeout, match='no QMP event RESET within 0.2s'):
            q.wait_event('RESET', 0.2)


def test_command_timeout_then_closed():
    srv = FakeQemu(lambda c, a: [] if c == 'slow' else 'hang-up')
    with srv.client(timeout=0.3, name='q') as q:
        with pytest.raises(Q.QmpTimeout, match=r'q: QMP slow: no answer within 0.3s'):
            q.cmd('slow')
        with pytest.raises(Q.QmpClosed, match='q: QMP connection closed'):
            q.cmd('anything')
        with pytest.raises(Q.QmpClosed):
            q.cmd('again')


def test_hang_up_while_waiting_for_an_event():
    def handler(c, a):
        if c == 'stop':
            return [{'return': {}}, event('STOP')]
        if c == 'system_powerdown':     # events, then QEMU exits
            return [{'return': {}}, event('POWERDOWN'), event('SHUTDOWN'), 'hang-up']
        return 'hang-up'
    srv = FakeQemu(handler)
    with srv.client(timeout=5, name='q') as q:
        q.cmd('system_powerdown')
        assert q.wait_event('SHUTDOWN', 5)['event'] == 'SHUTDOWN'
        assert q.wait_event('POWERDOWN', 5)['event'] == 'POWERDOWN'
        with pytest.raises(Q.QmpClosed):
            q.cmd('stop')
    srv = FakeQemu(handler)
    with srv.client(timeout=5, name='q') as q:
        q.cmd('stop')
        with pytest.raises(Q.QmpTimeout):
            q.wait_event('RESUME', 0.1)
        with pytest.raises(Q.QmpClosed):
            q.cmd('quit')
        t0 = time.monotonic()
        with pytest.raises(Q.QmpClosed, match='q: QMP connection closed .waiting for event RESET'):
            q.wait_event('RESET', 30)
        assert time.monotonic() - t0 < 5
        assert [e['event'] for e in q.events()] == ['STOP']


def test_quit_when_the_answer_is_lost():
    srv = FakeQemu(lambda c, a: 'hang-up')      # QEMU exits before it answers
    with srv.client(timeout=5) as q:
        q.quit()
    q.close()                                   # twice is fine


def test_connect_errors(tmp_path):
    with pytest.raises(Q.QmpConnectError, match=r'cannot talk QMP on .*no\.sock: .*No such file'):
        Q.Qmp(str(tmp_path / 'no.sock'), timeout=5)
    srv = FakeQemu(lambda c, a: [], greeting={'hello': 1})
    with pytest.raises(Q.QmpConnectError, match='cannot talk QMP on fd'):
        srv.client(timeout=5)
    srv = FakeQemu(lambda c, a: [], greeting=None)          # says nothing
    with pytest.raises(Q.QmpConnectError, match='no greeting within 0.3s'):
        srv.client(timeout=0.3)


def test_unix_path_and_threads(tmp_path):
    """Sessions by path, several at once in several threads (the runner shuts VMs
    down in parallel threads)."""
    path = str(tmp_path / 'qmp.sock')
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(8)
    servers = []

    def accept():
        for _ in range(4):
            s, _ = ls.accept()
            srv = FakeQemu.__new__(FakeQemu)
            srv.sock, srv.greeting, srv.seen = s, GREETING, []
            srv.handler = lambda c, a: [{'return': threading.get_ident()}]
            srv._serve()
            servers.append(srv)
    threading.Thread(target=accept, daemon=True).start()
    got, errs = [], []

    def one():
        try:
            with Q.Qmp(path, timeout=5) as q:
                got.append(q.cmd('query-status'))
        except Exception as e:      # noqa: BLE001
            errs.append(e)
    ts = [threading.Thread(target=one) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    ls.close()
    assert not errs and len(got) == 4, errs


def test_missing_qemu_qmp_names_build_script(tmp_path):
    """No QEMU source in $QRNIC_CACHE and no qemu.qmp elsewhere: a QmpError that
    says what to run."""
    code = ('import sys; sys.path.insert(0, %r)\n'
            'from qrnic_vm.qmp import Qmp, QmpError\n'
            'try:\n    Qmp("/nonexistent")\n'
            'except QmpError as e:\n    print(e)\n' % SCRIPTS)
    r = subprocess.run([sys.executable, '-I', '-c', code], capture_output=True, text=True,
                       env=dict(os.environ, QRNIC_CACHE=str(tmp_path)), timeout=60)
    assert r.returncode == 0, r.stderr
    assert 'qemu.qmp' in r.stdout and 'scripts/build-qemu.sh' in r.stdout and str(tmp_path) in r.stdout, r.stdout
