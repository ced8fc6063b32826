//! The fake Mac's answers to the raw calls under the reader ([`Xnu`]: sysctl,
//! `host_statistics64`, libproc, `KERN_PROCARGS2`, `proc_pid_rusage`) in xnu's byte layouts,
//! and to signals ([`SendSignal`]), with macOS's rules (see the parent module).

use std::io;
use std::sync::Mutex;
use std::time::Instant;

use super::super::reader::{flavor, rusage, PidList, Xnu};
use super::super::{bsdinfo, shortinfo, uniqinfo, vm, xsw, OncePerInterval, VmAnswer};
use super::pages::{self, Holder};
use super::{put, FakeMac, Proc, Run, PAGE_BYTES};
use crate::counters::Result;
use crate::error::CounterError;
use crate::unix::signals::{SendSignal, SIGCONT, SIGKILL, SIGSTOP, SIGTERM};

fn answer(buf: &mut [u8], bytes: &[u8]) -> usize {
    let len = bytes.len().min(buf.len());
    buf[..len].copy_from_slice(&bytes[..len]);
    len
}

fn status(run: Run) -> u32 {
    match run {
        Run::Running => 2, // SRUN
        Run::Stopped => 4, // SSTOP
        Run::Zombie => 5,  // SZOMB
        Run::Exiting => 2, // SRUN, with PROC_FLAG_INEXIT
    }
}

/// `pbi_flags`/`pbsi_flags`: `PROC_FLAG_INEXIT` (4) while in `exit`.
fn flags(run: Run) -> u32 {
    if run == Run::Exiting {
        4
    } else {
        0
    }
}

impl Xnu for FakeMac {
    fn sysctl(&self, name: &str, buf: &mut [u8]) -> Result<usize> {
        let mut t = self.lock();
        let bytes: Vec<u8> = match name {
            "vm.pagesize" => (PAGE_BYTES as u32).to_ne_bytes().to_vec(),
            "hw.memsize" => (t.memory.total * PAGE_BYTES).to_ne_bytes().to_vec(),
            "hw.memsize_usable" => (t.memory.usable * PAGE_BYTES).to_ne_bytes().to_vec(),
            "kern.memorystatus_level" => {
                let level = u32::try_from(t.memory.counts().level).unwrap();
                level.to_ne_bytes().to_vec()
            }
            "kern.memorystatus_vm_pressure_level" => {
                let level = pages::pressure_after(t.pressure, &t.memory.counts());
                t.pressure = level;
                level.to_ne_bytes().to_vec()
            }
            // The bytes inside the compressor's segments: less than its pages.
            "vm.compressor_bytes_used" => {
                let bytes = t.memory.counts().compressor * PAGE_BYTES * 3 / 4;
                bytes.to_ne_bytes().to_vec()
            }
            "vm.swapusage" => {
                let mut b = vec![0u8; xsw::SIZE];
                let used = t.memory.counts().swap_used_bytes;
                put(&mut b, xsw::TOTAL, &t.memory.swap_files_bytes.to_ne_bytes());
                put(&mut b, xsw::USED, &used.to_ne_bytes());
                b
            }
            "kern.bootsessionuuid" => format!("{}\0", t.boot_uuid).into_bytes(),
            "kern.boottime" => {
                let mut b = vec![0u8; 16];
                put(&mut b, 0, &(t.boot_micros / 1_000_000).to_ne_bytes());
                put(&mut b, 8, &(t.boot_micros % 1_000_000).to_ne_bytes());
                b
            }
            _ => {
                return Err(CounterError::Unsupported {
                    what: format!("sysctl {name}"),
                })
            }
        };
        Ok(answer(buf, &bytes))
    }

    fn host_vm_info(&self) -> Result<VmAnswer> {
        if self.lock().host.refused {
            return Err(CounterError::Unsupported {
                what: "host_statistics64 (KERN_FAILURE)".into(),
            });
        }
        let bytes = self.lock().host_statistics();
        Ok(VmAnswer::new(&bytes, vm::REV1_COUNT))
    }

