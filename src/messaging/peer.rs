//! The process at the other end of a Unix socket, as the kernel names it: how the bus knows who
//! connected without believing anything the connection says.
//!
//! Linux answers `SO_PEERCRED` (pid, uid, gid). macOS has no pid in `LOCAL_PEERCRED` (its
//! `xucred` holds only the uid and groups; `getpeereid` likewise), so the pid comes from
//! `LOCAL_PEERPID` at level `SOL_LOCAL`, which no safe wrapper in the tree offers: one
//! `getsockopt` call on a socket this process owns, into a `pid_t` it passes with its size.
//! Elsewhere the peer is unknown, and the bus then accepts only a session's own `peerToken`.

use std::os::unix::net::UnixStream;

/// The pid of the process that connected to (or was paired with) `conn`, when the platform
/// says.
pub fn peer_pid(conn: &UnixStream) -> Option<u32> {
    imp::peer_pid(conn)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use std::os::unix::net::UnixStream;

    pub fn peer_pid(conn: &UnixStream) -> Option<u32> {
        let cred = rustix::net::sockopt::socket_peercred(conn).ok()?;
        u32::try_from(cred.pid.as_raw_nonzero().get()).ok()
    }
}

#[cfg(any(target_os = "macos", target_os = "ios"))]
mod imp {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[allow(unsafe_code)]
    pub fn peer_pid(conn: &UnixStream) -> Option<u32> {
        let mut pid: libc::pid_t = 0;
        let mut len = std::mem::size_of::<libc::pid_t>() as libc::socklen_t;
        // SAFETY: the descriptor is borrowed from `conn`, open for the whole call; the kernel
        // writes at most `len` bytes into `pid`, a live local of exactly that size, and `len`
        // is a live local it may update.
        let rc = unsafe {
            libc::getsockopt(
                conn.as_raw_fd(),
                libc::SOL_LOCAL,
                libc::LOCAL_PEERPID,
                (&raw mut pid).cast(),
                &raw mut len,
            )
        };
        if rc != 0 || len as usize != std::mem::size_of::<libc::pid_t>() {
            return None;
        }
        u32::try_from(pid).ok().filter(|&p| p > 0)
    }
}

#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "ios"
)))]
mod imp {
    pub fn peer_pid(_conn: &std::os::unix::net::UnixStream) -> Option<u32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ends of a socket pair belong to this process, and so does the client end of a
    /// connection through a listening socket: each names this process as the peer. (A peer in
    /// another process, a Python client in a session's Bash, is what
    /// `messaging_mcp::cli_bus_and_mcp_list_answer_the_same_bytes` drives through the bus.)
    #[test]
    fn the_peer_is_the_process_at_the_other_end() {
        let me = std::process::id();
        let (a, b) = UnixStream::pair().unwrap();
        assert_eq!(peer_pid(&a), Some(me));
        assert_eq!(peer_pid(&b), Some(me));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let _client = UnixStream::connect(&path).unwrap();
        let (server_end, _) = listener.accept().unwrap();
        assert_eq!(peer_pid(&server_end), Some(me));
    }
}
