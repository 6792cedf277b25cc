"""`controlplane secret-id [VALUE]`: the mask this machine's reports show for a secret, so that whoever holds the mask
key (mask_key.py) can tell by hand which secret a mask in a report stands for."""

from __future__ import annotations

import sys

from .masking import mask


def secret_id(value: str) -> int:
    """Prints the mask of `value`; "-" reads it from stdin instead, one line without its line break, so that it is
    in no shell history and no process list.  Exits 0."""
    if value == "-":
        value = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    print(mask(value))
    return 0
