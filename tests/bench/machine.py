"""What the figures ran on, and what else was running: memory of this process (RSS from
/proc), the machine (cores, CPU model, memory, Python), and the CPU time other processes
used while a benchmark ran (a busy machine slows everything; the docs say so when it was)."""

from __future__ import annotations

import os
import platform
import threading
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


def _cpu_ticks() -> dict[int, tuple[str, int, int]]:
    """pid -> (command, utime + stime, start time), in clock ticks, of every process now."""
    ticks: dict[int, tuple[str, int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        command = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        ticks[int(entry.name)] = (command, int(fields[11]) + int(fields[12]), int(fields[19]))
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
    and stop(), sampled every `every` seconds so processes that come and go in between
    are seen (one that lives less than a sample is missed: the figure is a lower bound)."""

    def __init__(self, every: float = 2.0) -> None:
        self._every = every
        self._seen: dict[int, tuple[str, int, int]] = {}  # pid -> _cpu_ticks() at last sample
        self._used: dict[str, int] = {}  # command -> ticks used since start
        self._started = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._seen = _cpu_ticks()  # what ran before the start does not count
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="other-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._sample()

    def _sample(self) -> None:
        ours = _descendants(os.getpid())
        now = _cpu_ticks()
        for pid, (command, ticks, started) in now.items():
            before = self._seen.get(pid)
            if before is not None and before[2] != started:
                before = None  # the pid was reused: a new process, counted from zero
            delta = ticks - (before[1] if before is not None else 0)
            if pid not in ours and delta > 0:
                self._used[command] = self._used.get(command, 0) + delta
        self._seen = now

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        hz = os.sysconf("SC_CLK_TCK")
        used = {command: ticks / hz for command, ticks in self._used.items()}
        wall = time.monotonic() - self._started
        busiest = sorted(used.items(), key=lambda kv: -kv[1])[:5]
        total = sum(used.values())
        share = total / (wall * (os.cpu_count() or 1)) if wall else 0.0
        return {
            "wall_seconds": round(wall, 1),
            "other_processes_cpu_seconds": round(total, 1),
            "other_processes_share_of_machine": round(share, 3),
            "busiest_other_processes": {k: round(v, 1) for k, v in busiest},
            "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
        }
