"""The bearer-token file of ``agentkit-memory mcp --http``: which token reaches which tenant.

One line per token, ``sha256:<hex digest of the token>  ORG/DOMAIN``; ``#`` starts a
comment. Only digests are written, so a copy of the file (a backup, a leaked config
repo) lets nobody in: tokens are 256 random bits, so a digest cannot be reversed and
needs no salt. A presented token is hashed and compared with every digest in constant
time, so response timing does not reveal how much of a digest matched.

The file is re-read when it changes (size, mtime or inode), so a token added or removed
while a server runs takes effect on the next request. A file anyone but its owner may
write is refused: whoever can add a line can mint a tenant's key.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import os
import secrets
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentkit.cli._args import UsageError, parse_scope
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, StoreError

if TYPE_CHECKING:  # the SDK is imported by the server only; token add runs without it
    from mcp.server.auth.provider import AccessToken

_PREFIX = "sha256:"
_HEX = frozenset("0123456789abcdef")
TOKEN_BYTES = 32


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _scope_text(scope: Scope) -> str:
    text = f"{scope.org_id}/{scope.domain_id}"
    if scope.org_id is None or scope.domain_id is None:
        raise InvalidArgument("a token needs a tenant: ORG/DOMAIN")
    if "#" in text or any(c.isspace() for c in text):
        raise InvalidArgument(f"a tenant in the token file cannot hold spaces or '#': {text!r}")
    return text


def _parse_scope(text: str, where: str) -> Scope:
    try:
        return parse_scope(text)  # the one ORG/DOMAIN rule, --scope's
    except UsageError:
        raise InvalidArgument(f"{where}: tenant must look like ORG/DOMAIN, got {text!r}") from None


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    scope: Scope


def _check_mode(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"token file {str(path)!r} is not a regular file")
    if st.st_mode & 0o022:
        raise StoreError(
            f"token file {str(path)!r} may be written by others (mode {st.st_mode & 0o777:o}); "
            f"anyone who can add a line can reach any tenant: chmod 600 {str(path)!r}"
        )


def _parse(path: Path, text: str) -> list[_Entry]:
    entries: list[_Entry] = []
    seen: dict[bytes, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{n}"
        parts = line.split()
        if len(parts) != 2 or not parts[0].startswith(_PREFIX):
            raise InvalidArgument(f"{where}: expected 'sha256:<64 hex digits> ORG/DOMAIN'")
        hexdigest = parts[0][len(_PREFIX):].lower()
        if len(hexdigest) != 64 or not set(hexdigest) <= _HEX:
            raise InvalidArgument(f"{where}: the digest is not 64 hex digits")
        key = bytes.fromhex(hexdigest)
        if key in seen:
            raise InvalidArgument(f"{where}: the same token digest is on line {seen[key]}")
        seen[key] = n
        entries.append(_Entry(key, _parse_scope(parts[1], where)))
    return entries


class TokenFile:
    """Bearer tokens -> tenants, read from ``path``; an MCP SDK ``TokenVerifier``.

    The AccessToken it answers names the token (``client_id``, a digest prefix) as well
    as its tenant (``subject``), because the SDK binds an HTTP session to the principal
    that opened it: a session opened with one token is refused to every other token,
    the same tenant's included.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int, int] | None = None
        self._entries: list[_Entry] = []
        self._reload()

    def __len__(self) -> int:
        return len(self._entries)

    def _reload(self) -> None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            raise StoreError(
                f"no token file at {str(self.path)!r} (create one with: agentkit-memory mcp "
                f"token add ORG/DOMAIN --tokens {str(self.path)!r})"
            ) from None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stamp == self._stamp:
            return
        _check_mode(self.path, st)
        entries = _parse(self.path, self.path.read_text(encoding="utf-8"))
        self._entries, self._stamp = entries, stamp

    def lookup(self, token: str) -> tuple[str, Scope] | None:
        """(token id, tenant) for a valid token, else None. Every digest is compared."""
        with self._lock:
            try:
                self._reload()
            except (OSError, InvalidArgument, StoreError):
                # A file broken while serving (half-edited, chmod'ed open) admits nobody
                # rather than whoever the old copy admitted.
                self._entries, self._stamp = [], None
                return None
            entries = self._entries
        presented = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found: _Entry | None = None
        for entry in entries:
            if hmac.compare_digest(presented, entry.digest):
                found = entry
        if found is None:
            return None
        return "token-" + found.digest.hex()[:16], found.scope

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        hit = self.lookup(token)
        if hit is None:
            return None
        token_id, scope = hit
        return AccessToken(
            token=token_id,  # never the secret itself: this object is logged and kept
            client_id=token_id,
            scopes=[],
            subject=_scope_text(scope),
            claims={"org_id": scope.org_id, "domain_id": scope.domain_id},
        )


def scope_of(access: AccessToken) -> Scope:
    """The tenant an AccessToken from :class:`TokenFile` was issued for."""
    claims = access.claims or {}
    org, domain = claims.get("org_id"), claims.get("domain_id")
    if not isinstance(org, str) or not isinstance(domain, str) or not org or not domain:
        raise StoreError("the bearer token carries no tenant")
    return Scope(org, domain)


def add_token(path: str | os.PathLike[str], scope: Scope) -> str:
    """Append a fresh token's digest for ``scope`` to the file (made 0600 if missing)
    and return the token: the only time it exists in the clear."""
    target = Path(path)
    tenant = _scope_text(scope)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    line = f"{_PREFIX}{digest(token)}  {tenant}\n"
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with contextlib.closing(os.fdopen(fd, "a", encoding="utf-8")) as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        st = os.fstat(fh.fileno())
        _check_mode(target, st)
        # The file must parse before and after: never append to a file a server refuses.
        _parse(target, target.read_text(encoding="utf-8"))
        if st.st_size == 0:
            fh.write("# agentkit-memory mcp tokens: sha256 digest, tenant. Never tokens.\n")
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())
    return token
