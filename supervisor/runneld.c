/*
 * runneld: the node supervisor. Runs in the foreground (systemd style):
 * validates the whole configuration before touching anything, locks the
 * log dirs, binds the listeners and the control socket, creates the
 * shared memory, then forks the controller, network and replica-fetcher
 * workers and keeps them alive.
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "storage/metaprops.h"
#include "supervisor/sv.h"
#include "supervisor/sv_control.h"
#include "supervisor/sv_http.h"

extern char **environ;

volatile sig_atomic_t sv_got_sigchld, sv_got_sigterm, sv_got_sighup,
    sv_got_sigusr2;

static struct sv sv;

static void
sighandler(int sig)
{
	switch (sig) {
	case SIGCHLD: sv_got_sigchld = 1; break;
	case SIGTERM:
	case SIGINT: sv_got_sigterm = 1; break;
	case SIGHUP: sv_got_sighup = 1; break;
	case SIGUSR2: sv_got_sigusr2 = 1; break;
	}
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runneld [--config FILE] [--override KEY=VALUE ...] [-v]\n"
	    "       runneld --check-config [--config FILE]\n"
	    "Without --config, runs a single node with the embedded default\n"
	    "configuration (runneld --print-default-config shows it).\n");
}

static void
config_warn(void *arg, const char *msg)
{
	(void)arg;
	log_warnx("%s", msg);
}

static int
load_config(int argc, char **argv, int *check_only)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "override", required_argument, NULL, 'o' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "print-default-config", no_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	char err[1024];
	int ch, verbose = 0, i;

	*check_only = 0;
	while ((ch = getopt_long(argc, argv, "c:o:vh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 'o': break; /* applied below, after the file */
		case 'C': *check_only = 1; break;
		case 'P':
			fputs(rn_config_embedded_default, stdout);
			exit(0);
		case 'v': verbose = 1; break;
		case 'V':
			printf("runneld %s\n", PACKAGE_VERSION);
			exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
	if (path != NULL) {
		if (rn_config_load(&sv.cfg, path, err, sizeof(err),
		    config_warn, NULL) != 0)
			goto bad;
	} else if (rn_config_parse(&sv.cfg, rn_config_embedded_default,
	    "embedded-default", err, sizeof(err), config_warn, NULL) != 0)
		goto bad;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:o:vh", opts, NULL)) != -1)
		if (ch == 'o' && rn_config_override(&sv.cfg, optarg, err,
		    sizeof(err)) != 0)
			goto bad;
	if (verbose)
		sv.cfg.log_verbose = true;
	if (rn_config_finish(&sv.cfg, err, sizeof(err)) != 0)
		goto bad;
	rn_log_set_verbose(sv.cfg.log_verbose);
	for (i = 0; i < sv.cfg.n_log_dirs; i++)
		log_debug("log dir %s", sv.cfg.log_dirs[i]);
	return 0;
bad:
	log_errx("configuration: %s", err);
	return -1;
}

static int
resolve_service_user(void)
{
	struct passwd *pw;

	sv.service_uid = geteuid();
	sv.service_gid = getegid();
	if (sv.cfg.supervisor_user[0] == '\0')
		return 0;
	if ((pw = getpwnam(sv.cfg.supervisor_user)) == NULL) {
		log_errx("configuration: supervisor.user '%s' does not exist",
		    sv.cfg.supervisor_user);
		return -1;
	}
	if (geteuid() != 0) {
		if (pw->pw_uid != geteuid()) {
			log_errx("configuration: supervisor.user is '%s' but "
			    "runneld is not started as root",
			    sv.cfg.supervisor_user);
			return -1;
		}
		return 0;
	}
	sv.service_uid = pw->pw_uid;
	sv.service_gid = pw->pw_gid;
	sv.drop_privileges = pw->pw_uid != 0;
	return 0;
}

