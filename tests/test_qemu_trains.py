# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: trains between two qrnic ports of one QEMU (issue 23;
model/qrnic_internal.h struct qrnic_train, hw/qrnic.c qrnic_train_goes_whole;
docs/qemu.md section 5).  The packets of an RC WRITE message that the sender
builds by description with their payloads by reference leave as one frame
buffer of up to 32 packets, which the hub's shortcut hands whole to the
other port and its responder takes whole.  These tests run the same traffic
with trains (the default) and without (-device qrnic,trains=off) and check
that the bytes, the completions and every packet and byte counter come out
the same; that trains really went (host-calls.train-frames); that a train
the responder cannot take whole (a bad R_Key) gets what its frames one by one
would; and that a capture sees every frame (the train split for it)."""
import random

import pytest

import qrnic_harness as h
from qtest.driver import World
from qtest.fixtures import qemu_binary  # noqa: F401  (fixture)
from test_qemu_pcap import read_pcap

pytestmark = pytest.mark.qemu

COUNTERS = ('tx_packets', 'tx_bytes', 'rx_packets', 'rx_bytes', 'acks_sent',
            'access_naks_sent', 'seq_naks_sent', 'retransmitted_packets', 'rx_drop_other')

# (offset in the source, offset in the target, bytes): some MTU multiples, some not
WRITES = [(0, 0, 300 * 1024 + 123), (4096, 320 * 1024, 64 * 1024), (17, 400 * 1024 + 5, 20000),
          (0, 450 * 1024, 1024), (8192, 460 * 1024, 16 * 1024 + 1)]


def _on_and_off(qemu_binary, name, run):
    """run(w, a, b, conn) in a fresh QEMU of two ports on a hub, connected
    by RC at MTU 1024, once with trains (the default) and once with
    trains=off; returns {'': its result, 'trains=off': its result}."""
    got = {}
    for opts in ('', 'trains=off'):
        w = World.single(qemu_binary, 2, dev_opts=opts, name=name)
        try:
            a, b = w.devs
            got[opts] = run(w, a, b, h.connect_rc(a, b, mtu=1024))
            assert w.alive()
        finally:
            w.close()
    return got


def _traffic(w, a, b, c, seed, src_contig, dst_contig):
    """The WRITES from port 0 to port 1 (MTU 1024; the MRs' 4 KiB pages in
    shuffled physical order, or contiguous: then the payloads of a train
    follow on in host memory, and with the target's pages contiguous too
    the responder writes them as one DMA), unsignaled but the last of each batch,
    then a READ; returns (target bytes, the READ's bytes, completion
    statuses, counters of both ports, frames in trains at port 1 and 0)."""
    size = 512 * 1024
    src, dst = a.reg_mr(c.pda, size, contig=src_contig), b.reg_mr(c.pdb, size, contig=dst_contig)
    rng = random.Random(seed)
    src.write(0, bytes(rng.getrandbits(8) for _ in range(size)))
    st = []
    for batch in range(2):
        for i, (so, do, n) in enumerate(WRITES):
            last = i + 1 == len(WRITES)
            c.qa.post_send('RDMA_WRITE', [(src, so, n)], remote=(dst, do + batch * 7),
                           signaled=last, wr_id=batch * 100 + i, ring=last)
        st += [e['status_name'] for e in c.cqa.wait(1)]
    c.qa.post_send('RDMA_READ', [(src, 0, 200000)], remote=(dst, 0), wr_id=999)
    st += [e['status_name'] for e in c.cqa.wait(1)]
    w.settle()
    stats = [{k: d.query_stats()[k] for k in COUNTERS} for d in (a, b)]
    return (dst.read(0, size), src.read(0, 200000), st, stats,
            b.qom_counters('host-calls')['train-frames'],
            a.qom_counters('host-calls')['train-frames'])


def _expected(seed):
    rng = random.Random(seed)
    size = 512 * 1024
    s = bytes(rng.getrandbits(8) for _ in range(size))
    t = bytearray(size)
    for batch in range(2):
        for so, do, n in WRITES:
            t[do + batch * 7:do + batch * 7 + n] = s[so:so + n]
    return bytes(t)


@pytest.mark.parametrize('contig', [(False, False), (True, True), (True, False)],
                         ids=['shuffled', 'contiguous', 'contiguous-source'])
def test_trains_same_bytes_completions_and_counters(qemu_binary, contig):  # noqa: F811
    got = _on_and_off(qemu_binary, 'trains',
                      lambda w, a, b, c: _traffic(w, a, b, c, 3, *contig))
    exp = _expected(3)
    for opts, (dst, back, st, stats, b_trains, a_trains) in got.items():
        assert dst == exp, opts
        assert back == exp[:200000], opts      # the READ brought the target's bytes back
        assert st == ['SUCCESS'] * 3, (opts, st)
    on, off = got[''], got['trains=off']
    # frames of up to 32 packets went whole to port 1; port 0 got only ACKs
    # and READ responses (no trains: a train is WRITE packets only)
    assert on[4] > 100 and on[5] == 0, on[4:]
    assert off[4] == 0 and off[5] == 0, off[4:]
    # the same packets and bytes on the wire, the same ACKs: a train stands
    # for its frames
    assert on[3] == off[3], (on[3], off[3])


def test_train_with_a_bad_rkey_naks_as_its_frames_would(qemu_binary):  # noqa: F811
    """The responder takes a train whole only if every packet would pass its
    checks; a WRITE whose R_Key is wrong goes packet by packet and NAKs with
    an access error, as without trains: the requester completes with
    REM_ACCESS_ERR and the target is untouched."""
    def run(w, a, b, c):
        src, dst = a.reg_mr(c.pda, 65536), b.reg_mr(c.pdb, 65536)
        src.write(0, bytes(range(256)) * 256)
        c.qa.post_send('RDMA_WRITE', [(src, 0, 65536)], remote=(dst.rkey ^ 0x100, dst.addr(0)),
                       wr_id=7)
        st = [e['status_name'] for e in c.cqa.wait(1)]
        w.settle()
        return (st, dst.read(0, 65536) == bytes(65536), b.query_stats()['access_naks_sent'],
                b.qom_counters('host-calls')['train-frames'])

    got = _on_and_off(qemu_binary, 'trains-rkey', run)
    assert got[''][:3] == got['trains=off'][:3] == (['REM_ACCESS_ERR'], True, 1), got
    assert got[''][3] > 0 and got['trains=off'][3] == 0, got


RAM_END = 0x2000_0000      # tests/qtest/qemu.py: -m 512M; nothing above it on q35 up to the PCI hole


def test_train_write_failing_mid_way_fails_as_its_frames_would(qemu_binary):  # noqa: F811
    """A WRITE into a physical MR that runs off the end of guest RAM: the
    first 8 KiB land, the DMA of the next packet fails (unassigned), and
    that packet is NAKed; with trains the responder writes the train's
    payloads as one DMA, which fails, and then packet by packet to find the
    one that fails.  The outcome is the same as without trains: the
    completion status, the bytes in RAM, one DMA error, every counter."""
    def run(w, a, b, c):
        src = a.reg_mr(c.pda, 65536, contig=True)
        dst = b.reg_mr(c.pdb, 65536, iova=RAM_END - 8192, phys=True)
        data = bytes((i * 5 + 1) & 0xff for i in range(65536))
        src.write(0, data)
        c.qa.post_send('RDMA_WRITE', [(src, 0, 65536)], remote=(dst, 0), wr_id=3)
        st = [e['status_name'] for e in c.cqa.wait(1)]
        w.settle()
        return (st, w.qemus[0].memread(RAM_END - 8192, 8192) == data[:8192],
                b.query_stats()['dma_errors'],
                [{k: d.query_stats()[k] for k in COUNTERS} for d in (a, b)],
                b.qom_counters('host-calls')['train-frames'])

    got = _on_and_off(qemu_binary, 'trains-dma', run)
    on, off = got[''], got['trains=off']
    assert on[:4] == off[:4], (on, off)
    assert on[0] != ['SUCCESS'] and on[1] and on[2] == 1, on
    assert on[4] > 0 and off[4] == 0, (on[4], off[4])


def test_train_is_split_for_a_capture(qemu_binary, tmp_path):  # noqa: F811
    """A capture on the receiving port reads every frame: no train goes
    whole (host-calls.train-frames stays 0) and the capture has every packet
    the sender sent, in PSN order."""
    pb = tmp_path / 'b.pcap'
    w = World.single(qemu_binary, 2, dev_opts=['', f'pcap={pb}'], name='trains-pcap')
    try:
        a, b = w.devs
        c = h.connect_rc(a, b, mtu=1024)
        src, dst = a.reg_mr(c.pda, 131072), b.reg_mr(c.pdb, 131072)
        data = bytes((i * 31 + 7) & 0xff for i in range(131072))
        src.write(0, data)
        c.qa.post_send('RDMA_WRITE', [(src, 0, 131072)], remote=(dst, 0), wr_id=1)
        assert [e['status_name'] for e in c.cqa.wait(1)] == ['SUCCESS']
        assert dst.read(0, 131072) == data
        w.settle()
        sent = a.query_stats()['tx_packets'] + b.query_stats()['tx_packets']
        assert b.qom_counters('host-calls')['train-frames'] == 0
    finally:
        w.close()
    frames = [f for _, f in read_pcap(pb)]
    assert len(frames) == sent      # each frame either way, on the receiving port
    psns = [int.from_bytes(f[14 + 20 + 8 + 9:14 + 20 + 8 + 12], 'big') for f in frames
            if f[12:14] == b'\x08\x00' and f[14 + 20 + 8] in (6, 7, 8)]
    assert len(psns) == 128 and psns == list(range(psns[0], psns[0] + 128)), psns[:5]
