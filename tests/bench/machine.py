"""What the figures ran on, and what else was running: memory of this process (RSS from
/proc), the machine (cores, CPU model, memory, Python), and the CPU time other processes
used while a benchmark ran (a busy machine slows everything; the docs say so when it was)."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any


def _status_kb(field: str, pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size now, MB."""
    return round(_status_kb("VmRSS", pid) / 1024, 1)


def peak_rss_mb(pid: int | str = "self") -> float:
    """Peak resident set size of the process's life (VmHWM), MB."""
    return round(_status_kb("VmHWM", pid) / 1024, 1)


def machine_info() -> dict[str, Any]:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    return {
        "cores": os.cpu_count(),
        "cpu_model": model,
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "loadavg_1m_at_start": round(os.getloadavg()[0], 2),
    }


def _cpu_ticks() -> dict[int, tuple[str, int]]:
    """pid -> (command, utime + stime in clock ticks) of every process now."""
    ticks: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        command = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        ticks[int(entry.name)] = (command, int(fields[11]) + int(fields[12]))
    return ticks


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(raw[raw.rindex(")") + 2 :].split()[1])
    found = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    return found


class OtherLoad:
    """CPU seconds used by processes outside this benchmark's process tree between start()
    and stop(). A process that started in between counts whole; one that also ended in
    between is not seen."""

    def __init__(self) -> None:
        self._start: dict[int, tuple[str, int]] = {}
        self._started = 0.0

    def start(self) -> None:
        self._start = _cpu_ticks()
        self._started = time.monotonic()

    def stop(self) -> dict[str, Any]:
        hz = os.sysconf("SC_CLK_TCK")
        end = _cpu_ticks()
        ours = _descendants(os.getpid())
        used: dict[str, float] = {}
        for pid, (command, ticks) in end.items():
            if pid in ours:
                continue
            before = self._start.get(pid, (command, 0))  # started since: all of it
            seconds = (ticks - before[1]) / hz
            if seconds > 0:
                used[command] = used.get(command, 0.0) + seconds
        wall = time.monotonic() - self._started
        busiest = sorted(used.items(), key=lambda kv: -kv[1])[:5]
        total = sum(used.values())
        return {
            "wall_seconds": round(wall, 1),
            "other_processes_cpu_seconds": round(total, 1),
            "other_processes_share_of_machine": round(total / (wall * (os.cpu_count() or 1)), 3)
            if wall
            else 0.0,
            "busiest_other_processes": {k: round(v, 1) for k, v in busiest},
            "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
        }