static int
setup_shared(void)
{
	const struct sv_role *roles;
	struct rn_shm_params p;
	char layout[256];
	size_t len = 0;
	size_t r, n_roles;
	unsigned i;
	int rc;

	sv.env.n_network = sv_role_count(sv_role_of(RN_ROLE_W_NETWORK),
	    &sv.cfg);
	sv.env.n_fetchers = sv_role_count(sv_role_of(RN_ROLE_W_FETCHER),
	    &sv.cfg);
	sv.env.n_cleaners = sv_role_count(sv_role_of(RN_ROLE_W_CLEANER),
	    &sv.cfg);
	/* every row of the role table has its slots */
	roles = sv_roles(&n_roles);
	for (sv.env.n_workers = 0, r = 0; r < n_roles; r++)
		sv.env.n_workers += sv_role_count(&roles[r], &sv.cfg);
	p.n_workers = sv.env.n_workers;
	p.ring_bytes = (uint32_t)sv.cfg.shm_ring_bytes;
	p.max_partitions = (uint32_t)sv.cfg.shm_max_partitions;
	p.producer_pool = (uint32_t)sv.cfg.shm_max_producers;
	sv.env.shm = &sv.shm;
	sv.env.cfg = &sv.cfg;
	if (sv.shm.hdr != NULL)
		/* an upgrade: the segment and the eventfds are passed in */
		return sv_takeover_adopt_shm(&sv, &p);
	if ((rc = rn_shm_create(&p, &sv.shm)) != 0) {
		log_errx("cannot create shared memory (%zu bytes): %s",
		    rn_shm_size(&p), strerror(-rc));
		return -1;
	}
	for (i = 0; i < sv.env.n_workers; i++)
		if ((sv.env.efd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) ==
		    -1) {
			log_warn("eventfd");
			return -1;
		}
	for (i = 0; i < RN_REGION_COUNT && len < sizeof(layout); i++)
		len += (size_t)snprintf(layout + len, sizeof(layout) - len,
		    "%s%s %zu KiB", i ? ", " : "", rn_shm_region_name(i),
		    rn_shm_region_size(&sv.shm, i) / 1024);
	log_info("shared memory: %zu bytes, %u workers, %u partition slots "
	    "(%s)", sv.shm.size, sv.env.n_workers, p.max_partitions, layout);
	return 0;
}

static void
setup_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = sighandler;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	/* signals arrive only inside ppoll(), so flags are never missed */
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	sigdelset(waitmask, SIGCHLD);
	sigdelset(waitmask, SIGTERM);
	sigdelset(waitmask, SIGINT);
	sigdelset(waitmask, SIGHUP);
	sigdelset(waitmask, SIGUSR2);
}

static void
update_status(int64_t now)
{
	unsigned running = sv_children_count_state(&sv, RN_WS_RUNNING);
	unsigned failed = sv_children_count_state(&sv, RN_WS_FAILED);

	if (!sv.ready_sent || sv.upgrade != NULL)
		return; /* an upgrade says it itself */
	if (failed > 0)
		sv_notify_status(&sv, "degraded: %u of %u workers running, %u "
		    "failed", running, sv.n_children, failed);
	else if (running < sv.n_children)
		sv_notify_status(&sv, "recovering: %u of %u workers running",
		    running, sv.n_children);
	else
		sv_notify_status(&sv, "running: %u workers", sv.n_children);
	(void)now;
}

static void
sv_begin_stop(struct sv *s, int64_t now)
{
	s->stopping = true;
	s->stop_deadline_ms = now + s->cfg.shutdown_timeout_ms;
	/* the controller, stopped last, then shuts the logs down */
	atomic_store(&s->shm.hdr->node_stopping, 1);
	log_notice("stopping: network workers, then replica fetchers, then "
	    "the controller");
}

/*
 * A broker in a cluster first hands its leaderships over (Kafka's
 * controlled shutdown): the controller worker asks the active controller
 * and says when it is done. Clients keep being served meanwhile.
 */
static bool
sv_controlled_shutdown_begin(struct sv *s, int64_t now)
{
	struct sv_child *ctl = sv_child_find(s, "controller");

	if (!(s->cfg.roles & RN_ROLE_BROKER) || ctl == NULL || ctl->pid == 0)
		return false;
	atomic_store(&s->shm.hdr->controlled_shutdown, 1);
	s->drain_deadline_ms = now + s->cfg.shutdown_timeout_ms / 2;
	sv_notify_status(s, "controlled shutdown: moving leaderships away");
	log_notice("controlled shutdown: handing leaderships over first");
	return true;
}

