/* SPDX-License-Identifier: MIT */
/*
 * libvnoise-preload.so: LD_PRELOAD interposition of a program's synchronisation calls: the pthread
 * calls and the MPI calls (PMPI wrappers). Each wrapped call is timed around the real function and counted in
 * a per-thread table (guest/mpi/appstat: count, total, min, max, caller PC and argument of the last call). Hot
 * path: two clock reads, a TLS table (static TLS), no lock, no allocation, no syscall beyond the clock.
 *
 * The library does not link libmpi (non-MPI programs load it too): the PMPI_* functions are found with
 * dlsym() when the program calls MPI_Init (or any wrapped MPI call first), and MPI_COMM_WORLD, a data symbol
 * in Open MPI, is looked up the same way.
 *
 * Output: when a thread ends (its TLS destructor) and at exit, one JSON line per thread (schema vnoise.app/1,
 * protocol/README.md; "rank" is the MPI_COMM_WORLD rank after MPI_Init, else -1) is appended to
 * $VNOISE_PRELOAD_OUT (a "%p" in it becomes the pid), or written to stderr when that is unset; nothing when no
 * wrapped call was made. Output is written with one write() per line so that threads and processes appending
 * to the same file do not interleave.
 *
 * Per-call trace: with $VNOISE_PRELOAD_TRACE set ("%p" as above), every wrapped call appends a struct
 * vn_app_call to a per-thread buffer of TRACEBUF_RECS records (mpi/tracebuf.h), written to that file (O_APPEND) with one write()
 * when full, when the thread ends and at exit. Unset, the cost is one predictable branch per call.
 *
 * MPI ranks started by `vnoise-guest mpi` ($VNOISE_SOCK) register after MPI_Init and take part in the
 * interval pipeline (protocol/app.h, shared/pipeline): the thread that called MPI_Init closes an interval on
 * entry of each collective (and of MPI_Wait/MPI_Waitall with $VNOISE_MPI_WAIT=1), writes its record into the
 * shared pipeline, filters or reports older intervals when its arrival order says so, and starts the next
 * interval when the call returns.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <mpi.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "mpi/appstat.h"
#include "mpi/pipeline.h"
#include "mpi/tracebuf.h"
#include "cluster/node_send.h"
#include "util/monotime.h"
#include "util/outfile.h"
#include "util/secmem.h"
#include "monitor/tgtdiff.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define PC() ((uint64_t)(uintptr_t)__builtin_return_address(0))
/* the library is built with hidden visibility: only the wrappers interpose */
#define VN_EXPORT __attribute__((visibility("default")))
/*
 * Thread-local state in the static TLS block: a plain load instead of a __tls_get_addr() call per access. The
 * library is meant for LD_PRELOAD (loaded at start, where static TLS is guaranteed); a dlopen() of it may
 * fail for want of static TLS space.
 */
#define TLS_IE __attribute__((tls_model("initial-exec")))

struct tstat {
	struct appstat st;
	int used;
};

static __thread struct tstat t_stat TLS_IE;
static pthread_key_t g_key;
static int g_key_ok;
static int g_rank = -1; /* MPI_COMM_WORLD rank once MPI_Init returned */
static uint32_t g_pid; /* cached for the trace records; refreshed in a forked child */

static int (*real_barrier_wait)(pthread_barrier_t *);
static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_mutex_unlock)(pthread_mutex_t *);
static int (*real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_join)(pthread_t, void **);

/* One diagnostic line on stderr with one write(), so that ranks sharing a terminal do not interleave. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0) {
		/* stderr is all we have */
	}
}

