/* SPDX-License-Identifier: MIT */
/*
 * setupcmd: `vnoise-host enable|disable -D DOM [--live] [--config] [--size MIB] [--dry-run]`.
 *
 * Why the attach/detach API and not virDomainDefineXML of an edited document: one path for both the
 * running domain (--live, hot-plug) and the definition (--config); libvirt validates each device and
 * assigns its PCI address and socket path itself, and a step that fails is undone by the inverse call.
 * The plan is made from the XML first (nothing to do, a conflicting device), then applied step by step;
 * any failure detaches what was attached (or re-attaches what was detached), so no half change remains.
 * A virtio-serial controller is added only when the domain has none; disable never removes one (it cannot
 * tell one it added from one that was there, and other ports may use it). Each device is planned on its own,
 * so enable on a domain enabled by an older vnoise (without the org.vnoise.bell.0 channel) adds the bell.
 */
#include "setup/setupcmd.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "libvirt/domsetup.h"
#include "libvirt/session.h"
#include "util/log.h"

enum { OPT_LIVE = CLIOPT_OWN, OPT_CONFIG, OPT_SIZE, OPT_DRY_RUN };

/* The options enable and disable share, first in both tables. */
#define SETUP_OPTS_HEAD                                                                         \
	{ .id = CLIOPT_DOMAIN, .help = "the libvirt domain (required)" },                       \
	    { .id = CLIOPT_CONNECT, .help = "libvirt URI (default qemu:///system)" },           \
	    { .id = OPT_LIVE, .name = "live", .help = "change the running domain (hot-plug)" }, \
	{                                                                                       \
		.id = OPT_CONFIG, .name = "config",                                             \
		.help = "change the definition (from the next start)"                           \
	}

static const struct cliopt enable_opts[] = {
	SETUP_OPTS_HEAD,
	{ .id = OPT_SIZE,
	  .name = "size",
	  .has_arg = 1,
	  .arg = "MIB",
	  .help = "shared memory size in MiB, a power of two (default: 2 per vCPU, at least 4)" },
	{ .id = OPT_DRY_RUN, .name = "dry-run", .help = "print the device XML, change nothing" },
	{ .id = CLIOPT_QUIET },
	{ .id = CLIOPT_VERBOSE },
	{ .id = CLIOPT_HELP },
	{ 0 },
};

/* disable: the same without --size. */
static const struct cliopt disable_opts[] = {
	SETUP_OPTS_HEAD,
	{ .id = OPT_DRY_RUN, .name = "dry-run", .help = "print the device XML, change nothing" },
	{ .id = CLIOPT_QUIET },
	{ .id = CLIOPT_VERBOSE },
	{ .id = CLIOPT_HELP },
	{ 0 },
};

struct setup_params {
	bool enable; /* enable, else disable */
	const char *dom, *uri;
	bool live, config, dry_run;
	uint32_t size_mib; /* 0: from the vCPUs */
	int quiet, verbose;
};

/* Parse argv; 1 for --help, 0, or -EINVAL with a line in err. */
static int parse(int argc, char **argv, struct setup_params *p, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	struct cliopt_flags fl = { .quiet = &p->quiet, .verbose = &p->verbose };
	int c, v;

	memset(p, 0, sizeof(*p));
	p->enable = !strcmp(argv[0], "enable");
	if (cliopt_init(&ps, p->enable ? enable_opts : disable_opts, argc, argv, err, errlen))
		return -EINVAL;
	while ((c = cliopt_next(&ps)) > 0) {
		if (cliopt_flag(c, &fl))
			continue;
		switch (c) {
		case CLIOPT_HELP:
			return 1;
		case CLIOPT_DOMAIN:
			if (p->dom)
				return cliopt_fail(&ps, "-D given twice: one domain at a time");
			p->dom = ps.arg;
			break;
		case CLIOPT_CONNECT:
			p->uri = ps.arg;
			break;
		case OPT_LIVE:
			p->live = true;
			break;
		case OPT_CONFIG:
			p->config = true;
			break;
		case OPT_DRY_RUN:
			p->dry_run = true;
			break;
		case OPT_SIZE:
			if (cliopt_int(&ps, 1, DOMSETUP_MAX_MIB, &v))
				return -EINVAL;
			if (!domsetup_size_ok((uint32_t)v))
				return cliopt_fail(
				    &ps, "invalid --size '%s': want a power of two (4, 8, 16...)",
				    ps.arg);
			p->size_mib = (uint32_t)v;
			break;
		default:
			return cliopt_fail(&ps, "option %s is not for %s", ps.spelled, argv[0]);
		}
	}
	if (c < 0)
		return -EINVAL;
	if (optind < argc)
		return cliopt_fail(&ps, "unexpected argument '%s'", argv[optind]);
	if (!p->dom)
		return cliopt_fail(&ps, "-D DOMAIN is required");
	return 0;
}

