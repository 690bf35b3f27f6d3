/*
 * Only the supervisor talks to systemd: READY=1 once every worker is up,
 * STATUS= on every change worth a glance, WATCHDOG=1 while healthy and
 * STOPPING=1 on the way down. Without NOTIFY_SOCKET these are no-ops.
 */
#include "autoconf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
 * Healthy means no worker has been given up on (the caller asks the
 * child table). A hung worker is killed and restarted by the child
 * table, so the watchdog only stops when the supervisor itself stalls or
 * a worker is beyond restarting.
 */
void
sv_notify_tick(struct sv *sv, int64_t now, bool healthy)
{
	if (sv->watchdog_usec == 0 || now < sv->next_watchdog_ms)
		return;
	if (healthy && !sv->stopping)
		sd_notify(0, "WATCHDOG=1");
	sv->next_watchdog_ms = now + (int64_t)(sv->watchdog_usec / 2000);
}