static bool
sv_controlled_shutdown_done(struct sv *s, int64_t now)
{
	struct sv_child *ctl = sv_child_find(s, "controller");

	if (atomic_load(&s->shm.hdr->controlled_shutdown) == 2) {
		log_info("controlled shutdown: leaderships handed over");
		return true;
	}
	if (now >= s->drain_deadline_ms || ctl == NULL || ctl->pid == 0) {
		log_warnx("controlled shutdown did not finish in time: "
		    "stopping anyway");
		return true;
	}
	return false;
}

static void
main_loop(const sigset_t *waitmask)
{
	struct pollfd pfd[1 + SV_CONTROL_MAX_CONNS + 1 + SV_HTTP_MAX_CONNS +
	    1];
	struct timespec tick;
	char err[256];

	for (;;) {
		int64_t now = rn_now_ms();
		int n, m;

		/* a worker changing hands is looked at more often */
		tick.tv_sec = 0;
		tick.tv_nsec = (sv_upgrade_busy(&sv) ? 20 : 100) * 1000 * 1000;

		if (sv_got_sigchld) {
			sv_got_sigchld = 0;
			sv_children_reap(&sv, now);
		}
		if (sv_got_sighup) {
			sv_got_sighup = 0;
			log_notice("SIGHUP: configuration reload is not "
			    "supported; restart the node to apply changes");
		}
		if (sv_got_sigusr2) {
			sv_got_sigusr2 = 0;
			log_notice("SIGUSR2: upgrading to %s", sv.exe);
			if (sv_upgrade_begin(&sv, NULL, -1, 0, err,
			    sizeof(err)) != 0)
				log_warnx("upgrade: %s", err);
		}
		/* the new supervisor goes first (sv_upgrade.c), then this */
		sv_upgrade_tick(&sv, now);
		if (sv_got_sigterm && !sv.stopping && !sv.draining &&
		    sv.upgrade == NULL) {
			sv_notify_stopping(&sv);
			if (sv_controlled_shutdown_begin(&sv, now))
				sv.draining = true;
			else
				sv_begin_stop(&sv, now);
		}
		if (sv.draining && sv_controlled_shutdown_done(&sv, now)) {
			sv.draining = false;
			sv_begin_stop(&sv, now);
		}
		if (sv.stopping) {
			sv_children_stop(&sv, now);
			if (sv_children_all_exited(&sv)) {
				sv_roll_abort(&sv, "the node is stopping");
				break;
			}
		} else {
			/* ready reads the workers' own states in the segment;
			 * the status line the table's copies, which the next
			 * sv_children_tick brings up to date: not both in one
			 * turn, or STATUS= says "recovering" right after READY=1 */
			if (!sv.ready_sent && sv_takeover_done(&sv) &&
			    sv_children_all_running(&sv))
				sv_notify_ready(&sv);
			else
				update_status(now);
		}
		sv_children_tick(&sv, now);
		sv_roll_tick(&sv, now);
		sv_takeover_tick(&sv, now);
		sv_notify_tick(&sv, now,
		    sv_children_count_state(&sv, RN_WS_FAILED) == 0);

		/* handed over: new control connections are the new one's */
		pfd[0].fd = sv.ctl_fd;
		pfd[0].events = sv_upgrade_handsoff(&sv) ? 0 : POLLIN;
		pfd[0].revents = 0;
		n = 1 + sv_control_pollfds(pfd + 1, SV_CONTROL_MAX_CONNS);
		m = sv_http_pollfds(pfd + n, 1 + SV_HTTP_MAX_CONNS);
		pfd[n + m].fd = sv_upgrade_pollfd(&sv);
		pfd[n + m].events = POLLIN;
		pfd[n + m].revents = 0;
		if (ppoll(pfd, (nfds_t)(n + m + 1), &tick, waitmask) > 0) {
			if (pfd[0].revents & POLLIN)
				sv_control_accept(&sv);
			sv_control_handle(&sv, pfd + 1, n - 1);
			sv_http_handle(&sv, pfd + n, m);
		}
	}
}