/* $NAME with its "%p" replaced by pid into path; 0, or -1 when unset or too long. */
static int env_path(const char *name, char *path, size_t len)
{
	const char *v = getenv(name), *p;
	int n;

	if (!v || !*v)
		return -1;
	p = strstr(v, "%p");
	if (p)
		n = snprintf(path, len, "%.*s%d%s", (int)(p - v), v, (int)getpid(), p + 2);
	else
		n = snprintf(path, len, "%s", v);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void emit(const struct appstat *s)
{
	char buf[4096], path[512], comm[17] = "";
	int n, fd = 2, close_fd = 0;

	if (getenv("VNOISE_PRELOAD_STATS") && !strcmp(getenv("VNOISE_PRELOAD_STATS"), "0"))
		return; /* vnoise-guest mpi without --stats */
	prctl(PR_GET_NAME, comm, 0, 0, 0);
	n = appstat_json(s, (int)getpid(), (int)gettid(), g_rank, comm, buf, sizeof(buf));
	if (n <= 0)
		return;
	if (getenv("VNOISE_PRELOAD_OUT") && *getenv("VNOISE_PRELOAD_OUT")) {
		if (env_path("VNOISE_PRELOAD_OUT", path, sizeof(path)) < 0)
			return;
		fd = outfile_open(path, O_APPEND, OUTFILE_MODE);
		if (fd < 0)
			return;
		close_fd = 1;
	}
	if (write(fd, buf, (size_t)n) != n) {
		/* nothing to do: the program's own stderr or file is all we have */
	}
	if (close_fd)
		close(fd);
}

/*
 * Trace buffers. A thread gets one on its first traced call from a pool that is never unmapped, so that the
 * exit handler can flush the buffers of threads still running without racing an munmap (records being added
 * meanwhile may be lost or written twice: best effort at exit only). Threads beyond the pool get a private
 * buffer, unmapped at thread end and not flushed at exit if still running.
 */
#define TRACE_POOL 256

static int
    g_trace; /* $VNOISE_PRELOAD_TRACE set and its file open: the one branch of the hot path */
static int g_trace_fd = -1; /* -1 in a forked child until its first flush (atomic) */
static int g_trace_perpid; /* the path has "%p": a forked child writes its own file */
static uint64_t g_trace_lost; /* records not written (atomic) */
static struct tracebuf *g_pool[TRACE_POOL];
static int g_pool_busy[TRACE_POOL]; /* 1 while a thread owns g_pool[i] (atomic) */
static __thread struct tracebuf *t_buf TLS_IE;
static __thread uint32_t t_tid TLS_IE;

static int trace_file(void)
{
	char path[512];

	if (env_path("VNOISE_PRELOAD_TRACE", path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	return outfile_open(path, O_APPEND, OUTFILE_MODE); /* -errno on failure */
}

/* At start: a bad path is said once, and tracing stays off. */
static void trace_open(void)
{
	const char *v = getenv("VNOISE_PRELOAD_TRACE");

	if (!v || !*v)
		return;
	g_trace_perpid = strstr(v, "%p") != NULL;
	g_trace_fd = trace_file();
	if (g_trace_fd < 0) {
		say("libvnoise-preload: trace off: %s: %s", v, outfile_strerror(g_trace_fd));
		g_trace_fd = -1;
		return;
	}
	g_trace = 1;
}

/* The file, opened on first use in a forked child (most children exec or _exit before writing any). */
static int trace_fd(void)
{
	int fd = __atomic_load_n(&g_trace_fd, __ATOMIC_ACQUIRE), none = -1;

	if (fd >= 0)
		return fd;
	fd = trace_file();
	if (fd >= 0 && !__atomic_compare_exchange_n(&g_trace_fd, &none, fd, 0, __ATOMIC_ACQ_REL,
						    __ATOMIC_ACQUIRE)) {
		close(fd); /* another thread opened it first */
		fd = none;
	}
	return fd;
}

static void trace_flush(struct tracebuf *b)
{
	size_t len;
	uint32_t n = tracebuf_count(b);
	int fd;

	if (!n)
		return;
	len = (size_t)n * sizeof(b->rec[0]);
	fd = trace_fd();
	if (fd < 0 || write(fd, b->rec, len) != (ssize_t)len)
		__atomic_fetch_add(&g_trace_lost, n, __ATOMIC_RELAXED);
	b->n = 0;
}

static struct tracebuf *trace_buf_get(void)
{
	struct tracebuf *b;

	for (int i = 0; i < TRACE_POOL; i++) {
		int free_slot = 0;

		if (!__atomic_compare_exchange_n(&g_pool_busy[i], &free_slot, 1, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		b = __atomic_load_n(&g_pool[i], __ATOMIC_ACQUIRE);
		if (!b) {
			b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (b == MAP_FAILED) {
				__atomic_store_n(&g_pool_busy[i], 0, __ATOMIC_RELEASE);
				return NULL;
			}
			b->slot = i;
			__atomic_store_n(&g_pool[i], b, __ATOMIC_RELEASE);
		}
		b->n = 0;
		return b;
	}
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return NULL;
	b->slot = -1;
	return b;
}

static void trace_buf_put(struct tracebuf *b)
{
	trace_flush(b);
	if (b->slot >= 0)
		__atomic_store_n(&g_pool_busy[b->slot], 0, __ATOMIC_RELEASE);
	else
		munmap(b, sizeof(*b));
}

/* Out of line: only reached with tracing on. */
static __attribute__((noinline)) void trace_add(uint32_t ev, uint32_t cpu, uint64_t t0, uint64_t t1,
						uint64_t pc, uint64_t arg)
{
	struct tracebuf *b = t_buf;
	struct vn_app_call c;

	if (!b) {
		b = t_buf = trace_buf_get();
		if (!b) {
			__atomic_fetch_add(&g_trace_lost, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	if (!t_tid)
		t_tid = (uint32_t)gettid();
	c.start_ns = t0;
	c.dur_ns = t1 - t0;
	c.pc = pc;
	c.arg = arg;
	c.ev = ev;
	c.cpu = cpu;
	c.pid = g_pid;
	c.tid = t_tid;
	c.rank = g_rank;
	c.pad = 0;
	if (tracebuf_put(
		b, &c)) { /* full: written out first, and r dropped (counted) if still no room */
		trace_flush(b);
		if (tracebuf_put(b, &c)) {
			__atomic_fetch_add(&g_trace_lost, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	if (tracebuf_full(b))
		trace_flush(b);
}

/* TLS destructor: the thread's line and the rest of its trace. */
static void thread_end(void *arg)
{
	struct tstat *t = arg;

	if (t && t->used) {
		emit(&t->st);
		t->used = 0;
	}
	if (t_buf) {
		trace_buf_put(t_buf);
		t_buf = NULL;
	}
}

static void *must(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		static const char msg[] = "libvnoise-preload: a pthread function is missing\n";

		if (write(2, msg, sizeof(msg) - 1) < 0) {
		}
		abort();
	}
	return f;
}

static void at_fork_child(void);

__attribute__((constructor)) static void init(void)
{
	static int done;

	real_barrier_wait = must("pthread_barrier_wait");
	real_mutex_lock = must("pthread_mutex_lock");
	real_mutex_unlock = must("pthread_mutex_unlock");
	real_cond_wait = must("pthread_cond_wait");
	real_join = must("pthread_join");
	if (done) /* reached again through a wrapper called before the constructor ran */
		return;
	done = 1;
	g_pid = (uint32_t)getpid();
	g_key_ok = pthread_key_create(&g_key, thread_end) == 0;
	trace_open();
	pthread_atfork(NULL, NULL, at_fork_child);
}

__attribute__((destructor)) static void fini(void)
{
	uint64_t lost;

	thread_end(&t_stat); /* the thread that runs exit() */
	for (int i = 0; i < TRACE_POOL; i++) /* threads still running */
		if (__atomic_load_n(&g_pool_busy[i], __ATOMIC_ACQUIRE) && g_pool[i])
			trace_flush(g_pool[i]);
	lost = __atomic_load_n(&g_trace_lost, __ATOMIC_RELAXED);
	if (lost)
		say("libvnoise-preload: pid %u: %llu trace records lost", g_pid,
		    (unsigned long long)lost);
}

/* Entry and exit of a wrapped call: the clock, and the CPU at entry only when tracing. */
struct call {
	uint64_t t0;
	uint32_t cpu;
};

/* The CPU (when tracing), then the clock: clk() is now_ns() or, in a tracked rank's MPI calls, mpi_now(). */
#define CALL_BEGIN(c, clk)                                   \
	do {                                                 \
		(c)->cpu = 0;                                \
		if (unlikely(g_trace))                       \
			(c)->cpu = (uint32_t)sched_getcpu(); \
		(c)->t0 = clk();                             \
	} while (0)

static inline __attribute__((always_inline)) void call_begin(struct call *c)
{
	CALL_BEGIN(c, now_ns);
}

static inline __attribute__((always_inline)) void call_end(const struct call *c, uint32_t ev,
							   uint64_t t1, uint64_t pc, uint64_t arg)
{
	struct tstat *t = &t_stat;

	if (unlikely(!t->used)) {
		t->used = 1;
		if (g_key_ok)
			pthread_setspecific(g_key, t);
	}
	appstat_add(&t->st, ev, t1 - c->t0, pc, arg);
	if (unlikely(g_trace))
		trace_add(ev, c->cpu, c->t0, t1, pc, arg);
}

VN_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	struct call c;
	int rc;

	if (!real_barrier_wait)
		init();
	call_begin(&c);
	rc = real_barrier_wait(b);
	call_end(&c, VN_APP_PTHREAD_BARRIER_WAIT, now_ns(), PC(), (uint64_t)(uintptr_t)b);
	return rc;
}

VN_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct call c;
	int rc;

	if (!real_mutex_lock) /* called while the dynamic linker resolves us: no-op is not safe, resolve */
		real_mutex_lock = must("pthread_mutex_lock");
	call_begin(&c);
	rc = real_mutex_lock(m);
	call_end(&c, VN_APP_PTHREAD_MUTEX_LOCK, now_ns(), PC(), (uint64_t)(uintptr_t)m);
	return rc;
}

VN_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct call c;
	int rc;

	if (!real_mutex_unlock)
		real_mutex_unlock = must("pthread_mutex_unlock");
	call_begin(&c);
	rc = real_mutex_unlock(m);
	call_end(&c, VN_APP_PTHREAD_MUTEX_UNLOCK, now_ns(), PC(), (uint64_t)(uintptr_t)m);
	return rc;
}

VN_EXPORT int pthread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m)
{
	struct call c;
	int rc;

	if (!real_cond_wait)
		init();
	call_begin(&c);
	rc = real_cond_wait(cv, m);
	call_end(&c, VN_APP_PTHREAD_COND_WAIT, now_ns(), PC(), (uint64_t)(uintptr_t)cv);
	return rc;
}

VN_EXPORT int pthread_join(pthread_t th, void **ret)
{
	struct call c;
	int rc;

	if (!real_join)
		init();
	call_begin(&c);
	rc = real_join(th, ret);
	call_end(&c, VN_APP_PTHREAD_JOIN, now_ns(), PC(), (uint64_t)th);
	return rc;
}

/*
 * The real MPI functions, typed after mpi.h's own prototypes. Found lazily: in the global scope after us
 * (RTLD_NEXT, else RTLD_DEFAULT: we define no PMPI_* ourselves), else in a libmpi the program dlopen()ed
 * locally.
 */
static struct {
	__typeof__(PMPI_Init) *init;
	__typeof__(PMPI_Init_thread) *init_thread;
	__typeof__(PMPI_Finalize) *finalize;
	__typeof__(PMPI_Barrier) *barrier;
	__typeof__(PMPI_Allreduce) *allreduce;
	__typeof__(PMPI_Alltoall) *alltoall;
	__typeof__(PMPI_Reduce) *reduce;
	__typeof__(PMPI_Bcast) *bcast;
	__typeof__(PMPI_Allgather) *allgather;
	__typeof__(PMPI_Wait) *wait;
	__typeof__(PMPI_Waitall) *waitall;
	__typeof__(PMPI_Type_size) *type_size;
	__typeof__(PMPI_Comm_rank) *comm_rank;
	__typeof__(PMPI_Comm_size) *comm_size;
	MPI_Comm world;
} mpi;
static int mpi_ok; /* every pointer above is set (release/acquire) */

static void *mpi_sym(const char *name, int data)
{
	static const char *const libs[] = { "libmpi.so.40", "libmpi.so" };
	/*
	 * A variable may have been copied into the executable (copy relocation), and then every user, libmpi
	 * included, uses that copy: the global lookup finds it first. Functions: the next definition after us.
	 */
	void *f = dlsym(data ? RTLD_DEFAULT : RTLD_NEXT, name);

	if (!f && !data)
		f = dlsym(RTLD_DEFAULT, name);
	for (size_t i = 0; !f && i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);

		if (h) {
			f = dlsym(h, name);
			dlclose(h); /* NOLOAD took a reference; the program still holds its own */
		}
	}
	if (!f) {
		say("libvnoise-preload: %s not found: the program calls MPI without libmpi", name);
		abort();
	}
	return f;
}

/* Idempotent: concurrent first calls store the same values. */
static __attribute__((noinline)) void mpi_resolve(void)
{
	mpi.init = mpi_sym("PMPI_Init", 0);
	mpi.init_thread = mpi_sym("PMPI_Init_thread", 0);
	mpi.finalize = mpi_sym("PMPI_Finalize", 0);
	mpi.barrier = mpi_sym("PMPI_Barrier", 0);
	mpi.allreduce = mpi_sym("PMPI_Allreduce", 0);
	mpi.alltoall = mpi_sym("PMPI_Alltoall", 0);
	mpi.reduce = mpi_sym("PMPI_Reduce", 0);
	mpi.bcast = mpi_sym("PMPI_Bcast", 0);
	mpi.allgather = mpi_sym("PMPI_Allgather", 0);
	mpi.wait = mpi_sym("PMPI_Wait", 0);
	mpi.waitall = mpi_sym("PMPI_Waitall", 0);
	mpi.type_size = mpi_sym("PMPI_Type_size", 0);
	mpi.comm_rank = mpi_sym("PMPI_Comm_rank", 0);
	mpi.comm_size = mpi_sym("PMPI_Comm_size", 0);
#ifdef OPEN_MPI
	/* MPI_COMM_WORLD is the address of a libmpi variable: naming it would make us link libmpi */
	mpi.world = (MPI_Comm)mpi_sym("ompi_mpi_comm_world", 1);
#else
	mpi.world = MPI_COMM_WORLD;
#endif
	__atomic_store_n(&mpi_ok, 1, __ATOMIC_RELEASE);
}

/* Message bytes of a successful call (the datatype is then valid), 0 when unknown. */
static inline uint64_t mpi_bytes(int rc, int count, MPI_Datatype type)
{
	int sz;

	if (rc != MPI_SUCCESS || count <= 0 || mpi.type_size(type, &sz) != MPI_SUCCESS || sz < 0)
		return 0;
	return (uint64_t)count * (uint64_t)sz;
}

/*
 * Interval tracking, in a registered rank, by the thread that called MPI_Init (t_iv): other threads' MPI
 * calls only count stats. Everything below the registration is on the hot path of a closing call: no
 * allocation, no lock, no stdio.
 */
enum { IV_OFF = 0, IV_TRACKED = 1, IV_UNREGISTERED = 2 };

static struct {
	struct vn_pipe *p;
	const struct vn_tgt *live; /* the rank's counters, updated by the kernel; NULL: no array */
	/* live's noise (ns[]) and causes at the start of the current interval (the rest is not kept) */
	struct vn_tgt snap;
	uint64_t n; /* current interval */
	uint64_t start_ns;
	uint64_t instr; /* instruction counter at the start, VN_PIPE_NO_INSTR without a PMU */
	uint32_t rank;
	int wait_closes; /* $VNOISE_MPI_WAIT=1 */
	int done; /* MPI_Finalize was called */
	int perf_fd;
	int sock; /* registration socket, kept open: its end tells the monitor the rank left */
	uint32_t out; /* enum vn_pipe_out */
	int out_fd;
	int copy_fd; /* VN_PIPE_OUT_REPORT with vnoise-guest mpi -o: the JSON lines too */
	struct sockaddr_storage sa; /* VN_PIPE_OUT_UDP */
	socklen_t salen;
} g_iv = { .perf_fd = -1, .sock = -1, .out_fd = -1, .copy_fd = -1 };
static __thread int t_iv TLS_IE; /* IV_* for this thread */

/*
 * fclock: CLOCK_MONOTONIC for the tracked thread's MPI calls read from the TSC (x86-64, and only when the
 * kernel's clocksource is the TSC): one RDTSC (~22 ns in this VM) instead of clock_gettime() (~60 ns: an
 * ordered TSC read and the vDSO's conversion), twice per closing call. ns = ns0 + (tsc - tsc0) * mult >> 32,
 * the line through the last two anchors (a TSC read on each side of a clock_gettime(), less than
 * FCLOCK_PAIR_TICKS apart). The first two anchors frame the registration (at least FCLOCK_FIRST_NS: the
 * rank waits out the rest), then a new anchor ends each span, the spans doubling up to FCLOCK_SPAN_NS: the
 * rate follows the kernel's (NTP) and the values stay within ~0.1 us of the real clock, never below the last
 * value returned. The real clock when the TSC went back or jumped (a rate 0.1% off the last one) until the
 * next anchor, and always with VNOISE_PRELOAD_TSC=0. One thread only: the one that called MPI_Init (t_iv).
 */
#define FCLOCK_FIRST_NS 1000000ull /* 1 ms between the first two anchors */
#define FCLOCK_SPAN_NS 10000000ull /* at most 10 ms between anchors */
#define FCLOCK_PAIR_TICKS 2000ull /* ~1 us: a pair further apart was interrupted */

static struct {
	uint64_t tsc0, ns0; /* the last anchor */
	uint64_t mult; /* ns per tick << 32; 0: not calibrated */
	uint64_t span; /* ticks from the anchor to the next one */
	uint64_t span_ns; /* the same in ns */
	uint64_t last; /* the last value returned */
	int on;
} g_fc;

#if defined(__x86_64__)
#include <x86intrin.h>

/* A TSC read and CLOCK_MONOTONIC at the same instant; -1 when every try was interrupted. */
static int fclock_pair(uint64_t *tsc, uint64_t *ns)
{
	for (int i = 0; i < 8; i++) {
		uint64_t a = __rdtsc(), n = now_ns(), b = __rdtsc();

		if (b > a && b - a < FCLOCK_PAIR_TICKS) {
			*tsc = a + (b - a) / 2;
			*ns = n;
			return 0;
		}
	}
	return -1;
}

static inline uint64_t fclock_clamp(uint64_t ns)
{
	if (ns < g_fc.last)
		ns = g_fc.last;
	g_fc.last = ns;
	return ns;
}

/* A new anchor (tsc, ns): the rate since the last one when plausible, and the next span. */
static void fclock_anchor(uint64_t tsc, uint64_t ns)
{
	uint64_t m = 0;

	if (tsc > g_fc.tsc0 && ns > g_fc.ns0)
		m = (uint64_t)(((unsigned __int128)(ns - g_fc.ns0) << 32) / (tsc - g_fc.tsc0));
	if (g_fc.mult && (m > g_fc.mult ? m - g_fc.mult : g_fc.mult - m) > g_fc.mult / 1000)
		m = 0;
	if (m) {
		g_fc.span_ns = 2 * (ns - g_fc.ns0);
		if (g_fc.span_ns > FCLOCK_SPAN_NS)
			g_fc.span_ns = FCLOCK_SPAN_NS;
	}
	g_fc.mult = m;
	g_fc.span = m ? (uint64_t)(((unsigned __int128)g_fc.span_ns << 32) / m) : 0;
	g_fc.tsc0 = tsc;
	g_fc.ns0 = ns;
}

/* Before registering: the first anchor ($VNOISE_PRELOAD_TSC=0, or another clocksource: none). */
static void fclock_start(void)
{
	const char *e = getenv("VNOISE_PRELOAD_TSC");
	char cs[16] = "";
	int fd;
	ssize_t k = -1;

	if (e && !strcmp(e, "0"))
		return;
	fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		k = read(fd, cs, sizeof(cs) - 1);
		close(fd);
	}
	if (k >= 4 && !strncmp(cs, "tsc\n", 4) && !fclock_pair(&g_fc.tsc0, &g_fc.ns0))
		g_fc.span_ns = FCLOCK_FIRST_NS;
}

/* Registered: the second anchor, FCLOCK_FIRST_NS after the first, gives the first rate. */
static void fclock_init(void)
{
	uint64_t tsc, ns;

	if (!g_fc.span_ns)
		return;
	while (now_ns() - g_fc.ns0 < FCLOCK_FIRST_NS)
		;
	if (fclock_pair(&tsc, &ns) < 0)
		return;
	fclock_anchor(tsc, ns);
	g_fc.on = g_fc.mult != 0;
}

/* The span is over, the TSC went back, or no rate: the real clock, and a new anchor when due. */
static __attribute__((noinline)) uint64_t fclock_slow(void)
{
	uint64_t tsc, ns = now_ns();

	/* the span in ticks ends a little early or late with the rate: half of it in ns is enough */
	if (ns - g_fc.ns0 >= g_fc.span_ns / 2 && !fclock_pair(&tsc, &ns))
		fclock_anchor(tsc, ns);
	return fclock_clamp(ns);
}

static inline uint64_t fclock_now(void)
{
	uint64_t d;

	if (unlikely(!g_fc.mult))
		return fclock_slow();
	d = __rdtsc() - g_fc.tsc0;
	if (unlikely(d >= g_fc.span))
		return fclock_slow();
	return fclock_clamp(g_fc.ns0 + (uint64_t)(((unsigned __int128)d * g_fc.mult) >> 32));
}
#else
static void fclock_start(void)
{
}

static void fclock_init(void)
{
}

static inline uint64_t fclock_now(void)
{
	return now_ns();
}
#endif

/* The clock of a wrapped MPI call: fclock in the tracked thread, else CLOCK_MONOTONIC read as usual. */
static inline uint64_t mpi_now(void)
{
	return t_iv == IV_TRACKED && g_fc.on ? fclock_now() : now_ns();
}

static uint64_t instr_read(void)
{
	uint64_t v;

	if (g_iv.perf_fd < 0 || read(g_iv.perf_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return VN_PIPE_NO_INSTR;
	return v;
}

static inline int iv_closes(uint32_t ev)
{
	return ev < VN_APP_MPI_WAIT || g_iv.wait_closes;
}

/* Whether two noise vectors (vn_tgt.ns) are equal. */
static inline int ns_same(const __u64 *a, const __u64 *b)
{
	uint64_t x = 0;

	for (int c = 0; c < VN_CLASS_MAX; c++)
		x |= a[c] ^ b[c];
	return !x;
}

/*
 * The rank's counters as they are now into g_iv.snap. The kernel adds to ns[] before it touches a cause, so
 * when ns[] did not move since the last snapshot (no noise: the common case of a short call) neither did the
 * causes, and the 128 bytes of causes are not copied again.
 */
static void iv_snap(void)
{
	__u64 ns[VN_CLASS_MAX];

	memcpy(ns, g_iv.live->ns, sizeof(ns));
	if (ns_same(ns, g_iv.snap.ns))
		return;
	memcpy(g_iv.snap.ns, ns, sizeof(ns));
	memcpy(g_iv.snap.cause, g_iv.live->cause, sizeof(g_iv.snap.cause));
}

/* Start interval g_iv.n at t (exit of the call that closed the previous one). */
static void iv_open(uint64_t t)
{
	if (t_iv != IV_TRACKED)
		return;
	g_iv.start_ns = t;
	if (g_iv.live)
		iv_snap();
	if (g_iv.perf_fd >= 0)
		g_iv.instr = instr_read();
}

/* Formats and writes or sends the report of interval n; counts it. */
static void iv_report(struct vn_pipe *p, uint64_t n)
{
	static char buf[65536];
	uint64_t t0 = now_ns();
	int len, ok = 0;

	if (g_iv.out == VN_PIPE_OUT_NONE)
		return;
	if (g_iv.out ==
	    VN_PIPE_OUT_REPORT) { /* datagrams to the collector: node_send counts errors */
		if (!node_send_report(p, n, g_iv.out_fd))
			__atomic_fetch_add(&p->h.reported, 1, __ATOMIC_RELAXED);
		if (g_iv.copy_fd >= 0) {
			len = pipeline_json(p, n, buf, sizeof(buf));
			if (len <= 0 || write(g_iv.copy_fd, buf, (size_t)len) != len)
				__atomic_fetch_add(&p->h.out_errors, 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&p->h.report_ns, now_ns() - t0, __ATOMIC_RELAXED);
		return;
	}
	len = pipeline_json(p, n, buf, sizeof(buf));
	if (len > 0 && g_iv.out == VN_PIPE_OUT_UDP) {
		size_t dlen = (size_t)len - (buf[len - 1] == '\n'); /* one datagram, no newline */

		ok = sendto(g_iv.out_fd, buf, dlen, MSG_DONTWAIT | MSG_NOSIGNAL,
			    (struct sockaddr *)&g_iv.sa, g_iv.salen) == (ssize_t)dlen;
	} else if (len > 0) {
		ok = write(g_iv.out_fd, buf, (size_t)len) == len;
	}
	__atomic_fetch_add(ok ? &p->h.reported : &p->h.out_errors, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&p->h.report_ns, now_ns() - t0, __ATOMIC_RELAXED);
}

/* No noise in r (stores only what changed: the record's lines stay shared with the filtering rank). */
static void iv_quiet(struct vn_pipe_iv *r)
{
	static const __u64 zero[VN_CLASS_MAX];
	static const char nocomm[VN_COMM_LEN];

	if (!ns_same(r->noise_ns, zero))
		memset(r->noise_ns, 0, sizeof(r->noise_ns));
	if (r->cause_ns)
		r->cause_ns = 0;
	if (r->cause_id)
		r->cause_id = 0;
	if (r->cause_cls != VN_CLASS_NONE)
		r->cause_cls = VN_CLASS_NONE;
	if (memcmp(r->cause_comm, nocomm, sizeof(nocomm)))
		memset(r->cause_comm, 0, sizeof(r->cause_comm));
}

/* The rank's noise since the snapshot into r, with the cause that grew most. */
static void iv_noise(struct vn_pipe_iv *r)
{
	const struct vn_tgt_cause *best = NULL;
	uint64_t best_ns = 0;
	struct {
		__u64 ns[VN_CLASS_MAX];
		struct vn_tgt_cause cause[VN_TGT_CAUSES];
	} now;

	if (!g_iv.live) {
		iv_quiet(r);
		return;
	}
	/* plain loads of counters the kernel updates meanwhile: a torn read only moves noise between intervals */
	memcpy(now.ns, g_iv.live->ns, sizeof(now.ns));
	if (ns_same(now.ns, g_iv.snap.ns)) { /* no noise since the snapshot: no cause grew either */
		iv_quiet(r);
		return;
	}
	memcpy(now.cause, g_iv.live->cause, sizeof(now.cause));
	for (int c = 0; c < VN_CLASS_MAX; c++)
		r->noise_ns[c] = now.ns[c] > g_iv.snap.ns[c] ? now.ns[c] - g_iv.snap.ns[c] : 0;
	for (int i = 0; i < VN_TGT_CAUSES; i++) {
		const struct vn_tgt_cause *l = &now.cause[i];
		uint64_t grew = tgt_cause_grew(l, &g_iv.snap.cause[i]);

		if (grew > best_ns) {
			best_ns = grew;
			best = l;
		}
	}
	r->cause_ns = best_ns;
	r->cause_id = best ? best->id : 0;
	r->cause_cls = best ? best->cls : VN_CLASS_NONE;
	if (best)
		memcpy(r->cause_comm, best->comm, sizeof(r->cause_comm));
	else
		memset(r->cause_comm, 0, sizeof(r->cause_comm));
}

/* Store v in *x only when it differs: a line nobody changes stays shared with the rank that reads it. */
#define IV_SET(x, v)                    \
	do {                            \
		__typeof__(x) v_ = (v); \
		if ((x) != v_)          \
			(x) = v_;       \
	} while (0)

/*
 * Filter time (h.filter_ns): a clock read costs ~60 ns in a VM, as much as a quiet filter. The first
 * FILTER_TIMED intervals are timed, then one in FILTER_EVERY, its time counted FILTER_EVERY times.
 */
#define FILTER_TIMED 16
#define FILTER_EVERY 16

/* Filter interval n - 1 (journal it in DTL mode), timing some of the calls into h.filter_ns. */
static void iv_filter(struct vn_pipe *p, uint64_t n)
{
	uint64_t w = n < FILTER_TIMED ? 1 : n % FILTER_EVERY ? 0 : FILTER_EVERY, t0 = 0;

	if (w)
		t0 = now_ns();
	pipeline_filter(p, n - 1);
	/* DTL mode: vnoise-guest reports, once the host's horizon has passed the interval */
	if (__atomic_load_n(&p->h.flags, __ATOMIC_RELAXED) & VN_PIPE_F_DEFER)
		pipeline_journal(p, n - 1);
	if (w)
		__atomic_fetch_add(&p->h.filter_ns, (now_ns() - t0) * w, __ATOMIC_RELAXED);
}

/*
 * Close interval g_iv.n at end (entry of the closing call ev): write the rank's record, take a ticket, and do
 * the pipeline's work that the arrival order gives this rank.
 */
static __attribute__((noinline)) void iv_close(uint32_t ev, uint64_t end)
{
	struct vn_pipe *p = g_iv.p;
	uint64_t n = g_iv.n, instr;
	struct vn_pipe_iv *r;
	int t;

	if (g_iv.done)
		return;
	if (t_iv == IV_UNREGISTERED) {
		__atomic_fetch_add(&p->h.unregistered, 1, __ATOMIC_RELAXED);
		return;
	}
	r = &pipeline_slot(p, n)->r[g_iv.rank];
	/* the lines written below for sure (the ticket, interval and times), all fetched at once */
	pipeline_prefetch_w(&pipeline_slot(p, n)->ticket);
	pipeline_prefetch_w(r);
	pipeline_prefetch_w((const char *)&r->end_ns + sizeof(r->end_ns) - 1);
	r->start_ns = g_iv.start_ns;
	r->end_ns = end;
	iv_noise(r);
	instr = g_iv.perf_fd >= 0 ? instr_read() : VN_PIPE_NO_INSTR;
	IV_SET(r->instructions, instr == VN_PIPE_NO_INSTR || g_iv.instr == VN_PIPE_NO_INSTR
				    ? VN_PIPE_NO_INSTR
				    : instr - g_iv.instr);
	IV_SET(r->verdict, VN_VERDICT_NONE);
	IV_SET(r->delay_ns, 0);
	IV_SET(r->ev, (uint16_t)ev);
	IV_SET(r->cpu, (uint32_t)sched_getcpu());
	IV_SET(r->pid, g_pid);
	r->interval = n + 1;
	t = pipeline_arrive(p, n);
	/*
	 * The second rank to arrive filters while it waits; with fewer than 3 ranks the second is the last, whose
	 * work would delay everyone, so the first (which also reports) does it.
	 */
	if (n >= 1 && t == (__atomic_load_n(&p->h.nranks, __ATOMIC_RELAXED) >= 3 ? 1 : 0))
		iv_filter(p, n);
	if (t == 0 && n >= 2 && pipeline_take_report(p, n - 2))
		iv_report(p, n - 2);
	g_iv.n = n + 1;
}

/*
 * Entry and exit of a wrapped MPI call. The clock at entry closes the interval; the call's own time (stats,
 * trace) starts after the tracking work, as before the real call; the clock at exit ends the call and opens
 * the next interval. In a tracked rank these are fclock reads (a TSC read each).
 */
static inline __attribute__((always_inline)) void mpi_begin(struct call *c, uint32_t ev)
{
	if (unlikely(!__atomic_load_n(&mpi_ok, __ATOMIC_ACQUIRE)))
		mpi_resolve();
	CALL_BEGIN(c, mpi_now);
	if (unlikely(t_iv) && iv_closes(ev)) {
		iv_close(ev, c->t0);
		c->t0 = mpi_now();
	}
}

static inline __attribute__((always_inline)) void mpi_end(const struct call *c, uint32_t ev,
							  uint64_t t1, uint64_t pc, uint64_t arg)
{
	call_end(c, ev, t1, pc, arg);
	if (unlikely(t_iv) && iv_closes(ev))
		iv_open(t1);
}

/* Registration: connect, send the request, receive the reply and its descriptors. */
static int reg_exchange(const char *path, int rank, int size, struct vn_reg_rep *rep, int *fds,
			int *nfds, char *why, size_t wlen)
{
	struct vn_reg_req req = { VN_REG_MAGIC, VN_REG_VERSION, rank, size, g_pid, 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 10, 0 }; /* a stuck monitor must not hang MPI_Init forever */
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} cb;
	struct iovec iov = { rep, sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	size_t got = 0;
	ssize_t k;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, wlen, "socket path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, wlen, "socket: %s", strerror(errno));
		return -1;
	}
	g_iv.sock = fd;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(why, wlen, "connect %s: %s", path, strerror(errno));
		return -1;
	}
	if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req)) {
		snprintf(why, wlen, "send to %s: %s", path, strerror(errno));
		return -1;
	}
	memset(rep, 0, sizeof(*rep));
	do
		k = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k > 0) {
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t nf;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			nf = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nf; i++) {
				int f;

				memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (*nfds < 2)
					fds[(*nfds)++] = f;
				else
					close(f);
			}
		}
		got = (size_t)k;
	}
	while (k > 0 &&
	       got < sizeof(*rep)) { /* a stream may split the reply; fds come with its start */
		k = recv(fd, (char *)rep + got, sizeof(*rep) - got, 0);
		if (k > 0)
			got += (size_t)k;
	}
	if (k < 0) {
		snprintf(why, wlen, "no reply from %s: %s", path, strerror(errno));
		return -1;
	}
	if (got < sizeof(*rep)) {
		snprintf(why, wlen, "short reply from %s (%zu bytes)", path, got);
		return -1;
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		snprintf(why, wlen, "reply carried too many descriptors");
		return -1;
	}
	return 0;
}

