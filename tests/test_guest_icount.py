# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tier: determinism of the timing model under `-icount` (issue "timing:
under -icount shift=...,sleep=off, two runs of the same guest workload report
identical ib_write_lat results").

Two separate boots of the deterministic runner (scripts/qrnic_vm/det.py,
docs/guest.md "Deterministic runs"): T1 (one VM, two qrnic ports on a
hubport, both devices `profile=cx5-100g`, two vCPUs) under
`-icount shift=0,sleep=off,align=off -seed 1 -rtc base=2026-01-01T00:00:00,clock=vm`,
booted from a self-contained initramfs whose /init runs
`ib_write_lat -n 200 -s 64 -F` (server on port 0 / vCPU 0, client on port 1 /
vCPU 1) and stops the VM (ACPI soft-off).  A third boot without -icount is the contrast.

Asserted:

* The complete ib_write_lat output of both sides is byte-identical in the two
  boots: every figure of both tables (t_min, t_max, t_typical, t_avg,
  t_stdev, 99% and 99.9% percentiles), and the QPNs, PSNs and addresses
  perftest prints.  So is the whole serial console log of the two boots
  (kernel timestamps included).
* The device's own state is identical: every QOM counter of both devices
  (qom-get stats, read after the guest stopped), the guest's view of them
  (hw_counters), both devices' pcaps byte for byte, and therefore the time
  from each RDMA WRITE request leaving its port to its ACK coming back.
* late-events and late-ns-total stay 0 on both devices under icount (QOM and
  hw_counters); the boot without icount shows them non-zero (so the counter
  is alive).  shift=0 is what makes them 0: with shift=N an instruction lasts
  2^N ns and a timer fires at the first instruction boundary at or after its
  deadline, so effects whose modelled time is not a multiple of 2^N ns are a
  few ns late (shift=3: 499 late effects per device per ib_write_lat run,
  1396 ns in all, the same in every run).

What had to go to get there.  The same workload run through the ordinary
runner (rootfs on virtio-blk, commands from the host's agent over
virtio-serial, virtio-rng), under the same -icount, repeated only t_min,
t_typical and the device timeline; t_max, t_avg, t_stdev and the percentiles
differed from boot to boot (client t_max 780.77 - 796.84 us, t_avg 57.22 -
60.89 us over six boots).  Those figures are set by where the 200 iterations
fall against the guest's timers: QEMU runs the vCPUs round-robin in one
thread, each for (time to the next QEMU_CLOCK_VIRTUAL deadline) / (number of
vCPUs), and an iteration whose reply lands when no device effect is pending
waits out the other vCPU's slice, whose length the next guest timer sets
(t_max and the percentiles below, ~640 us, are such slices).  So the run
must start at the same virtual instant from the same guest state, down to
single instructions, and that needs every input of the guest to be a
function of virtual time alone.  Removed, and why:

* the agent (virtio-serial): the command arrives when the host writes it.
  The guest's /init runs the workload; output goes to the serial console,
  a file chardev (output only); stdin is /dev/null.
* the root disk (virtio-blk): completions come from host AIO threads, so the
  boot and every page-in end at a host-dependent virtual time.  Everything
  is in the initramfs.
* virtio-rng: its default backend (rng-builtin) answers from a main-loop
  bottom half, at a host-chosen moment.  (Two trial boots with it added
  happened to agree; it is still a race, so it stays out.)
* RDRAND under TCG returns host randomness: -seed 1.  QEMU's default CPU
  model has no RDRAND, so without -seed two boots still agree; with
  -cpu max and no -seed they differed from the first console line on.
* the RTC: with QEMU's default (host clock) the guest's wall clock starts at
  the host's time of day and the RTC's update cycle follows the host's
  clock (the kernel mixes the wall time into its random pool at boot, for
  one); two boots differed from the first console line on.
  -rtc base=<fixed>,clock=vm.
* QMP: the host connects only after the guest printed QRNIC-DET-DONE and
  stopped the VM (ACPI soft-off, -action shutdown=pause).  Not `poweroff`:
  the kernel shuts the devices down first and the qrnic driver resets its
  device, counters included.
* the device's bottom half (hw/qrnic.c): it ran in the main loop whenever
  the host got to it, reading a virtual clock that lags behind the vCPU
  there.  Under icount the device now does all work from its virtual-clock
  kick timer in the vCPU thread (work left after one budget 1 ns later).
  It had not shown in the results (the kick timer got there first), but it
  was a race.

