# SPDX-License-Identifier: GPL-2.0-or-later
"""Trains between two devices of the harness (qrnic_dev_set_trains).

With a lazy ICRC, payloads by reference (the harness's checked mappings)
and the vouched hand-over -- what QEMU does between its qrnic ports
(hw/qrnic.c) -- the packets of an RC WRITE leave as one frame buffer (a
train); the harness's wire hands it over whole while nothing reads frames
(hx_set_trains).  These tests check what the qemu tier cannot reach at a
chosen instant: a train sitting in the receiver's queue when the receiver
is saved (model/snap_qp.c splits it into the frames it stands for).
"""
import random

import pytest

import qrnic_harness as q

SIZE = 1 << 16          # 16 packets of 4096: one train
TRAIN_MAX = 32          # QRNIC_TRAIN_MAX (model/qrnic_internal.h)
PKT_BUDGET = 16         # QRNIC_QP_PKT_BUDGET: a step's packets where no train forms


def world(trains=True, latency=100_000, framelog=0, refs='checked'):
    """framelog: a frame log (the wire then splits trains into frames);
    refs: the payload mappings (qrnic_harness.World's dma_refs)."""
    w = q.World(2, dma_refs=refs, framelog=framelog)
    for d in (0, 1):
        w.lazy_icrc(d)
        w.trains(d, trains)
    w.vouch(True)
    w.set_latency(latency)      # frames in flight long enough to stop there
    return w


def post_write(w, seed, size=SIZE):
    """Post a WRITE of size bytes; return what is needed to check it (the
    source MR too) and the frames the sender put on the wire for it
    (counted 1 us after the first left: the whole message, no ACK back yet
    at this latency)."""
    conn = q.connect_rc(w.devs[0], w.devs[1], mtu=4096)
    la = conn.a.dev.reg_mr(conn.pda, size, contig=True)
    rb = conn.b.dev.reg_mr(conn.pdb, size)
    src = la.fill_random(random.Random(seed))
    tx0 = w.wire_stats()['tx']
    conn.qa.post_send('RDMA_WRITE', [(la, 0, size)], remote=(rb, 0), wr_id=1)
    for _ in range(1000):               # until the sender has sent
        if w.wire_stats()['tx'] > tx0:
            break
        w.advance(10)
    w.advance(1000)
    return conn, la, rb, src, w.wire_stats()['tx'] - tx0


def test_train_goes_whole_and_lands():
    """A 64 KiB WRITE leaves as one train (one frame on the wire for its
    16 packets) and lands byte for byte; without trains, 16 frames.  A
    WRITE of a full train (32 packets: the requester's step sends that
    many where trains may form, model/qp.c) is one frame too, one of 48
    packets two."""
    assert 2 * SIZE == TRAIN_MAX * 4096
    for size, trains, frames in ((SIZE, True, 1), (SIZE, False, 16),
                                 (2 * SIZE, True, 1), (2 * SIZE, False, 2 * 16),
                                 (3 * SIZE, True, 2)):
        w = world(trains)
        conn, _, rb, src, sent = post_write(w, 3, size)
        assert w.run() == 'idle'
        assert sent == frames, (size, trains, sent)
        assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
        assert rb.read() == src
        assert q.World.dma_refs_stats()[2] == 0
        w.close()


def test_train_in_the_receive_queue_survives_a_snapshot():
    """The train arrives in the receiver's queue and the receiver is saved,
    freed, made anew and loaded before it runs (hx_dev_snapshot): the save
    splits the train into its 16 frames, which the new device takes one by
    one.  The bytes land, the WRITE completes, every mapping comes back."""
    w = world()
    conn, _, rb, src, sent = post_write(w, 7)
    assert sent == 1, 'the WRITE did not leave as a train'
    assert w.wire_land() == 1
    work = q.snap_sections(w.devs[1].save())['WORK'][1]
    assert len(work) > SIZE, 'the saved receive queue does not hold the payload'
    w.devs[1].snapshot()
    assert w.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert rb.read() == src
    assert w.devs[1].query_stats()['rx_drop_icrc'] == 0
    st = w.devs[0].query_stats()
    assert st['retransmitted_packets'] == 0 and st['retransmit_timeouts'] == 0, \
        'packets of the train were lost in the snapshot and sent again'
    w.close()
    assert q.World.dma_refs_stats()[2] == 0, 'a mapping was not given back'


