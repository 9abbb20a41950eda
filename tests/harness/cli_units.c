/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Command-line numbers of qrnic-sim and qrnic-switch (cli_units.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli_units.h"

static char cli_err[512];

const char *cli_error(void)
{
	return cli_err;
}

static int cli_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int cli_bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cli_err, sizeof(cli_err), fmt, ap);
	va_end(ap);
	return -1;
}

int cli_num(const char *s, double *out, char **rest)
{
	char *e;

	errno = 0;
	*out = strtod(s, &e);
	if (e == s || errno || !isfinite(*out) || *out < 0)
		return -1;
	while (*e == ' ')
		e++;
	*rest = e;
	return 0;
}

int cli_u64(const char *k, const char *s, uint64_t *out)
{
	double v, m = 1;
	char *r;

	if (cli_num(s, &v, &r))
		return cli_bad("--%s: not a number: '%s'", k, s);
	if (!strcasecmp(r, "k"))
		m = 1e3;
	else if (!strcasecmp(r, "m"))
		m = 1e6;
	else if (!strcasecmp(r, "g"))
		m = 1e9;
	else if (*r)
		return cli_bad("--%s: bad suffix in '%s'", k, s);
	v *= m;
	if (v != floor(v) || v > 1.8e19)
		return cli_bad("--%s: not a whole number: '%s'", k, s);
	*out = (uint64_t)v;
	return 0;
}

int cli_bytes(const char *k, const char *s, uint64_t *out)
{
	double v, m = 1;
	char *r;

	if (cli_num(s, &v, &r))
		return cli_bad("--%s: not a size: '%s'", k, s);
	if (!strcasecmp(r, "k") || !strcasecmp(r, "kib") || !strcasecmp(r, "kb"))
		m = 1024;
	else if (!strcasecmp(r, "m") || !strcasecmp(r, "mib") || !strcasecmp(r, "mb"))
		m = 1024 * 1024;
	else if (!strcasecmp(r, "g") || !strcasecmp(r, "gib") || !strcasecmp(r, "gb"))
		m = 1024.0 * 1024 * 1024;
	else if (*r && strcasecmp(r, "b"))
		return cli_bad("--%s: bad size suffix in '%s' (K, M, G = KiB, MiB, GiB)", k, s);
	v *= m;
	if (v != floor(v) || v > 1e15)
		return cli_bad("--%s: bad size '%s'", k, s);
	*out = (uint64_t)v;
	return 0;
}

int cli_time(const char *k, const char *s, uint64_t *out)
{
	double v, m = 1;
	char *r;

	if (cli_num(s, &v, &r))
		return cli_bad("--%s: not a time: '%s'", k, s);
	if (!*r || !strcmp(r, "ns"))
		m = 1;
	else if (!strcmp(r, "us"))
		m = 1e3;
	else if (!strcmp(r, "ms"))
		m = 1e6;
	else if (!strcmp(r, "s"))
		m = 1e9;
	else
		return cli_bad("--%s: bad time unit in '%s' (ns, us, ms, s)", k, s);
	v = v * m;
	if (v > 1e18)
		return cli_bad("--%s: too long: '%s'", k, s);
	*out = (uint64_t)llround(v);
	return 0;
}

int cli_rate(const char *k, const char *s, uint64_t *out)
{
	double v, m = 1;
	char *r;
	char u[16];
	size_t n;

	if (!strcasecmp(s, "inf") || !strcasecmp(s, "infinite")) {
		*out = 0;
		return 0;
	}
	if (cli_num(s, &v, &r))
		return cli_bad("--%s: not a rate: '%s'", k, s);
	n = strlen(r);
	if (n >= sizeof(u))
		return cli_bad("--%s: bad rate unit in '%s'", k, s);
	memcpy(u, r, n + 1);
	/* strip a trailing bps, b/s or bit/s */
	for (const char *suf[] = { "bps", "b/s", "bit/s", NULL }, **p = suf; *p; p++) {
		size_t l = strlen(*p);

		if (n >= l && !strcasecmp(u + n - l, *p)) {
			u[n - l] = 0;
			break;
		}
	}
	if (!*u)
		m = 1;
	else if (!strcasecmp(u, "k"))
		m = 1e3;
	else if (!strcasecmp(u, "m"))
		m = 1e6;
	else if (!strcasecmp(u, "g"))
		m = 1e9;
	else if (!strcasecmp(u, "t"))
		m = 1e12;
	else
		return cli_bad("--%s: bad rate unit in '%s' (e.g. 100G, 25Gbps, 400Mb/s)", k, s);
	v *= m;
	if (v > 1e16 || (v > 0 && v < 1e3))
		return cli_bad("--%s: rate out of range: '%s'", k, s);
	*out = (uint64_t)llround(v);
	return 0;
}


int cli_ets(const char *k, const char *s, uint8_t w[8])
{
	const char *q = s;
	unsigned sum = 0;
	int n = 0;

	for (;;) {
		char *e;
		long v;

		if (n == 8)
			return cli_bad("--%s: more than 8 weights in '%s' (one per priority 0..7)", k, s);
		if (*q < '0' || *q > '9')	/* no sign, no space, no empty item */
			return cli_bad("--%s: not a weight 0..100 at '%s' (in '%s')", k, q, s);
		errno = 0;
		v = strtol(q, &e, 10);
		if (errno || v > 100 || (*e && *e != ','))
			return cli_bad("--%s: not a weight 0..100 at '%s' (in '%s')", k, q, s);
		w[n++] = (uint8_t)v;
		sum += (unsigned)v;
		if (!*e)
			break;
		q = e + 1;
	}
	if (n != 8)
		return cli_bad("--%s: %d weights in '%s', need 8 (one per priority 0..7)", k, n, s);
	if (sum != 100)
		return cli_bad("--%s: the weights in '%s' add up to %u, not 100 (0 = strict priority)",
			       k, s, sum);
	return 0;
}

int cli_prios(const char *k, const char *s, uint8_t *mask)
{
	const char *q = s;

	*mask = 0;
	for (;;) {
		if (*q < '0' || *q > '7' || (q[1] && q[1] != ','))
			return cli_bad("--%s: not a priority 0..7 at '%s' (in '%s')", k, q, s);
		if (*mask >> (*q - '0') & 1)
			return cli_bad("--%s: priority %c twice in '%s'", k, *q, s);
		*mask |= (uint8_t)(1u << (*q - '0'));
		if (!q[1])
			return 0;
		q += 2;
	}
}
