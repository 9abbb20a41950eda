# SPDX-License-Identifier: GPL-2.0-or-later
"""The tutorial (docs/tutorial): its pictures are current, every lesson has
one, and every link resolves.

Unit tier, a few seconds:
* docs/tutorial/mkpictures regenerates every picture into a temporary
  directory; each must equal the committed SVG byte for byte (the two trace
  pictures run qrnic-sim and rnr_sim.py, so a change in the model's timing
  or in the transport's decisions shows up here), parse as SVG, and be
  referenced by a lesson;
* the frame-layout picture takes the header sizes from model/qrnic_wire.h:
  a size that no longer matches the fields it draws stops it;
* every numbered lesson shows at least one picture that exists;
* every relative link of every tutorial page (lessons, glossary, README)
  resolves to an existing file, and its #anchor to a heading of that file
  (GitHub's anchor rules), so the glossary's links into docs/spec.md cannot
  rot silently;
* rnr_sim.py, the no-VM RNR example of lesson 8, shows real RNR NAKs on the
  wire, succeeds once the receive WQE is posted, fails with
  RNR_RETRY_EXC_ERR after rnr_retry + 1 NAKs when it never is, and refuses
  bad options with a message."""
import glob
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUT = os.path.join(ROOT, 'docs', 'tutorial')
IMG = os.path.join(TUT, 'img')
MKPICTURES = os.path.join(TUT, 'mkpictures')
RNR_SIM = os.path.join(TUT, 'rnr_sim.py')
LESSONS = sorted(glob.glob(os.path.join(TUT, '[0-9][0-9]-*.md')))
PAGES = LESSONS + [os.path.join(TUT, n) for n in ('README.md', 'glossary.md')]


def load_mkpictures():
    import script_module
    return script_module.load(MKPICTURES, 'mkpictures')


