//! The HTTP side: GET and HEAD on `/metrics` (and a small index at `/`), nothing else.
//!
//! Safe by default: it listens on 127.0.0.1:9101 unless told otherwise. Bounded: at most
//! [`ServerConfig::max_connections`] connections at once, request headers of at most 16 KiB
//! that must arrive within [`ServerConfig::header_read_timeout`], and a connection lives at
//! most [`ServerConfig::connection_lifetime`]. Fair at the limit: a new connection closes the
//! keep-alive connection idle longest since an answer and takes its place (`connections`);
//! only when none is idle (all are being answered or have just connected) is it closed at
//! once. So a slow or hostile client, or many keep-alive ones, cannot hold the endpoint or
//! starve others. Request bodies are never read. One
//! thread runs a single-threaded tokio runtime; answers are the pre-rendered bytes of
//! [`MetricsHandle`].

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Semaphore};

use crate::connections::Connections;
use crate::exposition::Format;
use crate::metrics::MetricsHandle;

/// Largest request head read, bytes (hyper's minimum buffer; a larger head gets 431).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// How long a new connection at the limit waits for the idle one it closed to leave.
const TAKE_PLACE_WAIT: Duration = Duration::from_secs(1);

const INDEX: &[u8] = b"<!doctype html><title>Headroom metrics</title>\
<p>Headroom's metrics for Prometheus: <a href=\"/metrics\">/metrics</a>\n";

/// Limits and address of the endpoint.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// A request's head must arrive within this (a slow client is dropped).
    pub header_read_timeout: Duration,
    /// Connections served at once; a new one past it takes the place of the connection idle
    /// longest (or, when none is idle, is closed at once).
    pub max_connections: usize,
    /// A connection is closed after this, whatever it does.
    pub connection_lifetime: Duration,
}

impl ServerConfig {
    /// The defaults at `addr`: 5 s for a request head, 512 connections, 60 s each.
    pub fn at(addr: SocketAddr) -> ServerConfig {
        ServerConfig {
            addr,
            header_read_timeout: Duration::from_secs(5),
            max_connections: 512,
            connection_lifetime: Duration::from_secs(60),
        }
    }
}

/// True for an address only this machine can reach.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound (in use, not ours, not an address of this machine).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The server's thread or runtime could not be started.
    #[error("starting the metrics server: {0}")]
    Start(#[source] io::Error),
}

/// A running endpoint; stopped when dropped.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// The address it listens on (the port is known here when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Binds `cfg.addr` (errors come back here) and serves `handle` on a thread of its own.
pub fn start(cfg: ServerConfig, handle: MetricsHandle) -> Result<Running, ServeError> {
    let bind = |source| ServeError::Bind {
        addr: cfg.addr,
        source,
    };
    let listener = std::net::TcpListener::bind(cfg.addr).map_err(bind)?;
    listener.set_nonblocking(true).map_err(ServeError::Start)?;
    let addr = listener.local_addr().map_err(ServeError::Start)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(ServeError::Start)?;
    let (stop, stopped) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("headroom-metrics".into())
        .spawn(move || {
            runtime.block_on(async move {
                match TcpListener::from_std(listener) {
                    Ok(listener) => accept(listener, handle, cfg, stopped).await,
                    Err(e) => tracing::error!(error = %e, "metrics endpoint"),
                }
            });
        })
        .map_err(ServeError::Start)?;
    Ok(Running {
        addr,
        stop: Some(stop),
        thread: Some(thread),
    })
}

async fn accept(
    listener: TcpListener,
    handle: MetricsHandle,
    cfg: ServerConfig,
    mut stopped: oneshot::Receiver<()>,
) {
    let permits = Arc::new(Semaphore::new(cfg.max_connections.max(1)));
    let connections = Arc::new(Connections::default());
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, usually: wait a little rather than spin.
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => permit,
            // At the limit: the connection idle longest makes way, else this one is dropped.
            Err(_) if connections.close_longest_idle() => {
                let wait = Arc::clone(&permits).acquire_owned();
                match tokio::time::timeout(TAKE_PLACE_WAIT, wait).await {
                    Ok(Ok(permit)) => permit,
                    _ => continue,
                }
            }
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        let (handle, cfg, connections) = (handle.clone(), cfg.clone(), Arc::clone(&connections));
        tokio::spawn(async move {
            let (id, slot) = connections.add();
            let answering = Arc::clone(&slot);
            let service = service_fn(move |req: Request<Incoming>| {
                answering.asked();
                let response = respond(&req, &handle);
                answering.answered();
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(cfg.header_read_timeout)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let served = async {
                tokio::select! {
                    _ = connection.as_mut() => {}
                    () = slot.closing() => {
                        connection.as_mut().graceful_shutdown();
                        let _ = connection.as_mut().await;
                    }
                }
            };
            let _ = tokio::time::timeout(cfg.connection_lifetime, served).await;
            connections.remove(id);
            drop(permit);
        });
    }
}

/// The answer to one request.
fn respond(req: &Request<Incoming>, handle: &MetricsHandle) -> Response<Full<Bytes>> {
    let path = req.uri().path();
    if path != "/" && path != "/metrics" {
        return text(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics\n",
        );
    }
    let head = req.method() == Method::HEAD;
    if !head && req.method() != Method::GET {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let (content_type, body) = if path == "/" {
        ("text/html; charset=utf-8", Bytes::from_static(INDEX))
    } else {
        let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
        let format = Format::from_accept(accept);
        (format.content_type(), handle.get(format))
    };
    let length = body.len();
    let mut r = Response::new(Full::new(if head { Bytes::new() } else { body }));
    let headers = r.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    r
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}
