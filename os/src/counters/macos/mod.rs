//! macOS counters: the reader in [`super::xnu::reader`] run on the real kernel's calls
//! (sysctl, `host_statistics64(HOST_VM_INFO64)`, libproc), as declared in the SDK's
//! `<mach/vm_statistics.h>`, `<sys/sysctl.h>` and `<sys/proc_info.h>`; "What the numbers are" in
//! docs/safety.md maps each.
//!
//! This folder only makes the calls (`sys.rs`: the raw calls, errno mapping and the const
//! asserts that the offsets `xnu` decodes are libc's, so a libc change breaks the build;
//! `scripts/check-macos` type-checks it from Linux). Every decision (zombies asked for, EPERM
//! fallbacks, the once-a-second host statistics, the boot session id, group and lineage
//! listings) is the reader's, and runs in tests on a fake process table with macOS rules.

mod sys;

use std::sync::Mutex;

use super::xnu::reader::{rusage, PidList, Xnu, XnuReader};
use super::xnu::{OncePerInterval, VmAnswer};
use super::Result;

/// The memory counter reader for macOS.
pub type Counters = XnuReader<Kernel>;

impl XnuReader<Kernel> {
    /// A reader for this OS.
    pub fn new() -> Self {
        XnuReader::on(Kernel)
    }
}

/// The real kernel's calls. Stateless: what is cached lives in process statics.
#[derive(Debug, Default, Clone, Copy)]
pub struct Kernel;

impl Xnu for Kernel {
    fn sysctl(&self, name: &str, buf: &mut [u8]) -> Result<usize> {
        sys::sysctl_bytes(name, buf)
    }

    fn host_vm_info(&self) -> Result<VmAnswer> {
        sys::host_vm_stats()
    }

    fn pid_info(&self, pid: u32, flavor: i32, arg: u64, buf: &mut [u8]) -> Result<usize> {
        sys::pid_info(pid, flavor, arg, buf)
    }

    fn list_pids(&self, which: PidList) -> Result<Vec<u32>> {
        sys::list(which)
    }

    fn procargs2(&self, pid: u32, buf: &mut Vec<u8>) -> Result<Option<usize>> {
        sys::procargs2(pid, buf)
    }

    fn rusage_v4(&self, pid: u32, buf: &mut [u8; rusage::SIZE]) -> Result<()> {
        sys::rusage_v4(pid, buf)
    }

    /// One per process: this process asks at most once a second (xnu's budget is shared by
    /// every non-Apple process, `xnu::HOST_STATISTICS_EVERY`).
    fn vm_cache(&self) -> &Mutex<OncePerInterval<VmAnswer>> {
        static LAST: Mutex<OncePerInterval<VmAnswer>> = Mutex::new(OncePerInterval::new());
        &LAST
    }
}
