/* SPDX-License-Identifier: GPL-2.0-or-later */
/* qrnic pcap writer.  See qrnic_pcap.h. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L		/* open, writev under -std=c11 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "qrnic_pcap.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define PCAP_MAGIC_USEC	0xa1b2c3d4u
#define PCAP_MAGIC_NSEC	0xa1b23c4du
#define PCAP_SNAPLEN	65535u
#define LINKTYPE_ETHERNET 1u

struct qrnic_pcap {
	int fd;
	bool nsec;
	uint64_t frames;
	char name[];
};

static void wr32le(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static void wr16le(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

/* write() all of buf, through EINTR; n written or -1 (errno set) */
static ssize_t write_full(int fd, const uint8_t *b, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = write(fd, b + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

struct qrnic_pcap *qrnic_pcap_open_fd(int fd, const char *name, bool nsec, char *err,
				      size_t errlen)
{
	size_t nl = strlen(name);
	struct qrnic_pcap *pc = malloc(sizeof(*pc) + nl + 1);
	uint8_t hdr[24];
	ssize_t n;
	int e;

	if (!pc) {
		e = errno;
		if (err)
			snprintf(err, errlen, "cannot write '%s': %s", name, strerror(e));
		close(fd);
		errno = e;
		return NULL;
	}
	pc->fd = fd;
	pc->nsec = nsec;
	pc->frames = 0;
	memcpy(pc->name, name, nl + 1);
	wr32le(hdr, nsec ? PCAP_MAGIC_NSEC : PCAP_MAGIC_USEC);
	wr16le(hdr + 4, 2);			/* version 2.4 */
	wr16le(hdr + 6, 4);
	wr32le(hdr + 8, 0);			/* thiszone */
	wr32le(hdr + 12, 0);			/* sigfigs */
	wr32le(hdr + 16, PCAP_SNAPLEN);
	wr32le(hdr + 20, LINKTYPE_ETHERNET);
	n = write_full(fd, hdr, sizeof(hdr));
	if (n != (ssize_t)sizeof(hdr)) {
		e = n < 0 ? errno : EIO;
		if (err)
			snprintf(err, errlen, "cannot write '%s': %s", name, strerror(e));
		close(fd);
		free(pc);
		errno = e;
		return NULL;
	}
	return pc;
}

struct qrnic_pcap *qrnic_pcap_open(const char *path, bool nsec, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		int e = errno;

		if (err)
			snprintf(err, errlen, "Could not create '%s': %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	return qrnic_pcap_open_fd(fd, path, nsec, err, errlen);
}

int qrnic_pcap_write(struct qrnic_pcap *pc, const void *frame, size_t len, uint64_t ts_ns,
		     char *err, size_t errlen)
{
	uint32_t cap = len > PCAP_SNAPLEN ? PCAP_SNAPLEN : (uint32_t)len;
	uint32_t frac = (uint32_t)(ts_ns % 1000000000u);
	uint8_t rec[16];
	struct iovec iov[2] = {
		{ .iov_base = rec, .iov_len = sizeof(rec) },
		{ .iov_base = (void *)frame, .iov_len = cap },
	};
	ssize_t n;
	int e;

	wr32le(rec, (uint32_t)(ts_ns / 1000000000u));
	wr32le(rec + 4, pc->nsec ? frac : frac / 1000u);
	wr32le(rec + 8, cap);
	wr32le(rec + 12, (uint32_t)len);
	do {
		n = writev(pc->fd, iov, 2);
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)(sizeof(rec) + cap)) {
		pc->frames++;
		return 0;
	}
	e = n < 0 ? errno : EIO;
	if (err)
		snprintf(err, errlen, "write error on '%s' (%s)", pc->name,
			 n < 0 ? strerror(e) : "short write");
	return -e;
}

uint64_t qrnic_pcap_frames(const struct qrnic_pcap *pc)
{
	return pc->frames;
}

int qrnic_pcap_close(struct qrnic_pcap *pc)
{
	int r;

	if (!pc)
		return 0;
	r = close(pc->fd) ? -errno : 0;
	free(pc);
	return r;
}
