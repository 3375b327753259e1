/* SPDX-License-Identifier: MIT */
/*
 * vnoise-guest monitor: passive mode (issue 5). No sampler: the passive kernel helper accumulates the noise
 * that hits target tasks (processes, a cgroup v2, or the user tasks of CPUs) and this loop prints, every
 * period, per target: its run time, its noise by class and its largest causes, as a table or as JSON lines
 * (schema vnoise.monitor/1), then a summary over the whole run.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/log.h"
#include "measure/measure.h"
#include "attrib/merge.h"
#include "monitor/monitor.h"
#include "util/monotime.h"
#include "util/parse.h"
#include "bpf/passive_loader.h"
#include "monitor/tgtdiff.h"

#define MON_MAX 64

struct mon_target {
	int idx; /* passive target index */
	int pid; /* process target; 0 otherwise */
	char name[64]; /* "pid:1234", "cgroup:/sys/fs/cgroup/x", "cpu:3" */
	char comm[17];
	struct vn_tgt prev, first;
	int gone;
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

const char *monitor_cause_name(const struct vn_tgt_cause *c, char *buf, size_t len)
{
	switch (c->cls) {
	case VN_CLASS_THREAD:
		snprintf(buf, len, "thread:%.16s[%u]", c->comm, c->id);
		break;
	case VN_CLASS_IRQ:
		if (c->id >= VN_VEC_BASE)
			snprintf(buf, len, "irq:%s", merge_vector_name(c->id - VN_VEC_BASE));
		else
			snprintf(buf, len, "irq:%u", c->id);
		break;
	case VN_CLASS_SOFTIRQ:
		snprintf(buf, len, "softirq:%s", merge_softirq_name(c->id));
		break;
	default:
		snprintf(buf, len, "%s", merge_class_name(c->cls));
	}
	return buf;
}

uint64_t monitor_noise_total(const struct vn_tgt *t)
{
	uint64_t s = 0;

	for (int c = 1; c < VN_CLASS_MAX; c++)
		s += t->ns[c];
	return s;
}

static void read_comm(int pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(comm, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, (int)len, f))
		comm[strcspn(comm, "\n")] = 0;
	fclose(f);
}

/* Causes of b that grew since a, largest first, into out (at most VN_TGT_CAUSES). */
static int cause_delta(const struct vn_tgt *a, const struct vn_tgt *b, struct vn_tgt_cause *out)
{
	int n = 0;

	for (int i = 0; i < VN_TGT_CAUSES; i++) {
		const struct vn_tgt_cause *c = &b->cause[i];
		uint64_t d = tgt_cause_grew(c, &a->cause[i]);

		if (!d)
			continue;
		out[n] = *c;
		out[n].ns = d;
		for (int j = n; j > 0 && out[j].ns > out[j - 1].ns; j--) {
			struct vn_tgt_cause t = out[j];

			out[j] = out[j - 1];
			out[j - 1] = t;
		}
		n++;
	}
	return n;
}

