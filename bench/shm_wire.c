/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/shm_wire.c: an experiment, not a cable for use -- what two QEMUs'
 * -netdev dgram links would gain if their frames crossed shared memory
 * instead of the host's socket layer (issue 18, docs/storage.md "A wire in
 * shared memory").  An LD_PRELOAD library for QEMU: the VM runner
 * (Topology(link='shm'), bench/nvmeof_vs_rxe --link shm) makes one memory
 * file with a ring per direction and an eventfd per receiver, passes them
 * to both QEMUs, and sets QRNIC_SHM_WIRE=SOCKFD,MEMFD,MY_EFD,PEER_EFD,SIDE.
 * At load time this library puts the receiver's eventfd on SOCKFD (the fd
 * number QEMU's `-netdev dgram,local.type=fd,local.str=SOCKFD` uses), and
 * answers QEMU's send() and recv() on it from the rings:
 *
 *   send  copies the frame into the peer's ring and kicks the peer's
 *         eventfd only if the peer said it waits (its ring's no_kick is 0),
 *         so a frame costs no system call while the peer is busy taking
 *         frames;
 *   recv  takes the next frame of our ring; the eventfd stays readable
 *         while frames are left (QEMU's main loop comes back for each), and
 *         is cleared, with no_kick reset, once the ring is empty.
 *
 * getsockname() on the fd answers an unnamed unix address (QEMU names the
 * netdev after it); no other call is changed, and every call on another fd
 * goes to libc.  A full ring drops the frame and counts it (RoCE's
 * retransmission then recovers), which the printout at exit reports.  The
 * peer's indices and lengths are not trusted: a frame of no bytes or more
 * than a slot is skipped, an index beyond the ring's range stops taking
 * frames (both counted as bad); nothing is read out of bounds.  Both QEMUs
 * must run on one host; migration is not supported.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define SLOTS 1024u			/* per direction, a power of two */
#define SLOT_BYTES 9216u		/* the largest frame qrnic sends, with room */

struct slot {
	uint32_t len;
	uint8_t data[SLOT_BYTES];
};

struct ring {
	_Alignas(64) _Atomic uint32_t prod;	/* written by the sender */
	_Alignas(64) _Atomic uint32_t cons;	/* written by the receiver */
	/* 0 (as made): the receiver waits, kick its eventfd; 1: it was
	 * kicked or is taking frames, no kick needed */
	_Alignas(64) _Atomic uint32_t no_kick;
	_Alignas(64) struct slot slot[SLOTS];
};

/* the memory file: ring[i] is what side i receives */
struct shm {
	struct ring ring[2];
};

static int sock_fd = -1, my_efd = -1, peer_efd = -1, side;
static struct shm *shm;
static struct {
	uint64_t tx, rx, kicks, drops, bad, clears;
} st;
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_recv)(int, void *, size_t, int);
static int (*real_getsockname)(int, struct sockaddr *, socklen_t *);

static void report(void)
{
	if (shm)
		fprintf(stderr, "shm_wire side %d: tx %llu rx %llu kicks %llu clears %llu drops %llu bad %llu\n",
			side, (unsigned long long)st.tx, (unsigned long long)st.rx,
			(unsigned long long)st.kicks, (unsigned long long)st.clears,
			(unsigned long long)st.drops, (unsigned long long)st.bad);
}

__attribute__((constructor)) static void shm_wire_init(void)
{
	const char *e = getenv("QRNIC_SHM_WIRE");
	struct stat sb;
	int memfd;
	void *p;

	real_send = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
	real_recv = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
	real_getsockname = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "getsockname");
	if (!e)
		return;
	if (sscanf(e, "%d,%d,%d,%d,%d", &sock_fd, &memfd, &my_efd, &peer_efd, &side) != 5 ||
	    (side != 0 && side != 1) || sock_fd < 0 || memfd < 0 || my_efd < 0 || peer_efd < 0) {
		fprintf(stderr, "shm_wire: QRNIC_SHM_WIRE=%s: want SOCKFD,MEMFD,MY_EFD,PEER_EFD,SIDE\n", e);
		exit(1);
	}
	if (fstat(memfd, &sb) || (size_t)sb.st_size < sizeof(struct shm)) {
		fprintf(stderr, "shm_wire: memory file %d smaller than %zu bytes\n", memfd, sizeof(struct shm));
		exit(1);
	}
	p = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED) {
		perror("shm_wire: mmap");
		exit(1);
	}
	if (dup2(my_efd, sock_fd) < 0) {
		perror("shm_wire: dup2");
		exit(1);
	}
	shm = p;
	atexit(report);
}

