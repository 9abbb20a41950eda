# SPDX-License-Identifier: GPL-2.0-or-later
"""docs/regen: the pictures and quoted figures of docs/ are what the tools
make today (docs/README.md, "Docs that cannot drift").

Unit tier, simulator only: `docs/regen --check` regenerates every picture
and every figure between <!-- regen:NAME --> markers into a temporary
directory and compares stage times, frame times and numbers with what is
committed.  A second run with one timing parameter changed (the teach
cable, prop_ns 5000 -> 6000) must fail and name the stage times that moved,
by exactly the change.  (This replaces the old test of
docs/img/timeline-write-vs-read.svg, which only checked its panel kinds.)"""
import json
import os
import re
import subprocess
import sys

import qrnic_harness as q

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGEN = os.path.join(ROOT, 'docs', 'regen')
SIM = os.path.join(q.build_dir(), 'tests', 'harness', 'qrnic-sim')


def regen(*args):
    env = dict(os.environ, QRNIC_BUILD_DIR=q.build_dir(), QRNIC_NO_BUILD='1')
    return subprocess.run([sys.executable, REGEN, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)


def test_committed_docs_are_regenerated():
    r = regen('--check')
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r'(\d+) pictures, (\d+) figures, (\d+) claims: all as committed', r.stdout)
    assert m, r.stdout
    assert int(m.group(1)) >= 3 and int(m.group(2)) >= 18 and int(m.group(3)) >= 7


def rx_times(tmp_path, extra):
    """The responder's rx times (since the doorbell) of lesson 4's WRITE."""
    t = tmp_path / 'w.jsonl'
    subprocess.run([SIM, '--op', 'write', '--size', '4096', '--mtu', '1024', '--depth', '1',
                    '--count', '1', '--profile', 'teach', '--quiet', '--trace', str(t), *extra],
                   check=True, capture_output=True, timeout=60)
    ev = [json.loads(ln) for ln in t.read_text().splitlines()]
    db = ev[0]['t_ns']
    return [(e['psn'], e['t_ns'] - db) for e in ev if e['type'] == 'rx' and e['dev'] == 1], \
        next(e['t_ns'] for e in ev if e['type'] == 'cqe') - db


def test_changed_stage_time_is_drift(tmp_path):
    change = ('--timing', 'prop_ns=6000')
    r = regen('--check', *[f'--sim-arg={a}' for a in change])
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert 'DRIFT' in out
    before, total0 = rx_times(tmp_path, ())
    after, total1 = rx_times(tmp_path, change)
    assert len(before) == 4
    # every frame arrives 1 us later: the report names each moved stage, old -> new
    sect = out.split('docs/tutorial/img/sim-write-teach.svg: the picture drifted')[1]
    sect = sect.split('\ndocs/')[0]
    for (psn, t0), (_, t1) in zip(before, after):
        assert t1 - t0 == 1000
        name = next(n for n in ('WRITE_FIRST', 'WRITE_MIDDLE', 'WRITE_LAST')
                    if f'rx {n} PSN {psn}"' in sect)
        assert f'stage "rx {name} PSN {psn}" (dev 1) at +{t0 / 1000:.3f} us  ->  ' \
               f'stage "rx {name} PSN {psn}" (dev 1) at +{t1 / 1000:.3f} us' in sect, sect
    assert f'doorbell -> CQE {total0 / 1000:.3f} us  ->  ' in sect
    # the quoted figures moved too: lesson 4's total and the --list table
    assert 'figure l04-total drifted' in out
    assert f'numbers {total0 / 1000:.1f}  ->  {total1 / 1000:.1f}' in out
    assert 'figure l04-sim-list drifted' in out


def test_prose_claim_that_no_longer_holds():
    """Lesson 4's exercise says a WRITE at MTU 4096 takes longer than at
    1024.  With a fast port and costly per-packet processing it would not:
    regeneration stops (exit 2) and names the text to rewrite, instead of
    quoting figures that contradict it."""
    r = regen('--check', '--sim-arg=--timing',
              '--sim-arg=link_mbps=100000,req_pkt_cycles=30,resp_pkt_cycles=30')
    assert r.returncode == 2, r.stdout + r.stderr
    assert 'tutorial-04' in r.stderr and 'MTU 4096' in r.stderr and 'no longer holds' in r.stderr
    assert 'Traceback' not in r.stderr


