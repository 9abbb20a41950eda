/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Command-line numbers of qrnic-sim and qrnic-switch (one parser for both,
 * so that --rate 200M or --buffer 8M mean the same in each): plain numbers
 * with k/m/g, sizes (K, M, G = KiB, MiB, GiB), times (ns, us, ms, s) and
 * bit rates (k, M, G, T with an optional bps, b/s or bit/s; inf = 0).
 * Each returns 0, or -1 with the message in cli_error().
 */
#ifndef QRNIC_CLI_UNITS_H
#define QRNIC_CLI_UNITS_H

#include <stdint.h>

int cli_num(const char *s, double *out, char **rest);
int cli_u64(const char *k, const char *s, uint64_t *out);
int cli_bytes(const char *k, const char *s, uint64_t *out);
int cli_time(const char *k, const char *s, uint64_t *out);
int cli_rate(const char *k, const char *s, uint64_t *out);
/* ETS (802.1Qaz) bandwidth weights: exactly 8 comma-separated integers
 * 0..100, one per priority 0..7, 0 = a strict priority class, the others
 * summing to 100 (percent of what the strict classes leave) */
int cli_ets(const char *k, const char *s, uint8_t w[8]);
/* a comma list of priorities 0..7 (each at most once) as a bit mask */
int cli_prios(const char *k, const char *s, uint8_t *mask);
const char *cli_error(void);

#endif
