"""What each side's records say of the machine they ran on: the runner's noise check at each sweep's start
(`environment.noise`: the load average, and the problems it warned about, runner/noise.py), summed up per side so that
compare.py shows it beside its verdicts: a treatment swept while a compiler ran on the same cores is not hidden."""

from __future__ import annotations

import re


def _problem(text: str) -> str:
    """A warning without its fix, and with a busy process's pid and share left out (the kind of noise, not the
    instance): `other processes are busy: python`."""
    text = str(text).split(" (fix:", 1)[0]
    return re.sub(r" \(pid \d+, [\d.]+%\)", "", text)


def summary(found: list) -> dict:
    """{"sweeps", "load_average": [lowest, highest] of the 1-minute load at each sweep's start (None: not recorded),
    "cores", "warnings": the problems warned about (each once), "records_warned", "records"} of one side's records."""
    sweeps, loads, cores, warnings, warned = set(), [], set(), [], 0
    for record in found:
        environment = record.get("environment") if isinstance(record, dict) else None
        noise = environment.get("noise") if isinstance(environment, dict) else None
        sweeps.add(record.get("timestamp") if isinstance(record, dict) else None)
        if not isinstance(noise, dict):
            continue
        load = noise.get("load_average")
        if isinstance(load, list) and load and isinstance(load[0], (int, float)):
            loads.append(float(load[0]))
        if isinstance(noise.get("cores"), list):
            cores.add(len(noise["cores"]))
        problems = [_problem(p) for p in noise.get("problems") or [] if isinstance(p, str)]
        warned += bool(problems)
        warnings += [p for p in problems if p not in warnings]
    return {"sweeps": len(sweeps), "records": len(found), "records_warned": warned,
            "load_average": [min(loads), max(loads)] if loads else None,
            "cores": sorted(cores), "warnings": warnings}


def text(side: str, noise: dict) -> str:
    """One line: `control (1 sweep): load 1.51 at its start, 2 cores; noise warned on 8 of 8 records: ...`."""
    sweeps = noise["sweeps"]
    head = f"{side} ({sweeps} sweep{'s' if sweeps != 1 else ''}, {noise['records']} records):"
    load = noise["load_average"]
    if load is None:
        return f"{head} no noise check recorded (records of an older runner, or upstream's)"
    shown = f"{load[0]:.2f}" if load[0] == load[1] else f"{load[0]:.2f}-{load[1]:.2f}"
    cores = "/".join(map(str, noise["cores"])) or "?"
    line = f"{head} load average {shown} at the start, {cores} core(s)"
    if noise["warnings"]:
        line += (f"; the runner warned of noise on {noise['records_warned']} of {noise['records']}: "
                 + "; ".join(noise["warnings"]))
    else:
        line += "; no noise warning"
    return line
