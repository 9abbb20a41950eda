# SPDX-License-Identifier: GPL-2.0-or-later
"""docs/tutorial/check and docs/tutorial/answers.toml (docs/tutorial/README.md).

Unit tier, no VM: every numbered exercise of every lesson has an entry in
answers.toml; for each, `check --show` gives a right answer (measured
figures computed by the simulator or the device model now), `check ID
RIGHT` says right (exit 0) and `check ID WRONG` says which part is not
(exit 1).  Lesson 4 exercise 2's claim that MTU 4096 makes the WRITE
longer is checked against the simulator; bad usage exits 2."""
import glob
import os
import re
import subprocess
import sys

import pytest

import qrnic_harness as q

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK = os.path.join(ROOT, 'docs', 'tutorial', 'check')
ENV = dict(os.environ, QRNIC_BUILD_DIR=q.build_dir(), QRNIC_NO_BUILD='1')


def check(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True,
                          timeout=300, env=ENV, cwd=ROOT)


def lesson_exercises():
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'docs', 'tutorial', '[0-9][0-9]-*.md'))):
        lesson = int(os.path.basename(path)[:2])
        text = open(path, encoding='utf-8').read()
        m = re.search(r'^## Exercises?\n(.*?)(?=^## |\Z)', text, re.S | re.M)
        if not m:
            continue
        out += [f'{lesson}.{n}' for n in re.findall(r'^(\d+)\. ', m.group(1), re.M)]
    return out


def listed():
    r = check('--list')
    assert r.returncode == 0, r.stderr
    return [ln.split()[0] for ln in r.stdout.splitlines()]


def test_every_exercise_has_an_answer():
    ex = lesson_exercises()
    assert len(ex) >= 27 and {'0.1', '0.3', '4.2', '7.3', '8.1', '8.3'} <= set(ex)
    have = listed()
    assert not set(ex) - set(have), f'exercises without an answer: {sorted(set(ex) - set(have))}'
    assert not set(have) - set(ex), f'answers of no exercise: {sorted(set(have) - set(ex))}'


@pytest.mark.parametrize('ex', lesson_exercises())
def test_right_and_wrong_answers(ex):
    r = check('--show', ex)
    assert r.returncode == 0, r.stdout + r.stderr
    right = re.search(r'a right answer: (.*)', r.stdout).group(1)
    ok = check(ex, right)
    assert ok.returncode == 0 and ok.stdout.startswith(f'{ex}: right.'), ok.stdout + ok.stderr
    bad = check(ex, 'no idea 0.000123')
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f'{ex}: not right yet.' in bad.stdout and 'part 1 (' in bad.stdout, bad.stdout
    guest = 'needs a booted guest' in ok.stdout
    assert guest == ('(guest; recorded answer)' in next(
        ln for ln in check('--list').stdout.splitlines() if ln.split()[0] == ex))


def test_measured_figures_follow_the_tools():
    """Lesson 4, exercise 2: at MTU 4096 the WRITE is one packet and takes
    longer than at MTU 1024 (lesson 4's figure); the answer is what the
    simulator measures now: a figure 1 % off is wrong."""
    sim = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')
    lat = {}
    for mtu in (1024, 4096):
        r = subprocess.run([sim, '--op', 'write', '--size', '4096', '--mtu', str(mtu), '--depth',
                            '1', '--count', '1', '--profile', 'teach', '--json'],
                           capture_output=True, text=True, timeout=60, check=True)
        lat[mtu] = int(re.search(r'"p50":\s*(\d+)', r.stdout).group(1))
    assert lat[4096] > lat[1024]
    want = lat[4096] / 1000
    assert check('4.2', f'1 packet, {want:.3f} us, no pipelining').returncode == 0
    r = check('4.2', f'1 packet, {want * 1.01:.3f} us, no pipelining')
    assert r.returncode == 1 and 'part 2 (doorbell to CQE (us))' in r.stdout, r.stdout
    r = check('4.2', f'4 packets, {lat[1024] / 1000:.3f} us, no pipelining')
    assert r.returncode == 1 and 'part 1 (packets)' in r.stdout


