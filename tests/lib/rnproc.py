"""What processes cost, for the benchmarks: CPU time and run-queue wait
of every thread, from /proc/PID/task/TID/schedstat."""
import os


def schedstat_ns(pids):
    """(ns on a CPU, ns runnable but waiting for one), summed over every
    thread of these processes; those gone meanwhile count for nothing."""
    ran = waited = 0
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    a = f.read().split()
                ran += int(a[0])
                waited += int(a[1])
            except (OSError, IndexError, ValueError):
                pass
    return ran, waited


def cpu_ns(pids):
    """ns on a CPU of every thread of these processes."""
    return schedstat_ns(pids)[0]
