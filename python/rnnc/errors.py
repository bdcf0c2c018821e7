"""Every rnnc_status as a Python exception carrying rnnc_last_error()'s text."""
import re

from ._lib import lib, text


class Error(Exception):
    """A failure reported by the rnnc library.

    status: the rnnc_status number; status_name: its name (rnnc_status_string);
    detail: rnnc_last_error() right after the failing call."""

    status = None

    def __init__(self, detail, status=None):
        if status is not None:
            self.status = status
        self.detail = detail
        self.status_name = text(lib.rnnc_status_string(self.status)) if self.status else "error"
        super().__init__(f"{self.status_name}: {detail}" if detail else self.status_name)


class InvalidArgumentError(Error, ValueError):
    status = 1


class OutOfMemoryError(Error, MemoryError):
    status = 2


class ParseError(Error, ValueError):
    """A malformed .cell text; file, line and col say where (None if unknown)."""

    status = 3

    def __init__(self, detail, status=None):
        super().__init__(detail, status)
        m = re.match(r"^(.*?):(\d+):(\d+): ", detail or "")
        self.file = m.group(1) if m else None
        self.line = int(m.group(2)) if m else None
        self.col = int(m.group(3)) if m else None


class ShapeError(Error, ValueError):
    status = 4


class FileError(Error, OSError):
    """RNNC_ERR_IO: a file cannot be read or written."""

    status = 5


class FormatError(Error, ValueError):
    status = 6


class UnsupportedError(Error):
    status = 7


class NotBuiltError(UnsupportedError):
    status = 8


class NoDeviceError(Error):
    status = 9


class CudaError(Error):
    status = 10


class NvrtcError(Error):
    status = 11


class CudnnError(Error):
    status = 12


class LlvmError(Error):
    status = 13


class NotFoundError(Error, LookupError):
    status = 14


class StateError(Error, RuntimeError):
    status = 15


class InternalError(Error):
    status = 16


BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, OutOfMemoryError, ParseError, ShapeError, FileError, FormatError,
    UnsupportedError, NotBuiltError, NoDeviceError, CudaError, NvrtcError, CudnnError,
    LlvmError, NotFoundError, StateError, InternalError)}


def check(status):
    """Raises the exception of a failed status; returns None on RNNC_OK."""
    if status != 0:
        raise BY_STATUS.get(status, Error)(text(lib.rnnc_last_error()), status)


