# SPDX-License-Identifier: GPL-2.0-or-later
"""The project's one QMP client: QEMU's own `qemu.qmp` package, used synchronously.

    from qrnic_vm.qmp import Qmp, QmpError, QmpCommandError
    with Qmp('/path/qmp.sock', timeout=10) as q:      # or Qmp(connected_socket)
        q.cmd('qom-get', path='/machine/peripheral/rn0', property='stats')
        q.cmd('system_reset')
        q.wait_event('RESET', timeout=10)             # -> the event, a dict
        q.events()                                    # the other events received so far

Used by scripts/qrnic-fault, the VM runner (runner.py, det.py), the qtest
client (tests/qtest/qemu.py) and the guest tests.  A QEMU started with
`-qmp unix:PATH,server=on,wait=off` is reached by its path; when the caller
listens and QEMU connects (`-qmp unix:PATH`, as the qtest client does), or for
a socketpair handed to QEMU, pass the connected socket instead.

Where qemu.qmp comes from: QEMU ships it in its source tree (python/qemu/qmp,
pure Python, asyncio).  Debian 12 does not package it, so it is taken from the
QEMU source that scripts/build-qemu.sh unpacks: $QRNIC_CACHE (default
/var/cache/qrnic)/qemu-<version>-src/python, <version> as in
scripts/build-qemu.sh.  A qemu.qmp that is importable anyway (PYTHONPATH, an
installed package) is used as well.  Without either, the first Qmp() raises
QmpError naming scripts/build-qemu.sh.

Each Qmp has its own asyncio event loop, run only inside its calls: one Qmp is
used by one thread at a time, several Qmps may live in several threads, and
callers need not know about asyncio.  Errors are QmpError subclasses:
QmpConnectError, QmpCommandError (QEMU's error class and description),
QmpClosed (QEMU hung up), QmpTimeout.
"""
import asyncio
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get('QRNIC_CACHE', '/var/cache/qrnic')
BUILD_SCRIPT = os.path.join(REPO, 'scripts', 'build-qemu.sh')


class QmpError(RuntimeError):
    """Any QMP failure: no qemu.qmp, no connection, an error answer, a timeout."""


class QmpConnectError(QmpError):
    """No QMP session: no socket, nobody listening, no greeting, failed negotiation."""


class QmpClosed(QmpError):
    """QEMU closed the connection (exited, or quit)."""


class QmpTimeout(QmpError):
    """No answer (or no awaited event) within the timeout."""


class QmpCommandError(QmpError):
    """QEMU answered a command with an error: .command, .arguments, .error_class
    (e.g. 'GenericError', 'DeviceNotFound'), .desc (QEMU's message)."""

    def __init__(self, prefix, command, arguments, error_class, desc):
        super().__init__('%sQMP %s: %s: %s' % (prefix, command, error_class, desc))
        self.command, self.arguments = command, arguments
        self.error_class, self.desc = error_class, desc


