"""Recognising and masking API keys, so config never stores one and output never shows one."""

from __future__ import annotations

import re

# Vendor key prefixes seen in the wild; a value starting with one is a key, not a name.
_KEY_PREFIX = re.compile(r"^(sk-ant-|sk-proj-|sk-|sk_|pk_|rk_|gsk_|xai-|AIza|ghp_|github_pat_|hf_)")
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_\-.+/=]+$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def looks_like_secret(value: str) -> bool:
    """True for strings that look like a credential rather than a name or a URL.

    Deliberately loose: a false alarm costs the user one edit, a miss puts a key in a
    file that may be committed.
    """
    value = value.strip()
    if value.lower().startswith("bearer "):
        return looks_like_secret(value[7:])
    if _KEY_PREFIX.match(value) and len(value) >= 16:
        return True
    if len(value) < 32 or not _TOKEN_CHARS.match(value) or value.isupper():
        return False
    # Long mixed-case-and-digit runs are random tokens; SHOUTING_NAMES are variables.
    return any(c.isdigit() for c in value) and any(c.islower() for c in value)


def mask_secret(value: str) -> str:
    """`sk-…abcd`: enough to tell two keys apart, never enough to use one."""
    if len(value) < 12:
        return "…"
    return f"{value[:3]}…{value[-4:]}"
