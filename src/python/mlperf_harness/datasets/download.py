"""Download one file over HTTP(S): progress bar, resume, checksum, atomic placement.

The bytes go to "<dest>.part" first. A call after an interruption asks the server for the rest (an
HTTP Range request) instead of starting over; a server that ignores Range sends the whole file.
Only a complete file whose checksum matches is renamed to dest: dest is either absent or right.
One download of a file at a time (mlperf_harness.scratch_lock): a second run waits and uses it.
urllib only (no requests): one dependency fewer for a pex that must run on bare GPU hosts.
"""

from __future__ import annotations

import http.client
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from tqdm import tqdm

from mlperf_harness.errors import HarnessError
from mlperf_harness.hashing import file_digests
from mlperf_harness.progress import bar_disabled
from mlperf_harness.scratch_lock import exclusive
from mlperf_harness.write_errors import is_user_fixable, write_error

_BLOCK = 1 << 20
_USER_AGENT = "mlperf-harness-download/1"
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def download(
    url: str,
    dest: Path,
    sha256: str | None = None,
    description: str = "",
    *,
    md5: str | None = None,
    timeout: float = 60.0,
    progress: bool = True,
) -> Path:
    """Fetch url to dest unless dest is already there (and matches the checksum); return dest.

    sha256 or md5 (hex) is checked when given: some publishers (Zenodo, MLCommons) give only md5.
    """
    algorithm, expected = _pick_checksum(sha256, md5)
    what = description or dest.name
    if dest.is_file():
        return _checked(dest, algorithm, expected, what)
    # Two runs appending to one .part would corrupt it: the second waits, then finds the file.
    with exclusive(dest, f"downloading {what}"):
        if dest.is_file():
            return _checked(dest, algorithm, expected, what)
        _download_to(url, dest, algorithm, expected, what, timeout, progress)
    return dest


def _checked(dest: Path, algorithm: str, expected: str | None, what: str) -> Path:
    if expected is not None:
        actual = file_digests(dest, algorithm)[0]
        if actual != expected:
            raise HarnessError(
                f"{dest} exists but its {algorithm} is {actual}, not {expected}: it is not "
                f"the expected {what}; delete it to download again, or put the right file there"
            )
    return dest


def _download_to(
    url: str,
    dest: Path,
    algorithm: str,
    expected: str | None,
    what: str,
    timeout: float,
    progress: bool,
) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        _fetch_to_part(url, part, what, timeout, progress)
    except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
        if isinstance(err, OSError) and is_user_fixable(err):
            # A full disk or a read-only directory: the cause is here, not the network.
            raise write_error(err, part) from err
        # HTTPError is a URLError; both carry a reason worth showing. Plain OSError covers timeouts
        # and connection resets mid-transfer: the .part file stays, so the next call resumes.
        if isinstance(err, urllib.error.HTTPError):
            reason: object = f"HTTP {err.code} {err.reason}"
        else:
            reason = getattr(err, "reason", None) or err
        hint = f" with {algorithm} {expected}" if expected else ""
        raise HarnessError(
            f"cannot download {what} from {url} ({reason}); run again to resume, or without "
            f"network fetch it on another machine and put it at {dest}{hint}"
        ) from err
    if expected is not None:
        actual = file_digests(part, algorithm)[0]
        if actual != expected:
            part.unlink()
            raise HarnessError(
                f"{what} from {url} has {algorithm} {actual}, expected {expected}: deleted the "
                "download; run again, and if it persists the file at that address has changed"
            )
    os.replace(part, dest)


def _pick_checksum(sha256: str | None, md5: str | None) -> tuple[str, str | None]:
    if sha256 is not None and md5 is not None:
        raise ValueError("give sha256 or md5, not both")
    if sha256 is not None:
        return "sha256", sha256.lower()
    if md5 is not None:
        return "md5", md5.lower()
    return "sha256", None


def _fetch_to_part(url: str, part: Path, what: str, timeout: float, progress: bool) -> None:
    """Append the missing bytes of url to part (resuming what is there); raise if cut short."""
    offset = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code != 416 or not offset:
            raise
        # 416 "bytes */<size>": nothing left past offset. If the .part is exactly the file's size an
        # earlier run stopped just before the rename; anything else is not a prefix: start over.
        match = re.fullmatch(r"bytes \*/(\d+)", (err.headers.get("Content-Range") or "").strip())
        if match is not None and int(match.group(1)) == offset:
            return
        part.unlink()
        _fetch_to_part(url, part, what, timeout, progress)
        return
    with response:
        total = _total_size(response, offset)
        if offset and response.status != 206:
            offset = 0  # The server ignored Range and sends the whole file: start over.
        with (
            part.open("r+b" if offset else "wb") as out,
            tqdm(
                total=total,
                initial=offset,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=what,
                disable=bar_disabled(progress),
            ) as bar,
        ):
            out.seek(offset)
            out.truncate()
            received = offset + _copy(response, out, bar)
            out.flush()
            os.fsync(out.fileno())
    if total is not None and received != total:
        raise http.client.IncompleteRead(b"", total - received)


def _total_size(response: http.client.HTTPResponse, offset: int) -> int | None:
    """The whole file's size: Content-Range on a 206, Content-Length on a 200; None if unknown."""
    if response.status == 206:
        match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
        if match is None or int(match.group(1)) != offset:
            raise http.client.HTTPException(
                f"server answered a resume with an unexpected Content-Range "
                f"{response.headers.get('Content-Range')!r}"
            )
        return None if match.group(3) == "*" else int(match.group(3))
    length = response.headers.get("Content-Length")
    return int(length) if length is not None and length.isdigit() else None


def _copy(response: http.client.HTTPResponse, out: IO[bytes], bar: tqdm) -> int:
    copied = 0
    while block := response.read(_BLOCK):
        out.write(block)
        copied += len(block)
        bar.update(len(block))
    return copied