# ---- locating qemu.qmp -------------------------------------------------------------------
def qemu_version():
    """QEMU_VERSION of scripts/build-qemu.sh (None if unreadable)."""
    try:
        with open(BUILD_SCRIPT, encoding='utf-8') as f:
            m = re.search(r'^QEMU_VERSION=(\S+)$', f.read(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def qemu_python_dir():
    """The python/ directory of the QEMU source scripts/build-qemu.sh unpacks (it holds
    qemu/qmp); the newest unpacked one if the version is unknown.  It may not exist."""
    v = qemu_version()
    if v:
        return os.path.join(CACHE, 'qemu-%s-src' % v, 'python')
    found = sorted(glob.glob(os.path.join(CACHE, 'qemu-*-src', 'python')))
    return found[-1] if found else os.path.join(CACHE, 'qemu-<version>-src', 'python')


_lib = None


def qmp_lib():
    """The qemu.qmp package (imported on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    d = qemu_python_dir()
    if os.path.isfile(os.path.join(d, 'qemu', 'qmp', '__init__.py')) and d not in sys.path:
        # Appended, not prepended: python/ also holds directories named scripts/ and tests/.
        sys.path.append(d)
    try:
        import qemu.qmp as lib
    except ImportError as e:
        raise QmpError('QEMU\'s Python QMP package qemu.qmp is not available (%s): it comes with the '
                       'QEMU source that scripts/build-qemu.sh unpacks into %s; run scripts/build-qemu.sh '
                       '(with --force if it reports a cached build but %s is missing), or put a qemu.qmp '
                       'on PYTHONPATH' % (e, os.path.dirname(d), d)) from None
    _lib = lib
    return lib


# ---- the client ----------------------------------------------------------------------------
class Qmp:
    """One QMP session.  address: a unix socket path (QEMU listens), or a connected
    socket.socket (QEMU connected to us, or one end of a socketpair QEMU has).  timeout
    (seconds, None = wait forever) bounds the connection and every command.  name
    prefixes error messages ('vm0: QMP qom-get: ...')."""

    def __init__(self, address, timeout=10.0, name=None):
        lib = qmp_lib()
        self.name, self.timeout = name, timeout
        self.address = address
        self._where = address if isinstance(address, str) else 'fd %d' % address.fileno()
        self._prefix = '%s: ' % name if name else ''
        self._loop = asyncio.new_event_loop()
        self._client = lib.QMPClient(name)
        self._held = []                 # events received while waiting for another one
        try:
            self._run(self._client.connect(address), timeout)
        except asyncio.TimeoutError:
            self._close_loop()
            raise QmpConnectError('%scannot talk QMP on %s: no greeting within %ss'
                                  % (self._prefix, self._where, timeout)) from None
        except (lib.ConnectError, OSError, EOFError) as e:
            self._close_loop()
            cause = getattr(e, 'exc', e)
            why = str(cause) or type(cause).__name__
            if isinstance(cause, EOFError):
                why = 'connection closed before the greeting'
            raise QmpConnectError('%scannot talk QMP on %s: %s' % (self._prefix, self._where, why)) from None
        except BaseException:
            self._close_loop()
            raise
        g = self._client.greeting
        self.greeting = dict(g._asdict()) if g is not None else None

    def _run(self, coro, timeout):
        return self._loop.run_until_complete(asyncio.wait_for(coro, timeout))

    # -- commands --
    def cmd(self, command, **arguments):
        """Run a QMP command; returns its 'return' value.  QmpCommandError on an error answer."""
        return self.execute(command, arguments)

    def execute(self, command, arguments=None, timeout=None):
        """cmd() with the arguments as a dict (keys such as 'command-line') and an own timeout."""
        lib = qmp_lib()
        if self._loop is None:
            raise QmpClosed('%sQMP %s: the connection is closed' % (self._prefix, command))
        timeout = self.timeout if timeout is None else timeout
        try:
            return self._run(self._client.execute(command, arguments or None), timeout)
        except lib.ExecuteError as e:
            raise QmpCommandError(self._prefix, command, arguments, e.error_class,
                                  e.error.error.desc) from None
        except asyncio.TimeoutError:
            raise QmpTimeout('%sQMP %s: no answer within %ss' % (self._prefix, command, timeout)) from None
        except (lib.ExecInterruptedError, lib.StateError, EOFError, OSError) as e:
            raise QmpClosed('%sQMP connection closed (during %s): %s'
                            % (self._prefix, command, str(e) or type(e).__name__)) from None

    def quit(self):
        """QMP quit; QEMU exits.  The answer may be lost when QEMU closes first: not an error."""
        try:
            self.cmd('quit')
        except QmpClosed:
            pass

    # -- events --
    def events(self):
        """The events received so far (and not yet returned), oldest first; does not wait.
        Only what arrived while a call of this object ran is there: the connection is read
        only inside calls."""
        out, self._held = self._held, []
        if self._loop is not None:
            out = out + [dict(e) for e in self._client.events.clear()]
        return out

    def wait_event(self, name, timeout=10.0):
        """The first event called name (already received, or the next one within timeout
        seconds); QmpTimeout otherwise.  Other events stay for events()/wait_event()."""
        self._held = self.events()
        for i, e in enumerate(self._held):
            if e.get('event') == name:
                return self._held.pop(i)
        lib = qmp_lib()
        loop = self._loop
        deadline = None if timeout is None or loop is None else loop.time() + timeout
        while True:
            # In slices, to notice a connection QEMU closed (a cancelled get() loses nothing).
            if loop is None or (self._client.runstate != lib.Runstate.RUNNING
                                and self._client.events.empty()):
                raise QmpClosed('%sQMP connection closed (waiting for event %s)' % (self._prefix, name))
            left = 0.25 if deadline is None else min(0.25, deadline - loop.time())
            if left <= 0:
                raise QmpTimeout('%sno QMP event %s within %ss' % (self._prefix, name, timeout))
            try:
                e = dict(self._run(self._client.events.get(), left))
            except asyncio.TimeoutError:
                continue
            if e.get('event') == name:
                return e
            self._held.append(e)

    # -- end --
    def close(self):
        """Disconnect (never raises: QEMU may be gone already)."""
        if self._loop is None:
            return
        try:
            self._loop.run_until_complete(self._client.disconnect())
        except Exception:       # noqa: BLE001  EOFError after quit, a reset connection...
            pass
        self._close_loop()

    def _close_loop(self):
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return '<Qmp %s%s>' % (self._where, '' if self._loop else ' closed')


__all__ = ['Qmp', 'QmpError', 'QmpConnectError', 'QmpCommandError', 'QmpClosed', 'QmpTimeout',
           'qmp_lib', 'qemu_python_dir']
