"""Decode's achieved memory bandwidth, as gpt-fast prints it, and its fraction of the machine's bandwidth ceiling
(docs/generation.md). No imports: the child adds them to a generate run's metrics once its roofline is counted.

    decode_bytes_per_second    = bytes per decoded token x decode tokens per second      (each timed run)
    decode_bandwidth_fraction  = decode_bytes_per_second / the memory's peak bytes per second

The bytes per decoded token (the weights once plus the KV cache read at the mean decode position) are the record's
`roofline.bytes_per_token`; the ceiling is the streaming bandwidth measured on this machine, environment.ceilings'
`bytes_per_second` (docs/roofline.md). A record without either has neither figure: none is made up. A fraction
above 1 means the count or the ceiling is wrong, and is not given."""

from __future__ import annotations

from typing import Optional

BYTES_PER_SECOND = "decode_bytes_per_second"
FRACTION = "decode_bandwidth_fraction"
NAMES = (BYTES_PER_SECOND, FRACTION)
# Where the roofline's counts and the machine's ceilings are in a record (docs/roofline.md).
BYTES_PER_TOKEN = "bytes_per_token"
CEILING = "bytes_per_second"


def _positive(value) -> Optional[float]:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and value != float("inf")
    return float(value) if ok else None


def figures(record: dict) -> dict:
    """{decode_bytes_per_second: [each run's], decode_bandwidth_fraction: [each run's]} of a generate run's record,
    each present only where the record has what it needs (a fraction above 1 in any run: no fraction)."""
    roofline = record.get("roofline") if isinstance(record.get("roofline"), dict) else {}
    per_token = _positive(roofline.get(BYTES_PER_TOKEN))
    rates = (record.get("metrics") or {}).get("decode_tokens_per_second")
    if per_token is None or not isinstance(rates, list):
        return {}
    achieved = [per_token * rate for rate in map(_positive, rates) if rate is not None]
    if not achieved:
        return {}
    out = {BYTES_PER_SECOND: achieved}
    environment = record.get("environment") if isinstance(record.get("environment"), dict) else {}
    ceilings = environment.get("ceilings") if isinstance(environment.get("ceilings"), dict) else {}
    peak = _positive(ceilings.get(CEILING))
    if peak is not None and max(achieved) <= peak:
        out[FRACTION] = [value / peak for value in achieved]
    return out