def run_stream(trains, drop_psn=None):
    """The WRITEs a train's next packets take the requester's shortcut for
    (model/requester.c train_next) and the ones it declines, on one QP:
    a 200 KiB WRITE from a contiguous buffer (trains of 32 and a tail), one
    from three SGEs at odd offsets of a buffer whose pages are shuffled in
    host memory (packets that are not one run of host memory: declined,
    copied by the general path), a multi-packet WRITE_WITH_IMM (its last
    packet, WRITE_LAST_IMM, never joins a train), a solicited WRITE and one
    from three SGEs of the contiguous buffer whose lengths are not MTU
    multiples (a run mapped for several packets ends with its SGE, cut to
    whole packets: model/mr.c qrnic_sgl_map_run).
    drop_psn: the wire drops the packet of that PSN once (the harness's
    wire then splits trains into their frames): the rest is sent again,
    trains and all.  Returns what the two ends saw."""
    w = world(trains, latency=2_000)
    if drop_psn is not None:
        w.rule('drop', src=0, psn=drop_psn)
    conn = q.connect_rc(w.devs[0], w.devs[1], mtu=4096, timeout=8)
    rng = random.Random(11)
    contig = conn.a.dev.reg_mr(conn.pda, 200 * 1024, contig=True)
    shuffled = conn.a.dev.reg_mr(conn.pda, 64 * 1024)
    rb = conn.b.dev.reg_mr(conn.pdb, 512 * 1024)
    src = [contig.fill_random(rng), shuffled.fill_random(rng)]
    conn.qb.post_recv([], wr_id=77)             # for the WRITE_WITH_IMM
    conn.qa.post_send('RDMA_WRITE', [(contig, 0, 200 * 1024)], remote=(rb, 0), wr_id=1)
    sges = [(shuffled, 100, 5000), (shuffled, 6007, 3000), (shuffled, 12000, 40000)]
    conn.qa.post_send('RDMA_WRITE', sges, remote=(rb, 200 * 1024), wr_id=2)
    conn.qa.post_send('RDMA_WRITE_WITH_IMM', [(contig, 4096, 70000)],
                      remote=(rb, 260 * 1024), imm=0x1234, wr_id=3)
    conn.qa.post_send('RDMA_WRITE', [(contig, 8, 30000)], remote=(rb, 340 * 1024),
                      solicited=True, wr_id=4)
    # three SGEs of the contiguous buffer, none a multiple of the MTU: a
    # run of host memory ends with its SGE, the packet goes on in the next
    csges = [(contig, 100, 5000), (contig, 9000, 7000), (contig, 20000, 30000)]
    conn.qa.post_send('RDMA_WRITE', csges, remote=(rb, 384 * 1024), wr_id=5)
    assert w.run() == 'idle'
    expect = bytearray(512 * 1024)
    expect[:200 * 1024] = src[0]
    at = 200 * 1024
    for _, off, n in sges:
        expect[at:at + n] = src[1][off:off + n]
        at += n
    expect[260 * 1024:260 * 1024 + 70000] = src[0][4096:4096 + 70000]
    expect[340 * 1024:340 * 1024 + 30000] = src[0][8:8 + 30000]
    at = 384 * 1024
    for _, off, n in csges:
        expect[at:at + n] = src[0][off:off + n]
        at += n
    got = rb.read()
    assert got == bytes(expect), 'the WRITEs did not land byte for byte'
    keep = ('status_name', 'opcode_name', 'wr_id', 'byte_len', 'imm')
    cqes = [{k: c.get(k) for k in keep} for c in conn.cqa.poll() + conn.cqb.poll()]
    sa, sb = w.devs[0].query_stats(), w.devs[1].query_stats()
    fired = None if drop_psn is None else w.rule_fired(0)
    w.close()
    assert q.World.dma_refs_stats()[2] == 0, 'a mapping was not given back'
    return cqes, sa, sb, fired


def test_train_shortcut_sends_what_the_general_path_sends():
    """The same stream with trains (a train's packets after its first take
    the requester's shortcut) and without (every packet the general path):
    the same bytes land, the same completions, and the sender asks for and
    gets the same acknowledgements and resends the same packets -- also
    when one packet inside a train is lost and the rest is sent again from
    it (resent trains start at a WRITE_MIDDLE)."""
    first = 0x100                       # connect_rc's psn_a
    for drop in (None, first + 20, first + 52):
        on = run_stream(True, drop)
        off = run_stream(False, drop)
        assert on[0] == off[0], (drop, on[0], off[0])
        assert [c['status_name'] for c in on[0]] == ['SUCCESS'] * 6
        assert on[3] == off[3] == (None if drop is None else 1)
        for dev in (1, 2):              # every counter of both devices
            diff = {k: (on[dev][k], off[dev][k]) for k in on[dev] if on[dev][k] != off[dev][k]}
            assert not diff, (drop, dev - 1, diff)
        if drop is not None:
            assert on[1]['retransmitted_packets'] > 0, drop


def write_maps(trains, contig):
    """The payload mappings (the harness's checked dma_map calls) a 128 KiB
    WRITE (32 packets: one train) takes, and whether it landed."""
    w = world(trains, latency=2_000)
    conn = q.connect_rc(w.devs[0], w.devs[1], mtu=4096)
    la = conn.a.dev.reg_mr(conn.pda, TRAIN_MAX * 4096, contig=contig)
    rb = conn.b.dev.reg_mr(conn.pdb, TRAIN_MAX * 4096)
    src = la.fill_random(random.Random(3))
    maps0 = q.World.dma_refs_stats()[0]
    conn.qa.post_send('RDMA_WRITE', [(la, 0, TRAIN_MAX * 4096)], remote=(rb, 0), wr_id=1)
    assert w.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    landed = rb.read() == src
    maps = q.World.dma_refs_stats()[0] - maps0
    w.close()
    assert q.World.dma_refs_stats()[2] == 0, 'a mapping was not given back'
    return maps, landed