/* One device change: attach or detach xml with flags; undone by the inverse. */
struct step {
	bool attach;
	unsigned flags; /* VIR_DOMAIN_AFFECT_LIVE or _CONFIG */
	char xml[DOMSETUP_XML_MAX * 2];
	const char *what; /* "the ivshmem-plain <shmem>" */
};

#define MAX_STEPS 8

struct plan {
	struct step s[MAX_STEPS];
	int n;
};

static const char *where(unsigned flags)
{
	return flags == VIR_DOMAIN_AFFECT_LIVE ? "--live" : "--config";
}

static int add_step(struct plan *pl, bool attach, unsigned flags, const char *what, const char *xml,
		    size_t len)
{
	struct step *s = &pl->s[pl->n];

	if (pl->n >= MAX_STEPS || len >= sizeof(s->xml))
		return -ENOSPC;
	s->attach = attach;
	s->flags = flags;
	s->what = what;
	memcpy(s->xml, xml, len);
	s->xml[len] = '\0';
	pl->n++;
	return 0;
}

/* The domain XML for flags (live or inactive), owned by the caller (free), or NULL (logged). */
static char *dom_xml(virDomainPtr d, unsigned flags)
{
	char *x =
	    virDomainGetXMLDesc(d, flags == VIR_DOMAIN_AFFECT_CONFIG ? VIR_DOMAIN_XML_INACTIVE : 0);

	if (!x)
		log_err("cannot read the domain XML: %s", session_last_error());
	return x;
}

/* Plan enable for one side (flags). EXIT_OK or the exit code (logged). */
static int plan_enable(const struct setup_params *p, virDomainPtr d, unsigned flags,
		       const char *shm, struct plan *pl)
{
	struct domsetup_state st;
	char buf[DOMSETUP_XML_MAX];
	char *x = dom_xml(d, flags);
	uint32_t mib;
	unsigned missing;
	int n, rc = EXIT_FAIL;

	if (!x)
		return EXIT_FAIL;
	if (domsetup_scan(x, shm, &st)) {
		log_err("cannot read the domain XML of %s (no <domain>)", p->dom);
		goto out;
	}
	mib = p->size_mib ? p->size_mib : domsetup_size_mib(st.vcpus);
	rc = EXIT_CONFLICT;
	if (st.shmem_foreign) {
		log_err("%s already has a <shmem name='%s'> that is not ivshmem-plain (%s); remove "
			"it first",
			p->dom, shm, where(flags));
		goto out;
	}
	if (st.channel_foreign || st.bell_foreign) {
		log_err(
		    "%s already has a channel %s that is not a unix socket (%s); remove it first",
		    p->dom, st.channel_foreign ? DOMSETUP_CHANNEL : DOMSETUP_BELL, where(flags));
		goto out;
	}
	if (st.shmem && p->size_mib && st.shmem_mib != p->size_mib) {
		log_err("%s already has <shmem name='%s'> of %u MiB, not %u (%s); disable first to "
			"resize",
			p->dom, shm, st.shmem_mib, p->size_mib, where(flags));
		goto out;
	}
	missing = domsetup_missing(&st);
	if ((missing & DOMSETUP_BIT(DOMSETUP_CONTROLLER)) && flags == VIR_DOMAIN_AFFECT_LIVE) {
		log_err("%s --live: the domain has no virtio-serial controller and libvirt cannot "
			"hot-plug one; "
			"nothing changed; use --config and restart it",
			p->dom);
		rc = EXIT_CANNOT;
		goto out;
	}
	rc = EXIT_FAIL;
	if (missing & DOMSETUP_BIT(DOMSETUP_SHMEM)) {
		n = domsetup_shmem_xml(shm, mib, buf, sizeof(buf));
		if (n < 0 || add_step(pl, true, flags, "the ivshmem-plain <shmem>", buf, (size_t)n))
			goto out;
	}
	if (missing & DOMSETUP_BIT(DOMSETUP_CONTROLLER)) {
		n = domsetup_controller_xml(buf, sizeof(buf));
		if (n < 0 ||
		    add_step(pl, true, flags, "the virtio-serial controller", buf, (size_t)n))
			goto out;
	}
	if (missing & DOMSETUP_BIT(DOMSETUP_CHANNEL_EL)) {
		n = domsetup_channel_xml(buf, sizeof(buf));
		if (n < 0 ||
		    add_step(pl, true, flags, "the " DOMSETUP_CHANNEL " channel", buf, (size_t)n))
			goto out;
	}
	if (missing & DOMSETUP_BIT(DOMSETUP_BELL_EL)) {
		n = domsetup_bell_xml(buf, sizeof(buf));
		if (n < 0 ||
		    add_step(pl, true, flags, "the " DOMSETUP_BELL " channel", buf, (size_t)n))
			goto out;
	}
	rc = EXIT_OK;
out:
	free(x);
	return rc;
}

