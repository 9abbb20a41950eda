"""docs/congestion.md: the incast pictures of bench/cc_pictures (2:1, 16:1; CC off, DCQCN, PFC)."""
import json
import os
import sys

PICTURES = ('cc-2to1-throughput.svg', 'cc-16to1-throughput.svg', 'cc-queue.svg', 'cc-pfc.svg')
KMIN_KB, KMAX_KB = 5, 200
WINDOWS_KB = 16 * 16384 / 1000          # 16 outstanding 16 KiB WRITEs per sender


def generate(r):
    out = os.path.join(r.out_root, 'docs', 'img')
    os.makedirs(out, exist_ok=True)
    env = {'REGEN_OUT': out}
    if os.environ.get('QRNIC_BUILD_DIR'):
        env['QRNIC_BUILD_DIR'] = os.path.abspath(os.environ['QRNIC_BUILD_DIR'])
    j = json.loads(r.sh(f'{sys.executable} bench/cc_pictures --json "$REGEN_OUT"', env=env))
    made = sorted(os.path.basename(p) for p in j['pictures'])
    if made != sorted(PICTURES):
        raise ValueError(f'bench/cc_pictures drew {made}, not {sorted(PICTURES)}')
    for name in PICTURES:
        r.drawn(f'docs/img/{name}')
    R = j['runs']
    dur = j['duration_ms']

    rows = ['| run | fair from (ms) | Jain, last 10 ms | Gb/s, last 10 ms | queue peak KB '
            '| queue max KB, 2nd half | queue mean KB, 2nd half | samples <= Kmax, 2nd half '
            '| CNPs | drops | XOFFs | paused ms (all senders) |',
            '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for n in (2, 16):
        for key, label in (('off', 'CC off'), ('dcqcn', 'DCQCN'), ('off pfc', 'CC off, PFC'),
                           ('dcqcn pfc', 'DCQCN, PFC')):
            x = R[f'{n}:1 {key}']
            ff = '—' if x['fair_from_ms'] is None else f'{x["fair_from_ms"]:.1f}'
            pfc = key.endswith('pfc')
            rows.append(f'| {n}:1 {label} | {ff} | {x["jain_last10"]:.3f} | '
                        f'{x["gbps_last10"]:.2f} | {x["q_peak_kb"]:.1f} | {x["q2_max_kb"]:.1f} | '
                        f'{x["q2_mean_kb"]:.1f} | {100 * x["q2_in_band"]:.1f} % | {x["cnps"]} | '
                        f'{x["drops"]} | {x["xoffs_in_run"] if pfc else "—"} | '
                        f'{x["paused_ms_in_run"] if pfc else "—"} |')
    r.figure('cc-pictures-table', '\n' + '\n'.join(rows) + '\n')

    # convergence to the fair share
    d2, d16 = R['2:1 dcqcn'], R['16:1 dcqcn']
    r.claim(d2['jain_last10'] >= 0.99 and d16['jain_last10'] >= 0.99,
            'with DCQCN both incasts end at their fair share (Jain >= 0.99 over the last 10 ms)')
    r.claim(d16['fair_from_ms'] is not None and 5 < d16['fair_from_ms'] < dur - 10,
            'at 16:1 DCQCN reaches the fair share only after a few flows ramped up alone')
    r.claim(d2['fair_from_ms'] == 0, 'at 2:1 the two DCQCN flows are fair from the start')
    r.figure('cc-pic-fair16', f'{d16["fair_from_ms"]:.1f} ms')
    r.claim(d2['ramp_ms'] is not None and d2['ahead_at_15ms'] == 0,
            'at 2:1 both DCQCN flows climb back together to 90 % of their share')
    r.figure('cc-pic-ramp2', f'{d2["ramp_ms"]:.1f} ms')
    r.claim(1 <= d16['ahead_at_15ms'] <= 4 and d16['late_q_peak_kb'] > 1000
            and d16['late_q_peak_ms'] < d16['fair_from_ms'],
            'at 16:1 a few DCQCN flows ramp up alone, their overshoot fills the queue, '
            'and only after that are all sixteen fair')
    r.figure('cc-pic-ahead16', f'{d16["ahead_at_15ms"]} of the 16 flows above twice their '
                               f'share at 15 ms')
    r.figure('cc-pic-late16', f'{d16["late_q_peak_kb"]:.0f} KB at {d16["late_q_peak_ms"]:.1f} ms')
    r.figure('cc-pic-jain', f'{d2["jain_last10"]:.3f} and {d16["jain_last10"]:.3f}')
    # the queue: in the marking band with DCQCN, the windows without
    o2, o16 = R['2:1 off'], R['16:1 off']
    for n, off in ((2, o2), (16, o16)):
        r.claim(off['q2_mean_kb'] >= 0.9 * n * WINDOWS_KB and off['q2_in_band'] == 0,
                f'without CC the {n}:1 queue is the senders\' windows, above Kmax all the time')
    for dc in (d2, d16):
        r.claim(KMIN_KB < dc['q2_mean_kb'] < KMAX_KB and dc['q2_max_kb'] < 1.5 * KMAX_KB
                and dc['q2_in_band'] >= 0.75,
                'with DCQCN the queue of the second half stays in the marking band '
                '(mean between Kmin and Kmax, at most Kmax plus a few messages)')
    r.figure('cc-pic-queue',
             f'{d2["q2_mean_kb"]:.1f} KB and {d16["q2_mean_kb"]:.1f} KB mean, '
             f'{d2["q2_max_kb"]:.1f} KB and {d16["q2_max_kb"]:.1f} KB at most')
    r.figure('cc-pic-queue-off', f'{o2["q2_mean_kb"]:.1f} KB and {o16["q2_mean_kb"]:.1f} KB')
    # fewer pauses
    p2o, p2d, p16o, p16d = R['2:1 off pfc'], R['2:1 dcqcn pfc'], R['16:1 off pfc'], R['16:1 dcqcn pfc']
    for off, dc in ((p2o, p2d), (p16o, p16d)):
        r.claim(dc['paused_ms_in_run'] * 10 < off['paused_ms_in_run'],
                'with DCQCN the senders are paused less than a tenth as long as without')
    r.claim(p2d['xoffs_in_run'] * 10 < p2o['xoffs_in_run'], 'at 2:1 DCQCN sends far fewer XOFFs')
    r.claim(p16o['paused_ms_in_run'] > 0.9 * 16 * dur and p16o['xoffs_in_run'] == 16,
            'without CC at 16:1 every sender is paused almost all the time, one XOFF each')
    r.claim(p16d['xoffs_in_run'] > p16o['xoffs_in_run'],
            'at 16:1 DCQCN sends more XOFFs than CC off (which never resumes)')
    r.claim(p2d['xoffs_after_5ms'] == 0 and p2o['xoffs_after_5ms'] > 0,
            'at 2:1 DCQCN\'s only pauses are in the start-up burst')
    r.claim(p16d['xoffs_after_5ms'] > 0, 'at 16:1 with DCQCN the overshoot pauses again')
    r.claim(all(x['drops'] == 0 for x in R.values()), 'no run drops a frame')
    pct = 100 * p2o['paused_ms_in_run'] / (2 * dur)
    r.claim(50 < pct < 90, 'at 2:1 without CC the senders are paused most of the time')
    r.figure('cc-pic-pfc2-pct', f'{pct:.0f} %')
    r.figure('cc-pic-pfc2', f'{p2o["xoffs_in_run"]} XOFFs and {p2o["paused_ms_in_run"]} ms '
                            f'against {p2d["xoffs_in_run"]} and {p2d["paused_ms_in_run"]} ms')
    r.figure('cc-pic-pfc16', f'{p16o["paused_ms_in_run"]} ms against '
                             f'{p16d["paused_ms_in_run"]} ms ({p16o["xoffs_in_run"]} XOFFs '
                             f'against {p16d["xoffs_in_run"]})')
