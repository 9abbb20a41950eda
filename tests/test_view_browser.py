# SPDX-License-Identifier: GPL-2.0-or-later
"""The live view in a real browser: headless Chromium driven by Selenium
(Debian: chromium, chromium-driver, python3-selenium; scripts/test.sh
installs them).  The page is loaded against the simulator; it must update
while traffic runs (a QP's PSN changes in the DOM), and show the
retransmission, the lost frame and the NAK when a fault plan drops a packet.

Set QRNIC_VIEW_SCREENSHOT=FILE.png to keep a screenshot (docs/img/view.png
is one).  Skipped, with the reason, only when Chromium is absent and cannot
be installed."""
import os
import shutil
import subprocess
import time

import pytest

from test_view import Server

PKGS = ['chromium', 'chromium-driver', 'python3-selenium']


def _have():
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return bool(shutil.which('chromium') and shutil.which('chromedriver'))


def _ensure_browser():
    """Chromium, chromedriver and Selenium, installed with apt if missing and
    possible (as scripts/test.sh does); else skip with why."""
    if _have():
        return
    why = 'chromium, chromium-driver or python3-selenium is missing'
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        pytest.skip(f'{why} and cannot be installed here (not root or no apt-get): '
                    f'apt install {" ".join(PKGS)}')
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    r = subprocess.run(['apt-get', 'install', '-y', '-q'] + PKGS, env=env,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not _have():
        pytest.skip(f'{why} and apt-get install failed: {r.stderr.strip()[-300:]}')


@pytest.fixture(scope='module')
def browser():
    _ensure_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    for a in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu',
              '--window-size=1600,1100'):
        opts.add_argument(a)
    opts.binary_location = shutil.which('chromium')
    drv = webdriver.Chrome(service=Service(shutil.which('chromedriver')), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def _wait(cond, what, limit=90):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f'timed out waiting for {what}')


# The page re-renders several times a second: read it in one script each
# time instead of holding element references that go stale.
def text(b, elem_id):
    return b.execute_script('const e = document.getElementById(arguments[0]);'
                            'return e ? e.textContent : null;', elem_id)


def frames(b, cls):
    return b.execute_script(
        'return [...document.querySelectorAll(arguments[0])].map((g) => '
        '({id: g.dataset.id, op: g.dataset.op, psn: g.dataset.psn, src: g.dataset.src}));',
        f'#seq g.frame.{cls}')


def incidents(b):
    return b.execute_script(
        'return [...document.querySelectorAll("#incidents tr.incident")].map((r) => '
        '({cls: r.className, op: r.dataset.op, psn: r.dataset.psn}));')


def click(b, elem_id):
    b.execute_script('document.getElementById(arguments[0]).click();', elem_id)


def test_page_updates_and_shows_retransmission(browser):
    # the 6th WRITE packet from host 0 is dropped once; 100 us of simulated
    # time per second keeps about 5 s of frames in the diagram
    srv = Server('sim', '--speed', '100us', '--rule', 'drop dir=tx op=write nth=6 count=1',
                 '--plan-hosts', '0')
    try:
        browser.get(srv.url + '/')
        assert browser.title == 'qrnic live view'
        cell = 'd0-qp2-next_psn'
        first = _wait(lambda: text(browser, cell), 'the QP table')
        # traffic runs: the PSN in the DOM changes
        _wait(lambda: text(browser, cell) not in (None, '', first),
              f'{cell} to change from {first}')
        assert text(browser, 'd0-qp2-state') == 'RTS'
        # the CQs' moderation column: the simulator's CQs have none; the
        # page's formatter for the moderation MODIFY_CQ sets
        cq = browser.execute_script(
            'const c = document.querySelector("table.cqs td[id$=\'-moderation\']");'
            'return c ? c.textContent : null;')
        assert cq == 'off', cq
        assert browser.execute_script(
            'return moderation({mod_count: 12, mod_period_us: 700});') == '12 CQEs / 700 us'
        assert browser.execute_script(
            'return moderation({mod_count: 0, mod_period_us: 300});') == '0 CQEs / 300 us'
        assert text(browser, 'status') == 'running'
        # the dropped packet: lost, NAKed, sent again -- first in the list of
        # incidents (kept after the frames scroll out of the diagram); pause
        # then, so that the diagram still holds them when it is read
        _wait(lambda: {'lost', 'NAK', 'retransmitted'} <=
              {i['cls'].split()[-1] for i in incidents(browser)}, 'the incidents')
        click(browser, 'btn-pause')
        _wait(lambda: text(browser, 'status') == 'paused', 'paused')
        retx = _wait(lambda: frames(browser, 'retx'), 'a retransmitted frame in the diagram')
        assert 'WRITE' in retx[0]['op'] and retx[0]['src'] == '0'
        lost = frames(browser, 'lost')
        assert lost and lost[0]['psn'] == retx[0]['psn']
        naks = frames(browser, 'nak')
        assert naks and naks[0]['psn'] == retx[0]['psn'] and naks[0]['src'] == '1'
        counts = text(browser, 'frame-counts')
        assert '1 lost' in counts and '1 NAKs' in counts
        shot = os.environ.get('QRNIC_VIEW_SCREENSHOT')
        if shot:
            browser.save_screenshot(shot)
        # step from the page (paused above)
        # (a step whose work was due at the current instant leaves the clock
        # where it is: a few steps must move it)
        def now():
            return int(browser.execute_script('return document.getElementById("now").dataset.ns;'))
        t0 = now()
        for _ in range(5):
            browser.execute_script('document.getElementById("msg").textContent = "";')
            click(browser, 'btn-step')
            msg = _wait(lambda: (lambda m: m if m.startswith('step:') else None)(
                text(browser, 'msg') or ''), 'the step')
            assert 'trace records' in msg
            time.sleep(0.5)                 # the page fetches the state after the step
            if now() > t0:
                break
        _wait(lambda: now() > t0, 'the clock to move')
        assert text(browser, 'status') == 'paused'
        # an SVG of the last 2 operations is offered
        browser.execute_script('document.getElementById("timeline-n").value = "2";')
        click(browser, 'btn-svg')
        _wait(lambda: 'saved the timeline of the last 2' in (text(browser, 'msg') or ''),
              'the SVG')
        click(browser, 'btn-continue')
        _wait(lambda: text(browser, 'status') == 'running', 'running again')
    finally:
        srv.close()