/* Plan disable for one side (flags): detach our channels and shmem as the XML shows them. */
static int plan_disable(const struct setup_params *p, virDomainPtr d, unsigned flags,
			const char *shm, struct plan *pl)
{
	char *x = dom_xml(d, flags);
	const char *at;
	size_t len;
	int rc = EXIT_FAIL;

	if (!x)
		return EXIT_FAIL;
	if (!domsetup_element(x, DOMSETUP_CHANNEL_EL, shm, &at, &len) &&
	    add_step(pl, false, flags, "the " DOMSETUP_CHANNEL " channel", at, len))
		goto out;
	if (!domsetup_element(x, DOMSETUP_BELL_EL, shm, &at, &len) &&
	    add_step(pl, false, flags, "the " DOMSETUP_BELL " channel", at, len))
		goto out;
	if (!domsetup_element(x, DOMSETUP_SHMEM, shm, &at, &len) &&
	    add_step(pl, false, flags, "the ivshmem-plain <shmem>", at, len))
		goto out;
	rc = EXIT_OK;
out:
	if (rc)
		log_err("%s: a device element is too large", p->dom);
	free(x);
	return rc;
}

/* Which of vnoise's elements a step's XML is: a channel by its target name. */
static enum domsetup_kind step_kind(const struct step *s)
{
	enum domsetup_kind k;

	return domsetup_kind_of(s->xml, &k) ? DOMSETUP_CHANNEL_EL : k;
}

/* The element an attach step created, from the domain's XML now (for its undo), into s->xml. */
static int attached_element(virDomainPtr d, struct step *s, const char *shm)
{
	enum domsetup_kind k = step_kind(s);
	char *x = dom_xml(d, s->flags);
	const char *at;
	size_t len;
	int rc = -ENOENT;

	if (x && !domsetup_element(x, k, shm, &at, &len) && len < sizeof(s->xml)) {
		memcpy(s->xml, at, len);
		s->xml[len] = '\0';
		rc = 0;
	}
	free(x);
	return rc;
}

static int do_step(virDomainPtr d, const struct step *s, bool attach)
{
	return attach ? virDomainAttachDeviceFlags(d, s->xml, s->flags)
		      : virDomainDetachDeviceFlags(d, s->xml, s->flags);
}

/*
 * Undo step s. A live detach completes when the guest releases the device (libvirt may return first):
 * wait for it to leave the live XML, up to UNDO_WAIT_MS. 0, or -1 (logged as a warning).
 */