def load_check():
    import script_module
    return script_module.load(CHECK, 'tutorial_check')


def test_owner_bit_is_read_from_the_ring(monkeypatch):
    """Lesson 0, exercise 2 is measured on the device model: slot 0 of a
    CQ holds owner 1 after the first pass (and still after every CQE was
    consumed), 0 once the CQE one ring size later overwrote it."""
    monkeypatch.setenv('QRNIC_BUILD_DIR', q.build_dir())
    chk = load_check()
    assert chk.scenario(chk.Tools(), 'cq-wrap') == {'first_owner': 1, 'stale_owner': 1,
                                                    'wrap_owner': 0}
    r = check('0.2', 'owner 1: it is the stale first one')
    assert r.returncode == 1 and 'part 1 (owner bit' in r.stdout, r.stdout


def test_lesson8_figures_follow_rnr_sim():
    """Lesson 8's answers come from rnr_sim.py and the simulator now: the
    RNR wait of timer code 14 (1.28 ms) is in exercise 2's figure, and a
    figure 1 % off, or the NAK count of --rnr-retry, is wrong."""
    out = subprocess.run([sys.executable, os.path.join(ROOT, 'docs', 'tutorial', 'rnr_sim.py'),
                          '--size', '100', '--min-rnr-timer', '14', '--recv-after', '100us'],
                         capture_output=True, text=True, timeout=60, env=ENV, check=True).stdout
    done = float(re.search(r'done after ([\d.]+) us', out).group(1))
    assert 1280 < done < 1500
    assert check('8.2', f'{done:.3f} us: the RNR timer makes it wait 1.28 ms').returncode == 0
    r = check('8.2', f'{done * 1.01:.3f} us: the RNR timer makes it wait')
    assert r.returncode == 1 and 'part 1 (post to last completion' in r.stdout, r.stdout
    r = check('8.1', '3 NAKs, RNR_RETRY_EXC_ERR, because the first attempt is not a retry')
    assert r.returncode == 1 and 'part 1 (RNR NAKs)' in r.stdout, r.stdout
    r = check('0.3', 'dev 0, because of its receive WQE')
    assert r.returncode == 1 and 'part 1 (the device)' in r.stdout, r.stdout


def test_usage_errors():
    r = check('9.9', 'x')
    assert r.returncode == 2 and "no exercise '9.9'" in r.stderr
    r = check()
    assert r.returncode == 2 and 'which exercise' in r.stderr
    r = check('4.2')
    assert r.returncode == 0 and 'parts, in this order: packets' in r.stdout


@pytest.mark.parametrize('text,msg', [
    ('garbage [[\n', 'Expected'),
    ('[[exercise]]\nid = "x"\n', 'valid id'),
    ('[[exercise]]\nid = "1.1"\nask = "q"\n', 'no [[exercise.part]]'),
    ('[[exercise]]\nid = "1.1"\nask = "q"\n[[exercise.part]]\nwhat = "w"\ntype = "words"\n'
     'all = ["(("]\n', 'bad regular expression'),
    ('[[exercise]]\nid = "1.1"\nask = "q"\n[[exercise.part]]\nwhat = "w"\ntype = "number"\n'
     'measure = { kind = "sim-list", sim = "--op write --count 1", op = 7, field = "pkts" }\n',
     'the measurement failed'),
])
def test_bad_answers_file(tmp_path, text, msg):
    """A broken answers file is a clear error (exit 2), never a traceback."""
    f = tmp_path / 'answers.toml'
    f.write_text(text)
    r = check('--answers', str(f), '1.1', '1')
    assert r.returncode == 2 and msg in r.stderr and 'Traceback' not in r.stderr, r.stderr