    fn pid_info(&self, pid: u32, flavor: i32, arg: u64, buf: &mut [u8]) -> Result<usize> {
        let t = self.lock();
        let p = t.visible(pid, arg)?;
        let mut b;
        match flavor {
            flavor::BSDINFO => {
                t.may_read(p, "PROC_PIDTBSDINFO")?;
                b = vec![0u8; bsdinfo::SIZE];
                put(&mut b, bsdinfo::STATUS, &status(p.run).to_ne_bytes());
                put(&mut b, bsdinfo::FLAGS, &flags(p.run).to_ne_bytes());
                put(&mut b, bsdinfo::PPID, &p.ppid.to_ne_bytes());
                put(&mut b, bsdinfo::PGID, &p.pgid.to_ne_bytes());
                put(&mut b, bsdinfo::RUID, &p.uid.to_ne_bytes());
                let name = p.name.as_bytes();
                put(&mut b, bsdinfo::NAME, &name[..name.len().min(31)]);
                put(
                    &mut b,
                    bsdinfo::START_SEC,
                    &(p.start_micros / 1_000_000).to_ne_bytes(),
                );
                put(
                    &mut b,
                    bsdinfo::START_USEC,
                    &(p.start_micros % 1_000_000).to_ne_bytes(),
                );
            }
            flavor::SHORTBSDINFO => {
                b = vec![0u8; shortinfo::SIZE];
                put(&mut b, shortinfo::STATUS, &status(p.run).to_ne_bytes());
                put(&mut b, shortinfo::FLAGS, &flags(p.run).to_ne_bytes());
                put(&mut b, shortinfo::PPID, &p.ppid.to_ne_bytes());
                put(&mut b, shortinfo::PGID, &p.pgid.to_ne_bytes());
                put(&mut b, shortinfo::RUID, &p.uid.to_ne_bytes());
                let name = p.name.as_bytes();
                put(&mut b, shortinfo::COMM, &name[..name.len().min(15)]);
            }
            uniqinfo::FLAVOR => {
                b = vec![0u8; uniqinfo::SIZE];
                put(&mut b, uniqinfo::UNIQUE_ID, &p.unique.to_ne_bytes());
                put(
                    &mut b,
                    uniqinfo::PARENT_UNIQUE_ID,
                    &p.parent_unique.to_ne_bytes(),
                );
            }
            _ => {
                return Err(CounterError::Unsupported {
                    what: format!("flavor {flavor}"),
                })
            }
        }
        Ok(answer(buf, &b))
    }

    fn list_pids(&self, which: PidList) -> Result<Vec<u32>> {
        let t = self.lock();
        let keep = |p: &Proc| match which {
            PidList::All => true,
            PidList::Children(parent) => p.ppid == parent,
            PidList::Group(pgid) => p.pgid == pgid,
        };
        Ok(t.procs
            .iter()
            .filter(|(_, p)| keep(p))
            .map(|(&pid, _)| pid)
            .collect())
    }

    fn procargs2(&self, pid: u32, buf: &mut Vec<u8>) -> Result<Option<usize>> {
        let t = self.lock();
        let Ok(p) = t.visible(pid, 0) else {
            return Ok(None);
        };
        if t.may_read(p, "KERN_PROCARGS2").is_err() {
            return Ok(None);
        }
        let mut b = 1i32.to_ne_bytes().to_vec();
        b.extend_from_slice(format!("/usr/bin/{0}\0\0\0{0}\0", p.name).as_bytes());
        for entry in &p.env {
            b.extend_from_slice(format!("{entry}\0").as_bytes());
        }
        b.extend_from_slice(b"\0ptr_munge=\0");
        buf.clear();
        buf.extend_from_slice(&b);
        Ok(Some(b.len()))
    }

    /// A zombie answers too (`proc_pid_rusage` finds it): its footprint 0, its lifetime
    /// peak kept (`kern_exit.c` zeroes `ri_phys_footprint` in the exit rusage).
    fn rusage_v4(&self, pid: u32, buf: &mut [u8; rusage::SIZE]) -> Result<()> {
        let t = self.lock();
        let p = t.visible(pid, 1)?;
        t.may_read(p, "proc_pid_rusage")?;
        let (footprint, resident, lifetime_max) = if p.run == Run::Zombie {
            (0, 0, p.exited_lifetime_max)
        } else {
            let held = t.memory.of(Holder::Pid(pid));
            (held.footprint(), held.resident, held.lifetime_max)
        };
        let bytes = |pages: u64| (pages * PAGE_BYTES).to_ne_bytes();
        put(buf, rusage::PHYS_FOOTPRINT, &bytes(footprint));
        put(buf, rusage::RESIDENT_SIZE, &bytes(resident));
        put(
            buf,
            rusage::LIFETIME_MAX_PHYS_FOOTPRINT,
            &bytes(lifetime_max),
        );
        Ok(())
    }

    fn vm_cache(&self) -> &Mutex<OncePerInterval<VmAnswer>> {
        &self.cache
    }

    fn now(&self) -> Instant {
        self.lock().now
    }
}

impl SendSignal for FakeMac {
    /// `kill(2)` with macOS's rules: ESRCH for a pid with no live process, EPERM across uids
    /// (unless root), SIGTERM pending while stopped.
    fn send_if(&self, pid: u32, signal: i32, same: &mut dyn FnMut() -> bool) -> io::Result<bool> {
        if !same() {
            return Ok(false);
        }
        let mut t = self.lock();
        let viewer = t.viewer_uid;
        let Some(p) = t.procs.get_mut(&pid).filter(|p| p.run != Run::Zombie) else {
            return Ok(false);
        };
        if viewer != 0 && p.uid != viewer {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        let exits = match signal {
            SIGSTOP => {
                p.run = Run::Stopped;
                false
            }
            SIGCONT => {
                p.run = Run::Running;
                std::mem::take(&mut p.term_pending) && !p.ignores_term
            }
            SIGTERM if p.run == Run::Stopped => {
                p.term_pending = true;
                false
            }
            SIGTERM => !p.ignores_term,
            SIGKILL => true,
            _ => false,
        };
        if exits {
            t.exit(pid);
        }
        Ok(true)
    }
}