def test_bad_arguments_and_list():
    """An unknown generator is a clear error (exit 2); --list names them."""
    r = regen('--only', 'no-such-generator')
    assert r.returncode == 2 and 'no such generator' in r.stderr
    r = regen('--list')
    assert r.returncode == 0
    for name in ('timeline', 'tutorial-04', 'tutorial-06'):
        assert name in r.stdout


def load_regen():
    import script_module
    return script_module.load(REGEN, 'docs_regen')


def test_tutorial_pictures_are_regenerated_and_compared(tmp_path):
    """docs/regen draws docs/tutorial/mkpictures' pictures too (generator
    tutorial-pictures), and --check compares them byte for byte: a changed
    label is reported with the texts that moved."""
    r = regen('--list')
    assert 'tutorial-pictures' in r.stdout
    out = tmp_path / 'out'
    r = regen('--only', 'tutorial-pictures', '--out', str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    pics = sorted(p.name for p in (out / 'docs' / 'tutorial' / 'img').iterdir())
    assert {'boot-bringup.svg', 'interop-t3.svg', 'sim-loss-gobackn.svg', 'sim-rnr.svg',
            'frame-layout.svg'} <= set(pics)
    for name in pics:
        assert f'picture docs/tutorial/img/{name}' in r.stdout
        committed = os.path.join(ROOT, 'docs', 'tutorial', 'img', name)
        assert (out / 'docs' / 'tutorial' / 'img' / name).read_bytes() == \
            open(committed, 'rb').read(), name
    mod = load_regen()
    new = out / 'docs' / 'tutorial' / 'img' / 'sim-loss-gobackn.svg'
    old = tmp_path / 'old.svg'
    old.write_text(new.read_text().replace('PSN 101', 'PSN 109'))
    problems = mod.compare_svg('x.svg', str(old), str(new))
    assert problems[0] == 'x.svg: the picture drifted (committed -> regenerated):'
    assert any('resend from PSN 109 (sequence NAK)  ->  resend from PSN 101 (sequence NAK)' in p
               for p in problems), problems
    assert mod.compare_svg('x.svg', str(new), str(new)) == []


def test_lesson_figures_are_the_lessons_own_commands():
    """Lesson 6's ConnectX-5 table and lesson 1's bring-up are what the
    lesson's own ```sh block prints (r.lesson_sh), and come before the
    exercises, so docs/tutorial/run-steps runs them."""
    for page, name in (('06-read-vs-write.md', 'l06-cx5-table'), ('01-boot.md', 'l01-bringup')):
        text = open(os.path.join(ROOT, 'docs', 'tutorial', page), encoding='utf-8').read()
        i = text.index(f'<!-- regen:{name} -->')
        assert i < text.index('\n## Exercise'), page
        assert text.rfind('```sh', 0, i) > text.rfind('<!-- /regen -->', 0, i), page


def test_congestion_pictures_are_regenerated_and_compared(tmp_path):
    """docs/congestion.md's incast pictures (bench/cc_pictures, generator
    congestion) come out byte for byte as committed, and --check tells a
    changed one by its texts."""
    out = tmp_path / 'out'
    r = regen('--only', 'congestion', '--out', str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    names = ('cc-2to1-throughput.svg', 'cc-16to1-throughput.svg', 'cc-queue.svg', 'cc-pfc.svg')
    page = open(os.path.join(ROOT, 'docs', 'congestion.md'), encoding='utf-8').read()
    for name in names:
        assert f'picture docs/img/{name}' in r.stdout
        assert f'](img/{name})' in page, name
        assert (out / 'docs' / 'img' / name).read_bytes() == \
            open(os.path.join(ROOT, 'docs', 'img', name), 'rb').read(), name
    mod = load_regen()
    new = out / 'docs' / 'img' / 'cc-pfc.svg'
    old = tmp_path / 'old.svg'
    text = new.read_text()
    assert text.count('>CC off: 920 XOFFs') == 1, text
    old.write_text(text.replace('>CC off: 920 XOFFs', '>CC off: 921 XOFFs'))
    problems = mod.compare_svg('x.svg', str(old), str(new))
    assert problems[0] == 'x.svg: the picture drifted (committed -> regenerated):'
    assert any('CC off: 921 XOFFs' in p and '->' in p and 'CC off: 920 XOFFs' in p
               for p in problems), problems
