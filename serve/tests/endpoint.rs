//! The endpoint over real TCP on loopback: formats, methods and paths, and abuse (a client
//! that never finishes its headers, an oversized request, 200 connections at once): the
//! endpoint keeps answering the others, and its memory does not grow.

#![allow(clippy::too_many_lines, reason = "a test reads as one scenario")]
// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use headroom_serve::{start, Metrics, MetricsHandle, Running, ServerConfig};

fn server(cfg: impl FnOnce(&mut ServerConfig)) -> (Running, Metrics) {
    let mut metrics = Metrics::new(MetricsHandle::default());
    metrics.update(
        Some(&headroom_model::testdata::system_counters(3 << 30, 38.0)),
        Instant::now(),
        Vec::new(),
    );
    let mut config = ServerConfig::at("127.0.0.1:0".parse().unwrap());
    cfg(&mut config);
    (start(config, metrics.handle()).unwrap(), metrics)
}

/// One request (`Connection: close`); returns the status, the head and the body.
fn request(addr: SocketAddr, method: &str, path: &str, extra: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

#[test]
fn formats_methods_and_paths() {
    let (running, _m) = server(|_| {});
    let addr = running.local_addr();
    let (status, head, body) = request(addr, "GET", "/metrics", "");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(
        body.contains("\nheadroom_swap_used_bytes 3221225472\n"),
        "{body}"
    );
    let (_, head, body) = request(
        addr,
        "GET",
        "/metrics",
        "Accept: application/openmetrics-text;version=1.0.0\r\n",
    );
    assert!(
        head.contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"));
    let (status, head, body) = request(addr, "HEAD", "/metrics", "");
    assert_eq!(status, 200);
    assert!(
        body.is_empty() && !head.contains("content-length: 0"),
        "{head}"
    );
    let (status, _, body) = request(addr, "GET", "/", "");
    assert_eq!(status, 200);
    assert!(body.contains("/metrics"));
    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let (status, head, _) = request(addr, method, "/metrics", "Content-Length: 0\r\n");
        assert_eq!(status, 405, "{method}");
        assert!(head.contains("allow: get, head"), "{head}");
    }
    for path in ["/nope", "/metrics/x", "/../etc/passwd", "/debug/pprof"] {
        assert_eq!(request(addr, "GET", path, "").0, 404, "{path}");
    }
}

/// This process's resident memory, KiB (Linux).
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Raises this process's open-files limit to at least `want` (up to the hard limit): 200
/// clients and their 200 server ends exceed macOS's default soft limit of 256.
fn raise_open_files_limit(want: libc::rlim_t) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(read, 0, "getrlimit");
    if limit.rlim_cur < want {
        limit.rlim_cur = want.min(limit.rlim_max);
        // SAFETY: `limit` is a valid rlimit, its soft limit at most the hard one.
        let set = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
        assert_eq!(set, 0, "setrlimit");
    }
    assert!(
        limit.rlim_cur >= want,
        "open-files hard limit {} < {want}",
        limit.rlim_max
    );
}

#[test]
fn a_slow_client_an_oversized_request_and_a_crowd_do_not_starve_others() {
    raise_open_files_limit(1024);
    let (running, _m) = server(|c| c.header_read_timeout = Duration::from_secs(1));
    let addr = running.local_addr();
    // A client that starts a request and never finishes its headers.
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = Instant::now();
    assert_eq!(
        request(addr, "GET", "/metrics", "").0,
        200,
        "others are answered meanwhile"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    // ...and is dropped after the header timeout.
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(5),
        "the slow client was held {waited:?}"
    );

    // An oversized request head: refused, not buffered.
    let huge = format!("X-Big: {}\r\n", "a".repeat(100_000));
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n{huge}\r\n");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    assert!(
        reply.is_empty() || reply.starts_with("HTTP/1.1 431"),
        "{}",
        &reply[..reply.len().min(80)]
    );
    assert_eq!(request(addr, "GET", "/metrics", "").0, 200);

    // 200 connections at once, each asking; then again, and memory stays put.
    let crowd = || {
        let threads: Vec<_> = (0..200)
            .map(|_| std::thread::spawn(move || request(addr, "GET", "/metrics", "").0))
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|&s| s == 200)
            .count()
    };
    assert_eq!(crowd(), 200);
    let before = rss_kib();
    for _ in 0..5 {
        assert_eq!(crowd(), 200);
    }
    if let (Some(before), Some(after)) = (before, rss_kib()) {
        assert!(
            after < before + 4096,
            "memory grew from {before} KiB to {after} KiB"
        );
    }
    // 200 idle connections held open: a new client is still answered.
    let idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    assert_eq!(request(addr, "GET", "/metrics", "").0, 200);
    drop(idle);
}

/// A keep-alive client: asks for `/metrics` on one connection every `every` until `stop`,
/// connecting again whenever the server closes it. Returns how many answers it read.
fn keep_alive_client(
    addr: SocketAddr,
    every: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut answers = 0;
        let mut conn: Option<std::io::BufReader<TcpStream>> = None;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let reader = match conn.as_mut() {
                Some(r) => r,
                None => match TcpStream::connect(addr) {
                    Ok(s) => {
                        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                        conn.insert(std::io::BufReader::new(s))
                    }
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                },
            };
            if read_keep_alive_answer(reader).is_some() {
                answers += 1;
                std::thread::sleep(every);
            } else {
                conn = None;
            }
        }
        answers
    })
}

/// Sends one keep-alive GET on `reader`'s stream and reads the answer to its end.
fn read_keep_alive_answer(reader: &mut std::io::BufReader<TcpStream>) -> Option<()> {
    use std::io::BufRead;
    reader
        .get_mut()
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(())
}

#[test]
fn keep_alive_clients_that_hold_every_connection_do_not_starve_a_scrape() {
    // More keep-alive clients than the server serves at once, each asking every 200 ms (so
    // none is ever idle long enough to time out): a scrape on a new connection is answered
    // all the same, every time.
    raise_open_files_limit(1024);
    let (running, _m) = server(|c| {
        c.max_connections = 64;
        c.header_read_timeout = Duration::from_secs(1);
    });
    let addr = running.local_addr();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let crowd: Vec<_> = (0..80)
        .map(|_| keep_alive_client(addr, Duration::from_millis(200), stop.clone()))
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let mut answered = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let answer = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .ok()?;
            let mut raw = String::new();
            s.read_to_string(&mut raw).ok()?;
            Some(raw.starts_with("HTTP/1.1 200"))
        })
        .join()
        .unwrap();
        if answer == Some(true) && started.elapsed() < Duration::from_secs(5) {
            answered += 1;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let crowd_answers: u64 = crowd.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(answered, 20, "scrapes starved by keep-alive clients");
    assert!(
        crowd_answers > 100,
        "the crowd was served too: {crowd_answers}"
    );
}