The figures depend on every instruction the guest executes: they change with
the kernel, driver, provider, perftest or det/init (client t_max was 640.54
us before a change of det/init, 641.65 us after), so the test compares two
boots rather than fixed numbers.  With one vCPU the two polling perftest
processes would take turns at the 4 ms scheduler tick and every figure
would be ~4000 us, hence two vCPUs with server and client pinned.

Time: ~25-40 s per boot under TCG (~1.5 min for the module)."""
import collections
import os
import re
import sys

import pytest

from guest import vmlib
from guest.interop import roce_frames
from guest.vmlib import perftest_table

pytestmark = [pytest.mark.guest, pytest.mark.slow]

ICOUNT = 'shift=0,sleep=off,align=off'
SMP = 2
PROFILE = 'cx5-100g'
FIGURES = ('t_min[usec]', 't_max[usec]', 't_typical[usec]', 't_avg[usec]', 't_stdev[usec]',
           '99%_percentile[usec]', '99.9%_percentile[usec]')
WRITE_ONLY, ACK = 0x0a, 0x11

# /init of the initramfs runs this (EP0 = port 0 = server, EP1 = client): the server in the
# background, the client once the server listens (perftest's TCP port 18515 = 0x4853 in
# /proc/net/tcp, state 0A), the server's output after the client's.
WORKLOAD = r'''
lat="ib_write_lat -n 200 -s 64 -F"
taskset -c 0 $lat -d $EP0_DEV -x $EP0_GID > /tmp/icount-srv.txt 2>&1 &
srv=$!
i=0
while [ $i -lt 200 ] && ! grep -q ':4853 00000000:0000 0A' /proc/net/tcp; do sleep 0.05; i=$((i+1)); done
taskset -c 1 $lat -d $EP1_DEV -x $EP1_GID $EP0_IP
c=$?
wait $srv
s=$?
echo "== server (exit $s)"
cat /tmp/icount-srv.txt
exit $((c | s))
'''


def _prereqs():
    from qrnic_vm import find_image, find_qemu
    from qrnic_vm.det import find_detinitrd
    build = os.environ.get('QRNIC_GUEST_NO_BUILD') != '1'
    try:
        qemu, image = find_qemu(build=build), find_image(build=build)
        image.require_driver()
        return qemu, find_detinitrd(image)
    except vmlib.PrereqError as e:
        pytest.fail('guest prerequisites: %s' % e, pytrace=False)


def _ack_times(res):
    """{device: [ns from each RDMA WRITE request leaving its port to its ACK arriving]}."""
    out = {}
    for i, dev in enumerate(('qrnic-0', 'qrnic-1')):
        ip = res.endpoints[i]['ip']
        sent, rtt = {}, []
        for f in roce_frames(res.pcaps[dev]):
            if f['ip_src'] == ip and f['opcode'] == WRITE_ONLY:
                sent[f['psn']] = f['t']
            elif f['ip_dst'] == ip and f['opcode'] == ACK and f['psn'] in sent:
                rtt.append(f['t'] - sent.pop(f['psn']))
        out[dev] = rtt
    return out


def _boot(qemu, detdir, icount):
    from qrnic_vm.det import det_run
    vmlib._stop_all()               # one guest alive at a time (2 host cores)
    try:
        res = det_run(WORKLOAD, qemu=qemu, detdir=detdir, icount=icount, smp=SMP, profile=PROFILE,
                      mem=int(os.environ.get('QRNIC_GUEST_MEM', '1024')), timeout=600)
    except vmlib.VMError as e:
        pytest.fail(str(e), pytrace=False)
    where = '(logs in %s)' % res.rundir
    assert not res.failure, '%s %s' % (res.failure, where)
    assert res.ok, 'ib_write_lat failed (rc %s) %s:\n%s' % (res.rc, where, res.output[-4000:])
    cli, _, srv = res.output.partition('== server')
    res.client, res.server = perftest_table(cli), perftest_table(srv)
    for side, row in (('client', res.client), ('server', res.server)):
        assert row, 'no %s result table %s:\n%s' % (side, where, res.output[-3000:])
        assert row['#bytes'] == '64' and row['#iterations'] == '200', row
        for k in FIGURES:
            assert re.fullmatch(r'\d+\.\d+', row.get(k, '')), (side, k, row)
    res.ack = _ack_times(res)
    bad = [ln for ln in res.console.splitlines() if vmlib.DMESG_BAD.search(ln)]
    assert not bad, 'kernel log %s:\n  %s' % (where, '\n  '.join(bad[:40]))
    return res


def _report(label, res):
    acks = {}
    for dev, v in res.ack.items():
        cnt = collections.Counter(v)
        acks[dev] = (dict(sorted(cnt.items())) if len(cnt) <= 8 else
                     '%d writes, %d distinct values, %d..%d' % (len(v), len(cnt), min(v), max(v)))
    print('%s (%s, %.0fs):\n  client %s\n  server %s\n  late-events/late-ns-total: %s\n'
          '  WRITE->ACK ns {value: count}: %s'
          % (label, res.rundir, res.wall,
             ' '.join('%s=%s' % (k.split('[')[0], res.client.get(k)) for k in FIGURES),
             ' '.join('%s=%s' % (k.split('[')[0], res.server.get(k)) for k in FIGURES),
             {d: (q['late-events'], q['late-ns-total']) for d, q in res.qom.items()}, acks),
          file=sys.stderr, flush=True)


def _first_diff(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return 'line %d:\n  %r\n  %r' % (i + 1, x, y)
    return 'lengths %d and %d lines' % (len(la), len(lb))


def test_icount_two_boots_identical():
    qemu, detdir = _prereqs()
    runs = []
    for i in (1, 2):
        res = _boot(qemu, detdir, ICOUNT)
        _report('icount %s boot %d' % (ICOUNT, i), res)
        runs.append(res)
    a, b = runs
    where = '(logs in %s and %s)' % (a.rundir, b.rundir)

    for res in runs:
        for dev, ib in (('qrnic-0', 'qrnic_0'), ('qrnic-1', 'qrnic_1')):
            q = res.qom[dev]
            assert (q['late-events'], q['late-ns-total']) == (0, 0), \
                '%s late-events/late-ns-total under -icount %s: %s %s' % (dev, ICOUNT, q, where)
            hw = res.hw[ib]
            assert (hw['late_events'], hw['late_ns_total']) == (0, 0), \
                '%s: hw_counters late_events/late_ns_total: %s %s' % (ib, hw, where)

    # every figure of both tables, then everything perftest printed, then the whole console
    for side in ('client', 'server'):
        diff = {k: (getattr(a, side)[k], getattr(b, side)[k]) for k in FIGURES
                if getattr(a, side)[k] != getattr(b, side)[k]}
        assert not diff, '%s ib_write_lat figures differ between the two icount boots %s: %s' % (
            side, where, diff)
    assert a.output == b.output, 'the workload output differs %s: %s' % (where, _first_diff(a.output, b.output))
    assert a.console == b.console, 'the console logs differ %s: %s' % (where, _first_diff(a.console, b.console))

    assert a.qom == b.qom, 'QOM counters differ %s:\n%s\n%s' % (where, a.qom, b.qom)
    assert a.hw == b.hw, 'hw_counters differ %s:\n%s\n%s' % (where, a.hw, b.hw)
    for dev in ('qrnic-0', 'qrnic-1'):
        assert len(a.ack[dev]) >= 200, (dev, len(a.ack[dev]), where)
        assert a.ack[dev] == b.ack[dev], \
            '%s: WRITE request -> ACK times (ns of virtual time) differ between the boots %s:\n%s\n%s' % (
                dev, where, a.ack[dev], b.ack[dev])
        with open(a.pcaps[dev], 'rb') as fa, open(b.pcaps[dev], 'rb') as fb:
            assert fa.read() == fb.read(), '%s: the pcaps differ %s' % (dev, where)


def test_late_events_without_icount():
    """Contrast: the same run on plain TCG (virtual clock = host time): the timer releases
    effects after their modelled time, and the device counts them."""
    qemu, detdir = _prereqs()
    res = _boot(qemu, detdir, None)
    _report('no icount', res)
    for dev, ib in (('qrnic-0', 'qrnic_0'), ('qrnic-1', 'qrnic_1')):
        ev, ns = res.qom[dev]['late-events'], res.qom[dev]['late-ns-total']
        assert ev > 0 and ns > 0, '%s: late-events %s, late-ns-total %s without -icount (logs in %s)' % (
            dev, ev, ns, res.rundir)
        # the guest read the same counter (before QMP did)
        assert 0 < res.hw[ib]['late_events'] <= ev, (dev, res.hw[ib], res.qom[dev])