/* QEMU names the netdev after its socket's address: an unnamed unix one */
int getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	if (!shm || fd != sock_fd)
		return real_getsockname(fd, sa, len);
	if (*len < sizeof(sa_family_t)) {
		errno = EINVAL;
		return -1;
	}
	sa->sa_family = AF_UNIX;
	*len = sizeof(sa_family_t);
	return 0;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct ring *r;
	uint32_t prod, cons;

	if (!shm || fd != sock_fd)
		return real_send(fd, buf, len, flags);
	r = &shm->ring[!side];
	prod = atomic_load_explicit(&r->prod, memory_order_relaxed);
	cons = atomic_load_explicit(&r->cons, memory_order_acquire);
	if (!len || len > SLOT_BYTES || prod - cons >= SLOTS) {
		st.drops++;
		return (ssize_t)len;	/* a lossy wire: the frame is gone */
	}
	r->slot[prod & (SLOTS - 1)].len = (uint32_t)len;
	memcpy(r->slot[prod & (SLOTS - 1)].data, buf, len);
	atomic_store_explicit(&r->prod, prod + 1, memory_order_release);
	st.tx++;
	/* seq_cst: orders the index store before the flag's load (the
	 * receiver does the mirror image before it sleeps) */
	if (!atomic_exchange(&r->no_kick, 1)) {
		uint64_t one = 1;

		st.kicks++;
		if (write(peer_efd, &one, 8) != 8)
			st.bad++;
	}
	return (ssize_t)len;
}

static uint32_t ring_avail(struct ring *r, uint32_t cons)
{
	return atomic_load_explicit(&r->prod, memory_order_acquire) - cons;
}

/*
 * Our ring is empty (up to cons): clear the eventfd, say we wait, and look
 * again, kicking ourselves if a frame came meanwhile.  Also after a wake-up
 * that found nothing: a sender may set no_kick and kick after we took its
 * frame, and that flag must not stay set over an empty ring, or its next
 * frame would wake nobody.
 */
static void wait_again(struct ring *r, uint32_t cons)
{
	uint64_t v;

	if (read(my_efd, &v, 8) == 8)
		st.clears++;
	atomic_store(&r->no_kick, 0);
	if (ring_avail(r, cons) && !atomic_exchange(&r->no_kick, 1)) {
		v = 1;
		if (write(my_efd, &v, 8) != 8)
			st.bad++;
	}
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct ring *r;
	uint32_t cons, n, flen;
	bool ok = true;

	if (!shm || fd != sock_fd)
		return real_recv(fd, buf, len, flags);
	r = &shm->ring[side];
	cons = atomic_load_explicit(&r->cons, memory_order_relaxed);
	n = ring_avail(r, cons);
	if (n > SLOTS) {		/* the peer's index makes no sense: stop */
		uint64_t v;

		st.bad++;
		if (read(my_efd, &v, 8) == 8)
			st.clears++;
		errno = EAGAIN;
		return -1;
	}
	if (!n) {			/* a wake-up with nothing */
		wait_again(r, cons);
		errno = EAGAIN;
		return -1;
	}
	/* one load: the other process may change the slot meanwhile, and the
	 * bound checked must be the length copied */
	flen = __atomic_load_n(&r->slot[cons & (SLOTS - 1)].len, __ATOMIC_RELAXED);
	/* skipped, counted: beyond a slot, or empty (recv() returning 0 is
	 * the end of the connection to QEMU's dgram netdev) */
	if (!flen || flen > SLOT_BYTES) {
		st.bad++;
		ok = false;
	} else {
		if (flen > len)
			flen = (uint32_t)len;	/* truncated, as recv() of a datagram */
		memcpy(buf, r->slot[cons & (SLOTS - 1)].data, flen);
		st.rx++;
	}
	atomic_store_explicit(&r->cons, cons + 1, memory_order_release);
	if (n == 1)			/* empty now */
		wait_again(r, cons + 1);
	if (!ok) {
		errno = EAGAIN;
		return -1;
	}
	return flen;
}
