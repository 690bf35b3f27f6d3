/*
 * Only the supervisor talks to systemd: READY=1 once every worker is up,
 * STATUS= on every change worth a glance, WATCHDOG=1 while healthy and
 * STOPPING=1 on the way down. Without NOTIFY_SOCKET these are no-ops.
 */
#include "autoconf.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"

void
sv_notify_init(struct sv *sv)
{
	uint64_t usec = 0;

	/* unset the variables: workers must never talk to systemd */
	if (sd_watchdog_enabled(1, &usec) > 0 && usec > 0) {
		sv->watchdog_usec = usec;
		sv->next_watchdog_ms = rn_now_ms();
		log_info("systemd watchdog every %llu ms",
		    (unsigned long long)(usec / 1000));
	}
}

void
sv_notify_status(struct sv *sv, const char *fmt, ...)
{
	char msg[sizeof(sv->status_line)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strcmp(msg, sv->status_line) == 0)
		return;
	strlcpy(sv->status_line, msg, sizeof(sv->status_line));
	sd_notifyf(0, "STATUS=%s", msg);
}

void
sv_notify_ready(struct sv *sv)
{
	sv->ready_sent = true;
	sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=running: %u workers",
	    (int)getpid(), sv->n_children);
	strlcpy(sv->status_line, "", sizeof(sv->status_line));
	log_info("ready: %u workers running", sv->n_children);
}

void
sv_notify_stopping(struct sv *sv)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping workers");
}

/*
 * After an upgrade systemd got our MAINPID= while we were still the old
 * supervisor's child, and it remembers a main pid it did not fork as
 * "alien" (systemd's main_pid_alien): on stop it sends the alien SIGTERM
 * and, since it cannot wait for a process that is not its child, SIGKILL
 * to the whole unit at once: no controlled shutdown, and the unit ends
 * "failed". Once the old supervisor has left we are the manager's child
 * (it reaps orphans), but systemd decides "alien" again only when the main
 * pid changes: name a helper child for an instant, then ourselves, and
 * keep the helper until systemd has read both (BARRIER=1).
 */
static void
reclaim_main_pid(struct sv *sv)
{
	pid_t helper;
	int status, r;

	sv->old_supervisor = 0;
	if (getenv("NOTIFY_SOCKET") == NULL)
		return;
	if ((helper = fork()) == -1) {
		log_warn("systemd: fork for the main pid hand-back");
		return;
	}
	if (helper == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	sd_notifyf(0, "MAINPID=%d", (int)helper);
	sd_notifyf(0, "MAINPID=%d", (int)getpid());
	r = sd_notify_barrier(0, 2 * 1000000ULL);
	kill(helper, SIGKILL);
	while (waitpid(helper, &status, 0) == -1 && errno == EINTR)
		;
	if (r < 0)
		log_warnx("systemd: no answer to BARRIER=1 after MAINPID=%d: %s",
		    (int)getpid(), strerror(-r));
	else
		log_info("systemd: main pid %d again, now the manager's child",
		    (int)getpid());
}

/*
 * Healthy means no worker has been given up on (the caller asks the
 * child table). A hung worker is killed and restarted by the child
 * table, so the watchdog only stops when the supervisor itself stalls or
 * a worker is beyond restarting.
 */
void
sv_notify_tick(struct sv *sv, int64_t now, bool healthy)
{
	if (sv->old_supervisor != 0 && getppid() != sv->old_supervisor)
		reclaim_main_pid(sv);
	if (sv->watchdog_usec == 0 || now < sv->next_watchdog_ms)
		return;
	if (healthy && !sv->stopping)
		sd_notify(0, "WATCHDOG=1");
	sv->next_watchdog_ms = now + (int64_t)(sv->watchdog_usec / 2000);
}
