//! The listen backlog of the load generator's servers: 4,096 (the kernel's `somaxconn`
//! bounds it) instead of the 128 that tokio's and the standard library's `bind` ask for, so
//! that a workload opening thousands of connections at once measures the servers, not the
//! kernel dropping handshakes past a full accept queue (each dropped one is sent again a
//! second later). The same for every server.

use std::os::fd::AsRawFd;

/// Listens on `listener` again with a backlog of 4,096 (a socket already listening takes
/// the new backlog).
pub fn raise(listener: &impl AsRawFd) -> std::io::Result<()> {
    // SAFETY: listen(2) on a descriptor the caller owns, kept open by the borrow.
    if unsafe { libc::listen(listener.as_raw_fd(), 4096) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
