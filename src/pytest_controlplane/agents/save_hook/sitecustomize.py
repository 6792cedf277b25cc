"""Save points of a Python agent process: put first on PYTHONPATH by pytest-controlplane during a crash test.

Every file the process opens for writing in the session store's directory ($CONTROLPLANE_STORE) is a save,
numbered across all the processes of the run in the log $CONTROLPLANE_SAVE_LOG (one JSON line per save).  At
save number $CONTROLPLANE_CRASH_SAVE, the first write stores half of its bytes (a close with nothing written
keeps the truncated file), the file as it was before that save is kept beside the log, and the process group
is SIGKILLed: what a power cut or the OOM killer leaves.  Covers open(), io.open, pathlib's write_text /
write_bytes / open, os.open + os.write / os.fdopen, and tempfile (mkstemp, NamedTemporaryFile) in that directory;
not writes made inside C libraries (sqlite3, for one).  Then the sitecustomize this
one shadows, if any, runs as usual.
"""

import builtins
import io
import json
import os
import signal
import sys

_STORE = os.environ.get("CONTROLPLANE_STORE", "")
_LOG = os.environ.get("CONTROLPLANE_SAVE_LOG", "")
_ARMED = os.environ.get("CONTROLPLANE_CRASH_SAVE", "")
_WRITING = os.O_WRONLY | os.O_RDWR
_open, _os_open, _os_write, _os_close = io.open, os.open, os.write, os.close
_cut_fds: set[int] = set()


def _in_store(file):
    if isinstance(file, int):
        return False
    try:
        path = os.path.realpath(os.fsdecode(file))
    except (TypeError, ValueError):
        return False
    return path.startswith(_STORE + os.sep)


def _save(file):
    """Log one save; True if it is the one to cut.  The log's lock makes the numbering whole across processes."""
    import fcntl
    import shutil

    path = os.path.realpath(os.fsdecode(file))
    fd = _os_open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with _open(_LOG, "rb") as log:
            number = log.read().count(b"\n") + 1
        cut = str(number) == _ARMED
        kept = None
        if cut and os.path.isfile(path):
            kept = f"{_LOG}.before-save-{number}"
            shutil.copyfile(path, kept)
        _os_write(fd, (json.dumps({"save": number, "path": path, "cut": cut, "kept": kept}) + "\n").encode())
    finally:
        _os_close(fd)
    return cut


def _die():
    os.killpg(os.getpgrp(), signal.SIGKILL)


class _Cut:
    """The file of the save to cut: its first write stores half, then the process group dies."""

    def __init__(self, file):
        self._file = file

    def __getattr__(self, name):
        return getattr(self._file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def write(self, data):
        self._file.write(data[: max(1, len(data) // 2)])
        self._file.flush()
        _die()

    def writelines(self, lines):
        lines = list(lines)
        self.write((b"" if lines and isinstance(lines[0], bytes) else "").join(lines))

    def close(self):
        self._file.flush()
        _die()


def _patched_open(file, mode="r", *args, **kwargs):
    cut = not isinstance(file, int) and any(flag in mode for flag in "wax+") and _in_store(file) and _save(file)
    opened = _open(file, mode, *args, **kwargs)
    try:
        fd = opened.fileno()  # a cut save opened through os.open or an opener= (NamedTemporaryFile)
    except (AttributeError, OSError, ValueError):
        fd = None
    return _Cut(opened) if cut or fd in _cut_fds else opened


def _patched_os_open(path, flags, mode=0o777, *, dir_fd=None):
    if flags & _WRITING and dir_fd is None and _in_store(path):
        cut = _save(path)
        fd = _os_open(path, flags, mode)
        if cut:
            _cut_fds.add(fd)
        return fd
    return _os_open(path, flags, mode, dir_fd=dir_fd)


def _patched_os_write(fd, data):
    if fd in _cut_fds:
        _os_write(fd, bytes(data)[: max(1, len(data) // 2)])
        _die()
    return _os_write(fd, data)


def _patched_os_close(fd):
    if fd in _cut_fds:
        _die()  # closed with nothing written: the truncated file is what the save leaves
    return _os_close(fd)


def _chain():
    """Run the sitecustomize that this one shadows (a distribution's or a virtualenv's), as Python would have."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if _STORE and _LOG:
    _STORE = os.path.realpath(_STORE)
    io.open = _patched_open
    builtins.open = _patched_open
    os.open, os.write, os.close = _patched_os_open, _patched_os_write, _patched_os_close
_chain()