/* "ADDR:PORT" or "[ADDR6]:PORT", numeric only, into g_iv.sa and a datagram socket. */
static int out_udp(const char *spec, char *why, size_t wlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV },
			*ai = NULL;
	char host[256];
	const char *port;
	size_t hl;
	int rc;

	if (spec[0] == '[') {
		const char *e = strchr(spec, ']');

		if (!e || e[1] != ':')
			goto bad;
		hl = (size_t)(e - spec - 1);
		memcpy(host, spec + 1, hl);
		port = e + 2;
	} else {
		const char *e = strrchr(spec, ':');

		if (!e ||
		    memchr(spec, ':', (size_t)(e - spec))) /* a bare IPv6 address needs brackets */
			goto bad;
		hl = (size_t)(e - spec);
		memcpy(host, spec, hl);
		port = e + 1;
	}
	host[hl] = 0;
	if (!hl || !*port)
		goto bad;
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(why, wlen, "UDP output %s: %s", spec, gai_strerror(rc));
		return -1;
	}
	g_iv.out_fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (g_iv.out_fd < 0 || ai->ai_addrlen > sizeof(g_iv.sa)) {
		snprintf(why, wlen, "UDP output %s: socket: %s", spec, strerror(errno));
		freeaddrinfo(ai);
		return -1;
	}
	memcpy(&g_iv.sa, ai->ai_addr, ai->ai_addrlen);
	g_iv.salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