def test_train_maps_a_run_of_packets_once():
    """The packets after a train's first whose payloads are one run of
    host memory are translated and mapped once for all of them
    (model/mr.c qrnic_sgl_map_run): a 32-packet WRITE from a buffer whose
    pages follow on takes the first packet's mappings and one more;
    without trains, or from pages that do not follow on, every packet
    maps its own.  The bytes land every way."""
    per_msg, landed = write_maps(trains=False, contig=True)
    assert landed and per_msg % TRAIN_MAX == 0 and per_msg >= TRAIN_MAX
    first = per_msg // TRAIN_MAX        # the first packet's, by the general path
    assert write_maps(trains=True, contig=True) == (first + 1, True)
    maps, landed = write_maps(trains=True, contig=False)
    assert landed and maps >= TRAIN_MAX


@pytest.mark.parametrize('refs', ['live', 'checked'])
def test_split_train_keeps_its_payloads_by_reference(refs):
    """A train the wire splits (here: a wire that may lose frames at random,
    at a rate that loses none of these) still carries its packets'
    payloads by reference: the packets whose payloads lie in one mapping of
    a run of host memory (model/net.c qrnic_train_add_run) share it until
    the last of their frames is done with it (model/framebuf.c split_run),
    instead of the borrowed ones being copied at the split.  With mappings
    that point into the sender's memory, as QEMU maps guest RAM
    (dma_refs='live'), the bytes that land are the buffer's when the
    frames arrive: a source changed while they are on the wire lands
    changed in all 32 packets (a packet copied at the split lands the old
    bytes).  With the fuzzers' shadow mappings ('checked', the bytes at map
    time, released ones poisoned under AddressSanitizer) the old bytes land
    in every packet.  Every mapping comes back either way."""
    w = world(refs=refs)
    w.random_impairments(loss=1e-6, seed=3)     # the wire splits trains
    conn, la, rb, before, sent = post_write(w, 21, TRAIN_MAX * 4096)
    assert sent == TRAIN_MAX, 'the train was not split into its frames'
    assert w.devs[1].stat('rx_packets') == 0, 'frames arrived before the source changed'
    rng = random.Random(22)
    after = la.fill_random(rng)
    assert before != after
    assert w.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    got = rb.read()
    want = after if refs == 'live' else before
    stale = [i for i in range(TRAIN_MAX) if got[i * 4096:(i + 1) * 4096] != want[i * 4096:(i + 1) * 4096]]
    assert not stale, f'packets {stale} did not land the bytes of their mapping'
    w.close()
    assert q.World.dma_refs_stats()[2] == 0, 'a mapping was not given back'


def sender_runs(trace):
    """Two QPs of one device each WRITE 256 KiB (64 packets); the lengths of
    the runs of consecutive frames the sender put on the wire for one QP,
    i.e. how many packets a requester step sent before the next QP was
    served.  trace: the model's trace on (trains do not form then)."""
    w = world(latency=2_000, framelog=100_000)
    if trace:
        w.trace_enable()
    size = 1 << 18
    conns = [q.connect_rc(w.devs[0], w.devs[1], mtu=4096) for _ in range(2)]
    for c in conns:
        la = c.a.dev.reg_mr(c.pda, size, contig=True)
        rb = c.b.dev.reg_mr(c.pdb, size)
        la.fill_random(random.Random(5))
        c.qa.post_send('RDMA_WRITE', [(la, 0, size)], remote=(rb, 0), wr_id=1, ring=False)
    for c in conns:                             # both QPs wait for the first step
        c.qa.ring_sq()
    assert w.run() == 'idle'
    for c in conns:
        assert [x['status_name'] for x in c.cqa.poll()] == ['SUCCESS']
    runs = []
    for f in w.frames(roce_only=True):
        if f.src != 0 or not f.opname.startswith('RC_WRITE'):
            continue
        if runs and runs[-1][0] == f.dqpn:
            runs[-1][1] += 1
        else:
            runs.append([f.dqpn, 1])
    w.close()
    return [n for _, n in runs]


def test_step_budget_follows_whether_trains_form():
    """The requester sends a train's worth (32 packets) per step only where
    trains form (model/qp.c req_budget asks net.c's qrnic_trains_form, the
    test that starts a train); with the model's trace on, no train forms
    and a step sends the common 16, as before trains."""
    assert sender_runs(trace=False) == [TRAIN_MAX] * 4
    assert sender_runs(trace=True) == [PKT_BUDGET] * 8
