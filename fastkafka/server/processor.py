"""A network processor: one thread, one epoll set, many connections.

The acceptor hands it sockets; it cuts their input into frames, passes each frame to the
request channel as a :class:`Request`, and writes the response the handler completes it with.
Per connection at most one request is in flight (the connection is muted until its response has
left), which keeps pipelined responses in order without sequence numbers.

Handlers may complete a request from any thread: completions go through a deque and a
socketpair wakes the loop. A completion may be delayed (the response leaves later), close
the connection some time after its response, or keep the connection muted some time after its
response (a client throttled by a quota: KIP-219), all through one heap of due times.
Unframeable or oversized input closes that connection only; nothing a client sends can stop
the loop.

TLS listeners give accepted sockets a :class:`~fastkafka.server.tls_transport.TlsTransport`
(OpenSSL over memory BIOs) and run the handshake here, non-blocking, before any frame is read: a
slow or garbage handshake costs its own connection only. Each connection carries a
:class:`~fastkafka.server.listener_security.Session` (who the client is) that requests see.

While any client quota is configured the loop also times what it spends on each connection's
bytes (reads, writes, the TLS handshake) into ``Connection.network_s``, which the request quota
charges when a response has left (Kafka's network-thread time, :mod:`.quotas`); with none it
costs one attribute test per read and per write.

With no connection and nothing due the loop waits with no timeout (a wakeup or a new connection
ends the wait), and waiting allocates nothing: an object made for a wait and kept across it
lands in the pools a wave of closed connections just emptied and keeps their arena resident
(bench/RESULTS.md, "Idle connections"). Hence epoll itself rather than ``selectors`` (whose
``select`` makes a list and a rounded timeout before blocking) and a maxevents too large for
CPython's small-object allocator.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import select
import selectors
import socket
import threading
import time
from array import array
from collections import deque
from typing import Callable

from fastkafka.security.principal_mapping import NoMatchingRule

from .connection import SCRATCH_BYTES, Connection, FrameError
from .listener_security import ListenerSecurity, Session
from .send import Send
from .tls_transport import RAW_BYTES, TlsTransport

__all__ = ["Processor", "Request"]

log = logging.getLogger("fastkafka.server")

_READ = selectors.EVENT_READ     # interest as selectors and TlsTransport name it
_WRITE = selectors.EVENT_WRITE
_EPOLL_MASK = (0, select.EPOLLIN, select.EPOLLOUT, select.EPOLLIN | select.EPOLLOUT)  # by interest
# an error or hang-up wakes both a reader and a writer (they find out on their next call)
_READABLE = ~select.EPOLLOUT
_WRITABLE = ~select.EPOLLIN
# epoll_wait's buffer (12 bytes an event) is PyMem_Malloc'd for the whole wait: above 512 bytes
# it comes from malloc, not from a small-object pool (see the module docstring)
_MAX_EVENTS = 512
_TICK_S = 0.5        # the longest wait while connections are open (the idle reaper's clock)
_NO_RESPONSE = object()
_CLOSE = object()
_UNMUTE = object()   # a throttled connection's mute is over
_IN_FLIGHT = object()  # Connection.waiting: a request is being handled behind responses still going out
_PLAINTEXT = ListenerSecurity("PLAINTEXT", "PLAINTEXT")


class _NoQuotas:
    enabled = False


class _Last:
    """A response after which the connection closes, ``linger_s`` later (a failed authentication)."""

    __slots__ = ("chunks", "linger_s")

    def __init__(self, chunks, linger_s: float):
        self.chunks = chunks
        self.linger_s = linger_s


class _Throttled:
    """A response (or ``_NO_RESPONSE``) sent now, after which the connection reads nothing until
    ``until`` (KIP-219: a client over its quota is throttled by muting its channel)."""

    __slots__ = ("chunks", "until")

    def __init__(self, chunks, until: float):
        self.chunks = chunks
        self.until = until


class Request:
    """One received frame and the way back to its connection; complete it exactly once.

    ``frame`` is a writable buffer owned by the handler from now on.
    """

    __slots__ = ("processor", "conn", "frame", "received", "listener", "session")

    def __init__(self, processor: "Processor", conn: Connection, frame: bytearray | memoryview):
        self.processor = processor
        self.conn = conn
        self.frame = frame
        self.received = time.monotonic()
        self.listener = conn.listener
        session = conn.session
        assert session is not None, "a connection's frames are read only once it has its session"
        self.session: Session = session

    @property
    def connection_id(self) -> str:
        return self.conn.id

    def on_response_sent(self, callback: Callable[[float], None]) -> None:
        """Call ``callback(time.monotonic())`` on the processor thread once the response this
        request completes with has been written out (not if the connection closes first). Set it
        before completing the request."""
        self.conn.response_sent.append(callback)

    def respond(self, chunks: list) -> None:
        """Send one response frame: ``chunks`` (bytes-likes and FileRegions) start with its int32 size."""
        self.processor.complete(self.conn, chunks)

    def no_response(self) -> None:
        """The request needs no answer (Produce with acks=0): just unmute the connection."""
        self.processor.complete(self.conn, _NO_RESPONSE)

    def close_connection(self, delay_s: float = 0.0) -> None:
        """Drop the connection instead of answering (what Kafka does for unparsable requests),
        after ``delay_s`` (the connection stays muted meanwhile)."""
        self.processor.complete(self.conn, _CLOSE, delay_s)

    def respond_then_close(self, chunks: list, delay_s: float) -> None:
        """Send a last response ``delay_s`` from now, reading nothing meanwhile, then close the
        connection: Kafka's answer to a failed authentication, whose
        ``connection.failed.authentication.delay.ms`` holds back the error as well as the close
        (Selector's delayed close sends it), so a client guessing passwords waits that long for
        each answer whatever it does with the connection. Kafka closes right behind the answer;
        here the close comes ``delay_s`` after it, because a client that reads the answer and the
        end of the stream in one go may drop the answer (kafka-python 3.0 reports a lost
        connection instead of the failed authentication)."""
        self.processor.complete(self.conn, _Last(chunks, delay_s), delay_s)

    def respond_then_mute(self, chunks: list | None, delay_s: float) -> None:
        """Send ``chunks`` now (None: no response, as for acks=0), then read nothing more from
        the connection until ``delay_s`` from now (a client throttled by a quota, KIP-219)."""
        until = time.monotonic() + delay_s
        self.processor.complete(self.conn, _Throttled(_NO_RESPONSE if chunks is None else chunks, until))

    def respond_later(self, chunks: list, delay_s: float) -> None:
        """Send ``chunks`` ``delay_s`` from now, the connection muted meanwhile (a throttled
        client whose request version predates KIP-219 and so does not back off by itself)."""
        self.processor.complete(self.conn, chunks, delay_s)


class Processor(threading.Thread):
    """Owns its connections; thread-safe entry points are :meth:`assign`, :meth:`complete`, :meth:`shutdown`."""

    def __init__(self, index: int, submit: Callable[[Request], None], *, max_frame: int,
                 idle_ms: int, on_close: Callable[[tuple], None],
                 security: dict[str, ListenerSecurity] | None = None, quotas=None):
        super().__init__(name=f"fastkafka-network-{index}", daemon=True)
        self.index = index
        self._submit = submit
        self._security = security or {}
        # the broker's ClientQuotas: while ``enabled``, network time is kept per connection
        self._quotas = quotas if quotas is not None else _NoQuotas
        self._max_frame = max_frame
        self._idle_s = idle_ms / 1000.0
        self._on_close = on_close
        # every read of every connection of this thread goes through this one buffer
        self._scratch = memoryview(bytearray(SCRATCH_BYTES))
        # and every TLS connection's ciphertext, on its way into OpenSSL (allocated on first use)
        self._raw: memoryview | None = None
        self._ep = select.epoll()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_fd = self._wake_r.fileno()
        self._ep.register(self._wake_fd, select.EPOLLIN)
        self._wake_pending = False
        self._new: deque[tuple[socket.socket, tuple, str]] = deque()   # (socket, peer, listener)
        self._completions: deque[tuple[Connection, object]] = deque()
        self._later: deque[tuple[float, Connection, object]] = deque()  # delayed completions, any thread
        self._due: list[tuple[float, int, Connection, object]] = []      # their heap, loop thread only
        self._conns: dict[int, Connection] = {}
        # connection ids and the due heap's tie-break; a count object, not an int attribute: the
        # last int made during a wave of connections would outlive it and pin its memory
        # (SocketServer._accept says how)
        self._seq = itertools.count(1)
        self._compactions: deque[threading.Event] = deque()
        self._compacted: deque[threading.Event] = deque()   # set just before the next wait
        self._draining: bool | str = False      # "now": in-flight requests are no longer waited for
        self._stopped = threading.Event()
        self._tid = -1                           # this thread's ident once running
        self._dispatching: Connection | None = None  # whose request _submit is running inline
        # [seconds spent on turns, monotonic time of the next idle reap]: floats kept in an
        # array, not attributes, so that no float object made by a turn outlives it
        self._clock = array("d", (0.0, 0.0))
        self._run_since: float | None = None
        # by listener: [connections ready without SASL (PLAINTEXT; SSL once its handshake is
        # done), TLS handshakes that failed or named no principal], Kafka's successful and failed
        # authentications; C ints, so that no int made during a wave of connections outlives it
        # (see _seq). Written by this thread only, read by the metrics exporter.
        self._auth_counts = {name: array("q", (0, 0)) for name in self._security}
        self._auth_other = array("q", (0, 0))      # listeners without security settings (tests)

    # --- thread-safe entry points ---
    def assign(self, sock: socket.socket, peer, listener: str) -> None:
        self._new.append((sock, peer, listener))
        self._wakeup()

    def complete(self, conn: Connection, response, delay_s: float = 0.0) -> None:
        if delay_s > 0:
            self._later.append((time.monotonic() + delay_s, conn, response))
            self._wakeup()
            return
        on_loop = threading.get_ident() == self._tid
        if on_loop and conn is self._dispatching:
            # An inline handler answered during _submit: _next_request sends it right away, so
            # the connection never leaves the epoll set (two epoll_ctl calls saved per request).
            conn.inline_response = response
            return
        self._completions.append((conn, response))
        if not on_loop:  # completions made on the loop are drained by the loop itself
            self._wakeup()

    def shutdown(self, timeout: float) -> None:
        """Stop taking requests, let in-flight ones finish and their responses leave, then close all."""
        self._draining = True
        self._wakeup()
        self._stopped.wait(timeout)
        if not self._stopped.is_set():
            self._draining = "now"
            self._wakeup()
            self._stopped.wait(2.0)

    def compact(self) -> threading.Event:
        """Shrink this processor's fd -> connection dict to the connections left; the event is
        set once done, when the loop is about to wait again. Thread-safe. A dict never shrinks
        when entries are deleted, so after a wave of closes it keeps a slot per connection the
        wave had (about 30 bytes each) until rebuilt."""
        done = threading.Event()
        self._compactions.append(done)
        self._wakeup()
        return done

    def authentication_counts(self) -> dict[str, tuple[int, int]]:
        """By listener: (successful, failed) authentications this thread saw without SASL: see
        :mod:`.metrics`. Thread-safe (a copy)."""
        return {name: (c[0], c[1]) for name, c in self._auth_counts.items()}

    def _auth(self, listener: str) -> array:
        counts = self._auth_counts.get(listener)
        return self._auth_other if counts is None else counts

    @property
    def connection_count(self) -> int:
        return len(self._conns)

    @property
    def idle_seconds(self) -> float:
        """Seconds this thread spent waiting for events since it started (Kafka's IdlePercent
        is its rate; read by the metrics exporter): the time it ran, less its turns."""
        if self._run_since is None:
            return 0.0
        return max(0.0, time.monotonic() - self._run_since - self._clock[0])

    def _wakeup(self) -> None:
        if self._wake_pending:
            return
        self._wake_pending = True
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass

    # --- the loop ---
    def run(self) -> None:
        self._tid = threading.get_ident()
        self._run_since = time.monotonic()
        self._clock[1] = self._run_since + 1.0
        try:
            # Nothing here may hold an object across the wait (module docstring): the turn is
            # a method, so its locals go before the next wait, and its batch of events is a
            # temporary of the call.
            while True:
                timeout = self._timeout()
                if self._compacted:
                    self._signal_compacted()
                if self._turn(self._ep.poll(timeout, _MAX_EVENTS)):
                    break
        except Exception:  # a bug here must not leave clients hanging silently
            log.exception("network processor %d failed", self.index)
        finally:
            for conn in list(self._conns.values()):
                self._close(conn)
            self._ep.close()
            self._wake_r.close()
            self._wake_w.close()
            self._stopped.set()

    def _timeout(self) -> float | None:
        """How long the next wait may last: no limit with no connection and nothing due, a
        constant while connections are open (no float made per turn), less if a delayed
        completion falls due sooner."""
        if self._due:
            return min(_TICK_S, max(0.0, self._due[0][0] - time.monotonic()))
        if self._conns or self._draining:
            return _TICK_S
        return None

    def _turn(self, events: list) -> bool:
        """One turn of the loop after a wait; True once drained (shutdown)."""
        started = time.monotonic()
        self._on_events(events)
        self._register_new()
        self._release_due()
        self._process_completions()
        if self._compactions:
            self._compact()
        now = time.monotonic()
        if now >= self._clock[1] and self._conns:
            self._reap_idle(now)
            self._clock[1] = now + 1.0
        self._clock[0] += time.monotonic() - started
        return bool(self._draining) and self._drained()

    def _on_events(self, events) -> None:
        # A method, not inline in run(): its locals (the last connection served) go when it
        # returns, where a loop variable of run() would keep a closed connection alive until the
        # next event, pinning the memory the other closed connections gave back.
        conns = self._conns
        for fd, mask in events:
            if fd == self._wake_fd:
                self._drain_wakeups()
                continue
            conn = conns.get(fd)
            if conn is None:        # closed earlier in this batch
                continue
            if conn.handshaking:
                self._handshake(conn)
                continue
            if mask & _WRITABLE and conn.events & _WRITE:
                self._on_writable(conn)
            if mask & _READABLE and conn.events & _READ and not conn.closed:
                self._on_readable(conn)

    def _compact(self) -> None:
        # a dict sized to what is left (the epoll set keeps no table of ours); with nothing
        # left, emptied in place: a new dict would be one more object made at the end of the
        # wave, in its pools
        if self._conns:
            self._conns = dict(self._conns)
        else:
            self._conns.clear()
        self._compacted.extend(self._compactions)
        self._compactions.clear()

    def _signal_compacted(self) -> None:
        # just before the wait: whoever asked (SocketServer._compact_processors) collects and
        # trims once this thread has stopped allocating
        while self._compacted:
            self._compacted.popleft().set()

    def _drained(self) -> bool:
        if self._draining == "now":
            return True
        return (not any(c.muted for c in self._conns.values()) and not self._completions
                and not self._due and not self._later)

    def _release_due(self) -> None:
        """Move delayed completions whose time has come to the completion queue."""
        while self._later:
            due, conn, response = self._later.popleft()
            heapq.heappush(self._due, (due, next(self._seq), conn, response))
        now = time.monotonic()
        while self._due and (self._due[0][0] <= now or self._draining):
            _, _, conn, response = heapq.heappop(self._due)
            self._completions.append((conn, response))

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        # Only now: cleared before the drain, a wakeup sent meanwhile was swallowed with the flag
        # left set, and every later wakeup skipped (new connections waited for the select timeout).
        self._wake_pending = False

    def _register_new(self) -> None:
        while self._new:
            sock, peer, listener = self._new.popleft()
            if self._draining:
                sock.close()
                self._on_close(peer)
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            local = sock.getsockname()
            conn_id = f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-{self.index}-{next(self._seq)}"
            security = self._security.get(listener, _PLAINTEXT)
            tls = None
            if security.ssl_context is not None:
                if self._raw is None:
                    self._raw = memoryview(bytearray(RAW_BYTES))
                tls = TlsTransport(sock, security.ssl_context, self._raw)
            conn = Connection(conn_id, sock, peer, listener, self._max_frame, tls=tls)
            if tls is None:
                conn.session = Session(security)
                if not security.sasl:        # ready at once: Kafka counts it authenticated
                    self._auth(listener)[0] += 1
            self._conns[conn.fd] = conn
            self._set_interest(conn, _READ)

    def _handshake(self, conn: Connection) -> None:
        """Advance a TLS handshake; once done the connection reads frames like any other."""
        conn.last_active = time.monotonic()
        tls = conn.tls
        assert tls is not None, "only a TLS connection handshakes"
        try:
            want = tls.handshake()
        except (OSError, ValueError) as e:   # plaintext or garbage on a TLS port (ssl.SSLError), or EOF
            log.debug("closing %s: TLS handshake failed: %s", conn.id, e)
            self._auth(conn.listener)[1] += 1
            self._close(conn)
            return
        if self._quotas.enabled:    # Kafka charges the handshake to the connection's first request
            conn.network_s += time.monotonic() - conn.last_active
        if want:
            self._set_interest(conn, want)
            return
        conn.handshaking = False
        try:
            session = conn.session = Session(self._security[conn.listener], tls.getpeercert() or None)
        except NoMatchingRule as e:      # Kafka refuses a client it cannot name
            log.info("closing %s: %s (ssl.principal.mapping.rules)", conn.id, e)
            self._auth(conn.listener)[1] += 1
            self._close(conn)
            return
        if not session.security.sasl:
            self._auth(conn.listener)[0] += 1
        self._set_interest(conn, _READ)
        if tls.buffered():      # the client's first request came with its last handshake flight
            self._on_readable(conn)

    def _set_interest(self, conn: Connection, events: int) -> None:
        if conn.events == events or conn.closed:
            return
        if conn.events == 0:
            self._ep.register(conn.fd, _EPOLL_MASK[events])
        elif events == 0:
            self._ep.unregister(conn.fd)
        else:
            self._ep.modify(conn.fd, _EPOLL_MASK[events])
        conn.events = events

    def _on_readable(self, conn: Connection) -> None:
        if self._read(conn):
            self._next_request(conn)

    def _read(self, conn: Connection) -> bool:
        """Read what the connection has into frames; False when nothing came or it was closed."""
        try:
            if not conn.read(self._scratch):
                self._close(conn)
                return False
        except (BlockingIOError, InterruptedError):
            return False
        except FrameError as e:
            log.warning("closing %s: %s", conn.id, e)
            self._close(conn)
            return False
        except OSError as e:
            log.debug("closing %s: %s", conn.id, e)
            self._close(conn)
            return False
        if self._quotas.enabled:
            conn.network_s += time.monotonic() - conn.last_active
        return True

    def _read_buffered(self, conn: Connection) -> bool:
        """Frames from what TLS holds beyond the last frame read: ``Connection.read`` stops at a
        complete frame and the selector cannot see the rest. True when frames came."""
        tls = conn.tls
        return tls is not None and not conn.closed and tls.buffered() and self._read(conn) and bool(conn.frames)

    def _next_request(self, conn: Connection) -> None:
        """The connection is idle: run its buffered requests, or listen for one.

        Requests answered inline are run one after another in this loop, and their responses
        gathered and written together once the buffered frames are used up: a client with
        several small requests in flight costs one ``sendmsg`` a read, not one a request (the
        syscall was a fifth of a one-record Produce's time). Anything else first writes what was
        gathered: a request still in flight (handler thread, long poll) then takes the connection
        out of the epoll set, a closing or throttling answer goes through :meth:`_finish`.
        """
        gathered = None
        while not self._draining and (conn.frames or self._read_buffered(conn)):
            conn.muted = True
            self._dispatching = conn
            try:
                self._submit(Request(self, conn, conn.frames.popleft()))
            finally:
                self._dispatching = None
            response, conn.inline_response = conn.inline_response, None
            if type(response) is list and not conn.closed:
                if gathered is None:
                    gathered = list(response)   # ours to extend, whoever built the first
                else:
                    gathered += response
                continue
            if gathered is not None:
                if not self._finish(conn, gathered):   # the socket is full: the rest waits for it
                    conn.waiting = _IN_FLIGHT if response is None else response
                    return
                gathered = None
            if response is None:
                self._set_interest(conn, 0)
                return
            if not self._finish(conn, response):
                return
        if gathered is not None and not self._finish(conn, gathered):
            return
        self._set_interest(conn, 0 if self._draining else _READ)

    def _finish(self, conn: Connection, response) -> bool:
        """Act on a request's completion; True when the connection may start its next request."""
        if conn.closed:
            if isinstance(response, list):
                Send(response).abandon()
            return False
        if conn.send is not None:   # gathered responses still going out: this one follows them
            conn.waiting = response
            return False
        if response is _CLOSE:
            self._close(conn)
            return False
        if response is _UNMUTE:
            conn.muted = False
            return True
        if type(response) is _Last:
            conn.close_after_send = response.linger_s
            response = response.chunks
        elif type(response) is _Throttled:
            conn.unmute_at = response.until
            response = response.chunks
        if response is not _NO_RESPONSE:
            conn.send = Send(response)
            if not self._write(conn):
                return False
        else:
            conn.network_s = 0.0     # no response (acks=0): Kafka drops its network time too
            if conn.unmute_at is not None:
                return self._stay_muted(conn)
        conn.muted = False
        return True

    def _stay_muted(self, conn: Connection) -> bool:
        """The response is out; read nothing until the connection's throttle ends."""
        until, conn.unmute_at = conn.unmute_at, None
        assert until is not None, "called only for a connection being throttled"
        self._set_interest(conn, 0)
        self.complete(conn, _UNMUTE, until - time.monotonic())
        return False

    def _process_completions(self) -> None:
        completions = self._completions
        while completions:
            conn, response = completions.popleft()
            if self._finish(conn, response):
                self._next_request(conn)

    def _write(self, conn: Connection) -> bool:
        """Push the pending response; True when it is out (False: waiting for writability or closed)."""
        try:
            done = conn.write()
        except (OSError, EOFError) as e:
            log.debug("closing %s while sending: %s", conn.id, e)
            self._close(conn)
            return False
        if self._quotas.enabled:
            conn.network_s += time.monotonic() - conn.last_active
        if done:
            if conn.response_sent:
                self._response_sent(conn)
            # what no callback charged is dropped: each response settles its connection's time
            # (Kafka resets it on every send completed)
            conn.network_s = 0.0
            if conn.close_after_send is not None:   # stays muted until closed
                self._set_interest(conn, 0)
                self.complete(conn, _CLOSE, conn.close_after_send)
                return False
            if conn.unmute_at is not None:
                return self._stay_muted(conn)
            return True
        self._set_interest(conn, _WRITE)
        return False

    def _response_sent(self, conn: Connection) -> None:
        # swapped, not cleared: a handler thread may be adding the callback of a later request
        callbacks, conn.response_sent = conn.response_sent, []
        now = time.monotonic()
        for callback in callbacks:
            try:
                callback(now)
            except Exception:   # a metrics bug must not cost the connection its next request
                log.exception("response-sent callback of %s failed", conn.id)

    def _on_writable(self, conn: Connection) -> None:
        if conn.send is not None and self._write(conn):
            waiting, conn.waiting = conn.waiting, None
            if waiting is _IN_FLIGHT:      # its handler still has it
                self._set_interest(conn, 0)
                return
            if waiting is not None and not self._finish(conn, waiting):
                return
            conn.muted = False
            self._next_request(conn)

    def _reap_idle(self, now: float) -> None:
        limit = now - self._idle_s
        for conn in list(self._conns.values()):
            if conn.last_active < limit and not conn.muted:
                log.debug("closing %s: idle for more than %.0f ms", conn.id, self._idle_s * 1000)
                self._close(conn)

    def _close(self, conn: Connection) -> None:
        if conn.closed:
            return
        self._set_interest(conn, 0)
        self._conns.pop(conn.fd, None)
        conn.close()
        self._on_close(conn.peer)