/* What an upgrade execs: argv as given (setproctitle reuses its memory). */
static int
keep_argv(int argc, char **argv)
{
	ssize_t n;
	int i;

	if ((sv.argv = calloc((size_t)argc + 1, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < argc; i++)
		if ((sv.argv[i] = strdup(argv[i])) == NULL)
			return -1;
	/* the path, not the inode: a binary installed over it runs next */
	n = readlink("/proc/self/exe", sv.exe, sizeof(sv.exe) - 1);
	sv.exe[n > 0 ? n : 0] = '\0';
	return 0;
}

int
main(int argc, char **argv)
{
	sigset_t waitmask;
	int check_only, upgrading;
	unsigned i;

	memset(&sv, 0, sizeof(sv));
	if (keep_argv(argc, argv) != 0)
		return 1;
	setproctitle_init(argc, argv, environ);
	rn_log_init("supervisor", NULL, 0);
	sv.ctl_fd = -1;
	sv.shm.fd = -1;
	if (load_config(argc, argv, &check_only) != 0 ||
	    sv_security_load(&sv) != 0)
		return 1;
	if (check_only) {
		printf("configuration ok: node %d, roles %s\n", sv.cfg.node_id,
		    rn_config_roles_str(sv.cfg.roles));
		return 0;
	}
	rn_log_init("supervisor", NULL, sv.cfg.log_verbose);
	/* an upgrade: the old supervisor's fds, checked before anything */
	upgrading = sv_takeover_adopt(&sv);
	/* meta.properties: node and directory ids, the cluster id if known */
	if (resolve_service_user() != 0 ||
	    (!upgrading && sv_logdirs_lock(&sv) != 0) ||
	    rn_metaprops_ensure(&sv.cfg, sv.env.cluster_id,
	    sv.env.dir_ids) != 0)
		return 1;
	if (!upgrading && (errno = -sv_control_open(&sv)) != 0) {
		log_errx("control socket %s: %s", sv.cfg.control_socket_path,
		    strerror(errno));
		return 1;
	}
	if ((!upgrading && sv_listeners_bind(&sv) != 0) ||
	    setup_shared() != 0 || (!upgrading && sv_http_open(&sv) != 0)) {
		if (!upgrading)
			sv_control_close(&sv);
		return 1;
	}
	if (!upgrading)
		sv_logdirs_take_clean(&sv);
	sv.policy.initial_ms = sv.cfg.restart_backoff_initial_ms;
	sv.policy.max_ms = sv.cfg.restart_backoff_max_ms;
	sv.policy.max_failures = sv.cfg.restart_max_failures;
	sv.policy.window_ms = sv.cfg.restart_failure_window_ms;
	sv.started_ms = rn_now_ms();
	setproctitle("-runneld: supervisor node %d", sv.cfg.node_id);
	setup_signals(&waitmask);
	sv_notify_init(&sv);
	sv_notify_status(&sv, "starting workers");
	rn_log_about(LOG_INFO, rn_subj_broker(sv.cfg.node_id), "node %d (%s) "
	    "starting: %d network, %d replica-fetcher workers",
	    sv.cfg.node_id, rn_config_roles_str(sv.cfg.roles),
	    sv.cfg.num_network_threads, sv.cfg.num_replica_fetchers);

	sv_children_init(&sv);
	if (upgrading)
		sv_takeover_begin(&sv); /* the old one's workers, one by one */
	for (i = 0; i < sv.n_children && !upgrading; i++)
		if (sv_child_start(&sv, &sv.children[i]) != 0) {
			sv.exit_code = 1;
			sv_got_sigterm = 1;
			break;
		}
	main_loop(&waitmask);

	sv_http_close();
	sv_control_close(&sv);
	rn_shm_destroy(&sv.shm);
	log_info("stopped");
	return sv.exit_code;
}
