//! Load for `headroom serve`: `scrape_load ADDR RATE SECONDS [CLIENTS]` sends RATE GET
//! /metrics requests a second for SECONDS, spread over CLIENTS keep-alive connections (4),
//! paced (not as fast as possible), and prints the latency percentiles and the error count
//! as one JSON line. Used by `scripts/bench-serve`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(addr), Some(rate), Some(seconds)) = (
        args.first().cloned(),
        args.get(1).and_then(|a| a.parse::<u64>().ok()),
        args.get(2).and_then(|a| a.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: scrape_load ADDR RATE SECONDS [CLIENTS]");
        std::process::exit(2);
    };
    let clients = args
        .get(3)
        .and_then(|a| a.parse::<u64>().ok())
        .unwrap_or(4)
        .max(1);
    let per_client = Duration::from_secs_f64(clients as f64 / rate.max(1) as f64);
    let end = Instant::now() + Duration::from_secs(seconds);
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || client(&addr, per_client, end))
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = 0;
    for t in threads {
        let (l, e) = t.join().unwrap_or_default();
        latencies.extend(l);
        errors += e;
    }
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d: &Duration| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{{\"requests\":{},\"errors\":{errors},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3}}}",
        latencies.len(),
        pct(0.50),
        pct(0.99),
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    );
}

/// One keep-alive connection sending a request every `every` until `end`.
fn client(addr: &str, every: Duration, end: Instant) -> (Vec<Duration>, u64) {
    let (mut latencies, mut errors) = (Vec::new(), 0);
    let mut conn: Option<(TcpStream, BufReader<TcpStream>)> = None;
    let mut next = Instant::now();
    while Instant::now() < end {
        let now = Instant::now();
        if now < next {
            std::thread::sleep(next - now);
        }
        next += every;
        if conn.is_none() {
            conn = TcpStream::connect(addr).ok().and_then(|s| {
                let _ = s.set_nodelay(true);
                let r = s.try_clone().ok()?;
                Some((s, BufReader::new(r)))
            });
        }
        let Some((stream, reader)) = conn.as_mut() else {
            errors += 1;
            continue;
        };
        let started = Instant::now();
        match get(stream, reader) {
            Ok(()) => latencies.push(started.elapsed()),
            Err(_) => {
                errors += 1;
                conn = None;
            }
        }
    }
    (latencies, errors)
}

fn get(stream: &mut TcpStream, reader: &mut BufReader<TcpStream>) -> std::io::Result<()> {
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n")?;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    if !line.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(line));
    }
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)
}
