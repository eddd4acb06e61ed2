//! Link shaping for devnets on one machine: an upload cap (one token bucket per node, shared by
//! all its connections) and a one-way latency with jitter added to what a connection reads.
//!
//! It wraps the TCP stream under noise and yamux, so every protocol (gossipsub, the coded-chunk
//! streams, identify, kademlia, sync) is shaped the same way, at the level of the bytes on the
//! wire — the fair ground for comparing propagation schemes. It is done in the application
//! rather than with `tc netem` because `tc` needs root and one network namespace per process,
//! and a devnet must run as a user on loopback.
//!
//! Flow: a write takes tokens from the node's [`UploadBucket`] (at most what is there, waiting
//! for the refill when it is empty) and writes that many bytes; a read takes what the socket
//! has, stamps it with `now + latency ± jitter` (never earlier than the previous stamp, so TCP's
//! order holds) and hands it over when the stamp is reached.

use futures::{AsyncRead, AsyncWrite};
use rand::Rng;
use std::future::Future as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::{
    collections::VecDeque,
    io,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};
use tokio::time::{Instant, Sleep};

/// How a node's links are shaped (`--net.upload-mbit`, `--net.latency-ms`, `--net.jitter-ms`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shaping {
    /// Upload cap of the node, all connections together (bits per second); `None`: none.
    pub upload_bits_per_sec: Option<u64>,
    /// One-way latency added to every byte read (mean).
    pub latency: Duration,
    /// Uniform jitter around `latency` (± this).
    pub jitter: Duration,
}

impl Shaping {
    /// Whether it changes anything.
    pub fn is_active(&self) -> bool {
        self.upload_bits_per_sec.is_some() || !self.latency.is_zero() || !self.jitter.is_zero()
    }
}

/// Most bytes a bucket holds (a burst): 32 KiB, about 10 ms at 25 Mbit/s.
const BURST_BYTES: f64 = 32.0 * 1024.0;
/// Most bytes one read takes from the socket into the delay queue.
const READ_CHUNK: usize = 64 * 1024;
/// Most bytes held in a connection's delay queue before the socket is left unread.
const MAX_QUEUED: usize = 8 << 20;

/// A token bucket of bytes, shared by all connections of one node.
#[derive(Debug)]
pub struct UploadBucket {
    rate: f64,
    state: Mutex<(f64, Instant)>,
}

impl UploadBucket {
    /// A bucket refilled at `bits_per_sec`, full at start.
    pub fn new(bits_per_sec: u64) -> Arc<Self> {
        Arc::new(Self {
            rate: bits_per_sec as f64 / 8.0,
            state: Mutex::new((BURST_BYTES, Instant::now())),
        })
    }

    /// Up to `want` bytes may be sent now (`Ok`), or the wait until one can (`Err`).
    fn grant(&self, want: usize) -> Result<usize, Duration> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let (tokens, last) = &mut *state;
        *tokens = (*tokens + now.duration_since(*last).as_secs_f64() * self.rate).min(BURST_BYTES);
        *last = now;
        if *tokens >= 1.0 {
            Ok(want.min(*tokens as usize))
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / self.rate))
        }
    }

    /// Takes `n` bytes' worth of tokens.
    fn take(&self, n: usize) {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0 -= n as f64;
    }
}

/// Bytes a node read from and wrote to all its connections (TCP payload under noise: what the
/// wire carries, every protocol together).
#[derive(Debug, Default)]
pub struct LinkCounters {
    /// Bytes read.
    pub read: AtomicU64,
    /// Bytes written.
    pub written: AtomicU64,
}

impl LinkCounters {
    fn read(&self, n: usize) {
        self.read.fetch_add(n as u64, Relaxed);
        metrics::counter!("net_link_bytes_total", "direction" => "in").increment(n as u64);
    }

    fn written(&self, n: usize) {
        self.written.fetch_add(n as u64, Relaxed);
        metrics::counter!("net_link_bytes_total", "direction" => "out").increment(n as u64);
    }

    /// `(read, written)` now (bytes).
    pub fn snapshot(&self) -> (u64, u64) {
        (self.read.load(Relaxed), self.written.load(Relaxed))
    }
}

/// A stream shaped by [`Shaping`]: writes through the node's bucket, reads delayed.
pub struct Shaped<S> {
    inner: S,
    bucket: Option<Arc<UploadBucket>>,
    counters: Arc<LinkCounters>,
    latency: Duration,
    jitter: Duration,
    write_wait: Option<Pin<Box<Sleep>>>,
    read_wait: Option<Pin<Box<Sleep>>>,
    /// Bytes read from the socket, each run with the instant it may be handed over.
    queue: VecDeque<(Instant, Vec<u8>, usize)>,
    queued: usize,
    last_release: Instant,
    eof: bool,
}

impl<S> std::fmt::Debug for Shaped<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shaped").field("queued", &self.queued).finish()
    }
}

