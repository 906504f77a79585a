//! CPU pinning: CPU lists (`0`, `0-1`, `0,2-3`), the current thread's affinity
//! (through `nix`'s `sched_setaffinity`; threads spawned afterwards inherit it) and
//! other processes' (`taskset` when installed, else `sched_setaffinity` on the pid).

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// Parses a CPU list such as `0`, `0-1` or `0,2-3`.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("CPU list '{s}': expected e.g. 0 or 0-1 or 0,2-3");
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if b < a {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        return Err(format!("CPU list '{s}' is empty"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats a CPU list for `taskset -c`.
pub fn format_cpus(cpus: &[usize]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn set_of(cpus: &[usize]) -> nix::Result<CpuSet> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    Ok(set)
}

/// Pins the calling thread (and the threads it spawns later) to `cpus`.
pub fn pin_current(cpus: &[usize]) -> nix::Result<()> {
    sched_setaffinity(Pid::from_raw(0), &set_of(cpus)?)
}

/// Pins the process (thread) `pid` to `cpus`.
pub fn pin_pid(pid: u32, cpus: &[usize]) -> nix::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| nix::Error::EINVAL)?;
    sched_setaffinity(Pid::from_raw(pid), &set_of(cpus)?)
}
