# SPDX-License-Identifier: GPL-2.0-or-later
"""PFC pause in the device model (qrnic_dev_port_pause, docs/congestion.md):
while paused no frame leaves the port; on the resume the held frames leave
in order at the port's rate and the transfer completes without a
retransmission; the pause flag survives a snapshot and a bad one is
refused."""
import pytest

import qrnic_harness as q

MSG = 65536


def stream(w, n=8):
    a, b = w.devs
    for d in (a, b):
        d.set_timing('cx5-100g')
    conn = q.connect_rc(a, b, mtu=4096, sq_log=6)
    la, rb = a.reg_mr(conn.pda, MSG * n), b.reg_mr(conn.pdb, MSG * n)
    la.write(0, bytes((i * 7 + 3) & 0xff for i in range(MSG * n)))
    for k in range(n):
        conn.qa.post_send('RDMA_WRITE', [(la, k * MSG, MSG)], remote=(rb, k * MSG))
    return conn, la, rb


def requests(w):
    return [f for f in w.frames() if f.roce and f.src == 0 and f.opname.startswith('RC_WRITE')]


def test_paused_port_sends_nothing_then_resumes_in_order():
    w = q.World(2)
    try:
        a, b = w.devs
        conn, la, rb = stream(w)
        w.run(ns=6_000)
        before = len(requests(w))
        assert 0 < before < 8 * MSG // 4096
        a.port_pause(True)
        assert a.port_paused
        t_pause = w.now
        w.run(ns=50_000)
        sent = requests(w)
        # frames already on the cable (their departure was before the
        # pause) may still show; nothing departs later
        late = [f for f in sent[before:] if f.t > t_pause + 1_000]
        assert late == []
        held = len(sent)
        t_resume = w.now
        a.port_pause(False)
        assert not a.port_paused
        w.run()
        sent = requests(w)
        assert len(sent) == 8 * MSG // 4096          # each packet once: no retransmission
        psns = [f.psn for f in sent]
        assert psns == sorted(psns) and len(set(psns)) == len(psns)
        assert all(f.t >= t_resume for f in sent[held:])
        # back to back at the line rate after the resume: 4 KiB frames at
        # 100 Gb/s are ~330 ns apart, never closer
        gaps = [y.t - x.t for x, y in zip(sent[held:], sent[held + 1:])]
        assert gaps and min(gaps) >= 300
        assert len(conn.cqa.poll(16)) == 8
        assert a.stat('retransmitted_packets') == 0
        assert rb.read(0, 8 * MSG) == la.read(0, 8 * MSG)
    finally:
        w.close()


def test_pause_flag_is_saved_and_checked():
    w = q.World(2)
    try:
        a, b = w.devs
        conn, la, rb = stream(w, n=2)
        w.run(ns=5_000)
        a.port_pause(True)
        w.run(ns=20_000)
        s = a.save()
        a.load(s)
        assert a.port_paused
        assert a.save() == s
        # the flag is the TIME section's last byte in version 2; version 3
        # appends the eight PFC pause ends and deferred-frame tails (16 x 8),
        # version 4 the receive buffer's state (8 + 8 + 1 + 8 + 16 x 8, all 0
        # with the buffer off)
        sec = q.snap_sections(s)['TIME']
        rxb = 8 + 8 + 1 + 8 + 16 * 8
        at = len(sec[1]) - 1 - 16 * 8 - rxb
        assert sec[0] == 4 and sec[1][at] == 1 and sec[1][at + 1:] == bytes(16 * 8 + rxb)
        bad = q.snap_replace(s, 'TIME', sec[1][:at] + b'\x02' + sec[1][at + 1:])
        with pytest.raises(q.HarnessError) as e:
            a.load(bad)
        assert 'port pause flag' in str(e.value)
        a.load(s)
        a.port_pause(False)
        w.run()
        assert len(conn.cqa.poll(16)) == 2
        assert rb.read(0, 2 * MSG) == la.read(0, 2 * MSG)
    finally:
        w.close()
