//! The hook's deadline: if one run ever takes longer than [`DEADLINE`], the guard allows, says
//! so on stderr and logs the fail-open (the guard never hangs a session).
//!
//! On Linux there is no watchdog thread: a second thread costs its creation and, at every exit,
//! the kernel's waking and tearing it down, which on a busy machine is more than the guard's own
//! work. Instead [`arm`] sets an alarm. Its handler may only make async-signal-safe calls, so it
//! does not log by itself: it puts the payload into an anonymous memory file, makes that stdin
//! and re-executes the guard (same process, same pid, so the client still waits on it) with
//! [`AFTER_DEADLINE`]; that fresh image writes the note and the log line with the ordinary code
//! (the door's `after_deadline`). Before any payload is read, or if the exec fails, the
//! handler writes the note and exits 0 itself. Elsewhere a watchdog thread does the same.

use std::sync::OnceLock;
use std::time::Duration;

/// How long one hook run may take before the guard gives up and allows.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// The argument the guard re-executes itself with once the deadline has passed.
pub const AFTER_DEADLINE: &str = "--after-deadline";

/// The payload, once read: what the run past its deadline was deciding.
pub static PAYLOAD: OnceLock<Vec<u8>> = OnceLock::new();

/// The note for a run past its deadline.
pub fn note() -> String {
    format!("no answer within {}s; allowing", DEADLINE.as_secs())
}

// The only unsafe code of the crate: a signal handler and the calls it may make are foreign
// functions. Each block does one call on memory this module owns for the life of the process.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod imp {
    use super::{DEADLINE, PAYLOAD};
    use std::ffi::{CStr, c_char, c_int};
    use std::sync::OnceLock;

    unsafe extern "C" {
        static environ: *const *const c_char;
    }

    /// [`super::AFTER_DEADLINE`] as the C string `execve` takes.
    pub(super) const FLAG: &CStr = c"--after-deadline";

    /// The note, rendered before the alarm is set: the handler cannot allocate.
    static NOTE: OnceLock<Vec<u8>> = OnceLock::new();

    /// Writes all of `b` to `fd`, retrying on interrupts; false on any other error.
    unsafe fn write_all(fd: c_int, mut b: &[u8]) -> bool {
        while !b.is_empty() {
            let n = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return false;
            }
            b = &b[n as usize..];
        }
        true
    }

    extern "C" fn on_alarm(_: c_int) {
        // Async-signal-safe calls only: no allocation, no locks, no std I/O.
        let Some(note) = NOTE.get() else {
            unsafe { libc::_exit(0) }
        };
        unsafe {
            if let Some(payload) = PAYLOAD.get() {
                let fd = libc::memfd_create(c"guard-payload".as_ptr(), 0);
                if fd >= 0
                    && write_all(fd, payload)
                    && libc::lseek(fd, 0, libc::SEEK_SET) == 0
                    && libc::dup2(fd, 0) == 0
                {
                    let argv = [c"guard".as_ptr(), FLAG.as_ptr(), std::ptr::null()];
                    libc::execve(c"/proc/self/exe".as_ptr(), argv.as_ptr(), environ);
                }
            }
            write_all(2, note);
            libc::_exit(0);
        }
    }

    pub fn arm(_: fn() -> i32) {
        NOTE.get_or_init(|| format!("guard: {}\n", super::note()).into_bytes());
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_alarm as extern "C" fn(c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut act.sa_mask);
            if libc::sigaction(libc::SIGALRM, &act, std::ptr::null_mut()) != 0 {
                return;
            }
            // A client that blocks SIGALRM would pass the mask on: take it off.
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGALRM);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::alarm(DEADLINE.as_secs() as u32);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::DEADLINE;

    pub fn arm(past_deadline: fn() -> i32) {
        // A watchdog, not a worker: the work stays on the main thread (no second malloc
        // arena, no big stack), and if it ever runs past the deadline the watchdog allows.
        let _ = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                std::thread::sleep(DEADLINE);
                std::process::exit(past_deadline());
            });
    }
}

/// Starts the deadline for this run. Where a watchdog thread keeps it, `past_deadline` answers
/// in this process (allows, logs) and gives the exit code; on Linux the re-executed guard does.
pub fn arm(past_deadline: fn() -> i32) {
    imp::arm(past_deadline);
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_exec_flag_is_the_flag_main_reads() {
        assert_eq!(super::imp::FLAG.to_str(), Ok(super::AFTER_DEADLINE));
    }
}
