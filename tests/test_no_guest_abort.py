# SPDX-License-Identifier: GPL-2.0-or-later
"""pvrdma CVE class 'abort reachable by a guest' (issue 21, item 4): a
static audit of every call that ends the QEMU process.

* model/ and firmware/ (everything a guest drives: registers, doorbells,
  admin commands, WQEs, frames) contain no abort(), assert(), exit() or
  trap at all: every check there is an error path (a status, an error
  CQE, a guest-error log line, a QP or the device in error).
* hw/*.c: every call that can end the process (g_assert*, abort,
  exit, error_fatal/error_abort, and glib's allocators, which abort when
  out of memory) is listed below with the reason it is not guest
  reachable, and a call graph of hw/*.c (direct calls and the
  function tables handed to QEMU and the model) checks that none of them
  is reachable from a guest entry point: the BAR0 and doorbell
  MemoryRegionOps, the bottom half, the timers, the net receive hook and
  the host callbacks the model calls (DMA, IRQ, TX, timers, logging).
  A new abort-class call fails this test until it is either converted to
  an error path or listed here with its reason.

The dynamic side is in tests/test_qemu_hardening.py (random guest actions
against QEMU) and the fuzzers (tests/fuzz/, docs/fuzzing.md)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FATAL = re.compile(r'\b(abort|assert|g_assert\w*|g_error|exit|_exit|hw_error|qemu_abort|'
                   r'__builtin_trap|__builtin_unreachable|g_malloc0?|g_new0?|g_realloc|g_renew|'
                   r'g_memdup2?|g_strdup\w*|g_strndup)\s*\(|&error_(fatal|abort)\b')

# hw/*.c: function -> why its abort-class calls are not guest reachable
HW_ALLOWED = {
    'qrnic_prop_name_of': 'g_strdup of a property name: class init and property '
                          'error messages (host side)',
    'qrnic_tm_explain': 'g_strdup*: timing property error message (realize/QMP qom-set)',
    'qrnic_fault_msg': 'g_strdup*: fault plan error message (realize/QMP qom-set)',
    'qrnic_stream_get': 'g_realloc of the migration stream, length checked against '
                        'QRNIC_STREAM_MAX first (migration input, not guest)',
    'qrnic_pre_save': 'g_memdup2 of the saved state (migration, host side)',
    'qrnic_make_properties': 'g_new0 + g_assert_not_reached over the static '
                             'configuration table at class init: an internal invariant',
    'qrnic_describe_config_properties': 'g_strdup* of help texts at class init',
    'qrnic_get_fault': 'g_strdup/g_malloc of the fault plan text (QMP qom-get)',
    'qrnic_class_init': 'g_strdup_printf of property descriptions at class init',
    'qrnic_realize': 'g_new0 of the fixed-size list of frames a run keeps (QRNIC_OUT_LEN) '
                     'at realize (host side: -device, device_add)',
}

GUEST_ENTRY = ['qrnic_regs_read', 'qrnic_regs_write', 'qrnic_db_read', 'qrnic_db_write',
               'qrnic_bh', 'qrnic_timer_cb', 'qrnic_kick_cb', 'qrnic_nc_receive']


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def c_files(*dirs):
    for d in dirs:
        for dp, _, fs in os.walk(os.path.join(ROOT, d)):
            for f in sorted(fs):
                if f.endswith(('.c', '.h')):
                    yield os.path.join(dp, f)


def functions(text):
    """{name: body} of the functions defined at column 0 of a C file."""
    out = {}
    for m in re.finditer(r'^[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*?\)\s*\{', text, flags=re.M | re.S):
        name, start, depth, i = m.group(1), m.end(), 1, m.end()
        while depth and i < len(text):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            i += 1
        out[name] = text[start:i]
    return out


def test_model_and_firmware_have_no_abort():
    hits = []
    for path in c_files('model', 'firmware'):
        text = strip_comments(open(path).read())
        for n, line in enumerate(text.splitlines(), 1):
            if re.search(r'\bstatic_assert|_Static_assert|QRNIC_ASSERT_SIZE', line):
                continue
            if FATAL.search(line):
                hits.append(f'{os.path.relpath(path, ROOT)}:{n}: {line.strip()}')
    assert not hits, 'abort-class calls in guest-driven code:\n' + '\n'.join(hits)


def test_hw_aborts_are_listed_and_not_guest_reachable():
    # the glue is hw/qrnic.c and hw/qrnic_run.c (runs without the BQL): one
    # call graph over all of hw/*.c
    hw = os.path.join(ROOT, 'hw')
    text = '\n'.join(strip_comments(open(os.path.join(hw, f)).read())
                     for f in sorted(os.listdir(hw)) if f.endswith('.c'))
    funcs = functions(text)
    for e in GUEST_ENTRY:
        assert e in funcs, f'guest entry point {e} not found: update GUEST_ENTRY'
    m = re.search(r'struct qrnic_host_ops \w+ = \{(.*?)\};', text, flags=re.S)
    assert m, 'the host ops table moved: update this test'
    host_ops = re.findall(r'=\s*(\w+)', m.group(1))
    assert 'qrnic_host_dma_read' in host_ops
    fatal_in = {}
    for name, body in funcs.items():
        calls = [x.group(0) for x in FATAL.finditer(body)]
        if calls:
            fatal_in[name] = calls
    unlisted = {f: c for f, c in fatal_in.items() if f not in HW_ALLOWED}
    assert not unlisted, f'abort-class calls not audited (add a reason or an error path): {unlisted}'
    # call graph: any mention of a defined function's name counts as a call
    # (direct calls, and function pointers handed over in tables)
    names = set(funcs)
    edges = {f: {n for n in re.findall(r'\b(\w+)\b', body) if n in names and n != f}
             for f, body in funcs.items()}
    seen, todo = set(), list(GUEST_ENTRY) + host_ops
    while todo:
        f = todo.pop()
        if f in seen or f not in funcs:
            continue
        seen.add(f)
        todo.extend(edges[f])
    reachable = sorted(seen & set(fatal_in))
    assert not reachable, f'abort-class calls reachable from a guest entry point: {reachable}'
    assert len(seen) > 20          # the walk did find the device's code
