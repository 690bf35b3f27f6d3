/*
 * runnelctl top: the node's workers, refreshed every interval: CPU,
 * resident memory, connections, requests per second, restarts and how
 * each last ended.
 */
#ifndef RN_RUNNELCTL_TOP_H
#define RN_RUNNELCTL_TOP_H

/* count screens (0: until interrupted); the exit code. */
int rn_ctl_top(const char *socket_path, int interval_ms, int count);

#endif /* RN_RUNNELCTL_TOP_H */
