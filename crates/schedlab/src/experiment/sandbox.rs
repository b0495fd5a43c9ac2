//! Where a sched_ext scheduler written in C runs: a child process that can do no
//! more than a BPF program could.
//!
//! In the kernel a sched_ext scheduler is BPF. The verifier proves that it
//! terminates and touches only its own maps and the fields it may read. Its only
//! calls are helpers and kfuncs, so it cannot open a file, start a process or
//! send a packet. schedlab compiles the same C natively (`sched/ext/bpf.rs`).
//! Nothing verifies it, and a native function may call anything in libc. So
//! every simulation with such a scheduler runs in a child of its own
//! ([`contained`]):
//!
//! 1. `fork`: the child is a copy of the caller with the scenario already read.
//! 2. The child maps the compiled object. `bpf::check_object` has shown that
//!    mapping runs none of its code: no constructor, no `_init`, no ifunc.
//! 3. It closes every descriptor but the result pipe and stderr (stdin and
//!    stdout become `/dev/null`).
//! 4. It turns on a seccomp filter (`filter`). The filter allows memory,
//!    futexes, clocks, writes to the descriptors still open, signals to itself
//!    and exit, and nothing else. So `execve`, `open`/`openat`, sockets,
//!    `fork`/`clone`, `ptrace` and `kill` of another process trap.
//! 5. It runs the simulation.
//! 6. It writes the result to the parent, which writes the run's outputs.
//!
//! A refused call raises `SIGSYS`. The child's handler reports which call it
//! was, and the child exits at once, so the run has no result and the caller
//! writes no output. The filter also refuses `rt_sigaction` on `SIGSYS`, so the
//! scheduler cannot take that handler over, and blocking signals
//! (`rt_sigprocmask` other than `SIG_UNBLOCK`): with `SIGSYS` blocked, the
//! kernel kills the process on a refused call without running the handler. A
//! death by `SIGSYS` without a report is reported as such.
//!
//! The fork copies a process whose other threads may hold locks (a sweep's
//! workers). The child therefore touches only the simulation, the allocator
//! (glibc's is safe across fork) and the pipe, and it leaves with `_exit`.

use std::io::Read;
use std::path::Path;

use serde::{de::DeserializeOwned, Serialize};

/// The child's exit status after it reported a refused system call.
const REFUSED: i32 = 97;
/// The child's exit status after a panic of the simulation (reported).
const PANICKED: i32 = 98;
/// The result pipe's descriptor in the child.
const RESULT_FD: i32 = 3;
/// What the `SIGSYS` handler writes before the call's number.
const REFUSED_TAG: &[u8] = b"\n\0schedlab-refused ";

