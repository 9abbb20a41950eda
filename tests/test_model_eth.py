# SPDX-License-Identifier: GPL-2.0-or-later
"""The plain Ethernet port (model/eth.c): frames that are not RoCEv2 for one
of the device's GIDs go to the RX ring, the TX ring sends any frame; the
guest's net_device runs IP and ARP over these rings.  Bytes in host memory,
descriptor write-back, interrupts and counters are checked."""
import struct

import pytest

import qrnic_harness as q

DONE, ERR = 1, 2
VEC = 3


def ring(dev, log_tx=4, log_rx=4, bufs=8, buflen=2048):
    """Program both rings on dev; post 'bufs' RX buffers.  Returns state."""
    tx = dev.mem_alloc(16 << log_tx)
    rx = dev.mem_alloc(16 << log_rx)
    rxbufs = [dev.mem_alloc(buflen) for _ in range(bufs)]
    for i, b in enumerate(rxbufs):
        dev.mem_write(rx + 16 * i, struct.pack('<QHHI', b, buflen, 0, 0))
    for reg, val in (('ETH_TX_BASE_LO', tx & 0xffffffff), ('ETH_TX_BASE_HI', tx >> 32),
                     ('ETH_RX_BASE_LO', rx & 0xffffffff), ('ETH_RX_BASE_HI', rx >> 32)):
        dev.reg_write(reg, val)
    dev.reg_write('ETH_IRQ', VEC | (1 << 31))
    dev.reg_write('ETH_CTRL', log_tx | (log_rx << 4) | (1 << 30) | (1 << 31))
    assert dev.reg_read('ETH_CTRL') & (3 << 30) == 3 << 30
    dev.reg_write('ETH_RX_DB', bufs)
    return {'tx': tx, 'rx': rx, 'rxbufs': rxbufs, 'tx_pi': 0}


def send(dev, st, frame):
    buf = dev.mem_alloc(max(len(frame), 64))
    dev.mem_write(buf, frame)
    i = st['tx_pi']
    dev.mem_write(st['tx'] + 16 * (i % 16), struct.pack('<QHHI', buf, len(frame), 0, 0))
    st['tx_pi'] += 1
    dev.reg_write('ETH_TX_DB', st['tx_pi'])


def desc(dev, base, i):
    addr, ln, _, flags = struct.unpack('<QHHI', dev.mem_read(base + 16 * i, 16))
    return addr, ln, flags


def arp(src_mac):
    return (b'\xff' * 6 + src_mac + b'\x08\x06' + bytes.fromhex('0001080006040001') +
            src_mac + bytes([10, 0, 0, 1]) + b'\0' * 6 + bytes([10, 0, 0, 2])).ljust(60, b'\0')


def udp(dst_mac, src_mac, port, payload):
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + 8 + len(payload), 0, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return dst_mac + src_mac + b'\x08\x00' + ip + struct.pack('>HHHH', 1234, port,
                                                             8 + len(payload), 0) + payload


def test_frames_cross_the_rings(world):
    a, b = world.devs
    sa, sb = ring(a), ring(b)
    ia, ib = a.irq_count(VEC), b.irq_count(VEC)
    f1 = arp(a.mac)
    f2 = udp(b.mac, a.mac, 53, bytes(range(200)))
    send(a, sa, f1)
    send(a, sa, f2)
    assert world.run() == 'idle'
    for i in (0, 1):                                    # TX write-back
        assert desc(a, sa['tx'], i)[2] == DONE
    for i, f in enumerate((f1, f2)):                    # RX: exact bytes and length
        addr, ln, flags = desc(b, sb['rx'], i)
        assert flags == DONE and ln == len(f)
        assert b.mem_read(addr, ln) == f
    assert desc(b, sb['rx'], 2)[2] == 0                 # nothing else arrived
    assert a.reg_read('ETH_TX_CI') == 2 and b.reg_read('ETH_RX_CI') == 2
    assert a.irq_count(VEC) > ia and b.irq_count(VEC) > ib
    assert a.stat('eth_tx_frames') == 2 and b.stat('eth_rx_frames') == 2


def test_roce_for_us_goes_to_the_engines_else_to_the_ring(world):
    a, b = world.devs
    sb = ring(b)
    conn = q.connect_rc(a, b)
    la, lb = a.reg_mr(conn.pda, 4096), b.reg_mr(conn.pdb, 4096)
    world.clear_frames()
    conn.qa.post_send('RDMA_WRITE', [(la, 0, 100)], remote=(lb, 0))
    assert world.run() == 'idle'
    assert b.stat('eth_rx_frames') == 0                 # RoCEv2 to a local GID: engines
    roce = [f for f in world.frames(roce_only=True) if f.src == 0][0].data
    other = bytearray(roce)
    other[14 + 19] ^= 0x55                              # destination IPv4 address: not ours
    other[14 + 10:14 + 12] = b'\0\0'                    # fix the IPv4 header checksum
    hdr = bytes(other[14:34])
    s = sum(struct.unpack('>10H', hdr))
    s = (s & 0xffff) + (s >> 16)
    other[14 + 10:14 + 12] = struct.pack('>H', ~s & 0xffff)
    b.inject(bytes(other))
    assert world.run() == 'idle'
    addr, ln, flags = desc(b, sb['rx'], 0)
    assert flags == DONE and b.mem_read(addr, ln) == bytes(other)


def test_no_rx_buffer_drops_and_counts(world):
    a, b = world.devs
    sa = ring(a)
    ring(b, bufs=0)
    send(a, sa, arp(a.mac))
    assert world.run() == 'idle'
    assert b.stat('eth_rx_drops') == 1 and b.stat('eth_rx_frames') == 0


def test_bad_tx_length_and_small_rx_buffer_flag_errors(world):
    a, b = world.devs
    sa = ring(a)
    sb = ring(b, bufs=2, buflen=64)
    send(a, sa, b'\x01' * 10)                           # shorter than an Ethernet header
    send(a, sa, udp(b.mac, a.mac, 7, b'x' * 100))       # bigger than b's 64-byte buffers
    assert world.run() == 'idle'
    assert desc(a, sa['tx'], 0)[2] == DONE | ERR
    assert desc(a, sa['tx'], 1)[2] == DONE
    assert a.stat('eth_tx_frames') == 1
    addr, ln, flags = desc(b, sb['rx'], 0)
    assert flags == DONE | ERR and ln == 0
    assert b.stat('eth_rx_drops') == 1


@pytest.mark.parametrize('reg,val', [('ETH_TX_DB', 17), ('ETH_RX_DB', 99)])
def test_doorbell_beyond_ring_is_ignored(world, reg, val):
    a = world.devs[0]
    ring(a, bufs=0)
    before = a.stat('doorbells_ignored')
    a.reg_write(reg, val)
    assert a.stat('doorbells_ignored') == before + 1
    assert world.run() == 'idle'