static void print_json(const struct mon_target *t, int nt, const struct vn_tgt *cur, uint64_t t_ns,
		       uint64_t period_ns, int summary)
{
	printf("{\"schema\":\"vnoise.monitor/1\",\"kind\":\"%s\",\"t_ns\":%llu,\"period_ns\":%llu,"
	       "\"targets\":[",
	       summary ? "summary" : "period", (unsigned long long)t_ns,
	       (unsigned long long)period_ns);
	for (int i = 0; i < nt; i++) {
		const struct vn_tgt *a = summary ? &t[i].first : &t[i].prev, *b = &cur[i];
		struct vn_tgt_cause cs[VN_TGT_CAUSES];
		int n = cause_delta(a, b, cs);
		uint64_t tot = monitor_noise_total(b) - monitor_noise_total(a);
		char nm[64];

		printf(
		    "%s{\"target\":\"%s\",\"comm\":\"%s\",\"run_ns\":%llu,\"noise_total_ns\":%llu,"
		    "\"noise_ns\":{",
		    i ? "," : "", t[i].name, t[i].comm, (unsigned long long)(b->run_ns - a->run_ns),
		    (unsigned long long)tot);
		for (int c = 1; c < VN_CLASS_MAX - 1; c++)
			printf("%s\"%s\":%llu", c > 1 ? "," : "", merge_class_name(c),
			       (unsigned long long)(b->ns[c] - a->ns[c]));
		printf("},\"count\":{");
		for (int c = 1; c < VN_CLASS_MAX - 1; c++)
			printf("%s\"%s\":%llu", c > 1 ? "," : "", merge_class_name(c),
			       (unsigned long long)(b->count[c] - a->count[c]));
		printf("},\"causes\":[");
		for (int k = 0; k < n; k++) {
			monitor_cause_name(&cs[k], nm, sizeof(nm));
			printf("%s{\"source\":\"%s\",\"class\":\"%s\",\"ns\":%llu}", k ? "," : "",
			       nm, merge_class_name(cs[k].cls), (unsigned long long)cs[k].ns);
		}
		printf("],\"exited\":%s}", t[i].gone ? "true" : "false");
	}
	printf("]}\n");
	fflush(stdout);
}

static void print_table(const struct mon_target *t, int nt, const struct vn_tgt *cur, double secs,
			int summary)
{
	if (summary)
		printf("summary over %.2f s\n", secs);
	else
		printf("%8.2f s\n", secs);
	printf("  %-24s %10s %10s %10s %10s %10s %10s %7s  %s\n", "target", "run_ms", "thread_us",
	       "irq_us", "softirq_us", "nmi_us", "steal_us", "noise%", "largest causes (us)");
	for (int i = 0; i < nt; i++) {
		const struct vn_tgt *a = summary ? &t[i].first : &t[i].prev, *b = &cur[i];
		struct vn_tgt_cause cs[VN_TGT_CAUSES];
		int n = cause_delta(a, b, cs);
		uint64_t run = b->run_ns - a->run_ns,
			 tot = monitor_noise_total(b) - monitor_noise_total(a);
		char label[96], nm[64];

		snprintf(label, sizeof(label), "%s (%s)%s", t[i].name, t[i].comm,
			 t[i].gone ? " exited" : "");
		printf("  %-24s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %7.3f ", label, run / 1e6,
		       (b->ns[VN_CLASS_THREAD] - a->ns[VN_CLASS_THREAD]) / 1e3,
		       (b->ns[VN_CLASS_IRQ] - a->ns[VN_CLASS_IRQ]) / 1e3,
		       (b->ns[VN_CLASS_SOFTIRQ] - a->ns[VN_CLASS_SOFTIRQ]) / 1e3,
		       (b->ns[VN_CLASS_NMI] - a->ns[VN_CLASS_NMI]) / 1e3,
		       (b->ns[VN_CLASS_STEAL] - a->ns[VN_CLASS_STEAL]) / 1e3,
		       run + tot ? 100.0 * (double)tot / (double)(run + tot) : 0.0);
		for (int k = 0; k < n; k++)
			printf(" %s=%.1f", monitor_cause_name(&cs[k], nm, sizeof(nm)),
			       cs[k].ns / 1e3);
		printf("\n");
	}
	fflush(stdout);
}

static const char mon_usage[] =
    "usage: vnoise-guest monitor (--pid LIST | --cgroup DIR | --cpus LIST) [options]\n"
    "Passive mode: no sampler; the noise that hits the target tasks (their preemption while "
    "runnable,\n"
    "IRQs/softirqs/NMIs while they ran, steal), per target, every period. Needs root (eBPF).\n"
    "  -p, --pid LIST      processes (all their threads), e.g. 1234,5678; stops when all have "
    "exited\n"
    "  -g, --cgroup DIR    a cgroup v2 directory (repeatable)\n"
    "  -c, --cpus LIST     the user tasks running on these CPUs (kernel threads are noise)\n"
    "  -d, --duration T    stop after T (default: until Ctrl-C or the processes exit)\n"
    "  -P, --period T      print every T (default 1s)\n"
    "      --json          JSON lines (schema vnoise.monitor/1) instead of the table\n"
    "  -q, --quiet         only the summary\n";