/// The names of the calls a scheduler is likeliest to try, for the report; any
/// other is named by its number.
fn syscall_name(nr: i64) -> String {
    #[cfg(target_arch = "x86_64")]
    let legacy: &[(i64, &str)] = &[
        (libc::SYS_open, "open"),
        (libc::SYS_fork, "fork"),
        (libc::SYS_vfork, "vfork"),
        (libc::SYS_creat, "creat"),
        (libc::SYS_unlink, "unlink"),
        (libc::SYS_rename, "rename"),
        (libc::SYS_mkdir, "mkdir"),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let legacy: &[(i64, &str)] = &[];
    let names: &[(i64, &str)] = &[
        (libc::SYS_execve, "execve"),
        (libc::SYS_execveat, "execveat"),
        (libc::SYS_openat, "openat"),
        (libc::SYS_openat2, "openat2"),
        (libc::SYS_socket, "socket"),
        (libc::SYS_socketpair, "socketpair"),
        (libc::SYS_connect, "connect"),
        (libc::SYS_bind, "bind"),
        (libc::SYS_clone, "clone"),
        (libc::SYS_clone3, "clone3"),
        (libc::SYS_ptrace, "ptrace"),
        (libc::SYS_kill, "kill"),
        (libc::SYS_tgkill, "tgkill"),
        (libc::SYS_tkill, "tkill"),
        (libc::SYS_rt_sigaction, "rt_sigaction"),
        (libc::SYS_rt_sigprocmask, "rt_sigprocmask"),
        (libc::SYS_process_vm_readv, "process_vm_readv"),
        (libc::SYS_process_vm_writev, "process_vm_writev"),
        (libc::SYS_unlinkat, "unlinkat"),
        (libc::SYS_renameat2, "renameat2"),
        (libc::SYS_mkdirat, "mkdirat"),
        (libc::SYS_read, "read"),
        (libc::SYS_ioctl, "ioctl"),
        (libc::SYS_prctl, "prctl"),
        (libc::SYS_seccomp, "seccomp"),
    ];
    names
        .iter()
        .chain(legacy)
        .find(|(n, _)| *n == nr)
        .map_or_else(|| format!("system call {nr}"), |(_, s)| (*s).to_string())
}

/// The filter: what a running simulation needs, for this process `pid`.
fn filter(pid: i32) -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule,
    };
    let err = |e: &dyn std::fmt::Display| format!("the sandbox's seccomp filter: {e}");
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = [
        // Memory (the allocator), futexes, clocks, the result and stderr.
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_mprotect,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_futex,
        libc::SYS_clock_gettime,
        libc::SYS_clock_getres,
        libc::SYS_gettimeofday,
        libc::SYS_getrandom,
        libc::SYS_sched_yield,
        libc::SYS_write,
        libc::SYS_writev,
        libc::SYS_close,
        libc::SYS_getpid,
        libc::SYS_gettid,
        libc::SYS_rt_sigreturn,
        libc::SYS_sigaltstack,
        libc::SYS_exit,
        libc::SYS_exit_group,
    ]
    .into_iter()
    .map(|n| (n, vec![]))
    .collect();
    let rule = |c: Vec<Cond>| SeccompRule::new(c).map_err(|e| err(&e));
    let cond = |arg: u8, op: Op, v: u64| Cond::new(arg, Len::Dword, op, v).map_err(|e| err(&e));
    // Signals to itself only (abort's raise), no new SIGSYS handler, and no
    // blocking of signals: with SIGSYS blocked the kernel kills the process on a
    // refused call without the handler, and the report cannot name the call.
    rules.insert(
        libc::SYS_rt_sigprocmask,
        vec![rule(vec![cond(0, Op::Eq, libc::SIG_UNBLOCK as u64)?])?],
    );
    rules.insert(
        libc::SYS_tgkill,
        vec![rule(vec![cond(0, Op::Eq, pid as u64)?])?],
    );
    rules.insert(
        libc::SYS_rt_sigaction,
        vec![rule(vec![cond(0, Op::Ne, libc::SIGSYS as u64)?])?],
    );
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).map_err(|e| err(&e))?;
    let f = SeccompFilter::new(rules, SeccompAction::Trap, SeccompAction::Allow, arch)
        .map_err(|e| err(&e))?;
    f.try_into().map_err(|e: seccompiler::BackendError| err(&e))
}

/// `SIGSYS` from the filter: report the call and leave. Only async-signal-safe
/// calls (`write`, `_exit`), the number formatted by hand.
extern "C" fn on_sigsys(_sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel's siginfo for SIGSYS: `si_syscall` is the int after
    // the three ints of the header, their padding and `si_call_addr`.
    let nr = unsafe {
        *(info as *const u8)
            .add(16 + std::mem::size_of::<usize>())
            .cast::<i32>()
    };
    let mut buf = [0u8; 48];
    buf[..REFUSED_TAG.len()].copy_from_slice(REFUSED_TAG);
    let mut i = REFUSED_TAG.len();
    let mut digits = [0u8; 12];
    let mut n = nr.unsigned_abs();
    let mut k = 0;
    loop {
        digits[k] = b'0' + (n % 10) as u8;
        k += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    while k > 0 {
        k -= 1;
        buf[i] = digits[k];
        i += 1;
    }
    buf[i] = b'\n';
    // SAFETY: write(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::write(RESULT_FD, buf.as_ptr().cast(), i + 1);
        libc::_exit(REFUSED);
    }
}