def test_pictures_are_current(tmp_path):
    mk = load_mkpictures()
    r = subprocess.run([sys.executable, MKPICTURES, '-o', str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    made = sorted(os.listdir(tmp_path))
    assert made == sorted(mk.PICTURES)
    referenced = ''.join(open(p).read() for p in PAGES)
    for name in made:
        new = (tmp_path / name).read_bytes()
        with open(os.path.join(IMG, name), 'rb') as f:
            old = f.read()
        assert new == old, (f'docs/tutorial/img/{name} is not what docs/tutorial/mkpictures draws '
                            f'now: run docs/tutorial/mkpictures and commit the result')
        root = ET.fromstring(new)
        assert root.tag == '{http://www.w3.org/2000/svg}svg'
        assert f'img/{name}' in referenced, f'no lesson shows img/{name}'


def test_trace_pictures_show_the_transport(tmp_path):
    """The loss picture has the lost packet, the NAK and the resend; the RNR
    picture its RNR NAKs and both completions: what the lessons say they show."""
    mk = load_mkpictures()
    loss = mk.sim_loss()
    assert loss.count('>lost<') == 1
    assert 'NAK: PSN sequence error  PSN 101' in loss
    assert 'resend from PSN 101 (sequence NAK)' in loss
    assert loss.count('WRITE Middle  PSN 101') == 2      # sent, lost; sent again
    rnr = mk.sim_rnr()
    assert rnr.count('RNR NAK (wait 10 µs)  PSN 256') == 2
    assert 'CQE (send): SUCCESS' in rnr and 'CQE (receive): SUCCESS' in rnr
    assert 'receive WQE posted (RQ doorbell)' in rnr


def test_frame_layout_follows_qrnic_wire_h(tmp_path, monkeypatch):
    mk = load_mkpictures()
    sz = mk.wire_sizes()
    svg = mk.frame_layout()
    eth, ip, udp, bth, reth, aeth, icrc = (sz[k] for k in ('ETH', 'IPV4', 'UDP', 'BTH', 'RETH',
                                                           'AETH', 'ICRC'))
    assert f'path MTU 1024: {eth + ip + udp + bth + reth + 1024 + icrc} bytes' in svg
    assert f'ACK (opcode 17): {eth + ip + udp + bth + aeth + icrc} bytes' in svg
    assert f'BTH ({bth} bytes)' in svg
    with open(mk.WIRE_H) as f:
        text = f.read()
    bad = tmp_path / 'qrnic_wire.h'
    bad.write_text(re.sub(r'(#define QRNIC_BTH_LEN\s+)\d+', r'\g<1>14', text))
    monkeypatch.setattr(mk, 'WIRE_H', str(bad))
    with pytest.raises(SystemExit, match='BTH fields add up to 96 bits'):
        mk.frame_layout()
    bad.write_text(text.replace('#define QRNIC_AETH_LEN', '#define QRNIC_AETH_LENGTH'))
    with pytest.raises(SystemExit, match='no #define for AETH'):
        mk.frame_layout()


@pytest.mark.parametrize('lesson', [os.path.basename(p) for p in LESSONS])
def test_every_lesson_has_a_picture(lesson):
    with open(os.path.join(TUT, lesson)) as f:
        pics = re.findall(r'!\[[^\]]*\]\(([^)\s]+)\)', f.read())
    assert pics, f'{lesson} shows no picture'
    for p in pics:
        assert os.path.isfile(os.path.join(TUT, p)), f'{lesson}: {p} does not exist'


def github_anchor(heading):
    """GitHub's heading anchor: lower case, punctuation but '-' and '_' removed,
    spaces to '-'.  Hand-written: no Debian package implements GitHub's rule
    (python3-markdown's toc slugify collapses runs of '-' differently)."""
    h = re.sub(r'`', '', heading.strip().lower())
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')


def anchors(path):
    out, seen, fence = set(), {}, False
    with open(path) as f:
        for line in f:
            if line.startswith('```'):
                fence = not fence
            m = None if fence else re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
            if m:
                a = github_anchor(m.group(1))
                n = seen.get(a, 0)
                seen[a] = n + 1
                out.add(a if n == 0 else f'{a}-{n}')
    return out


def test_github_anchor_rule():
    assert github_anchor('12.4 RNR') == '124-rnr'
    assert github_anchor('9.1 CQE: `struct qrnic_cqe` (32 bytes)') == '91-cqe-struct-qrnic_cqe-32-bytes'
    assert github_anchor('12.5 ACK/NAK codes and errors') == '125-acknak-codes-and-errors'


def links(path):
    with open(path) as f:
        text = f.read()
    text = re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)      # no links in code blocks
    return re.findall(r'\]\(([^)\s]+)\)', text)


@pytest.mark.parametrize('page', [os.path.relpath(p, ROOT) for p in PAGES])
def test_tutorial_links_resolve(page):
    path = os.path.join(ROOT, page)
    for target in links(path):
        if re.match(r'[a-z]+:', target):            # http:, mailto: -- not ours to check
            continue
        file, _, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        assert os.path.exists(dest), f'{page}: link {target}: {file} does not exist'
        if anchor:
            assert dest.endswith('.md'), f'{page}: link {target}: anchor into a non-markdown file'
            assert anchor in anchors(dest), f'{page}: link {target}: no heading #{anchor} in {file}'


def test_glossary_links_every_term_to_spec():
    with open(os.path.join(TUT, 'glossary.md')) as f:
        entries = re.split(r'\n(?=\*\*)', f.read())[1:]
    assert len(entries) >= 25
    for e in entries:
        term = e.split('**')[1]
        assert '](../spec.md#' in e, f'glossary: {term} has no link to a spec.md section'
    terms = ' '.join(e.split('**')[1] for e in entries)
    for t in ('QP', 'WQE', 'Doorbell', 'CQ', 'Owner bit', 'EQ', 'PD', 'MR', 'lkey', 'PSN', 'ACK',
              'NAK', 'RNR', 'Signaled', 'min_rnr_timer', 'max_dest_rd_atomic', 'Kernel bypass',
              'Zero copy', 'One-sided'):
        assert t in terms, f'glossary has no entry for {t}'


def rnr(*args):
    return subprocess.run([sys.executable, RNR_SIM, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_rnr_sim_recv_posted_late():
    r = rnr('--size', '4096', '--recv-after', '100us')
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count('tx RNR NAK, timer code 1 = 0.01 ms, psn 256') == 2
    assert 'dev 0 (requester): wr_id 1 SEND SUCCESS' in r.stdout
    assert 'dev 1 (responder): wr_id 2 RECV SUCCESS, 4096 bytes' in r.stdout
    assert 'data: identical' in r.stdout
    assert 'rnr_naks_sent 2, rnr_naks_rcvd 2' in r.stdout


@pytest.mark.parametrize('retry', [0, 3])
def test_rnr_sim_retries_exhausted(retry):
    r = rnr('--size', '100', '--recv-after', 'never', '--rnr-retry', str(retry))
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'SEND RNR_RETRY_EXC_ERR' in r.stdout
    assert f'rnr_naks_sent {retry + 1}, rnr_naks_rcvd {retry + 1}' in r.stdout


def test_rnr_sim_receive_first_no_rnr():
    r = rnr('--size', '100', '--recv-after', '0us')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'rnr_naks_sent 0, rnr_naks_rcvd 0' in r.stdout


@pytest.mark.parametrize('args,msg', [
    (['--recv-after', '5xs'], "'5xs' is not a time"),
    (['--min-rnr-timer', '32'], '32 is not in 0..31'),
    (['--rnr-retry', 'x'], "'x' is not a number"),
    (['--recv-after', 'never'], 'would retry for ever'),
    (['--mtu', '1000'], 'invalid choice'),
])
def test_rnr_sim_bad_options(args, msg):
    r = rnr(*args)
    assert r.returncode == 2 and msg in r.stderr, r.stdout + r.stderr
    assert 'Traceback' not in r.stderr


def test_mkpictures_bad_arguments(tmp_path):
    r = subprocess.run([sys.executable, MKPICTURES, 'nonesuch.svg'], capture_output=True, text=True)
    assert r.returncode == 2 and 'unknown picture nonesuch.svg' in r.stderr
    r = subprocess.run([sys.executable, MKPICTURES, '-o', str(tmp_path / 'no-dir')],
                       capture_output=True, text=True)
    assert r.returncode == 2 and 'not a directory' in r.stderr


def test_bringup_and_interop_pictures_follow_the_code(tmp_path, monkeypatch):
    """Lesson 1's picture takes register offsets and admin command numbers
    from model/abi/ and the limits from the model's QUERY_DEVICE; lesson 7's
    its qrnic side from the model too.  A register that is gone stops it."""
    mk = load_mkpictures()
    dev, port = mk.model_limits()
    boot = mk.boot_bringup()
    assert f'max_qp {dev["max_qp"]}, max_qp_rd_atom {dev["max_qp_rd_atom"]}' in boot
    assert f'active_mtu {128 << port["active_mtu"]}' in boot
    regs = mk.abi_defines(mk.REGS_H, ['REG_AQ_SQ_BASE_LO', 'REG_CTRL'])
    assert f'AQ_SQ_BASE ({regs["REG_AQ_SQ_BASE_LO"]:#05x})' in boot
    assert f'CTRL ({regs["REG_CTRL"]:#05x}) = ENABLE' in boot
    t3 = mk.interop_t3()
    assert f'max_qp_rd_atom {dev["max_qp_rd_atom"]}' in t3 and 'max_qp_rd_atom 128' in t3
    bad = tmp_path / 'qrnic_regs.h'
    bad.write_text(open(mk.REGS_H).read().replace('#define QRNIC_REG_AQ_CTRL', '#define X'))
    monkeypatch.setattr(mk, 'REGS_H', str(bad))
    with pytest.raises(SystemExit, match='no #define for REG_AQ_CTRL'):
        mk.boot_bringup()


def test_bringup_sim_walks_the_steps():
    """Lesson 1 without a VM: the device model goes READY -> ENABLED and
    answers every admin command of the bring-up."""
    r = subprocess.run([sys.executable, os.path.join(TUT, 'bringup_sim.py')], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'STATUS 0x1 (READY)' in r.stdout and 'STATUS 0x3 (READY ENABLED)' in r.stdout
    assert 'QUERY_DEVICE: max_qp ' in r.stdout and 'SET_GID 0 for 10.0.0.1: ::ffff:10.0.0.1' \
        in r.stdout
    assert re.search(r'counted \d+ admin commands, 0 errors', r.stdout)


def test_run_steps_no_vm_skips_guest_blocks():
    r = subprocess.run([sys.executable, os.path.join(TUT, 'run-steps'), '--no-vm', '--list',
                        os.path.join(TUT, '01-boot.md'), os.path.join(TUT, '07-interop.md')],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert 'bringup_sim.py' in r.stdout and 'qrnic-sim' in r.stdout
    assert 'docs/tutorial/lab' not in r.stdout and 'vm.py' not in r.stdout
