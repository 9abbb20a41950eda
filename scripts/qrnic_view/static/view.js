// SPDX-License-Identifier: GPL-2.0-or-later
// qrnic live view: renders the state that scripts/qrnic-view pushes over a
// WebSocket (or, if that fails, polls from /api/state).  Plain JS, no library:
// the page is tables and one SVG of lifelines and arrows, whose layout (rows
// in time order) is the part that matters; Debian's libjs-d3 (3.5 in
// bookworm) would be one more file to serve without doing that part.
'use strict';

const $ = (id) => document.getElementById(id);

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;',
                                                 '"': '&quot;', "'": '&#39;'}[c]));
}

function fmtTime(ns) {
  if (ns === null || ns === undefined) return '-';
  if (ns >= 1e9) return (ns / 1e9).toFixed(6) + ' s';
  if (ns >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
  if (ns >= 1e3) return (ns / 1e3).toFixed(3) + ' \u00b5s';
  return ns + ' ns';
}

// occupancy of a free-running ring: (pi - ci) mod 2^32
function occ(pi, ci) { return (pi - ci) >>> 0; }

function bar(used, depth) {
  const pct = depth ? Math.min(100, 100 * used / depth) : 0;
  return `<span class="bar" title="${used} of ${depth}"><span style="width:${pct.toFixed(0)}%"></span></span>`;
}

function cell(id, v, cls) {
  return `<td id="${id}"${cls ? ` class="${cls}"` : ''}>${esc(v)}</td>`;
}

function qpTable(d) {
  if (!d.qps.length) return '<p class="muted">no QP</p>';
  let h = '<table class="qps"><tr><th>QPN</th><th class="l">type</th><th class="l">state</th>' +
    '<th>dest</th><th>MTU</th><th>next PSN</th><th>una PSN</th><th>ePSN</th><th>in flight</th>' +
    '<th>window</th><th>retry left</th><th>RNR left</th><th>RD/ATOMIC out</th>' +
    '<th>SQ pi / fetched / ci</th><th>RQ pi / ci</th><th class="l">flags</th></tr>';
  for (const q of d.qps) {
    const p = `d${d.index}-qp${q.qpn}-`;
    const flags = [];
    if (q.timer_armed) flags.push('timer');
    if (q.rnr_wait) flags.push('RNR wait');
    if (q.nak_sent) flags.push('NAK sent');
    if (q.stopped) flags.push('stopped');
    if (q.on_work) flags.push('busy');
    const sqUsed = occ(q.sq_pi, q.sq_ci), rqUsed = occ(q.rq_pi, q.rq_ci);
    h += `<tr id="${p}row">` + cell(p + 'qpn', q.qpn) + cell(p + 'type', q.type_name, 'l') +
      cell(p + 'state', q.state_name, 'l st-' + q.state_name) + cell(p + 'dest_qpn', q.dest_qpn) +
      cell(p + 'path_mtu', q.path_mtu || '-') +
      cell(p + 'next_psn', q.next_psn) + cell(p + 'una_psn', q.una_psn) + cell(p + 'epsn', q.epsn) +
      cell(p + 'inflight', q.inflight) + cell(p + 'cwnd', q.cwnd) +
      cell(p + 'retry', `${q.retry_left} / ${q.retry_cnt}`) +
      cell(p + 'rnr', `${q.rnr_left} / ${q.rnr_retry}`) + cell(p + 'rd_atomic_out', q.rd_atomic_out) +
      `<td id="${p}sq">${q.sq_pi} / ${q.sq_next} / ${q.sq_ci} of ${q.sq_depth}${bar(sqUsed, q.sq_depth)}</td>` +
      `<td id="${p}rq">${q.srqn ? 'SRQ ' + q.srqn : `${q.rq_pi} / ${q.rq_ci} of ${q.rq_depth}${bar(rqUsed, q.rq_depth)}`}</td>` +
      `<td class="l flags">${flags.map((f) => `<span>${f}</span>`).join('')}</td></tr>`;
  }
  return h + '</table>';
}

// A CQ's event moderation (MODIFY_CQ): an event after so many CQEs or so
// many microseconds after the first one not yet reported, whichever first.
function moderation(r) {
  if (!r.mod_count && !r.mod_period_us) return 'off';
  return `${r.mod_count} CQEs / ${r.mod_period_us} us`;
}

// extra: [field, heading] or [id, heading, function of the row giving the cell]
function ringTable(d, kind, key, extra) {
  const list = d[kind];
  if (!list || !list.length) return '';
  let h = `<table class="${kind}"><tr><th>${key.toUpperCase()}</th>` +
    extra.map((e) => `<th>${e[1]}</th>`).join('') + '<th>pi</th><th>ci</th><th>used</th></tr>';
  for (const r of list) {
    const p = `d${d.index}-${key}${r[key]}-`;
    const used = occ(r.pi, r.ci);
    h += '<tr>' + cell(p + key, r[key]) +
      extra.map((e) => cell(p + e[0], e[2] ? e[2](r) : r[e[0]])).join('') +
      cell(p + 'pi', r.pi) + cell(p + 'ci', r.ci) +
      `<td id="${p}used">${used} of ${r.depth}${bar(used, r.depth)}</td></tr>`;
  }
  return h + '</table>';
}

function caches(d) {
  let h = '<span class="kv">translation caches:</span>';
  for (const c of ['qpc', 'mpt', 'mtt']) {
    const x = d.caches[c];
    const rate = x.rate === null ? 'no lookups' : (100 * x.rate).toFixed(1) + ' % hits';
    h += `<span class="kv" id="d${d.index}-cache-${c}">${c.toUpperCase()} ${rate} ` +
      `<span class="muted">(${x.hits} hits, ${x.misses} misses)</span></span>`;
  }
  return h;
}

function counters(d) {
  return Object.entries(d.shown_stats).map(([k, v]) =>
    `<span class="kv" id="d${d.index}-stat-${k}">${k} <b>${v}</b></span>`).join('');
}

function renderDevices(st) {
  let h = '';
  for (const d of st.devices) {
    h += `<div class="dev" id="dev${d.index}"><h2>${esc(d.name)}</h2>` +
      '<h3>Queue pairs</h3>' + qpTable(d) +
      '<h3>Completion, event and shared receive queues</h3>' +
      ringTable(d, 'cqs', 'cqn', [['eqn', 'EQ'], ['written', 'CQEs written'], ['armed', 'armed'],
        ['moderation', 'moderation', moderation]]) +
      ringTable(d, 'eqs', 'eqn', [['vector', 'vector'], ['armed', 'armed'], ['overflow', 'overflow']]) +
      ringTable(d, 'srqs', 'srqn', [['limit', 'limit']]) +
      `<div>${caches(d)}</div><div class="muted">${counters(d)}</div></div>`;
  }
  $('devices').innerHTML = h;
}

// The sequence diagram: one lifeline per device; every tx and rx is a row
// in time order (equal times keep their order), a frame is an arrow from
// its tx row to its rx row.
function renderSeq(st) {
  const frames = st.frames || [];
  const devs = st.devices.map((d) => d.index);
  const seen = new Set(devs);
  for (const f of frames) { seen.add(f.src); if (f.dst !== null) seen.add(f.dst); }
  const lanes = [...seen].sort((a, b) => a - b);
  const W = 520, left = 90, right = W - 30;
  const laneX = {};
  lanes.forEach((d, i) => { laneX[d] = lanes.length === 1 ? (left + right) / 2 :
    left + i * (right - left) / (lanes.length - 1); });
  const pts = [];
  frames.forEach((f, i) => {
    pts.push({t: f.t_tx, o: 2 * i, f: f, end: 'tx'});
    if (f.t_rx !== null) pts.push({t: f.t_rx, o: 2 * i + 1, f: f, end: 'rx'});
  });
  pts.sort((a, b) => a.t - b.t || a.o - b.o);
  const rowH = 15, top = 40;
  const row = new Map();
  pts.forEach((p, i) => row.set(p.f.id + p.end, top + i * rowH));
  const H = top + pts.length * rowH + 30;
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" id="seq-svg">` +
    '<defs>' + ['req:#1864ab', 'resp:#5c940d', 'retx:#e67700', 'nak:#c92a2a', 'lost:#c92a2a', 'flight:#868e96']
      .map((m) => { const [k, c] = m.split(':');
        return `<marker id="ar-${k}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" ` +
          `markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${c}"/></marker>`; })
      .join('') + '</defs>';
  for (const d of lanes) {
    s += `<text x="${laneX[d]}" y="18" text-anchor="middle" font-weight="bold">dev ${d}</text>` +
      `<line x1="${laneX[d]}" y1="26" x2="${laneX[d]}" y2="${H - 10}" stroke="#495057"/>`;
  }
  let lastLabel = -1e9;
  for (const p of pts) {           // time labels, not too dense
    const y = row.get(p.f.id + p.end);
    if (y - lastLabel >= 2 * rowH) {
      s += `<text x="4" y="${y + 4}" font-size="10" fill="#868e96">${esc(fmtTime(p.t))}</text>`;
      lastLabel = y;
    }
  }
  for (const f of frames) {
    const x1 = laneX[f.src], x2 = laneX[f.dst !== null ? f.dst : f.src];
    const y1 = row.get(f.id + 'tx');
    const isResp = f.opcode >= 0x0d && f.opcode <= 0x12;
    let kind = f.nak ? 'nak' : f.retx ? 'retx' : isResp ? 'resp' : 'req';
    let x2e = x2, y2, dash = '';
    if (f.status === 'delivered') {
      y2 = row.get(f.id + 'rx');
    } else if (f.status === 'lost') {
      x2e = x1 + (x2 - x1) * 0.55; y2 = y1 + rowH; dash = ' stroke-dasharray="5,3"';
    } else {
      x2e = x1 + (x2 - x1) * 0.4; y2 = y1 + rowH * 0.6; dash = ' stroke-dasharray="2,3"';
    }
    const marker = f.status === 'lost' ? 'lost' : f.status === 'delivered' ? kind : 'flight';
    const color = {req: '#1864ab', resp: '#5c940d', retx: '#e67700', nak: '#c92a2a'}[kind];
    const stroke = f.status === 'lost' ? '#c92a2a' : f.status === 'delivered' ? color : '#868e96';
    const cls = ['frame', kind, f.status].join(' ');
    const label = `${f.op} ${f.psn}${f.retx ? ' (retx)' : ''}`;
    const lx = x1 < x2 ? x1 + 6 : x1 - 6, anchor = x1 < x2 ? 'start' : 'end';
    s += `<g class="${cls}" data-id="${f.id}" data-psn="${f.psn}" data-op="${esc(f.op)}" ` +
      `data-src="${f.src}" data-status="${f.status}">` +
      `<line x1="${x1}" y1="${y1}" x2="${x2e}" y2="${y2}" stroke="${stroke}" stroke-width="1.5"${dash} ` +
      `marker-end="url(#ar-${marker})"/>` +
      `<text x="${lx}" y="${y1 - 2}" font-size="10" text-anchor="${anchor}" fill="${color}">${esc(label)}</text>`;
    if (f.status === 'lost') {
      s += `<text x="${x2e + 2}" y="${y2 + 4}" fill="#c92a2a" font-weight="bold">\u2715</text>`;
    }
    s += '</g>';
  }
  $('seq').innerHTML = s + '</svg>';
  const c = st.frame_counts || {};
  $('frame-counts').textContent = `(${c.frames || 0} frames: ${c.delivered || 0} delivered, ` +
    `${c.lost || 0} lost, ${c.retransmitted || 0} retransmitted, ${c.naks || 0} NAKs)`;
}

function renderIncidents(st) {
  const inc = st.incidents || [];
  if (!inc.length) { $('incidents').textContent = 'none yet'; return; }
  let h = '<table><tr><th>frame</th><th>time</th><th class="l">what</th><th>from</th><th>to</th>' +
    '<th>QPN</th><th>PSN</th><th class="l">opcode</th></tr>';
  for (const f of inc) {
    const what = f.status === 'lost' ? 'lost' : f.nak ? 'NAK' : 'retransmitted';
    h += `<tr id="inc-${f.id}" class="incident ${what}" data-psn="${f.psn}" data-op="${esc(f.op)}">` +
      `<td>${f.id}</td><td>${esc(fmtTime(f.t_tx))}</td><td class="l">${what}</td><td>${f.src}</td>` +
      `<td>${f.dst === null ? '-' : f.dst}</td><td>${f.qpn}</td><td>${f.psn}</td>` +
      `<td class="l">${esc(f.op)}</td></tr>`;
  }
  $('incidents').innerHTML = h + '</table>';
}

function render(st) {
  if (!st.devices) {
    $('error').textContent = st.error || 'no state';
    return;
  }
  $('error').textContent = st.error || '';
  $('source').textContent = st.source === 'sim'
    ? `simulator: ${st.config.op} ${st.config.size} B, depth ${st.config.depth}, profile ${st.config.profile}` +
      (st.config.plan ? `, fault plan: ${st.config.plan.replace(/\n/g, '; ')}` : '')
    : `QEMU over QMP ${st.config.qmp}`;
  const s = $('status');
  s.textContent = st.running ? 'running' : 'paused';
  s.className = 'badge ' + (st.running ? 'running' : 'paused');
  $('now').textContent = fmtTime(st.now_ns);
  $('now').dataset.ns = st.now_ns;
  const w = st.workload;
  $('workload').textContent = w ? `posted ${w.posted}, completed ${w.completed}, outstanding ` +
    `${w.outstanding}${w.errors.length ? ', errors: ' + w.errors.join('; ') : ''}` : '';
  renderDevices(st);
  renderSeq(st);
  renderIncidents(st);
}

let polling = null;
function poll() {
  fetch('/api/state').then((r) => r.json()).then(render)
    .catch((e) => { $('error').textContent = 'lost the server: ' + e; });
}

function connect() {
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
  ws.onmessage = (m) => { try { render(JSON.parse(m.data)); } catch (e) { $('error').textContent = String(e); } };
  ws.onclose = () => { if (!polling) polling = setInterval(poll, 1000); };
}

function control(what) {
  fetch('/api/' + what, {method: 'POST'}).then((r) => r.json()).then((j) => {
    $('msg').textContent = j.ok === false ? `${what}: ${j.error}`
      : what === 'step' ? `step: ${j.what}, ${j.events} trace records, now ${fmtTime(j.t_ns)}` : `${what}: ok`;
    poll();
  }).catch((e) => { $('msg').textContent = `${what}: ${e}`; });
}

function saveSvg() {
  const n = parseInt($('timeline-n').value, 10) || 1;
  fetch('/api/timeline.svg?n=' + n).then((r) => {
    if (!r.ok) return r.json().then((j) => { throw new Error(j.error); });
    return r.blob();
  }).then((b) => {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(b);
    a.download = `qrnic-timeline-last${n}.svg`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    $('msg').textContent = `saved the timeline of the last ${n} operation(s)`;
  }).catch((e) => { $('msg').textContent = 'timeline: ' + e.message; });
}

$('btn-pause').onclick = () => control('pause');
$('btn-continue').onclick = () => control('continue');
$('btn-step').onclick = () => control('step');
$('btn-svg').onclick = saveSvg;
poll();
connect();