bad:
	snprintf(why, wlen, "UDP output '%s' is not ADDR:PORT or [ADDR6]:PORT", spec);
	return -1;
}

/* The report output named by the pipe header (read once: other ranks may write the pipe meanwhile). */
static int out_setup(const struct vn_pipe_hdr *h, char *why, size_t wlen)
{
	char path[sizeof(h->out_path)];

	g_iv.out = h->out;
	memcpy(path, h->out_path, sizeof(path));
	if ((g_iv.out == VN_PIPE_OUT_FILE || g_iv.out == VN_PIPE_OUT_UDP ||
	     g_iv.out == VN_PIPE_OUT_REPORT) &&
	    (!memchr(path, 0, sizeof(path)) || !path[0])) {
		snprintf(why, wlen, "output path in the pipeline is empty or not terminated");
		return -1;
	}
	switch (g_iv.out) {
	case VN_PIPE_OUT_NONE:
		return 0;
	case VN_PIPE_OUT_STDOUT:
		/* vnoise-guest's own stdout, apart from the job's (which is its stderr) */
		g_iv.out_fd = path[0] && memchr(path, 0, sizeof(path))
				  ? open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY)
				  : 1;
		if (g_iv.out_fd < 0) {
			snprintf(why, wlen, "output %s: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	case VN_PIPE_OUT_FILE:
		g_iv.out_fd = outfile_open(path, O_APPEND, OUTFILE_MODE);
		if (g_iv.out_fd < 0) {
			snprintf(why, wlen, "output %s: %s", path, outfile_strerror(g_iv.out_fd));
			g_iv.out_fd = -1;
			return -1;
		}
		return 0;
	case VN_PIPE_OUT_UDP:
		return out_udp(path, why, wlen);
	case VN_PIPE_OUT_REPORT: /* connected: only the collector's replies (none) come back */
		if (out_udp(path, why, wlen))
			return -1;
		if (connect(g_iv.out_fd, (struct sockaddr *)&g_iv.sa, g_iv.salen)) {
			snprintf(why, wlen, "collector %s: connect: %s", path, strerror(errno));
			return -1;
		}
		if (h->copy_pid) {
			char copy[64];

			snprintf(copy, sizeof(copy), "/proc/%u/fd/%u", h->copy_pid, h->copy_fd);
			g_iv.copy_fd = open(copy, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
			if (g_iv.copy_fd < 0) {
				snprintf(why, wlen, "output %s: %s", copy, strerror(errno));
				return -1;
			}
		}
		return 0;
	}
	snprintf(why, wlen, "unknown output kind %u in the pipeline", g_iv.out);
	return -1;
}

static int perf_instr_open(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_HARDWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_HW_INSTRUCTIONS,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};

	/* no PMU (ENOENT in most VMs) or not allowed: instructions stay unknown, no syscall per interval */
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The reply's header: magic, descriptors as announced, a pipeline memfd at least as big as it says. */
static int reg_check(const struct vn_reg_rep *rep, const int *fds, int nfds, char *why, size_t wlen)
{
	struct stat st;

	if (rep->magic != VN_REG_MAGIC) {
		snprintf(why, wlen, "bad reply magic 0x%x", rep->magic);
		return -1;
	}
	if (nfds < 1 || (rep->nfds != 1 && rep->nfds != 2) || (int)rep->nfds != nfds) {
		snprintf(why, wlen, "reply announces %u descriptors, %d received", rep->nfds, nfds);
		if (rep->status)
			snprintf(why, wlen, "refused by the monitor: %s", strerror(-rep->status));
		return -1;
	}
	if (rep->pipe_size < sizeof(struct vn_pipe) || fstat(fds[0], &st) < 0 ||
	    (uint64_t)st.st_size < rep->pipe_size) { /* a short memfd would SIGBUS us later */
		snprintf(why, wlen, "pipeline size %llu is too small",
			 (unsigned long long)rep->pipe_size);
		return -1;
	}
	return 0;
}

/* Map the pipeline into g_iv.p if its magic and version are ours. */
static int reg_map_pipe(int fd, char *why, size_t wlen)
{
	struct vn_pipe *pm =
	    mmap(NULL, sizeof(struct vn_pipe), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (pm == MAP_FAILED) {
		snprintf(why, wlen, "mmap pipeline: %s", strerror(errno));
		return -1;
	}
	/* the header holds the cluster key: not in this rank's core dump (best effort, as madvise is) */
	(void)!secmem_dontdump(&pm->h, sizeof(pm->h));
	if (pm->h.magic != VN_PIPE_MAGIC || pm->h.version != VN_PIPE_VERSION) {
		snprintf(why, wlen, "pipeline magic 0x%x version %u, want 0x%x %u", pm->h.magic,
			 pm->h.version, VN_PIPE_MAGIC, VN_PIPE_VERSION);
		munmap(pm, sizeof(struct vn_pipe));
		return -1;
	}
	g_iv.p = pm;
	return 0;
}

/* Map the kernel's target array (read only) and point g_iv.live at the rank's entry. */
static int reg_map_targets(const struct vn_reg_rep *rep, int fd, char *why, size_t wlen)
{
	void *tm;

	if (rep->tgt >= VN_TGT_MAX || rep->tgt_size < sizeof(struct vn_tgt) ||
	    rep->tgt_size / sizeof(struct vn_tgt) <= rep->tgt) {
		snprintf(why, wlen, "target %u outside an array of %llu bytes", rep->tgt,
			 (unsigned long long)rep->tgt_size);
		return -1;
	}
	tm = mmap(NULL, rep->tgt_size, PROT_READ, MAP_SHARED, fd, 0);
	if (tm == MAP_FAILED) {
		snprintf(why, wlen, "mmap targets: %s", strerror(errno));
		return -1;
	}
	g_iv.live = (const struct vn_tgt *)tm + rep->tgt;
	return 0;
}

/* The reply's resources into g_iv: pipeline, target counters, report output, instruction counter. */
static int reg_attach(int rank, const struct vn_reg_rep *rep, const int *fds, int nfds, char *why,
		      size_t wlen)
{
	if (reg_check(rep, fds, nfds, why, wlen) || reg_map_pipe(fds[0], why, wlen))
		return -1;
	/* from here a failure leaves the rank counting in h.unregistered */
	if (rep->status) {
		snprintf(why, wlen, "refused by the monitor: %s", strerror(-rep->status));
		return -1;
	}
	if (rank < 0 || rank >= VN_PIPE_RANKS) {
		snprintf(why, wlen, "rank %d beyond the pipeline's %d", rank, VN_PIPE_RANKS);
		return -1;
	}
	if (nfds == 2 && reg_map_targets(rep, fds[1], why, wlen))
		return -1;
	if (out_setup(&g_iv.p->h, why, wlen) < 0)
		return -1;
	g_iv.perf_fd = perf_instr_open();
	g_iv.rank = (uint32_t)rank;
	g_iv.wait_closes = getenv("VNOISE_MPI_WAIT") && !strcmp(getenv("VNOISE_MPI_WAIT"), "1");
	g_iv.n = 0;
	return 0;
}

/* Registered: this thread is tracked from now on. */
static void iv_tracked(void)
{
	struct timespec nap = { 0, 1000 };

	t_iv = IV_TRACKED;
	/*
	 * The kernel helper learns that a task is a target when it is switched in. A rank pinned to its CPU
	 * that busy-polls never is: leave the CPU once, now that we are a target.
	 */
	if (g_iv.live)
		nanosleep(&nap, NULL);
}

/*
 * Not registered: one line on stderr, the target mapping and the output undone. With a valid pipeline the
 * rank counts its synchronisation calls in h.unregistered and keeps the socket (the monitor knows the rank);
 * without one it runs untracked.
 */
static void iv_untracked(int rank, const char *why, const struct vn_reg_rep *rep)
{
	say("libvnoise-preload: rank %d: not tracked: %s", rank, why);
	if (g_iv.live) { /* mapped by reg_map_targets(): rep->tgt is inside the array */
		munmap((void *)(g_iv.live - rep->tgt), rep->tgt_size);
		g_iv.live = NULL;
	}
	if (g_iv.out_fd > 2)
		close(g_iv.out_fd);
	if (g_iv.copy_fd > 2)
		close(g_iv.copy_fd);
	g_iv.out_fd = g_iv.copy_fd = -1;
	if (g_iv.p) {
		t_iv = IV_UNREGISTERED;
		return;
	}
	if (g_iv.sock >= 0)
		close(g_iv.sock);
	g_iv.sock = -1;
}

/*
 * After MPI_Init: register with the monitor named by $VNOISE_SOCK and start interval 0 on this thread. On
 * failure one line on stderr and the rank runs untracked; with a valid pipeline but a refused or unusable
 * registration, the rank still counts its synchronisation calls in h.unregistered.
 */
static void iv_register(int rank, int size)
{
	const char *path = getenv("VNOISE_SOCK");
	struct vn_reg_rep rep = { 0 };
	char why[400] = "";
	int fds[2] = { -1, -1 }, nfds = 0, ok;

	if (!path || !*path)
		return;
	fclock_start();
	ok = reg_exchange(path, rank, size, &rep, fds, &nfds, why, sizeof(why)) >= 0 &&
	     !reg_attach(rank, &rep, fds, nfds, why, sizeof(why));
	for (int i = 0; i < 2; i++) /* the mappings stay valid without the descriptors */
		if (fds[i] >= 0)
			close(fds[i]);
	if (ok) {
		fclock_init();
		iv_tracked();
	} else {
		iv_untracked(rank, why, &rep);
	}
}

static void mpi_started(void)
{
	static int done;
	int rank = -1, size = 0;

	if (done) /* MPI_Init_thread reached through MPI_Init, or twice by mistake */
		return;
	done = 1;
	if (mpi.comm_rank(mpi.world, &rank) != MPI_SUCCESS ||
	    mpi.comm_size(mpi.world, &size) != MPI_SUCCESS)
		return;
	g_rank = rank;
	iv_register(rank, size);
	iv_open(mpi_now()); /* interval 0 */
}

/* A forked child is not the rank: fresh stats, no pipeline, its own trace file. */
static void at_fork_child(void)
{
	g_pid = (uint32_t)getpid();
	t_tid = 0;
	memset(&t_stat.st, 0, sizeof(t_stat.st));
	if (t_buf)
		t_buf->n = 0;
	g_trace_lost = 0;
	if (g_trace && g_trace_perpid) {
		close(g_trace_fd);
		g_trace_fd = -1;
	}
	g_rank = -1;
	t_iv = IV_OFF;
	g_iv.done = 1;
	if (g_iv.sock >= 0)
		close(g_iv.sock);
	if (g_iv.perf_fd >= 0)
		close(g_iv.perf_fd);
	if (g_iv.out_fd > 2)
		close(g_iv.out_fd);
	if (g_iv.copy_fd > 2)
		close(g_iv.copy_fd);
	g_iv.sock = g_iv.perf_fd = g_iv.out_fd = g_iv.copy_fd = -1;
}

VN_EXPORT int MPI_Init(int *argc, char ***argv)
{
	int rc;

	if (!__atomic_load_n(&mpi_ok, __ATOMIC_ACQUIRE))
		mpi_resolve();
	rc = mpi.init(argc, argv);
	if (rc == MPI_SUCCESS)
		mpi_started();
	return rc;
}

VN_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc;

	if (!__atomic_load_n(&mpi_ok, __ATOMIC_ACQUIRE))
		mpi_resolve();
	rc = mpi.init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		mpi_started();
	return rc;
}

VN_EXPORT int MPI_Finalize(void)
{
	if (!__atomic_load_n(&mpi_ok, __ATOMIC_ACQUIRE))
		mpi_resolve();
	/* the last intervals stay in the pipeline: vnoise-guest flushes them after the job */
	g_iv.done = 1;
	t_iv = IV_OFF;
	return mpi.finalize();
}

VN_EXPORT int MPI_Barrier(MPI_Comm comm)
{
	struct call c;
	int rc;

	mpi_begin(&c, VN_APP_MPI_BARRIER);
	rc = mpi.barrier(comm);
	mpi_end(&c, VN_APP_MPI_BARRIER, mpi_now(), PC(), 0);
	return rc;
}

VN_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
			    MPI_Op op, MPI_Comm comm)
{
	struct call c;
	uint64_t t1;
	int rc;

	mpi_begin(&c, VN_APP_MPI_ALLREDUCE);
	rc = mpi.allreduce(sendbuf, recvbuf, count, datatype, op, comm);
	t1 = mpi_now();
	mpi_end(&c, VN_APP_MPI_ALLREDUCE, t1, PC(), mpi_bytes(rc, count, datatype));
	return rc;
}

VN_EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
			   int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	struct call c;
	uint64_t t1, bytes;
	int rc;

	mpi_begin(&c, VN_APP_MPI_ALLTOALL);
	rc = mpi.alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
	t1 = mpi_now();
	/* in place, the send count and type are ignored (and may be invalid): the receive side says it */
	bytes = sendbuf == MPI_IN_PLACE ? mpi_bytes(rc, recvcount, recvtype)
					: mpi_bytes(rc, sendcount, sendtype);
	mpi_end(&c, VN_APP_MPI_ALLTOALL, t1, PC(), bytes);
	return rc;
}

