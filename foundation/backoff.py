"""An exponential backoff's delay, shared by the API client's retries, the work queue, the informers'
reconnects and the fight detector.

Each doubles a base delay per failure up to a cap. The exponent is held at 62: from 2**1024 an int
times a float is an OverflowError, which a key, a watch or a fight failing for ever reaches (1,024
failures; a fight at the 300 s cap in about 85 hours). client-go's limiters return their cap there
(ItemExponentialFailureRateLimiter), and 2**62 times any base here is far past any cap.
"""

from __future__ import annotations


def doubled(base: float, times: int, cap: float) -> float:
    """``base`` doubled ``times`` times, at most ``cap``."""
    delay: float = base * 2 ** min(times, 62)  # int ** int is typed Any: ``times`` is never negative
    return min(cap, delay)
