# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: runs of the model without the BQL (hw/qrnic_run.c qrnic_run_unlocked,
docs/qemu.md section 13).  With unlocked-run=on the bottom half and the model
timer let the BQL go while the model runs, and send the frames and raise the
interrupts it produced afterwards, with the BQL again.  Under qtest the
default (auto) keeps the BQL (no vCPU waits for it), so these tests turn it
on: the same bytes, completions, interrupts and captured frames as with the
BQL held, and the QOM counter host-calls.unlocked says which way each device
ran.  (Doorbells queued by a vCPU during a run need a vCPU: the guest tier's
test_guest_unlocked_run.py.)"""
import pytest

import qrnic_harness as h
from qtest import scenarios
from qtest.driver import World
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)
from test_qemu_pcap import read_pcap

pytestmark = pytest.mark.qemu

# devices 0 and 1 with unlocked-run=on, 2 and 3 with auto, the default (off under qtest)
qworld, world = shared_world('unlocked', ndev=4,
                             dev_opts=['unlocked-run=on', 'unlocked-run=on',
                                       'unlocked-run=auto', 'unlocked-run=auto'])


def _traffic(a, b, seed):
    """Every RC operation both ways, an 8-WRITE batch under one doorbell and
    a CQ event by MSI-X; returns the bytes the batch wrote."""
    c = h.connect_rc(a, b, mtu=1024)
    scenarios.exercise_rc(c, seed=seed)
    src, dst = a.reg_mr(c.pda, 65536), b.reg_mr(c.pdb, 65536)
    data = bytes((i * 13 + seed) & 0xff for i in range(8192))
    src.write(0, data)
    for i in range(8):
        c.qa.post_send('RDMA_WRITE', [(src, i * 1024, 1024)], remote=(dst, i * 1024),
                       ring=(i == 7))
    assert [e['status_name'] for e in c.cqa.wait(8)] == ['SUCCESS'] * 8
    got = dst.read(0, 8192)
    scenarios.send_with_cq_event(c, src, dst)       # into dst[0:64]
    assert dst.read(0, 64) == data[:64]
    return got


def test_unlocked_run_same_bytes_completions_and_interrupts(world):
    on_a, on_b, off_a, off_b = world.devs
    assert on_a.qom_get('unlocked-run') == 'on' and off_a.qom_get('unlocked-run') == 'auto'
    u0 = {d: d.qom_counters('host-calls')['unlocked'] for d in world.devs}
    got_on = _traffic(on_a, on_b, seed=5)
    got_off = _traffic(off_a, off_b, seed=5)
    assert got_on == got_off
    u1 = {d: d.qom_counters('host-calls')['unlocked'] for d in world.devs}
    assert u1[on_a] > u0[on_a] and u1[on_b] > u0[on_b]
    assert u1[off_a] == u0[off_a] and u1[off_b] == u0[off_b]
    for d in world.devs:
        st = d.query_stats()
        assert st['dma_errors'] == 0 and st['rx_drop_icrc'] == 0
        assert d.qom_counters('host-calls')['db-queued'] == 0     # no vCPU here


def test_unlocked_run_sends_a_full_list_early(qemu_binary):  # noqa: F811
    """A run keeps at most 256 frames for its end (hw/qrnic_run.c qrnic_defer):
    one 128 KiB WRITE at MTU 256 is 512 packets from one run, so the kept
    list is sent in the middle of the run (host-calls.sent-early) with the
    BQL taken for it; every byte arrives, one completion, nothing dropped.
    The device that keeps the BQL never keeps a frame.  (Without trains:
    a train of up to 32 packets is one entry of the list.)"""
    w = World.single(qemu_binary, 4, name='unlocked-early',
                     dev_opts=['unlocked-run=on,trains=off', 'unlocked-run=on,trains=off',
                               'unlocked-run=auto,trains=off', 'unlocked-run=auto,trains=off'])
    try:
        _full_list_early(*w.devs)
    finally:
        w.close()


def _full_list_early(on_a, on_b, off_a, off_b):
    size = 128 * 1024
    data = bytes((i * 7 + 3) & 0xff for i in range(size))
    for a, b in ((on_a, on_b), (off_a, off_b)):
        c = h.connect_rc(a, b, mtu=256)
        src, dst = a.reg_mr(c.pda, size), b.reg_mr(c.pdb, size)
        src.write(0, data)
        e0 = a.qom_counters('host-calls')['sent-early']
        tx0 = a.query_stats()['tx_packets']
        c.qa.post_send('RDMA_WRITE', [(src, 0, size)], remote=(dst, 0))
        assert [e['status_name'] for e in c.cqa.wait(1)] == ['SUCCESS']
        assert dst.read(0, size) == data
        early = a.qom_counters('host-calls')['sent-early'] - e0
        assert a.query_stats()['tx_packets'] - tx0 >= size // 256
        if a is on_a:
            assert early > 0
        else:
            assert early == 0
        for d in (a, b):
            st = d.query_stats()
            assert st['dma_errors'] == 0 and st['rx_drop_icrc'] == 0


def test_unlocked_run_capture_in_order(qemu_binary, tmp_path):  # noqa: F811
    """Frames a run sends go out after it, each stamped with the virtual time
    the model sent it at: both captures hold every frame once, in the same
    order, PSNs rising per QP, times never going back."""
    pa, pb = tmp_path / 'a.pcap', tmp_path / 'b.pcap'
    w = World.single(qemu_binary, 2, dev_opts=[f'unlocked-run=on,pcap={pa}',
                                               f'unlocked-run=on,pcap={pb}'], name='unlocked-pcap')
    try:
        a, b = w.devs
        _traffic(a, b, seed=9)
        sent = {d: d.query_stats()['tx_packets'] for d in (a, b)}
        assert a.qom_counters('host-calls')['unlocked'] > 0
    finally:
        w.close()
    fa, fb = read_pcap(pa), read_pcap(pb)
    assert [f for _, f in fa] == [f for _, f in fb]
    assert len(fa) == sent[a] + sent[b]
    assert all(t1 <= t2 for (t1, _), (t2, _) in zip(fa, fa[1:]))
    psn = {}
    for _, f in fa:
        if f[12:14] == b'\x08\x00' and f[23] == 17:             # IPv4 UDP: RoCEv2
            bth = f[14 + 20 + 8:]
            key = (f[0:6], int.from_bytes(bth[5:8], 'big'))      # destination MAC, QP
            p = int.from_bytes(bth[9:12], 'big')
            assert p >= psn.get(key, -1), (key, p, psn.get(key))     # no faults: in order
            psn[key] = max(p, psn.get(key, -1))
