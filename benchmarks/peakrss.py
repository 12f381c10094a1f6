"""Run a command; print its wall time, CPU time and peak RSS as a last JSON line.

    python -m benchmarks.peakrss CMD [ARG ...]

Linux keeps a process's peak RSS across ``exec`` (``ru_maxrss`` remembers
the address space it replaced), so a command started straight from a big
process reports that process's size. This small process forks and execs
the command itself: its child starts from a few MB, and ``wait4`` then gives
the command's own peak. The command's standard output and error pass through.
"""

from __future__ import annotations

import json
import os
import sys
import time


def own_peak_bytes() -> int:
    """This process's own peak RSS in bytes: ``VmHWM`` of /proc/self/status,
    the high-water mark of its current address space, which ``exec`` starts
    afresh (``ru_maxrss`` keeps the replaced one's: a child started from a big
    benchmark process reported that process's size, 8.55 GB for every fit of
    ``bench_dims`` after ``make bench``'s 1e8-row section). ``ru_maxrss``
    where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(cmd: list[str]) -> int:
    sys.stdout.flush()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child becomes the command
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "wall_s": wall,
                "cpu_s": ru.ru_utime + ru.ru_stime,
                # apart: on the shared virtual machine the system time is mostly
                # first touches of fresh memory, whose cost moves with the load
                "user_s": ru.ru_utime,
                "sys_s": ru.ru_stime,
                "minor_faults": ru.ru_minflt,
                "peak_rss_bytes": ru.ru_maxrss * 1024,
                "exit": os.waitstatus_to_exitcode(status),
            }
        ),
        flush=True,
    )
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