VN_EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
			 MPI_Op op, int root, MPI_Comm comm)
{
	struct call c;
	uint64_t t1;
	int rc;

	mpi_begin(&c, VN_APP_MPI_REDUCE);
	rc = mpi.reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
	t1 = mpi_now();
	mpi_end(&c, VN_APP_MPI_REDUCE, t1, PC(), mpi_bytes(rc, count, datatype));
	return rc;
}

VN_EXPORT int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	struct call c;
	uint64_t t1;
	int rc;

	mpi_begin(&c, VN_APP_MPI_BCAST);
	rc = mpi.bcast(buffer, count, datatype, root, comm);
	t1 = mpi_now();
	mpi_end(&c, VN_APP_MPI_BCAST, t1, PC(), mpi_bytes(rc, count, datatype));
	return rc;
}

VN_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
			    void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	struct call c;
	uint64_t t1, bytes;
	int rc;

	mpi_begin(&c, VN_APP_MPI_ALLGATHER);
	rc = mpi.allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
	t1 = mpi_now();
	bytes = sendbuf == MPI_IN_PLACE ? mpi_bytes(rc, recvcount, recvtype)
					: mpi_bytes(rc, sendcount, sendtype);
	mpi_end(&c, VN_APP_MPI_ALLGATHER, t1, PC(), bytes);
	return rc;
}

VN_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	struct call c;
	int rc;

	mpi_begin(&c, VN_APP_MPI_WAIT);
	rc = mpi.wait(request, status);
	mpi_end(&c, VN_APP_MPI_WAIT, mpi_now(), PC(), (uint64_t)(uintptr_t)request);
	return rc;
}

VN_EXPORT int MPI_Waitall(int count, MPI_Request array_of_requests[],
			  MPI_Status array_of_statuses[])
{
	struct call c;
	int rc;

	mpi_begin(&c, VN_APP_MPI_WAITALL);
	rc = mpi.waitall(count, array_of_requests, array_of_statuses);
	mpi_end(&c, VN_APP_MPI_WAITALL, mpi_now(), PC(), (uint64_t)(uintptr_t)array_of_requests);
	return rc;
}
