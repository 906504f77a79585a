//! CPU and memory of a target's processes, read from `/proc`.
//!
//! Memory is summed over every process of a target (the root process started by the
//! harness and all its descendants, as the seed's `pmap` script summed Apache's
//! children): RSS and PSS from `/proc/PID/smaps_rollup`. PSS divides shared pages
//! among the processes sharing them, so an nginx master and its workers are not
//! counted twice for the same library pages. CPU is `utime + stime` from
//! `/proc/PID/stat` over wall-clock time, in percent of one core.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// RSS and PSS of one process or a sum, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// Resident set size, KiB.
    pub rss_kb: u64,
    /// Proportional set size, KiB.
    pub pss_kb: u64,
}

/// Reads `Rss:` and `Pss:` from the text of `/proc/PID/smaps_rollup`; `None` when
/// either line is missing.
pub fn parse_smaps_rollup(text: &str) -> Option<Memory> {
    let mut rss = None;
    let mut pss = None;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(key), Some(value)) = (it.next(), it.next()) else {
            continue;
        };
        let slot = match key {
            "Rss:" => &mut rss,
            "Pss:" => &mut pss,
            _ => continue,
        };
        if slot.is_none() {
            *slot = value.parse::<u64>().ok();
        }
    }
    Some(Memory {
        rss_kb: rss?,
        pss_kb: pss?,
    })
}

/// Fields of `/proc/PID/stat` the sampler needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Parent process id.
    pub ppid: u32,
    /// User plus system time, clock ticks.
    pub cpu_ticks: u64,
}

/// Parses `/proc/PID/stat` (the command name may hold spaces and parentheses: the
/// fields start after the last `)`).
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    // Fields after the name: state(3) ppid(4) ... utime(14) stime(15).
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(Stat {
        ppid,
        cpu_ticks: utime + stime,
    })
}

/// Clock ticks per second of `/proc/PID/stat` times (`USER_HZ`, 100 on Linux for
/// every architecture the kernel supports in practice).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// Every live process id under `/proc` with its stat.
fn all_stats(proc_dir: &Path) -> Vec<(u32, Stat)> {
    let Ok(dir) = std::fs::read_dir(proc_dir) else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let text = std::fs::read_to_string(proc_dir.join(pid.to_string()).join("stat")).ok()?;
            Some((pid, parse_stat(&text)?))
        })
        .collect()
}

/// `root` and its descendants, given every process's parent.
pub fn descendants(root: u32, parents: &[(u32, u32)]) -> BTreeSet<u32> {
    let mut set = BTreeSet::from([root]);
    loop {
        let before = set.len();
        for &(pid, ppid) in parents {
            if set.contains(&ppid) {
                set.insert(pid);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// One reading of a process tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// Memory summed over the processes.
    pub memory: Memory,
    /// CPU ticks summed over the processes.
    pub cpu_ticks: u64,
    /// Processes read.
    pub processes: u32,
}

/// Reads the tree rooted at `root` now.
pub fn read_tree(root: u32) -> Reading {
    let proc_dir = Path::new("/proc");
    let stats = all_stats(proc_dir);
    let parents: Vec<(u32, u32)> = stats.iter().map(|(p, s)| (*p, s.ppid)).collect();
    let tree = descendants(root, &parents);
    let mut r = Reading::default();
    for (pid, stat) in stats.iter().filter(|(p, _)| tree.contains(p)) {
        let Ok(text) = std::fs::read_to_string(proc_dir.join(pid.to_string()).join("smaps_rollup"))
        else {
            continue;
        };
        let Some(m) = parse_smaps_rollup(&text) else {
            continue;
        };
        r.memory.rss_kb += m.rss_kb;
        r.memory.pss_kb += m.pss_kb;
        r.cpu_ticks += stat.cpu_ticks;
        r.processes += 1;
    }
    r
}

/// What a sampler saw over one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Samples taken.
    pub samples: u32,
    /// Processes in the last sample.
    pub processes: u32,
    /// Largest summed RSS, KiB.
    pub rss_kb_max: u64,
    /// Largest summed PSS, KiB.
    pub pss_kb_max: u64,
    /// Mean summed RSS, KiB.
    pub rss_kb_mean: u64,
    /// Mean summed PSS, KiB.
    pub pss_kb_mean: u64,
    /// CPU used over the run, percent of one core.
    pub cpu_percent: f64,
}

/// Summarises readings taken at `times` (seconds from the start).
pub fn summarize(readings: &[(f64, Reading)]) -> Usage {
    let n = readings.len() as u64;
    if n == 0 {
        return Usage::default();
    }
    let mut u = Usage {
        samples: readings.len() as u32,
        ..Usage::default()
    };
    let (mut rss, mut pss) = (0u64, 0u64);
    for (_, r) in readings {
        u.rss_kb_max = u.rss_kb_max.max(r.memory.rss_kb);
        u.pss_kb_max = u.pss_kb_max.max(r.memory.pss_kb);
        rss += r.memory.rss_kb;
        pss += r.memory.pss_kb;
        u.processes = r.processes;
    }
    u.rss_kb_mean = rss / n;
    u.pss_kb_mean = pss / n;
    if let (Some((t0, first)), Some((t1, last))) = (readings.first(), readings.last()) {
        let secs = t1 - t0;
        if secs > 0.0 {
            let ticks = last.cpu_ticks.saturating_sub(first.cpu_ticks) as f64;
            u.cpu_percent = ticks / TICKS_PER_SECOND / secs * 100.0;
        }
    }
    u
}

/// A background thread sampling a process tree at a fixed interval.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    readings: Arc<Mutex<Vec<(f64, Reading)>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling the tree rooted at `root` every `interval` (one reading at once).
    pub fn start(root: u32, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let readings = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (Arc::clone(&stop), Arc::clone(&readings));
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            loop {
                let reading = read_tree(root);
                if let Ok(mut v) = r.lock() {
                    v.push((start.elapsed().as_secs_f64(), reading));
                }
                let until = Instant::now() + interval;
                while Instant::now() < until {
                    if s.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10).min(interval));
                }
            }
        });
        Sampler {
            stop,
            readings,
            handle: Some(handle),
        }
    }

    /// Takes a last reading, stops, and summarises.
    pub fn finish(mut self) -> Usage {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let mut v = self.readings.lock().map(|v| v.clone()).unwrap_or_default();
        v.retain(|(_, r)| r.processes > 0);
        summarize(&v)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
