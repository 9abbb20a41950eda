# SPDX-License-Identifier: GPL-2.0-or-later
# Progress and error reporting sourced by scripts/build-qemu.sh, build-provider.sh and
# guest-image.sh.  They use the caller's PROG (the script's name) and LOG (its log file,
# /dev/null until it has one), read at each call; die sets DIED so the caller's EXIT trap
# can tell a reported failure from an unexpected one.

say() { echo "$PROG: $*" | tee -a "$LOG" >&2; }
die() {
    DIED=1
    echo "$PROG: ERROR: $*" | tee -a "$LOG" >&2
    [ "$LOG" != /dev/null ] && echo "$PROG: full log: $LOG" >&2
    exit 1
}
# run CMD...: show output on stderr and append it to the log; keep CMD's status.
# (guest-image.sh defines its own run, which sends the output to the log only.)
run() {
    local rc=0 cmd="$*"
    [ ${#cmd} -le 300 ] || cmd="${cmd:0:300}..."
    echo "+ $cmd" >>"$LOG"
    "$@" 2>&1 | tee -a "$LOG" >&2 || rc=${PIPESTATUS[0]}
    return "$rc"
}
