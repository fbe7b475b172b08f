import ssl
from typing_extensions import Buffer

SAME_OPENSSL: bool
"""CPython's ``_ssl`` runs on the OpenSSL this module is linked to."""

class TlsReader:
    """Decrypts one server-side ``ssl.SSLObject``'s records in a C loop (see the module's text)."""

    ended: bool
    """close_notify or TCP EOF was reached."""

    def read_into(self, buf: Buffer, want: int, raw: Buffer) -> int:
        """Up to ``want`` plaintext bytes (all of ``buf`` when 0) into ``buf``, ciphertext received
        through ``raw``; raises BlockingIOError (nothing yet), ssl.SSLError, OSError."""
        ...

def reader_for(sslobj: ssl.SSLObject, fd: int) -> TlsReader | None:
    """A reader for ``sslobj`` fed from socket ``fd``, or None where its SSL cannot be borrowed."""
    ...