#define UNDO_WAIT_MS 15000
static int undo(const struct setup_params *p, virDomainPtr d, const struct step *s, const char *shm)
{
	const char *at;
	size_t len;
	char *x = NULL;

	if (do_step(d, s, !s->attach)) {
		log_warn("%s: could not undo %s (%s): %s", p->dom, s->what, where(s->flags),
			 session_last_error());
		return -1;
	}
	if (!s->attach || s->flags != VIR_DOMAIN_AFFECT_LIVE)
		return 0;
	for (int ms = 0; ms <= UNDO_WAIT_MS; ms += 100) {
		x = virDomainGetXMLDesc(d, 0);
		if (x && domsetup_element(x, step_kind(s), shm, &at, &len)) {
			free(x);
			return 0;
		}
		free(x);
		usleep(100 * 1000);
	}
	log_warn("%s: the guest has not released %s yet (removal requested)", p->dom, s->what);
	return -1;
}

/* Apply the plan; on a failure undo the steps done, in reverse. EXIT_OK or the exit code (logged). */
static int apply(const struct setup_params *p, virDomainPtr d, struct plan *pl, const char *shm)
{
	int i, j;

	for (i = 0; i < pl->n; i++) {
		struct step *s = &pl->s[i];
		char why[512];

		if (do_step(d, s, s->attach) == 0) {
			if (s->attach && attached_element(d, s, shm))
				log_warn("%s: cannot find %s after attaching it", p->dom, s->what);
			log_debug("%s %s: %s %s", p->dom, where(s->flags),
				  s->attach ? "added" : "removed", s->what);
			continue;
		}
		snprintf(why, sizeof(why), "%s", session_last_error());
		for (j = i - 1; j >= 0; j--)
			undo(p, d, &pl->s[j], shm);
		if (s->flags == VIR_DOMAIN_AFFECT_LIVE) {
			log_err("%s --live: libvirt cannot %s %s of the running domain (%s); "
				"nothing changed; use "
				"--config and restart it",
				p->dom, s->attach ? "hot-plug" : "hot-unplug", s->what, why);
			return EXIT_CANNOT;
		}
		log_err("%s --config: cannot %s %s: %s; nothing changed", p->dom,
			s->attach ? "add" : "remove", s->what, why);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* --dry-run: print the plan. */
static void print_plan(const struct setup_params *p, const struct plan *pl, unsigned sides)
{
	for (unsigned f = VIR_DOMAIN_AFFECT_LIVE; f <= VIR_DOMAIN_AFFECT_CONFIG; f <<= 1) {
		int k = 0;

		if (!(sides & f))
			continue;
		for (int i = 0; i < pl->n; i++) {
			if (pl->s[i].flags != f)
				continue;
			if (!k++)
				printf("<!-- %s %s: %s -->\n", p->dom, where(f),
				       p->enable ? "would add" : "would remove");
			fputs(pl->s[i].xml, stdout);
			if (pl->s[i].xml[0] && pl->s[i].xml[strlen(pl->s[i].xml) - 1] != '\n')
				putchar('\n');
		}
		if (!k)
			printf("<!-- %s %s: nothing to %s (%s) -->\n", p->dom, where(f),
			       p->enable ? "add" : "remove",
			       p->enable ? "already enabled" : "not enabled");
	}
}

/* Which sides to change (VIR_DOMAIN_AFFECT_*), or 0 with the line logged. */
static unsigned pick_sides(const struct setup_params *p, virDomainPtr d)
{
	int active = virDomainIsActive(d), persistent = virDomainIsPersistent(d);

	if (!p->live && !p->config) {
		if (active == 0)
			return VIR_DOMAIN_AFFECT_CONFIG;
		if (p->dry_run) /* it changes nothing: show both */
			return VIR_DOMAIN_AFFECT_LIVE |
			       (persistent == 1 ? VIR_DOMAIN_AFFECT_CONFIG : 0);
		log_err("%s is running: say --live (change it now), --config (from the next start) "
			"or both",
			p->dom);
		return 0;
	}
	if (p->live && active != 1) {
		log_err("%s is not running: --live needs a running domain (use --config)", p->dom);
		return 0;
	}
	if (p->config && persistent != 1) {
		log_err("%s is transient: --config needs a defined domain (use --live)", p->dom);
		return 0;
	}
	return (p->live ? VIR_DOMAIN_AFFECT_LIVE : 0) | (p->config ? VIR_DOMAIN_AFFECT_CONFIG : 0);
}

/* Connect and look the domain up. EXIT_OK with *conn and *dom, or the exit code (logged). */
static int open_domain(const struct setup_params *p, struct sess **s, virDomainPtr *dom)
{
	const char *uri = p->uri ? p->uri : "qemu:///system";
	enum session_fail why;
	char msg[512];

	*s = session_open(p->uri, &why, msg, sizeof(msg));
	if (!*s) {
		log_err("%s libvirt at %s: %s",
			why == SESSION_DENIED	     ? "no permission to use"
			: why == SESSION_UNREACHABLE ? "unreachable"
						     : "cannot connect to",
			uri, msg);
		return why == SESSION_DENIED	    ? EXIT_CANNOT
		       : why == SESSION_UNREACHABLE ? EXIT_UNREACHABLE
						    : EXIT_FAIL;
	}
	*dom = virDomainLookupByName(session_conn(*s), p->dom);
	if (*dom)
		return EXIT_OK;
	if (virGetLastErrorCode() == VIR_ERR_NO_DOMAIN) {
		log_err("no domain '%s' at %s", p->dom, uri);
		return EXIT_NODOMAIN;
	}
	log_err("cannot look up domain '%s': %s", p->dom, session_last_error());
	return EXIT_FAIL;
}

static int run(const struct setup_params *p)
{
	struct sess *s = NULL;
	virDomainPtr d = NULL;
	struct plan *pl = calloc(1, sizeof(*pl));
	char shm[256];
	unsigned sides;
	int rc;

	if (!pl)
		return EXIT_FAIL;
	if (domsetup_shm_name(p->dom, shm, sizeof(shm))) {
		log_err("domain name too long: '%s'", p->dom);
		rc = EXIT_USAGE;
		goto out;
	}
	rc = open_domain(p, &s, &d);
	if (rc)
		goto out;
	sides = pick_sides(p, d);
	rc = EXIT_USAGE;
	if (!sides)
		goto out;
	rc = EXIT_OK;
	for (unsigned f = VIR_DOMAIN_AFFECT_LIVE; f <= VIR_DOMAIN_AFFECT_CONFIG && !rc; f <<= 1)
		if (sides & f)
			rc = p->enable ? plan_enable(p, d, f, shm, pl)
				       : plan_disable(p, d, f, shm, pl);
	if (rc)
		goto out;
	if (p->dry_run) {
		print_plan(p, pl, sides);
		goto out;
	}
	if (!pl->n) {
		if (!p->quiet)
			printf("%s: nothing to do (%s)\n", p->dom,
			       p->enable ? "already enabled" : "not enabled");
		goto out;
	}
	rc = apply(p, d, pl, shm);
	if (!rc && !p->quiet)
		printf("%s: %s (%d device change%s)\n", p->dom, p->enable ? "enabled" : "disabled",
		       pl->n, pl->n == 1 ? "" : "s");
out:
	if (d)
		virDomainFree(d);
	session_close(s);
	free(pl);
	return rc;
}

int setupcmd_main(int argc, char **argv)
{
	struct setup_params p;
	char err[256], help[4096];
	int rc = parse(argc, argv, &p, err, sizeof(err));

	if (rc == 1) {
		cliopt_help(p.enable ? enable_opts : disable_opts, help, sizeof(help));
		printf("usage: vnoise-host %s -D DOMAIN [--live] [--config]%s [--dry-run]\n\n%s",
		       argv[0], p.enable ? " [--size MIB]" : "",
		       p.enable
			   ? "Add the ivshmem-plain <shmem>, the " DOMSETUP_CHANNEL
			     " channel and the "
			     "bell channel\n" DOMSETUP_BELL " (with a virtio-serial controller if "
			     "none) to a domain; what\nis already there is kept.\n\n"
			   : "Remove what enable added (the virtio-serial controller stays).\n\n");
		fputs(help, stdout);
		cliopt_exit_print(stdout, CLIOPT_EXITS_COMMON | CLIOPT_EXIT(EXIT_UNREACHABLE) |
					      CLIOPT_EXIT(EXIT_NODOMAIN) |
					      CLIOPT_EXIT(EXIT_CONFLICT));
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-host %s --help')", err, argv[0]);
		return EXIT_USAGE;
	}
	log_set_verbosity(p.quiet ? -1 : p.verbose);
	return run(&p);
}
