//! The machine's name (`gethostname(3)`), for the run history: a run is predicted from the
//! runs of the same machine first.

/// This machine's host name, if it has one.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its whole length, which is passed; gethostname writes at
    // most that many bytes and we read only up to the first NUL within the buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_name_is_the_kernels() {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .ok();
        if let Some(kernel) = kernel {
            assert_eq!(super::hostname(), Some(kernel));
        } else {
            assert!(super::hostname().is_some());
        }
    }
}