impl<S> Shaped<S> {
    /// Wraps `inner`; `bucket` is the node's upload bucket (`None`: uncapped); the bytes are
    /// counted in `counters`.
    pub fn new(
        inner: S,
        shaping: &Shaping,
        bucket: Option<Arc<UploadBucket>>,
        counters: Arc<LinkCounters>,
    ) -> Self {
        Self {
            inner,
            bucket,
            counters,
            latency: shaping.latency,
            jitter: shaping.jitter,
            write_wait: None,
            read_wait: None,
            queue: VecDeque::new(),
            queued: 0,
            last_release: Instant::now(),
            eof: false,
        }
    }

    fn release_time(&mut self) -> Instant {
        let mut delay = self.latency.as_secs_f64();
        if !self.jitter.is_zero() {
            let j = self.jitter.as_secs_f64();
            delay += rand::thread_rng().gen_range(-j..=j);
        }
        let at = Instant::now() + Duration::from_secs_f64(delay.max(0.0));
        self.last_release = at.max(self.last_release);
        self.last_release
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Shaped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.latency.is_zero() && this.jitter.is_zero() {
            let read = Pin::new(&mut this.inner).poll_read(cx, buf);
            if let Poll::Ready(Ok(n)) = &read {
                this.counters.read(*n);
            }
            return read;
        }
        // Take what the socket has (this also registers the waker with it).
        let mut scratch = [0u8; READ_CHUNK];
        while !this.eof && this.queued < MAX_QUEUED {
            match Pin::new(&mut this.inner).poll_read(cx, &mut scratch) {
                Poll::Ready(Ok(0)) => this.eof = true,
                Poll::Ready(Ok(n)) => {
                    this.counters.read(n);
                    let at = this.release_time();
                    this.queue.push_back((at, scratch[..n].to_vec(), 0));
                    this.queued += n;
                }
                Poll::Ready(Err(e)) => {
                    if this.queue.is_empty() {
                        return Poll::Ready(Err(e));
                    }
                    this.eof = true;
                }
                Poll::Pending => break,
            }
        }
        let Some((at, _, _)) = this.queue.front() else {
            return if this.eof { Poll::Ready(Ok(0)) } else { Poll::Pending };
        };
        let at = *at;
        if at > Instant::now() {
            let sleep =
                this.read_wait.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            sleep.as_mut().reset(at);
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        let (_, data, offset) = this.queue.front_mut().expect("checked above");
        let n = (data.len() - *offset).min(buf.len());
        buf[..n].copy_from_slice(&data[*offset..*offset + n]);
        *offset += n;
        if *offset == data.len() {
            this.queue.pop_front();
        }
        this.queued -= n;
        Poll::Ready(Ok(n))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Shaped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let Some(bucket) = this.bucket.clone() else {
            let written = Pin::new(&mut this.inner).poll_write(cx, buf);
            if let Poll::Ready(Ok(n)) = &written {
                this.counters.written(*n);
            }
            return written;
        };
        loop {
            if let Some(wait) = this.write_wait.as_mut() {
                if wait.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.write_wait = None;
            }
            match bucket.grant(buf.len()) {
                Ok(n) => {
                    let written = Pin::new(&mut this.inner).poll_write(cx, &buf[..n]);
                    if let Poll::Ready(Ok(w)) = &written {
                        bucket.take(*w);
                        this.counters.written(*w);
                    }
                    return written;
                }
                Err(wait) => {
                    this.write_wait = Some(Box::pin(tokio::time::sleep(wait)));
                }
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn upload_cap_limits_the_rate() {
        // 8 Mbit/s = 1 MB/s: 256 KiB take at least (256 KiB - burst) / 1 MB/s.
        let bucket = UploadBucket::new(8_000_000);
        let shaping = Shaping { upload_bits_per_sec: Some(8_000_000), ..Default::default() };
        let mut w = Shaped::new(futures::io::sink(), &shaping, Some(bucket), Default::default());
        let data = vec![7u8; 256 * 1024];
        let start = Instant::now();
        w.write_all(&data).await.unwrap();
        let took = start.elapsed().as_secs_f64();
        let expected = (256.0 * 1024.0 - BURST_BYTES) / 1_000_000.0;
        assert!(took >= expected * 0.95, "took {took} s, expected at least {expected} s");
        assert!(took < expected * 3.0 + 0.2, "took {took} s, expected about {expected} s");
    }

    #[tokio::test]
    async fn reads_are_delayed_by_the_latency_in_order() {
        let shaping = Shaping { latency: Duration::from_millis(80), ..Default::default() };
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let mut r =
            Shaped::new(futures::io::Cursor::new(data.clone()), &shaping, None, Default::default());
        let start = Instant::now();
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, data);
        assert!(start.elapsed() >= Duration::from_millis(80), "{:?}", start.elapsed());
    }
}