int monitor_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, 0, 'p' },
		{ "cgroup", required_argument, 0, 'g' },
		{ "cpus", required_argument, 0, 'c' },
		{ "duration", required_argument, 0, 'd' },
		{ "period", required_argument, 0, 'P' },
		{ "json", no_argument, 0, 'J' },
		{ "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct mon_target t[MON_MAX];
	struct vn_tgt cur[MON_MAX];
	int cpus[VN_TGT_MAX], ncpus = 0, nt = 0, json = 0, quiet = 0, opt, npid = 0, rc = EXIT_OK;
	const char *cgroups[MON_MAX];
	int ncg = 0;
	uint64_t duration = 0, period = 1000000000ULL, t0, next;
	struct passive *pv = NULL;
	struct passive_opts po = { 0 };
	const char *why;
	struct sigaction sa;
	int err;

	memset(t, 0, sizeof(t));
	optind = 1;
	while ((opt = getopt_long(argc, argv, "p:g:c:d:P:qh", opts, NULL)) != -1) {
		switch (opt) {
		case 'p': {
			char *s = strdup(optarg), *save = NULL, *tok;

			if (!s)
				return EXIT_FAIL;
			for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				int pid;

				if (parse_int(tok, 1, 1 << 30, &pid) || nt >= MON_MAX) {
					log_err("--pid: '%s' is not a process id (or more than %d "
						"targets)",
						tok, MON_MAX);
					free(s);
					return EXIT_USAGE;
				}
				t[nt].pid = pid;
				snprintf(t[nt].name, sizeof(t[nt].name), "pid:%d", pid);
				nt++;
				npid++;
			}
			free(s);
			break;
		}
		case 'g':
			if (ncg >= MON_MAX) {
				log_err("--cgroup: at most %d", MON_MAX);
				return EXIT_USAGE;
			}
			cgroups[ncg++] = optarg;
			break;
		case 'c':
			if (parse_cpulist(optarg, cpus, VN_TGT_MAX, VN_TGT_MAX, &ncpus) || !ncpus) {
				log_err("--cpus: bad CPU list '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd':
			if (parse_duration(optarg, 1000000000ULL, &duration) || !duration) {
				log_err("--duration: bad duration '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'P':
			if (parse_duration(optarg, 1000000000ULL, &period) ||
			    period < 10000000ULL) {
				log_err("--period: bad period '%s' (at least 10ms)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'J':
			json = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(mon_usage, stdout);
			return EXIT_OK;
		default:
			log_err("bad option (see 'vnoise-guest monitor --help')");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s' (see 'vnoise-guest monitor --help')",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (!nt && !ncg && !ncpus) {
		log_err("no target: give --pid, --cgroup or --cpus (see 'vnoise-guest monitor "
			"--help')");
		return EXIT_USAGE;
	}
	if (nt + ncg + ncpus > MON_MAX) {
		log_err("at most %d targets", MON_MAX);
		return EXIT_USAGE;
	}
	for (int i = 0; i < nt; i++) {
		if (kill(t[i].pid, 0) && errno == ESRCH) {
			log_err("--pid: no process %d", t[i].pid);
			return EXIT_USAGE;
		}
	}
	for (int i = 0; i < ncg; i++) {
		struct stat st;
		char procs[4200];

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroups[i]);
		if (stat(cgroups[i], &st) || !S_ISDIR(st.st_mode) || access(procs, F_OK)) {
			log_err("--cgroup: '%s' is not a cgroup v2 directory", cgroups[i]);
			return EXIT_USAGE;
		}
	}
	po.cpus = cpus;
	po.ncpus = ncpus;
	po.cgroups = ncg;
	err = passive_open(&pv, &po, &why);
	if (err) {
		log_err("passive kernel helper: %s", why);
		return err == -EPERM ? EXIT_CANNOT : EXIT_FAIL;
	}
	for (int i = 0; i < nt; i++) {
		t[i].idx = passive_add_pid(pv, t[i].pid);
		read_comm(t[i].pid, t[i].comm, sizeof(t[i].comm));
		if (t[i].idx < 0) {
			log_err("cannot follow pid %d: %s", t[i].pid, strerror(-t[i].idx));
			passive_close(pv);
			return EXIT_FAIL;
		}
	}
	for (int i = 0; i < ncg; i++) {
		struct stat st;

		stat(cgroups[i], &st);
		t[nt].idx = passive_add_cgroup(pv, (uint64_t)st.st_ino);
		if (t[nt].idx < 0) {
			log_err("cannot follow cgroup %s: %s", cgroups[i], strerror(-t[nt].idx));
			passive_close(pv);
			return EXIT_FAIL;
		}
		snprintf(t[nt].name, sizeof(t[nt].name), "cgroup:%.50s", cgroups[i]);
		snprintf(t[nt].comm, sizeof(t[nt].comm), "-");
		nt++;
	}
	for (int i = 0; i < ncpus; i++) {
		t[nt].idx = i;
		snprintf(t[nt].name, sizeof(t[nt].name), "cpu:%d", cpus[i]);
		snprintf(t[nt].comm, sizeof(t[nt].comm), "user tasks");
		nt++;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (int i = 0; i < nt; i++)
		t[i].first = t[i].prev = *passive_tgt(pv, t[i].idx);
	t0 = now_ns();
	next = t0 + period;
	if (!json && !quiet)
		printf("vnoise-guest monitor: %d target%s, period %.2f s (passive: no sampler)\n",
		       nt, nt == 1 ? "" : "s", period / 1e9);
	while (!g_stop) {
		uint64_t now = now_ns();
		struct timespec ts;
		int alive = 0;

		if (duration && now >= t0 + duration)
			break;
		if (now < next) {
			uint64_t d = next - now;

			if (duration && t0 + duration < next)
				d = t0 + duration > now ? t0 + duration - now : 0;
			if (d > 100000000ULL)
				d = 100000000ULL; /* notice exited processes within 0.1 s */
			ts.tv_sec = (time_t)(d / 1000000000ULL);
			ts.tv_nsec = (long)(d % 1000000000ULL);
			nanosleep(&ts, NULL);
		}
		now = now_ns();
		for (int i = 0; i < nt; i++) {
			if (t[i].pid && !t[i].gone && kill(t[i].pid, 0) && errno == ESRCH)
				t[i].gone = 1;
			alive += !t[i].pid || !t[i].gone;
		}
		if (now >= next || !alive) {
			for (int i = 0; i < nt; i++)
				cur[i] = *passive_tgt(pv, t[i].idx);
			if (!quiet) {
				if (json)
					print_json(t, nt, cur, now - t0, period, 0);
				else
					print_table(t, nt, cur, (now - t0) / 1e9, 0);
			}
			for (int i = 0; i < nt; i++)
				t[i].prev = cur[i];
			next += period;
			if (next < now)
				next = now + period;
		}
		if (npid == nt && !alive)
			break;
	}
	for (int i = 0; i < nt; i++)
		cur[i] = *passive_tgt(pv, t[i].idx);
	if (json)
		print_json(t, nt, cur, now_ns() - t0, now_ns() - t0, 1);
	else
		print_table(t, nt, cur, (now_ns() - t0) / 1e9, 1);
	if (!passive_runs(pv))
		log_warn("the passive helper saw no target run: are the targets on this machine?");
	passive_close(pv);
	return rc;
}