/// The child's side: everything between `fork` and `_exit`.
fn child<T: Serialize>(object: &Path, write_fd: i32, f: impl FnOnce() -> T) -> ! {
    // SAFETY: the child's own descriptor table; the pipe's write end becomes
    // RESULT_FD before anything can fail.
    if write_fd != RESULT_FD && unsafe { libc::dup2(write_fd, RESULT_FD) } < 0 {
        // SAFETY: leave without running the parent's exit handlers.
        unsafe { libc::_exit(1) }
    }
    let fail = |msg: String| -> ! {
        let mut b = b"E".to_vec();
        b.extend_from_slice(msg.as_bytes());
        write_all(RESULT_FD, &b);
        // SAFETY: as above.
        unsafe { libc::_exit(0) }
    };
    if let Err(e) = crate::sched::ext::bpf::preload(object) {
        fail(e);
    }
    // SAFETY: plain descriptor calls on this process's own table.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null < 0 || libc::dup2(null, 0) < 0 || libc::dup2(null, 1) < 0 {
            fail("the sandbox: /dev/null".into());
        }
        if libc::syscall(libc::SYS_close_range, RESULT_FD + 1, u32::MAX, 0) != 0 {
            for fd in RESULT_FD + 1..65536 {
                libc::close(fd);
            }
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigsys as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGSYS, &sa, std::ptr::null_mut()) != 0 {
            fail("the sandbox: sigaction(SIGSYS) failed".into());
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGSYS);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
    // glibc reads /proc/sys/vm/overcommit_memory (an `openat` the filter refuses)
    // the first time it shrinks a thread arena's heap, which happens only above the
    // trim threshold: with none, a freed heap stays mapped for the child's short
    // life instead (tests/sandbox_heap.rs).
    // SAFETY: fork reset malloc's locks in the child; mallopt takes them as usual.
    unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) };
    let prog = match filter(std::process::id() as i32) {
        Ok(p) => p,
        Err(e) => fail(e),
    };
    if let Err(e) = seccompiler::apply_filter(&prog) {
        fail(format!(
            "the sandbox's seccomp filter could not be turned on ({e}): a C scheduler runs only \
             under it"
        ));
    }
    crate::sched::ext::bpf::set_contained();
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    match out {
        Ok(v) => {
            let mut b = b"O".to_vec();
            match serde_json::to_writer(&mut b, &v) {
                Ok(()) => write_all(RESULT_FD, &b),
                Err(e) => fail(format!("the sandbox: the result did not serialize: {e}")),
            }
            // SAFETY: as above.
            unsafe { libc::_exit(0) }
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let mut b = b"P".to_vec();
            b.extend_from_slice(msg.as_bytes());
            write_all(RESULT_FD, &b);
            // SAFETY: as above.
            unsafe { libc::_exit(PANICKED) }
        }
    }
}

fn write_all(fd: i32, mut b: &[u8]) {
    while !b.is_empty() {
        // SAFETY: a write of our own buffer to our own descriptor.
        let n = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if n <= 0 {
            return;
        }
        b = &b[n as usize..];
    }
}

/// Run `f` (a simulation whose sched_ext scheduler is the compiled C `object`,
/// from the source `source` names) in the sandbox and return what it returned.
/// A scheduler that tried a refused call, crashed, or failed to load is an
/// error naming `source`; a panic of the simulation is resumed here.
pub fn contained<T: Serialize + DeserializeOwned>(
    source: &str,
    object: &Path,
    f: impl FnOnce() -> T,
) -> Result<T, String> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "the sandbox: pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: the child runs only `child`, which leaves with `_exit`; see the
    // module's essay for what it may touch after a fork of a threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "the sandbox: fork: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        // SAFETY: the child's copy of the read end.
        unsafe { libc::close(r) };
        child(object, w, f);
    }
    // SAFETY: the parent's copy of the write end; `r` becomes a File it owns.
    let mut buf = Vec::new();
    let read = unsafe {
        libc::close(w);
        std::fs::File::from(<std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(r))
    }
    .read_to_end(&mut buf);
    let mut status = 0;
    // SAFETY: our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(format!(
                "the sandbox: waitpid: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    read.map_err(|e| format!("the sandbox: reading the result: {e}"))?;
    let who = format!("the scheduler in {source}");
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        return Err(if sig == libc::SIGSYS {
            format!("{who} tried a system call the sandbox refuses — refused")
        } else {
            format!("{who} crashed (signal {sig})")
        });
    }
    let code = libc::WEXITSTATUS(status);
    if code == REFUSED {
        let call = buf
            .windows(REFUSED_TAG.len())
            .rposition(|w| w == REFUSED_TAG)
            .and_then(|i| {
                let rest = &buf[i + REFUSED_TAG.len()..];
                let end = rest.iter().position(|&b| b == b'\n')?;
                std::str::from_utf8(&rest[..end]).ok()?.parse::<i64>().ok()
            })
            .map_or_else(|| "a system call".to_string(), syscall_name);
        return Err(format!("{who} tried to {call} — refused"));
    }
    match buf.split_first() {
        Some((b'O', v)) if code == 0 => serde_json::from_slice(v).map_err(|e| {
            format!("the sandbox: {who} sent back a result schedlab cannot read: {e}")
        }),
        Some((b'E', msg)) => Err(String::from_utf8_lossy(msg).into_owned()),
        Some((b'P', msg)) if code == PANICKED => {
            std::panic::resume_unwind(Box::new(String::from_utf8_lossy(msg).into_owned()))
        }
        _ => Err(format!(
            "{who} ended the run without a result (exit status {code})"
        )),
    }
}
