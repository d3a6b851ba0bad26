"""The resource monitor of ``daliaug doctor`` and the benchmarks counts this process's CPU,
not the machine's."""

from __future__ import annotations

import subprocess
import sys
import time

from daliaug.tools.monitor import Monitor

BURN = "import time\nend = time.time() + 3\nwhile time.time() < end: pass\n"


def busy_while_monitored(busy: bool) -> float:
    """Mean CPU % of this process over about a second, busy or asleep."""
    with Monitor(interval=0.1) as monitor:
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            if not busy:
                time.sleep(0.05)
    return monitor.mean("cpu_percent") or 0.0


def test_cpu_is_this_process_and_not_the_machine() -> None:
    # A process that is not a descendant (its parent, the shell, exits at once) burns a core.
    subprocess.run(["sh", "-c", f'"{sys.executable}" -c "{BURN}" &'], check=True, timeout=600)
    idle = busy_while_monitored(busy=False)
    busy = busy_while_monitored(busy=True)
    assert idle < 10.0, idle  # the other process's core is not counted
    assert busy > 3 * idle and busy > 10.0, (busy, idle)
